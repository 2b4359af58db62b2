/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* spawn.h: start a command held before exec, so probes are in place before it runs. */
#ifndef GS_SPAWN_H
#define GS_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

struct gs_child {
	pid_t pid;
	int release_fd; /* write end: closing it lets the child exec */
	int error_fd;	/* read end: carries errno if exec fails */
};

/*
 * Forks a child that waits, then execs argv (PATH searched), its stdout on stdout_fd (-1: the
 * one it inherits). Returns 0 or -errno.
 */
int gs_spawn(char *const argv[], int stdout_fd, struct gs_child *child);
/* Lets the child exec. Returns 0, or -errno of a failed exec (the child is reaped). */
int gs_spawn__release(struct gs_child *child);

/* Resolves a command name the way execvp does into buf. Returns 0 or -errno. */
int gs_find_executable(const char *name, char *buf, size_t len);
/*
 * The file the kernel loads to run @path into buf: @path itself, or for a script ("#!INTERP")
 * its interpreter, followed as the kernel follows them. Returns 0 or -errno (-ENOEXEC: a
 * "#!" line without an interpreter; -ELOOP: too many levels).
 */
int gs_exec_image(const char *path, char *buf, size_t len);

#endif /* GS_SPAWN_H */
