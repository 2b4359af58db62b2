# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# `make bundle`: one self-contained gpusnoop for any x86-64 Linux with glibc >= 2.31; included
# by the Makefile. Everything is compiled again against a Debian bullseye sysroot
# (scripts/bundle/roots.sh: glibc 2.31 and the -dev packages' static .a files), so no symbol
# newer than glibc 2.31 is referenced, and linked statically against every library but glibc:
# libbpf (the host's 1.1.2: its .a references nothing newer than glibc 2.28), libelf, libdw,
# zlib, zstd, liblzma, libbz2, yajl, libmicrohttpd and libstdc++ (its demangler). One file to
# copy beats shipping .so files with an $ORIGIN run path: nothing to keep together, no loader
# path to get wrong, and a fleet's own older libbpf is never picked up instead.
# libmicrohttpd's .a is built with GnuTLS, which has no static library in Debian; gpusnoop's
# metrics endpoint serves plain HTTP only (never MHD_USE_TLS), so scripts/bundle/no_tls.c
# stands in for the few GnuTLS functions libmicrohttpd references: each fails.

BUNDLE_OUT := $(OUTPUT)/bundle
BUNDLE_NAME := gpusnoop-$(VERSION)-x86_64
BUNDLE_DIR := $(BUNDLE_OUT)/$(BUNDLE_NAME)
BUNDLE_TAR := $(BUNDLE_OUT)/$(BUNDLE_NAME).tar.gz
BUNDLE_OBJ := $(BUNDLE_OUT)/obj
BUNDLE_INC := $(BUNDLE_OUT)/include
BUNDLE_SYSROOT_FILE := $(BUNDLE_OUT)/sysroot.path
# read in recipes only, once the file exists
BUNDLE_SYSROOT = $(shell cat $(BUNDLE_SYSROOT_FILE))
BUNDLE_LIBBPF_VERSION := $(shell pkg-config --modversion libbpf 2>/dev/null)
BUNDLE_LIBBPF_A := $(shell pkg-config --variable=libdir libbpf 2>/dev/null)/libbpf.a
# -B and -L: gcc searches its own install's ../../../x86_64-linux-gnu (the host's crt1.o and
# .a files) ahead of the sysroot's; LIBRARY_PATH (CUDA's stubs) is ignored for the same reason
BUNDLE_LIBDIR = $(BUNDLE_SYSROOT)/usr/lib/x86_64-linux-gnu
BUNDLE_CC = LIBRARY_PATH= $(CC) --sysroot=$(BUNDLE_SYSROOT) -B$(BUNDLE_LIBDIR)/ -L$(BUNDLE_LIBDIR)
BUNDLE_CXX = $(CXX) --sysroot=$(BUNDLE_SYSROOT) -B$(BUNDLE_LIBDIR)/ -L$(BUNDLE_LIBDIR) -nostdinc++ \
	-isystem $(BUNDLE_SYSROOT)/usr/include/c++/10 \
	-isystem $(BUNDLE_SYSROOT)/usr/include/x86_64-linux-gnu/c++/10
# the normal flags less the host's include directories; the host's libbpf and kernel UAPI
# headers (newer than bullseye's 5.10) come from $(BUNDLE_INC), ahead of the sysroot's
BUNDLE_CFLAGS = $(filter-out -I/usr/%,$(CFLAGS)) -isystem $(BUNDLE_INC) \
	-include scripts/bundle/compat.h \
	-isystem $(BUNDLE_SYSROOT)/usr/include/yajl \
	-DGS_BUNDLE='"static libbpf $(BUNDLE_LIBBPF_VERSION), glibc >= 2.31"'
BUNDLE_LDLIBS = -static-libgcc -Wl,--as-needed -Wl,-Bstatic $(BUNDLE_LIBBPF_A) -ldw -lelf \
	-lz -lzstd -llzma -lbz2 -lyajl_s -lmicrohttpd -Wl,-Bdynamic \
	$(BUNDLE_SYSROOT)/usr/lib/gcc/x86_64-linux-gnu/10/libstdc++.a -pthread -ldl -lrt -lm
BUNDLE_CLI_OBJS := $(patsubst %.c,$(BUNDLE_OBJ)/%.o,$(LIB_SRCS) $(CLI_SRCS))
BUNDLE_FLOOR_OBJS := $(patsubst %.c,$(BUNDLE_OBJ)/%.o,$(LIB_SRCS)) \
	$(BUNDLE_OBJ)/profilers/cuda/api.o $(BUNDLE_OBJ)/scripts/bench/floor.o
