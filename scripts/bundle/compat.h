/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * compat.h: included first in every file `make bundle` compiles against the glibc 2.31 sysroot:
 * the syscall numbers glibc 2.31's <sys/syscall.h> does not name yet (it follows Linux 5.4),
 * from the kernel UAPI headers the bundle uses (the host's). The code calls them through
 * syscall() and handles ENOSYS, so the binary still runs on older kernels.
 */
#ifndef GS_BUNDLE_COMPAT_H
#define GS_BUNDLE_COMPAT_H
#include <asm/unistd.h>

#if !defined(SYS_openat2) && defined(__NR_openat2)
#define SYS_openat2 __NR_openat2 /* Linux 5.6, glibc 2.32 */
#endif
#if !defined(SYS_pidfd_getfd) && defined(__NR_pidfd_getfd)
#define SYS_pidfd_getfd __NR_pidfd_getfd /* Linux 5.6, glibc 2.32 */
#endif
#if !defined(SYS_close_range) && defined(__NR_close_range)
#define SYS_close_range __NR_close_range /* Linux 5.9, glibc 2.33 */
#endif
#if !defined(SYS_faccessat2) && defined(__NR_faccessat2)
#define SYS_faccessat2 __NR_faccessat2 /* Linux 5.8, glibc 2.33 */
#endif
#endif
