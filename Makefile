# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# gpusnoop: one non-recursive build, bpf/*.bpf.c -> .bpf.o -> .skel.h -> libgpusnoop.a -> gpusnoop
OUTPUT := .output
CLANG ?= clang
LLVM_STRIP ?= llvm-strip
BPFTOOL ?= bpftool
CC ?= cc
ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
VERSION := 0.1.0

PKGS := libbpf libelf zlib libmicrohttpd yajl libdw liblzma
CFLAGS := -g -O2 -std=gnu11 -Wall -Wextra -Werror -Werror=undef -Wmissing-field-initializers \
	-Wno-unused-parameter -D_GNU_SOURCE -DGS_VERSION='"$(VERSION)"' -I. -I$(OUTPUT) \
	$(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lstdc++ -pthread -ldl
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror -Ivmlinux -Ibpf
# <bpf/usdt.bpf.h> includes <linux/errno.h>, which wants the multiarch <asm/errno.h>
BPF_CFLAGS += -idirafter /usr/include/$(shell uname -m)-linux-gnu

ifeq ($(V),1)
	Q =
	msg =
else
	Q = @
	msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.bpf.o,$(BPF_SRCS))
SKELS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))
# the same objects built for Linux 5.10 (-DGS_OLD_KERNEL; profilers/bpf_old.c)
OLD_BPF := proc mem cuda cpu
SKELS += $(patsubst %,$(OUTPUT)/%.old.skel.h,$(OLD_BPF))
LIB_SRCS := $(wildcard user/*.c) $(wildcard stitch/*.c)
LIB_OBJS := $(patsubst %.c,$(OUTPUT)/%.o,$(LIB_SRCS))
# profilers/cupti/ is a library loaded into CUDA processes, built by its own rules below
CLI_SRCS := $(filter-out profilers/cupti/%,$(wildcard profilers/*.c profilers/*/*.c))
CLI_OBJS := $(patsubst %.c,$(OUTPUT)/%.o,$(CLI_SRCS))
LIB := $(OUTPUT)/libgpusnoop.a
# unit tests link the profilers' pure modules too (everything but the CLI's main)
PROFILER_OBJS := $(filter-out $(OUTPUT)/profilers/cmd/main.o,$(CLI_OBJS))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUTPUT)/tests/%,$(UNIT_SRCS))

.PHONY: all test unit e2e demo vmlinux check clean setup fixtures bench fuzz fuzz-smoke fuzz-build
.PHONY: man install uninstall setup-test gpu-test check-calls

# plain `make` builds gpusnoop: the files included next have rules of their own
.DEFAULT_GOAL := all

# defines FIXTURES (fake CUDA libraries, workloads); needed before rules that list it
include tests/fixtures/fixtures.mk
include tests/fixtures/unwind.mk
.DELETE_ON_ERROR:
.SECONDARY:

all: gpusnoop

# what building and running need; test, bench and fuzz add what only they use
setup:
	$(Q)./scripts/setup.sh build

setup-test:
	$(Q)./scripts/setup.sh test

$(OUTPUT)/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) vmlinux/vmlinux.h | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@
	$(Q)$(LLVM_STRIP) -g $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

$(OUTPUT)/%.old.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) vmlinux/vmlinux.h | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -DGS_OLD_KERNEL -c $< -o $@
	$(Q)$(LLVM_STRIP) -g $@

$(OUTPUT)/%.old.skel.h: $(OUTPUT)/%.old.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $*_old_bpf > $@

$(OUTPUT)/%.o: %.c | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

# only profilers/ includes skeletons
$(CLI_OBJS): $(SKELS)

$(LIB): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)$(AR) rcs $@ $^