# what gpu-test/ holds besides the binaries: tests/gpu's scripts, run by the host's python3
BUNDLE_GPU_TEST := $(wildcard tests/gpu/*.py) tests/gpu/run

.PHONY: bundle bundle-fixtures BUNDLE_FORCE
bundle: $(BUNDLE_TAR)

# roots.sh answers at once once the root is cached; the file changes only with the path
$(BUNDLE_SYSROOT_FILE): BUNDLE_FORCE
	$(Q)mkdir -p $(@D)
	$(Q)./scripts/bundle/roots.sh sysroot >$@.new
	$(Q)if cmp -s $@.new $@; then rm $@.new; else mv $@.new $@; fi

$(BUNDLE_INC)/.ok:
	$(Q)mkdir -p $(@D)/sys
	$(Q)ln -sfn $(shell pkg-config --variable=includedir libbpf)/bpf $(@D)/bpf
	$(Q)ln -sfn /usr/include/linux $(@D)/linux
	$(Q)ln -sfn /usr/include/asm-generic $(@D)/asm-generic
	$(Q)ln -sfn /usr/include/$(shell uname -m)-linux-gnu/asm $(@D)/asm
	$(Q)ln -sf /usr/include/$(shell uname -m)-linux-gnu/sys/sdt.h \
		/usr/include/$(shell uname -m)-linux-gnu/sys/sdt-config.h $(@D)/sys/
	$(Q)touch $@

$(BUNDLE_OBJ)/%.o: %.c $(BUNDLE_SYSROOT_FILE) $(BUNDLE_INC)/.ok | $(SKELS)
	$(call msg,CC-BNDL,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(BUNDLE_CC) $(BUNDLE_CFLAGS) -I$(BENCH_OUT) -MMD -MP -c $< -o $@

$(BUNDLE_OBJ)/scripts/bench/floor.o: $(BENCH_OUT)/floor.skel.h

$(BUNDLE_OUT)/gpusnoop: $(BUNDLE_CLI_OBJS) $(BUNDLE_OBJ)/scripts/bundle/no_tls.o
	$(call msg,LINK,$@)
	$(Q)$(BUNDLE_CC) $(BUNDLE_CFLAGS) $^ $(BUNDLE_LDLIBS) -o $@
	$(Q)./scripts/bundle/check-glibc.sh $@

$(BUNDLE_OUT)/gs_bench_floor: $(BUNDLE_FLOOR_OBJS) $(BUNDLE_OBJ)/scripts/bundle/no_tls.o
	$(call msg,LINK,$@)
	$(Q)$(BUNDLE_CC) $(BUNDLE_CFLAGS) $^ $(BUNDLE_LDLIBS) -o $@
	$(Q)./scripts/bundle/check-glibc.sh $@

# the injection library as the Makefile builds it, against the sysroot (when CUPTI's headers
# are here): it runs inside the target, whose glibc may be as old as 2.31
ifneq ($(and $(CUPTI_INC),$(CUPTI_LIBDIR)),)
BUNDLE_CUPTI := $(BUNDLE_OUT)/$(CUPTI_SO)
$(BUNDLE_CUPTI): profilers/cupti/inject.c profilers/cupti/cupti_bind.c \
		 profilers/cupti/cupti_bind.h profilers/cupti/cupti_abi.h \
		 profilers/cupti/nvtx_inject.c profilers/cupti/nvtx_abi.h bpf/gs_nvtx.h \
		 $(BUNDLE_SYSROOT_FILE) $(BUNDLE_INC)/.ok
	$(call msg,LIB,$@)
	$(Q)$(BUNDLE_CC) -g -O2 -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -fPIC \
		-fvisibility=hidden -I. -isystem $(BUNDLE_INC) -isystem $(CUPTI_INC) \
		$(CUPTI_PIP_CUDA_INC) \
		-DGS_CUPTI_BUILT_SONAME='"$(or $(CUPTI_BUILT_SONAME),libcupti.so)"' -shared \
		-Wl,-z,defs -o $@ $(filter %.c,$^) -ldl -Wl,--enable-new-dtags,-rpath,$(CUPTI_LIBDIR)
	$(Q)./scripts/bundle/check-glibc.sh $@
endif

$(BUNDLE_TAR): $(BUNDLE_OUT)/gpusnoop $(BUNDLE_OUT)/gs_bench_floor $(BUNDLE_CUPTI) \
	       $(MAN_OUT)/gpusnoop.8 $(MAN_OUT)/gpusnoop.conf.5 $(DEFAULT_CONF) $(BUNDLE_GPU_TEST) \
	       scripts/completion/gpusnoop.bash scripts/deploy/gpusnoop.service \
	       scripts/bundle/bundle-readme.txt
	$(call msg,BUNDLE,$@)
	$(Q)rm -rf $(BUNDLE_DIR) && mkdir -p $(BUNDLE_DIR)/bin $(BUNDLE_DIR)/lib/gpusnoop \
		$(BUNDLE_DIR)/share/man/man8 $(BUNDLE_DIR)/share/man/man5 $(BUNDLE_DIR)/etc \
		$(BUNDLE_DIR)/share/bash-completion/completions \
		$(BUNDLE_DIR)/lib/systemd/system $(BUNDLE_DIR)/gpu-test/bin
	$(Q)install -m 0755 -s $(BUNDLE_OUT)/gpusnoop $(BUNDLE_DIR)/bin/gpusnoop
	$(Q)$(if $(BUNDLE_CUPTI),install -m 0644 $(BUNDLE_CUPTI) $(BUNDLE_DIR)/lib/gpusnoop/)
	$(Q)install -m 0644 $(MAN_OUT)/*.8 $(BUNDLE_DIR)/share/man/man8/
	$(Q)install -D -m 0644 $(MAN_OUT)/gpusnoop.7 $(BUNDLE_DIR)/share/man/man7/gpusnoop.7
	$(Q)install -m 0644 $(MAN_OUT)/gpusnoop.conf.5 $(BUNDLE_DIR)/share/man/man5/
	$(Q)install -m 0644 $(DEFAULT_CONF) $(BUNDLE_DIR)/etc/gpusnoop.conf
	$(Q)install -m 0644 scripts/completion/gpusnoop.bash \
		$(BUNDLE_DIR)/share/bash-completion/completions/gpusnoop
	$(Q)install -m 0644 scripts/deploy/gpusnoop.service $(BUNDLE_DIR)/lib/systemd/system/
	$(Q)install -m 0644 scripts/bundle/bundle-readme.txt $(BUNDLE_DIR)/README
	$(Q)install -m 0644 $(filter %.py,$(BUNDLE_GPU_TEST)) $(BUNDLE_DIR)/gpu-test/
	$(Q)install -m 0755 tests/gpu/run tests/gpu/gpu_test.py $(BUNDLE_DIR)/gpu-test/
	$(Q)install -m 0755 -s $(BUNDLE_OUT)/gs_bench_floor $(BUNDLE_DIR)/gpu-test/bin/
	$(Q)tar -C $(BUNDLE_OUT) --owner=0 --group=0 --sort=name -czf $@.tmp $(BUNDLE_NAME)
	$(Q)mv $@.tmp $@
	$(Q)test $$(stat -c %s $@) -lt 31457280 || { echo "bundle: $@ over 30 MB" >&2; exit 1; }

# test_bundle.py: the stand-in runtime and workloads built against the same sysroot, so they
# run in a bullseye root too (the host's need glibc 2.34's __libc_start_main)
bundle-fixtures: $(BUNDLE_SYSROOT_FILE) $(BUNDLE_INC)/.ok
	$(Q)$(MAKE) --no-print-directory OUTPUT=$(BUNDLE_OUT)/root-build \
		CC="$(CC) --sysroot=$(BUNDLE_SYSROOT) -B$(BUNDLE_LIBDIR)/ -L$(BUNDLE_LIBDIR) \
		-isystem $(abspath $(BUNDLE_INC))" LIBRARY_PATH= \
		CXX="$(BUNDLE_CXX)" $(BUNDLE_OUT)/root-build/fixtures/bin/gs_leaky \
		$(BUNDLE_OUT)/root-build/fixtures/bin/gs_gpu \
		$(BUNDLE_OUT)/root-build/fixtures/lib/libcudart.so.13 \
		$(BUNDLE_OUT)/root-build/fixtures/lib/libcuda.so.1 \
		$(BUNDLE_OUT)/root-build/fixtures/lib/libcupti.so.13 \
		$(BUNDLE_OUT)/root-build/fixtures/lib/cupti12/libcupti.so.12

BUNDLE_FORCE:

-include $(BUNDLE_CLI_OBJS:.o=.d) $(BUNDLE_OBJ)/scripts/bench/floor.d
