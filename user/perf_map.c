// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* perf_map.c: parse /tmp/perf-PID.map incrementally and look addresses up in it. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "user/perf_map.h"

struct perf_sym {
	uint64_t start, size;
	uint64_t seq; /* line number: the later line wins */
	char *name;
};

struct gs_perf_map {
	struct perf_sym *syms;
	size_t nr, cap;
	bool sorted;
	uint64_t next_seq;
	pid_t ns_pid; /* the pid in the process's namespace, once read while it lived; 0 */
	/* the file read so far */
	dev_t dev;
	ino_t ino;
	off_t consumed;
	char path[64];
};

struct gs_perf_map *gs_perf_map__new(void)
{
	return calloc(1, sizeof(struct gs_perf_map));
}

static void clear(struct gs_perf_map *map)
{
	for (size_t i = 0; i < map->nr; i++)
		free(map->syms[i].name);
	map->nr = 0;
	map->consumed = 0;
	map->sorted = true;
}

void gs_perf_map__free(struct gs_perf_map *map)
{
	if (!map)
		return;
	clear(map);
	free(map->syms);
	free(map);
}

static bool parse_hex(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;

	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; s < end; s++, digits++) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (digits == 16)
			return false;
		v = v << 4 | (uint64_t)d;
	}
	if (!digits)
		return false;
	*p = s;
	*out = v;
	return true;
}

/* One line without its newline; a malformed one is skipped. Returns 0 or -ENOMEM. */
static int add_line(struct gs_perf_map *map, const char *s, const char *end)
{
	struct perf_sym sym = { 0 };

	if (!parse_hex(&s, end, &sym.start) || s == end || *s++ != ' ' ||
	    !parse_hex(&s, end, &sym.size) || s == end || *s++ != ' ' || s == end || !sym.size ||
	    sym.start + sym.size < sym.start)
		return 0;
	if (map->nr == map->cap) {
		size_t cap = map->cap ? map->cap * 2 : 64;
		struct perf_sym *grown = realloc(map->syms, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		map->syms = grown;
		map->cap = cap;
	}
	sym.name = strndup(s, (size_t)(end - s));
	if (!sym.name)
		return -ENOMEM;
	sym.seq = map->next_seq++;
	map->syms[map->nr++] = sym;
	map->sorted = false;
	return 0;
}

long gs_perf_map__add_text(struct gs_perf_map *map, const char *text, size_t len)
{
	const char *p = text, *end = text + len;

	for (;;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *line_end;
		int err;

		if (!nl)
			break;
		line_end = nl > p && nl[-1] == '\r' ? nl - 1 : nl;
		err = add_line(map, p, line_end);
		if (err)
			return err;
		p = nl + 1;
	}
	return (long)(p - text);
}

/* The pid of pid inside its own PID namespace (the last NSpid field); 0 when it is gone. */
static pid_t ns_pid(pid_t pid)
{
	char path[64], line[256];
	pid_t inner = pid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *last;

		if (strncmp(line, "NSpid:", 6))
			continue;
		line[strcspn(line, "\n")] = '\0';
		last = strrchr(line, '\t');
		if (last)
			inner = (pid_t)strtol(last + 1, NULL, 10);
		break;
	}
	fclose(f);
	return inner > 0 ? inner : pid;
}

int gs_perf_map__update(struct gs_perf_map *map, pid_t pid)
{
	char path[128], *buf;
	struct stat st;
	pid_t inner = ns_pid(pid);
	ssize_t got;
	long used;
	int fd, err = 0;

	if (inner) {
		map->ns_pid = inner;
		/* the process's /tmp, which in a container is not ours */
		snprintf(path, sizeof(path), "/proc/%d/root/tmp/perf-%d.map", (int)pid, (int)inner);
	} else if (!map->ns_pid || map->ns_pid == pid) {
		/*
		 * Gone: JITs leave the file behind for perf to read after the exit. Ours is the
		 * right /tmp unless the process lived in another PID namespace (then its root
		 * went with it).
		 */
		inner = pid;
		snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
	} else {
		return -ESRCH;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	/* a zombie still has its status but no root to go through: the same fallback */
	if (fd < 0 && inner == pid && strncmp(path, "/tmp/", 5)) {
		snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		goto out_close;
	}
	snprintf(map->path, sizeof(map->path), "/tmp/perf-%d.map", (int)inner);
	if (st.st_dev != map->dev || st.st_ino != map->ino || st.st_size < map->consumed) {
		clear(map);
		map->dev = st.st_dev;
		map->ino = st.st_ino;
	}
	if (st.st_size == map->consumed)
		goto out_close;
	buf = malloc((size_t)(st.st_size - map->consumed));
	if (!buf) {
		err = -ENOMEM;
		goto out_close;
	}
	got = pread(fd, buf, (size_t)(st.st_size - map->consumed), map->consumed);
	if (got < 0) {
		err = -errno;
	} else {
		used = gs_perf_map__add_text(map, buf, (size_t)got);
		if (used < 0)
			err = (int)used;
		else
			map->consumed += used;
	}
	free(buf);
out_close:
	close(fd);
	return err;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct perf_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

const char *gs_perf_map__lookup(struct gs_perf_map *map, uint64_t addr, uint64_t *offset)
{
	size_t lo = 0, hi = map->nr;
	const struct perf_sym *s;

	if (!map->sorted) {
		qsort(map->syms, map->nr, sizeof(*map->syms), cmp_sym);
		map->sorted = true;
	}
	/* the last symbol starting at or below addr: of several at one start, the latest */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (map->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	s = &map->syms[lo - 1];
	if (addr - s->start >= s->size)
		return NULL;
	if (offset)
		*offset = addr - s->start;
	return s->name;
}

const char *gs_perf_map__path(const struct gs_perf_map *map)
{
	return map->path[0] ? map->path : NULL;
}

size_t gs_perf_map__count(const struct gs_perf_map *map)
{
	return map->nr;
}