gpusnoop: $(CLI_OBJS) $(LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

$(OUTPUT)/tests/test_%: tests/unit/test_%.c tests/unit/harness.h $(PROFILER_OBJS) $(LIB) $(FIXTURES)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -DGS_FIXTURES='"$(OUTPUT)/fixtures"' $< $(PROFILER_OBJS) $(LIB) $(LDLIBS) -o $@

$(OUTPUT):
	$(Q)mkdir -p $@

unit: $(UNIT_BINS)
	$(Q)./scripts/run-unit.sh $(UNIT_BINS)

# libFuzzer harnesses, tests/fuzz/fuzz_<target>.c. Each links sanitizer-built copies of only
# the sources its parser needs, compiled into $(FUZZ_OUT) with their own flags: the normal
# build's objects stay as they are. Working corpora: $(FUZZ_OUT)/corpus/<target>; crashes
# found become tests/fuzz/seeds/<target>/ files, replayed before every run.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 600
FUZZ_SMOKE_SECONDS ?= 5
FUZZ_JOBS ?= 1
FUZZ_OUT := $(OUTPUT)/fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS := -g -O1 -std=gnu11 -Wall -Wextra -Werror -Werror=undef \
	-Wmissing-field-initializers -Wno-unused-parameter -D_GNU_SOURCE \
	-DGS_VERSION='"$(VERSION)"' -I. -I$(OUTPUT) $(shell pkg-config --cflags $(PKGS) 2>/dev/null) \
	$(FUZZ_SAN)
FUZZ_TARGETS := elf perf_map proc_maps daemon_config ctl_request trace gpu_record python_lines \
	pickle stats
# what each harness links besides itself: a link error naming a gs_ function means its file
# belongs on the list (gs_log* come from tests/fuzz/fuzz_log.c, which formats and drops them)
FUZZ_SRCS_elf := user/elf_file.c user/debuginfo.c user/sym_search.c user/array.c user/demangle.c user/proc_maps.c user/proc_info.c user/safe_open.c
FUZZ_SRCS_perf_map := user/perf_map.c user/sym_search.c user/array.c user/safe_open.c
FUZZ_SRCS_proc_maps := user/proc_maps.c user/array.c user/proc_info.c user/safe_open.c
FUZZ_SRCS_daemon_config := profilers/daemon/config.c profilers/daemon/event_list.c \
	profilers/daemon/profile_config.c profilers/cuda/api.c profilers/options.c user/units.c \
	profilers/proc_filter.c user/pid_index.c user/hash_index.c user/proc_info.c
FUZZ_SRCS_ctl_request := profilers/daemon/ctl_request.c profilers/daemon/event_list.c \
	profilers/cuda/api.c
FUZZ_SRCS_trace := stitch/trace_parse.c user/text_escape.c
FUZZ_SRCS_gpu_record := profilers/cuda/gpu_activity.c profilers/cuda/gpu_correlate.c user/addr_map.c \
	user/array.c user/hash_index.c
FUZZ_SRCS_python_lines := user/python_lines.c
FUZZ_SRCS_pickle := user/pickle_writer.c
FUZZ_SRCS_stats := profilers/cmd/stats_reader.c profilers/timeline/trace_stats.c \
	profilers/timeline/record_summary.c profilers/timeline/gpu_summary.c profilers/cuda/api.c \
	profilers/cuda/gpu_activity.c stitch/trace_parse.c user/text_escape.c user/addr_map.c \
	user/histogram.c user/json.c user/json_tape.c user/pid_index.c user/hash_index.c user/busy_union.c \
	user/array.c user/units.c
FUZZ_BINS := $(patsubst %,$(FUZZ_OUT)/fuzz_%,$(FUZZ_TARGETS))

$(FUZZ_OUT)/obj/%.o: %.c
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

define fuzz_bin
$(FUZZ_OUT)/fuzz_$(1): $(patsubst %.c,$(FUZZ_OUT)/obj/%.o,tests/fuzz/fuzz_$(1).c \
		tests/fuzz/fuzz_log.c $(FUZZ_SRCS_$(1)))
	$$(call msg,FUZZ-LD,$$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $$^ $(LDLIBS) -o $$@
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call fuzz_bin,$(t))))

