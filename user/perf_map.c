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
#include <time.h>
#include <unistd.h>
#include <linux/openat2.h>
#include "user/array.h"
#include "user/log.h"
#include "user/perf_map.h"
#include "user/safe_open.h"
#include "user/sym_search.h"

/* bytes read per read(): the memory a perf map costs beyond its symbols */
#define CHUNK (64 * 1024)
/* addresses remembered as looked for in vain, and for how long */
#define MISS_SLOTS 64
#define RECHECK_NS 1000000000ULL

struct perf_sym {
	uint64_t start, size;
	uint64_t seq; /* line number: the later line wins */
	char *name;
};

struct miss {
	uint64_t addr;
	uint64_t at_ns; /* 0: free */
};

struct gs_perf_map {
	struct perf_sym *syms;
	size_t nr, cap;
	bool sorted;
	uint64_t next_seq;
	pid_t ns_pid; /* the pid in the process's namespace, once read while it lived; 0 */
	uid_t uid;    /* the process's real uid, once read while it lived */
	bool has_uid;
	/* the file read so far */
	dev_t dev;
	ino_t ino;
	off_t consumed;
	bool skipping; /* inside a line longer than GS_PERF_MAP_MAX_LINE: up to its newline */
	char path[64];
	/* said once per process: a file ignored, a file or entry count over the bound */
	bool warned_rejected, warned_size, warned_entries;
	/* resolve()'s rate limit: the last failed open, addresses looked for after a read */
	uint64_t failed_at_ns;
	struct miss misses[MISS_SLOTS];
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
	map->skipping = false;
	map->sorted = true;
	memset(map->misses, 0, sizeof(map->misses));
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

	if (end - s > GS_PERF_MAP_MAX_LINE)
		return 0;
	if (map->nr >= GS_PERF_MAP_MAX_ENTRIES) {
		if (!map->warned_entries)
			gs_warn("perf map %s: more than %lu symbols, the rest ignored",
				map->path[0] ? map->path : "(text)", GS_PERF_MAP_MAX_ENTRIES);
		map->warned_entries = true;
		return 0;
	}
	if (!parse_hex(&s, end, &sym.start) || s == end || *s++ != ' ' ||
	    !parse_hex(&s, end, &sym.size) || s == end || *s++ != ' ' || s == end || !sym.size ||
	    sym.start + sym.size < sym.start)
		return 0;
	if (GS_ARRAY_RESERVE(map->syms, map->nr, map->cap, 64))
		return -ENOMEM;
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

/*
 * From /proc/PID/status: the pid of pid inside its own PID namespace (the last NSpid field)
 * and its real uid. Returns false when the process is gone.
 */
static bool read_status(pid_t pid, pid_t *inner, uid_t *uid, bool *has_uid)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	*inner = pid;
	*has_uid = false;
	while (fgets(line, sizeof(line), f)) {
		unsigned int real;
		char *last;

		if (!strncmp(line, "Uid:", 4) && sscanf(line + 4, "%u", &real) == 1) {
			*uid = (uid_t)real;
			*has_uid = true;
		} else if (!strncmp(line, "NSpid:", 6)) {
			line[strcspn(line, "\n")] = '\0';
			last = strrchr(line, '\t');
			if (last && strtol(last + 1, NULL, 10) > 0)
				*inner = (pid_t)strtol(last + 1, NULL, 10);
		}
	}
	fclose(f);
	return true;
}

void gs_perf_map__note_owner(struct gs_perf_map *map, pid_t pid)
{
	pid_t inner;

	if (read_status(pid, &inner, &map->uid, &map->has_uid))
		map->ns_pid = inner;
}

/*
 * Opens dir/name under root (an O_PATH descriptor of "/" as the process sees it) for
 * reading, following no symlink out of that root and none at all in the last component,
 * and only if it is a regular file (user/safe_open.h: a FIFO would block, a device's open
 * acts); the directory's descriptor in *dirfd. Returns the file's descriptor (its stat in
 * *st) or -errno: -EPERM for a symlink, -EINVAL for something else than a regular file.
 */
static int open_in_root(int rootfd, const char *dir, const char *name, int *dirfd, struct stat *st)
{
	int fd;

	*dirfd = gs_open_dir_at(rootfd, dir, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
	if (*dirfd < 0)
		return *dirfd;
	fd = gs_open_regular_at(*dirfd, name,
				RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS, st);
	return fd == -ELOOP ? -EPERM : fd;
}

/* The mount a descriptor is on, from /proc/self/fdinfo; 0 when unknown. */
static unsigned long mount_id(int fd)
{
	char path[64], line[128];
	unsigned long id = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "mnt_id: %lu", &id) == 1)
			break;
	fclose(f);
	return id;
}

/*
 * Whether the file (a regular one, open_in_root() saw to that) may be read as the process's
 * symbols: owned by the process's user. Root's own files pass only when
 * they are what they look like: one link (no hard link to /etc/shadow) and on the mount of
 * their directory (no file bind-mounted there from elsewhere in a user namespace).
 */
static const char *refusal(const struct gs_perf_map *map, int fd, int dirfd, const struct stat *st)
{
	if (map->has_uid && st->st_uid == map->uid)
		return NULL;
	if (st->st_uid != 0)
		return map->has_uid ? "not owned by the process's user" : "owner unknown";
	if (st->st_nlink != 1)
		return "owned by root, with several links";
	if (!mount_id(fd) || mount_id(fd) != mount_id(dirfd))
		return "owned by root, mounted from elsewhere";
	return NULL;
}

