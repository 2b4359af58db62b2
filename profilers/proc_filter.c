// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* proc_filter.c: comm and cgroup membership of processes, read from /proc, cached per pid. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "profilers/proc_filter.h"
#include "user/log.h"
#include "user/pid_index.h"
#include "user/proc_info.h"

/* /proc/PID/cgroup and /proc/self/mountinfo are read whole up to these sizes */
#define CGROUP_TEXT_MAX	   (16u << 10)
#define MOUNTINFO_TEXT_MAX (1u << 20)

enum { JUDGED_OUT = 1, JUDGED_IN = 2 }; /* pos values in the cache */

struct gs_proc_filter {
	bool has_comm;
	regex_t comm;
	bool has_cgroup;
	char key[64];		   /* "" for cgroup v2, else a controller of the v1 hierarchy */
	char rel[PATH_MAX];	   /* the cgroup's path within its hierarchy: "/a/b" */
	struct gs_pid_index cache; /* pid -> JUDGED_* */
};

/* Reads path whole, NUL-terminated, at most max - 1 bytes into a malloc'ed buffer (or NULL). */
static char *read_text(const char *path, size_t max)
{
	char *buf = malloc(max);
	size_t len = 0;
	ssize_t n;
	int fd;

	if (!buf)
		return NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		free(buf);
		return NULL;
	}
	while (len < max - 1 && (n = read(fd, buf + len, max - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	return buf;
}

/* Whether mount point mnt holds dir: dir is mnt, or mnt followed by '/' in dir. */
static size_t holds(const char *mnt, const char *dir)
{
	size_t n = strlen(mnt);

	if (!strcmp(mnt, "/"))
		return 1;
	if (strncmp(dir, mnt, n) || (dir[n] && dir[n] != '/'))
		return 0;
	return n;
}

/* The first controller-like option of a v1 mount's super options ("rw,memory" -> memory). */
static void v1_key(const char *opts, char *key, size_t key_len)
{
	char buf[256], *save, *tok;

	snprintf(buf, sizeof(buf), "%s", opts);
	key[0] = '\0';
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "rw") || !strcmp(tok, "ro") || !strcmp(tok, "clone_children") ||
		    !strcmp(tok, "noprefix") || !strcmp(tok, "xattr") ||
		    !strncmp(tok, "release_agent=", 14))
			continue;
		snprintf(key, key_len, "%s", tok);
		return;
	}
}

int gs_cgroup_locate(const char *mountinfo, const char *dir, char *key, size_t key_len, char *rel,
		     size_t rel_len)
{
	size_t best = 0;
	const char *line = mountinfo;

	while (line && *line) {
		char root[PATH_MAX], mnt[PATH_MAX], type[32], opts[256];
		const char *dash = strstr(line, " - "), *end = strchr(line, '\n');
		size_t n;

		if (dash && (!end || dash < end) &&
		    sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) == 2 &&
		    sscanf(dash, " - %31s %*s %255s", type, opts) == 2 &&
		    (!strcmp(type, "cgroup2") || !strcmp(type, "cgroup")) &&
		    (n = holds(mnt, dir)) > best) {
			best = n;
			if (!strcmp(type, "cgroup2"))
				key[0] = '\0';
			else
				v1_key(opts, key, key_len);
			/* the mount shows root's subtree: dir's path is root's plus the rest */
			snprintf(rel, rel_len, "%s%s", strcmp(root, "/") ? root : "",
				 strcmp(mnt, "/") ? dir + n : dir);
			if (!rel[0])
				snprintf(rel, rel_len, "/");
		}
		line = end ? end + 1 : NULL;
	}
	return best ? 0 : -ENOENT;
}

/* Whether a comma list of controllers names key. */
static bool lists(const char *list, size_t len, const char *key)
{
	size_t kl = strlen(key);

	for (size_t i = 0; i < len;) {
		const char *c = memchr(list + i, ',', len - i);
		size_t n = c ? (size_t)(c - (list + i)) : len - i;

		if (n == kl && !strncmp(list + i, key, n))
			return true;
		i += n + 1;
	}
	return false;
}

