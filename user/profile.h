/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* profile.h: sampled stacks with counts, written as folded stacks or gzip pprof. */
#ifndef GS_PROFILE_H
#define GS_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct gs_profile;

/* Where a frame's file lies in its process: what pprof's Mapping says. */
struct gs_profile_mapping {
	uint64_t start, limit; /* [start, limit) in the process */
	uint64_t offset;       /* file offset mapped at start */
	const char *build_id;  /* the GNU build id, in hex; NULL: none */
	bool executable;       /* the process's main executable: pprof's first mapping */
};

struct gs_profile_frame {
	const char *name;   /* function; NULL when unknown */
	const char *module; /* the file (or "[kernel.kallsyms]", "[module]"); NULL: unknown */
	uint64_t address;
	bool kernel;
	/* module's mapping; NULL: only its name is known (a mapping at 0, e.g. the kernel) */
	const struct gs_profile_mapping *mapping;
	int line;    /* a Python frame's line (module: its source file); 0: none */
	bool python; /* a Python function (name: its qualified name) */
};

struct gs_profile *gs_profile__new(void);
void gs_profile__free(struct gs_profile *p);

/*
 * Adds count samples of one stack (frames innermost first) taken in thread comm of pid.
 * The same (pid, comm, stack) adds up. Everything is copied. Returns 0 or -ENOMEM.
 */
int gs_profile__add(struct gs_profile *p, pid_t pid, const char *comm,
		    const struct gs_profile_frame *frames, size_t nr, uint64_t count);
/* The same, per thread tid (pprof label thread_id; 0: none), apart from other threads' */
int gs_profile__add_thread(struct gs_profile *p, pid_t pid, pid_t tid, const char *comm,
			   const struct gs_profile_frame *frames, size_t nr, uint64_t count);
uint64_t gs_profile__total(const struct gs_profile *p);
size_t gs_profile__nr_stacks(const struct gs_profile *p);

/*
 * Folded stacks, the input of flamegraph.pl and speedscope: one line per distinct stack,
 * "comm;outermost;...;innermost COUNT", sorted. A frame is its function name, the file's
 * base name in brackets when no symbol covers it, or [unknown]; kernel frames end in "_[k]"
 * (as perf's and bcc's do); a frame with a line is "name (file:line)", as py-spy's are. Returns 0 or -errno of the stream.
 */
int gs_profile__write_folded(const struct gs_profile *p, FILE *f);

struct gs_pprof_info {
	uint64_t period_ns;   /* nanoseconds of CPU one sample stands for (1e9 / frequency) */
	uint64_t time_ns;     /* CLOCK_REALTIME when collection started */
	uint64_t duration_ns; /* how long it lasted */
};

/*
 * The profile as a serialized perftools.profiles.Profile (profile.proto), uncompressed:
 * sample types samples/count and cpu/nanoseconds, labels "pid" and "comm" per sample. One
 * Mapping per distinct (file, range, offset, build id), the executables' first (pprof names
 * the profile after its first mapping); has_functions where a frame of it was named.
 * *buf is the caller's to free. Returns 0 or -ENOMEM.
 */
int gs_profile__encode_pprof(const struct gs_profile *p, const struct gs_pprof_info *info,
			     uint8_t **buf, size_t *len);
/* The encoded profile, gzip-compressed (the format pprof tools read), to f. 0 or -errno. */
int gs_profile__write_pprof(const struct gs_profile *p, const struct gs_pprof_info *info, FILE *f);

/* Writes data gzip-compressed to f. Returns 0 or -errno (-EIO for zlib failures). */
int gs_gzip_write(FILE *f, const void *data, size_t len);

#endif /* GS_PROFILE_H */