fuzz-build: $(FUZZ_BINS)

# FUZZ_SECONDS per target, FUZZ_JOBS targets at once; FUZZ_TARGETS="elf trace" picks some
fuzz: $(FUZZ_BINS)
	$(Q)./scripts/run-fuzz.sh -t $(FUZZ_SECONDS) -j $(FUZZ_JOBS) $(FUZZ_BINS)

# part of make test: seconds each, from the in-tree seeds only (a fresh corpus every time)
fuzz-smoke: $(FUZZ_BINS)
	$(Q)./scripts/run-fuzz.sh -t $(FUZZ_SMOKE_SECONDS) -j 1 --fresh $(FUZZ_BINS)

# The CUPTI injection library (profilers/cupti/, `record -e gpu`), built next to gpusnoop
# only where CUPTI's headers are: $(CUDA_HOME), /usr/local/cuda, or pip's nvidia packages.
CUPTI_SEARCH := $(if $(CUDA_HOME),$(CUDA_HOME)/include) /usr/local/cuda/include \
	$(wildcard /usr/local/lib/python3*/dist-packages/nvidia/cuda_cupti/include \
		   /usr/lib/python3/dist-packages/nvidia/cuda_cupti/include \
		   $(HOME)/.local/lib/python3*/site-packages/nvidia/cuda_cupti/include)
CUPTI_INC := $(firstword $(foreach d,$(CUPTI_SEARCH),$(if $(wildcard $(d)/cupti.h),$(d))))
CUPTI_LIBDIR := $(firstword $(foreach d,$(CUPTI_INC)/../lib64 $(CUPTI_INC)/../lib \
	$(CUPTI_INC)/../extras/CUPTI/lib64,$(if $(wildcard $(d)/libcupti.so*),$(abspath $(d)))))
CUPTI_SO := libgpusnoop-cupti.so
ifneq ($(and $(CUPTI_INC),$(CUPTI_LIBDIR)),)
all: $(CUPTI_SO)
e2e-build: $(CUPTI_SO)
GPU_TEST_NEEDS := $(CUPTI_SO)
# no -Werror=undef: CUPTI's headers test macros they do not define
# It links no CUPTI: at run time it binds the process's own (cupti_bind.c), else the
# driver's major version's, searched in the RUNPATH too, else the one built with.
# pip's nvidia-cuda-cupti has no cuda.h: its sibling nvidia-cuda-runtime has
CUPTI_PIP_CUDA_INC := $(addprefix -isystem ,$(wildcard $(CUPTI_INC)/../../cuda_runtime/include))
CUPTI_BUILT_SONAME := $(notdir $(firstword $(wildcard $(CUPTI_LIBDIR)/libcupti.so.[0-9]*)))
# It answers NVTX's injection hook too (nvtx_inject.c: no CUDA header needed).
$(CUPTI_SO): profilers/cupti/inject.c profilers/cupti/cupti_bind.c profilers/cupti/cupti_bind.h \
	     profilers/cupti/cupti_abi.h profilers/cupti/nvtx_inject.c profilers/cupti/nvtx_abi.h \
	     bpf/gs_nvtx.h
	$(call msg,LIB,$@)
	$(Q)$(CC) -g -O2 -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -fPIC \
		-fvisibility=hidden -I. -isystem $(CUPTI_INC) $(CUPTI_PIP_CUDA_INC) \
		-DGS_CUPTI_BUILT_SONAME='"$(or $(CUPTI_BUILT_SONAME),libcupti.so)"' -shared \
		-Wl,-z,defs -o $@ $(filter %.c,$^) -ldl -Wl,--enable-new-dtags,-rpath,$(CUPTI_LIBDIR)