/* Reads [consumed, size) in chunks, adding complete lines; a too-long line is skipped. */
static int read_appended(struct gs_perf_map *map, int fd, off_t size)
{
	char *buf = malloc(CHUNK);
	size_t have = 0;
	off_t pos = map->consumed;
	int err = 0;

	if (!buf)
		return -ENOMEM;
	while (pos + (off_t)have < size) {
		size_t want = CHUNK - have;
		ssize_t got;
		long used;

		if ((off_t)want > size - pos - (off_t)have)
			want = (size_t)(size - pos - (off_t)have);
		got = pread(fd, buf + have, want, pos + (off_t)have);
		if (got < 0) {
			err = -errno;
			break;
		}
		if (!got)
			break; /* truncated meanwhile: the next call sees it shrank */
		have += (size_t)got;
		if (map->skipping) {
			char *nl = memchr(buf, '\n', have);
			size_t drop = nl ? (size_t)(nl + 1 - buf) : have;

			map->skipping = !nl;
			memmove(buf, buf + drop, have - drop);
			have -= drop;
			pos += (off_t)drop;
			map->consumed = pos;
			if (map->skipping)
				continue;
		}
		used = gs_perf_map__add_text(map, buf, have);
		if (used < 0) {
			err = (int)used;
			break;
		}
		memmove(buf, buf + used, have - (size_t)used);
		have -= (size_t)used;
		pos += used;
		map->consumed = pos;
		if (have > GS_PERF_MAP_MAX_LINE) {
			/* no newline yet and already too long for a symbol: drop it */
			pos += (off_t)have;
			map->consumed = pos;
			have = 0;
			map->skipping = true;
		}
	}
	free(buf);
	return err;
}

int gs_perf_map__update(struct gs_perf_map *map, pid_t pid)
{
	char dir[64], name[32];
	const char *why;
	struct stat st;
	pid_t inner = 0;
	off_t size;
	int rootfd, dirfd = -1, fd, err = 0;

	if (read_status(pid, &inner, &map->uid, &map->has_uid)) {
		map->ns_pid = inner;
		/* the process's /tmp, which in a container is not ours */
		snprintf(dir, sizeof(dir), "/proc/%d/root", (int)pid);
		rootfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	} else if (!map->ns_pid || map->ns_pid == pid) {
		/*
		 * Gone: JITs leave the file behind for perf to read after the exit. Ours is the
		 * right /tmp unless the process lived in another PID namespace (then its root
		 * went with it).
		 */
		inner = pid;
		rootfd = -1;
	} else {
		return -ESRCH;
	}
	snprintf(name, sizeof(name), "perf-%d.map", (int)inner);
	/* a zombie still has its status but no root to go through: the same fallback */
	if (rootfd < 0 && inner != pid)
		return -ESRCH;
	if (rootfd < 0)
		rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return -errno;
	fd = open_in_root(rootfd, "tmp", name, &dirfd, &st);
	close(rootfd);
	if (fd < 0 && fd != -EINVAL) {
		err = fd;
		goto out_close_dir;
	}
	snprintf(map->path, sizeof(map->path), "/tmp/%s", name);
	why = fd < 0 ? "not a regular file" : refusal(map, fd, dirfd, &st);
	if (why) {
		if (!map->warned_rejected)
			gs_dbg("perf map %s of pid %d ignored: %s", map->path, (int)pid, why);
		map->warned_rejected = true;
		err = -EPERM;
		goto out_close;
	}
	if (st.st_dev != map->dev || st.st_ino != map->ino || st.st_size < map->consumed) {
		clear(map);
		map->dev = st.st_dev;
		map->ino = st.st_ino;
	}
	size = st.st_size;
	if (size > (off_t)GS_PERF_MAP_MAX_BYTES) {
		if (!map->warned_size)
			gs_warn("perf map %s of pid %d: larger than %lu MiB, the rest ignored",
				map->path, (int)pid, GS_PERF_MAP_MAX_BYTES >> 20);
		map->warned_size = true;
		size = (off_t)GS_PERF_MAP_MAX_BYTES;
	}
	if (size > map->consumed)
		err = read_appended(map, fd, size);
out_close:
	if (fd >= 0)
		close(fd);
out_close_dir:
	if (dirfd >= 0)
		close(dirfd);
	return err;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

const char *gs_perf_map__resolve(struct gs_perf_map *map, pid_t pid, uint64_t addr,
				 uint64_t *offset)
{
	const char *name = gs_perf_map__lookup(map, addr, offset);
	struct miss *m = &map->misses[(addr >> 4) % MISS_SLOTS];
	uint64_t now;
	int err;

	if (name)
		return name;
	now = now_ns();
	/* no file (a process that is no JIT), or one refused: not tried on every frame */
	if (map->failed_at_ns && now - map->failed_at_ns < RECHECK_NS)
		return NULL;
	/* looked for after the last read: only what was appended since could name it */
	if (m->at_ns && m->addr == addr && now - m->at_ns < RECHECK_NS)
		return NULL;
	err = gs_perf_map__update(map, pid);
	map->failed_at_ns = err ? now : 0;
	if (err)
		return NULL;
	name = gs_perf_map__lookup(map, addr, offset);
	if (!name) {
		m->addr = addr;
		m->at_ns = now;
	}
	return name;
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
	const struct perf_sym *s;
	size_t lo;

	if (!map->sorted && map->nr) { /* qsort(NULL, 0, ...) is undefined */
		qsort(map->syms, map->nr, sizeof(*map->syms), cmp_sym);
		map->sorted = true;
	}
	/* the last symbol starting at or below addr: of several at one start, the latest */
	lo = GS_SYM_SEARCH(map->syms, map->nr, start, addr);
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