bool gs_cgroup_contains(const char *text, const char *key, const char *rel)
{
	size_t rl = strlen(rel);

	while (rl > 1 && rel[rl - 1] == '/')
		rl--;
	for (const char *line = text; line && *line;) {
		const char *c1 = strchr(line, ':'), *end = strchr(line, '\n');
		const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL, *path;
		size_t pl;

		if (!end)
			end = line + strlen(line);
		if (c1 && c2 && c2 < end &&
		    (*key ? lists(c1 + 1, (size_t)(c2 - c1 - 1), key) : c2 == c1 + 1)) {
			path = c2 + 1;
			pl = (size_t)(end - path);
			if (rl == 1 && rel[0] == '/')
				return true;
			if (pl >= rl && !strncmp(path, rel, rl) && (pl == rl || path[rl] == '/'))
				return true;
		}
		line = *end ? end + 1 : NULL;
	}
	return false;
}

static int locate(struct gs_proc_filter *f, const char *cgroup)
{
	char dir[PATH_MAX], *mi;
	int err;

	if (!realpath(cgroup, dir)) {
		gs_err("--cgroup %s: %s", cgroup, strerror(errno));
		return -EINVAL;
	}
	mi = read_text("/proc/self/mountinfo", MOUNTINFO_TEXT_MAX);
	if (!mi)
		return -ENOMEM;
	err = gs_cgroup_locate(mi, dir, f->key, sizeof(f->key), f->rel, sizeof(f->rel));
	free(mi);
	if (err) {
		gs_err("--cgroup %s: not a cgroup directory (e.g. /sys/fs/cgroup/system.slice)",
		       cgroup);
		return -EINVAL;
	}
	f->has_cgroup = true;
	return 0;
}

int gs_proc_filter__new(struct gs_proc_filter **out, const char *comm_re, const char *cgroup)
{
	struct gs_proc_filter *f = calloc(1, sizeof(*f));
	char why[128];
	int err;

	*out = NULL;
	if (!f)
		return -ENOMEM;
	if (comm_re) {
		err = regcomp(&f->comm, comm_re, REG_EXTENDED | REG_NOSUB);
		if (err) {
			regerror(err, &f->comm, why, sizeof(why));
			gs_err("--comm '%s': %s", comm_re, why);
			free(f);
			return -EINVAL;
		}
		f->has_comm = true;
	}
	if (cgroup && (err = locate(f, cgroup))) {
		gs_proc_filter__free(f);
		return err;
	}
	*out = f;
	return 0;
}

void gs_proc_filter__free(struct gs_proc_filter *f)
{
	if (!f)
		return;
	if (f->has_comm)
		regfree(&f->comm);
	gs_pid_index__release(&f->cache);
	free(f);
}

static bool judge(const struct gs_proc_filter *f, pid_t pid)
{
	char comm[32], path[64], *text;
	bool in;

	if (f->has_comm) {
		gs_read_comm(pid, pid, comm, sizeof(comm));
		if (regexec(&f->comm, comm, 0, NULL, 0))
			return false;
	}
	if (!f->has_cgroup)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	text = read_text(path, CGROUP_TEXT_MAX);
	in = text && gs_cgroup_contains(text, f->key, f->rel);
	free(text);
	return in;
}

bool gs_proc_filter__match(struct gs_proc_filter *f, pid_t pid)
{
	size_t v;
	bool in;

	if (gs_pid_index__get(&f->cache, pid, &v))
		return v == JUDGED_IN;
	in = judge(f, pid);
	gs_pid_index__set(&f->cache, pid, in ? JUDGED_IN : JUDGED_OUT); /* uncached on ENOMEM */
	return in;
}

void gs_proc_filter__forget(struct gs_proc_filter *f, pid_t pid)
{
	if (f)
		gs_pid_index__remove(&f->cache, pid);
}
