# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# `make bench`: the empty-probe floor tool and the benchmark run; included by the Makefile.

BENCH_OUT := $(OUTPUT)/bench
BENCH_FLOOR := $(BENCH_OUT)/gs_bench_floor

$(BENCH_OUT)/floor.bpf.o: scripts/bench/floor.bpf.c vmlinux/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@
	$(Q)$(LLVM_STRIP) -g $@

$(BENCH_OUT)/floor.skel.h: $(BENCH_OUT)/floor.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

$(BENCH_FLOOR): scripts/bench/floor.c $(BENCH_OUT)/floor.skel.h $(OUTPUT)/profilers/cuda/api.o \
		$(LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -I$(BENCH_OUT) $< $(OUTPUT)/profilers/cuda/api.o $(LIB) $(LDLIBS) -o $@

# BENCH_ARGS: e.g. "--rounds 9 --sustain-seconds 10 --only overhead,drain"
bench: gpusnoop $(FIXTURES) $(BENCH_FLOOR)
	$(Q)./scripts/setup.sh
	$(Q)./scripts/bench/run.py $(BENCH_ARGS)
