/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* python_names.h: named Python frames, each under a stand-in address that stacks carry. */
#ifndef GS_PYTHON_NAMES_H
#define GS_PYTHON_NAMES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * A merged stack (user/python.c) is still an array of u64 "addresses": a Python frame is
 * GS_PY_ADDR_TAG | id, which no user address has (x86-64 user space ends below 2^47), so
 * the stack table hashes and compares Python frames like native ones and the symbolizer
 * tells them apart. A process's marker (gs_py_names__marker) stands where native frames
 * are missing. A native stack is read from the process's own memory, so a return address
 * with the tag may be forged: an id names a frame only for the process it was made for.
 */
#define GS_PY_ADDR_TAG (1ULL << 63)

static inline bool gs_py_is_addr(uint64_t addr)
{
	return addr & GS_PY_ADDR_TAG;
}

struct gs_py_name {
	pid_t pid;
	uint64_t code; /* the code object's address, for JSON and debugging */
	char *qualname;
	char *file;
	int line;    /* -1: none */
	bool marker; /* stands for missing native frames; qualname says so */
};

struct gs_py_names;

struct gs_py_names *gs_py_names__new(void);
void gs_py_names__free(struct gs_py_names *n);
/*
 * The stand-in address of (pid, code object generation, line), adding it the first time
 * (strings copied). gen tells apart code objects that reused an address. 0 on ENOMEM.
 */
uint64_t gs_py_names__intern(struct gs_py_names *n, pid_t pid, uint64_t code, uint32_t gen,
			     const char *qualname, const char *file, int line);
/* The stand-in address of pid's marker for missing native frames; 0 on ENOMEM or n NULL. */
uint64_t gs_py_names__marker(struct gs_py_names *n, pid_t pid);
/* Borrowed; NULL for an unknown id, a forgotten process or an id made for another pid. */
const struct gs_py_name *gs_py_names__get(const struct gs_py_names *n, pid_t pid, uint64_t addr);
/* Drops the names of pid; their ids are not reused (stacks interned earlier stay distinct). */
void gs_py_names__forget(struct gs_py_names *n, pid_t pid);

#endif /* GS_PYTHON_NAMES_H */