# where `record -e gpu` looks for it: beside the binary, or in ../lib/gpusnoop/
.PHONY: install-cupti uninstall-cupti
install: install-cupti
uninstall: uninstall-cupti
install-cupti: $(CUPTI_SO)
	$(Q)install -D -m 0644 $(CUPTI_SO) $(DESTDIR)$(PREFIX)/lib/gpusnoop/$(CUPTI_SO)
uninstall-cupti:
	$(Q)rm -f $(DESTDIR)$(PREFIX)/lib/gpusnoop/$(CUPTI_SO)
else
$(info note: no CUPTI headers (CUDA_HOME, /usr/local/cuda, pip nvidia-cuda-cupti): \
	$(CUPTI_SO) and record -e gpu are not built)
endif

# test_bundle.py runs the bundle in minimal Debian roots; `make e2e-build` then
# `scripts/run-e2e.sh WORD...` runs a part of the suite
.PHONY: e2e-build
e2e-build: gpusnoop $(FIXTURES) bundle bundle-fixtures
e2e: e2e-build
	$(Q)./scripts/run-e2e.sh

# in this order even under -j: unit tests, seconds of each fuzzer, then the e2e suite
test: setup-test
	$(Q)$(MAKE) --no-print-directory unit
	$(Q)$(MAKE) --no-print-directory fuzz-smoke
	$(Q)$(MAKE) --no-print-directory e2e

include scripts/bench/bench.mk

# not part of test: gpusnoop against a real NVIDIA GPU and PyTorch 2.x (PYTHON=), as root;
# the machine is checked before anything is built. GPU_TEST_ARGS: e.g. "--rounds 9"
gpu-test:
	$(Q)./tests/gpu/gpu_test.py --machine-only
	$(Q)$(MAKE) --no-print-directory gpusnoop $(BENCH_FLOOR) $(GPU_TEST_NEEDS)
	$(Q)./tests/gpu/gpu_test.py $(GPU_TEST_ARGS)

demo: setup
	$(Q)$(MAKE) --no-print-directory gpusnoop $(FIXTURES)
	$(Q)./scripts/demo.sh

vmlinux:
	$(Q)./scripts/gen-vmlinux.sh

