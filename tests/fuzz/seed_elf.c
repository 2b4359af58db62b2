// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* seed_elf.c: the source of the ELF seeds in tests/fuzz/seeds/elf/, kept to rebuild them. */
/*
 * Small on purpose (libFuzzer mutates whole inputs): one page per segment, no debug info.
 *   gcc -O1 -fPIC -shared -Wl,-z,noseparate-code -Wl,-z,max-page-size=0x1000 \
 *       -o libseed.so seed_elf.c && strip --strip-debug -R .comment libseed.so
 *   cp libseed.so libseed_dynsym.so && strip --strip-all libseed_dynsym.so
 *   gcc -O1 -DGS_SEED_MAIN -Wl,-z,noseparate-code -o seed_exe seed_elf.c &&
 *       strip --strip-debug -R .comment seed_exe
 */
#include <stdint.h>

/* what nvcc leaves for a CUDA 13 kernel: a stub's static handle, 8 bytes */
__attribute__((used)) static uint64_t
	handle __asm__("_ZZ27__device_stub__Z7add_onePfiPfiE8__handle") = 1;

/* a C++ name to demangle: gs::train_step(int) */
__attribute__((noinline)) int cxx_step(int x) __asm__("_ZN2gs10train_stepEi");
__attribute__((noinline)) int cxx_step(int x)
{
	return x * 3 + (int)handle;
}

__attribute__((noinline, weak)) int gs_seed_weak(int x)
{
	return x + 1;
}

static __attribute__((noinline)) int gs_seed_local(int x)
{
	return cxx_step(x) - 2;
}

int gs_seed_alias(int x) __attribute__((alias("gs_seed_weak")));

int gs_seed_entry(int x)
{
	return gs_seed_local(x) + gs_seed_weak(x);
}

#ifdef GS_SEED_MAIN
int main(int argc, char **argv)
{
	return gs_seed_entry(argc) == 0;
}
#endif