# format, and no two files of profilers/ (daemon/ aside) calling each other both ways
check: check-calls
	$(Q)clang-format --dry-run --Werror $(wildcard user/*.[ch] profilers/*.[ch] profilers/*/*.[ch] stitch/*.[ch] bpf/*.[ch] \
		tests/unit/*.[ch] tests/fixtures/*.[ch] scripts/bundle/*.[ch] tests/fixtures/workloads/*.[ch] \
		tests/fixtures/unwind/*.[ch] tests/tools/*.[ch] scripts/bench/*.[ch] tests/fuzz/*.[ch])

check-calls: $(CLI_OBJS)
	$(Q)./scripts/check-calls.py $(OUTPUT)

clean:
	$(Q)rm -rf $(OUTPUT) gpusnoop libgpusnoop-cupti.so

# Installation: `make install PREFIX=/usr DESTDIR=pkg/` for a package. Man pages are made
# from the subcommands' --help by help2man (scripts/man/gen-man.sh) with the hand-written
# sections of scripts/man/sections/*.md, gpusnoop.conf(5) and the
# default config file from the daemon's settings table: one source each, no drift.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MAN5DIR ?= $(PREFIX)/share/man/man5
MAN7DIR ?= $(PREFIX)/share/man/man7
MAN8DIR ?= $(PREFIX)/share/man/man8
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
# the daemon reads /etc/gpusnoop.conf without --config: the file stays there whatever PREFIX is
SYSCONFDIR ?= /etc
MAN_OUT := $(OUTPUT)/man
DEFAULT_CONF := $(OUTPUT)/gpusnoop.conf

$(MAN_OUT)/gpusnoop.8: gpusnoop scripts/man/gen-man.sh scripts/man/md2roff.awk \
		$(wildcard scripts/man/sections/*.md)
	$(call msg,MAN,$(MAN_OUT))
	$(Q)./scripts/man/gen-man.sh ./gpusnoop $(MAN_OUT)

$(MAN_OUT)/gpusnoop.conf.5: gpusnoop
	$(call msg,MAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)./gpusnoop daemon --print-config-doc >$@

$(DEFAULT_CONF): gpusnoop
	$(call msg,GEN,$@)
	$(Q)./gpusnoop daemon --print-default-config >$@

man: $(MAN_OUT)/gpusnoop.8 $(MAN_OUT)/gpusnoop.conf.5

# the config file is the admin's once installed: never replaced, removed only when unchanged
install: gpusnoop man $(DEFAULT_CONF)
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)install -D -m 0755 gpusnoop $(DESTDIR)$(BINDIR)/gpusnoop
	$(Q)install -d $(DESTDIR)$(MAN8DIR) $(DESTDIR)$(MAN7DIR) $(DESTDIR)$(MAN5DIR)
	$(Q)install -m 0644 $(MAN_OUT)/*.8 $(DESTDIR)$(MAN8DIR)/
	$(Q)install -m 0644 $(MAN_OUT)/gpusnoop.7 $(DESTDIR)$(MAN7DIR)/
	$(Q)install -m 0644 $(MAN_OUT)/gpusnoop.conf.5 $(DESTDIR)$(MAN5DIR)/
	$(Q)install -D -m 0644 scripts/completion/gpusnoop.bash $(DESTDIR)$(BASHCOMPDIR)/gpusnoop
	$(Q)install -d $(DESTDIR)$(SYSTEMDUNITDIR)
	$(Q)sed -e 's|/usr/local/bin/gpusnoop|$(BINDIR)/gpusnoop|' \
		-e 's|/etc/gpusnoop.conf|$(SYSCONFDIR)/gpusnoop.conf|' scripts/deploy/gpusnoop.service \
		>$(DESTDIR)$(SYSTEMDUNITDIR)/gpusnoop.service
	$(Q)chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/gpusnoop.service
	$(Q)if [ -e $(DESTDIR)$(SYSCONFDIR)/gpusnoop.conf ]; then \
		echo "  $(DESTDIR)$(SYSCONFDIR)/gpusnoop.conf exists: left as it is" >&2; \
	else \
		install -D -m 0644 $(DEFAULT_CONF) $(DESTDIR)$(SYSCONFDIR)/gpusnoop.conf; \
	fi

uninstall:
	$(call msg,UNINSTALL,$(DESTDIR)$(PREFIX))
	$(Q)rm -f $(DESTDIR)$(BINDIR)/gpusnoop $(DESTDIR)$(MAN8DIR)/gpusnoop.8 \
		$(DESTDIR)$(MAN8DIR)/gpusnoop-*.8 $(DESTDIR)$(MAN7DIR)/gpusnoop.7 \
		$(DESTDIR)$(MAN5DIR)/gpusnoop.conf.5 \
		$(DESTDIR)$(BASHCOMPDIR)/gpusnoop $(DESTDIR)$(SYSTEMDUNITDIR)/gpusnoop.service
	$(Q)if [ -e $(DESTDIR)$(SYSCONFDIR)/gpusnoop.conf ]; then \
		if ./gpusnoop daemon --print-default-config | \
			cmp -s - $(DESTDIR)$(SYSCONFDIR)/gpusnoop.conf; then \
			rm -f $(DESTDIR)$(SYSCONFDIR)/gpusnoop.conf; \
		else \
			echo "  $(DESTDIR)$(SYSCONFDIR)/gpusnoop.conf was changed: kept" >&2; \
		fi; \
	fi

# make bundle: gpusnoop for any host with glibc >= 2.31 (needs MAN_OUT, BENCH_OUT above)
include scripts/bundle/bundle.mk

-include $(LIB_OBJS:.o=.d) $(CLI_OBJS:.o=.d) $(wildcard $(FUZZ_OUT)/obj/*/*.d $(FUZZ_OUT)/obj/*/*/*.d)
