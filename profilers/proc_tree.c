// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* proc_tree.c: the followed processes' parents and ranks, kept after they exit. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "profilers/proc_tree.h"
#include "user/array.h"
#include "user/pid_index.h"
#include "user/proc_info.h"

struct gs_proc_tree {
	struct gs_proc_tree_entry *entries;
	size_t nr, cap;
	struct gs_pid_index newest; /* pid -> its newest entry: a reused pid's live process */
};

struct gs_proc_tree *gs_proc_tree__new(void)
{
	return calloc(1, sizeof(struct gs_proc_tree));
}

void gs_proc_tree__free(struct gs_proc_tree *tree)
{
	if (!tree)
		return;
	free(tree->entries);
	gs_pid_index__release(&tree->newest);
	free(tree);
}

static struct gs_proc_tree_entry *find(const struct gs_proc_tree *tree, pid_t pid)
{
	size_t pos;

	return gs_pid_index__get(&tree->newest, pid, &pos) ? &tree->entries[pos] : NULL;
}

const struct gs_proc_tree_entry *gs_proc_tree__find(const struct gs_proc_tree *tree, pid_t pid)
{
	return tree ? find(tree, pid) : NULL;
}

void gs_proc_tree_label(const struct gs_proc_tree_entry *e, const char *comm, char *buf, size_t len)
{
	int n;

	if (!e || e->rank < 0)
		n = snprintf(buf, len, "%s", comm);
	else if (e->local_rank < 0)
		n = snprintf(buf, len, "%s (rank %d)", comm, (int)e->rank);
	else
		n = snprintf(buf, len, "%s (rank %d, local %d)", comm, (int)e->rank,
			     (int)e->local_rank);
	if (n < 0 && len)
		*buf = '\0';
}

/* A plain decimal below 2^31 of exactly len bytes, or -1. */
static int32_t parse_rank(const char *s, size_t len)
{
	int64_t v = 0;

	if (!len || len > 10)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v <= INT32_MAX ? (int32_t)v : -1;
}

/* the first name found wins: the launcher's own before the scheduler's */
static const char *const rank_names[] = { "RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID" };
static const char *const local_rank_names[] = { "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
						"SLURM_LOCALID" };
static const char *const world_size_names[] = { "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE",
						"SLURM_NTASKS" };
#define NR_NAMES 3

/* Which of names (NR_NAMES of them) the string s of len bytes sets; its value in *value. */
static int match_name(const char *const *names, const char *s, size_t len, const char **value)
{
	for (int i = 0; i < NR_NAMES; i++) {
		size_t n = strlen(names[i]);

		if (len > n && s[n] == '=' && !memcmp(s, names[i], n)) {
			*value = s + n + 1;
			return i;
		}
	}
	return -1;
}

/* Takes s (a "NAME=value" of len bytes) into *out if names sets it better than *best did. */
static void take_rank(const char *const *names, const char *s, size_t len, int *best, int32_t *out)
{
	const char *value;
	int i = match_name(names, s, len, &value);
	int32_t v;

	if (i < 0 || i >= *best)
		return;
	v = parse_rank(value, len - (size_t)(value - s));
	if (v < 0)
		return;
	*out = v;
	*best = i;
}

void gs_parse_rank_env(const char *env, size_t len, int32_t *rank, int32_t *local_rank,
		       int32_t *world_size)
{
	int best_rank = NR_NAMES, best_local = NR_NAMES, best_size = NR_NAMES;
	const char *end = env + len, *s = env;
	int32_t size;

	*rank = *local_rank = size = -1;
	while (s < end) {
		const char *nul = memchr(s, '\0', (size_t)(end - s));
		size_t n = nul ? (size_t)(nul - s) : (size_t)(end - s);

		take_rank(rank_names, s, n, &best_rank, rank);
		take_rank(local_rank_names, s, n, &best_local, local_rank);
		take_rank(world_size_names, s, n, &best_size, &size);
		s += n + 1;
	}
	if (world_size)
		*world_size = size;
}

int gs_read_rank_env(pid_t pid, int32_t *rank, int32_t *local_rank, int32_t *world_size)
{
	char path[64];
	size_t len = 0;
	ssize_t n;
	char *buf;
	int fd, err = 0;

	*rank = *local_rank = -1;
	if (world_size)
		*world_size = -1;
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(GS_ENVIRON_MAX);
	if (!buf)
		err = -ENOMEM;
	while (buf && len < GS_ENVIRON_MAX) {
		n = read(fd, buf + len, GS_ENVIRON_MAX - len);
		if (n <= 0)
			break; /* an error keeps what was read */
		len += (size_t)n;
	}
	close(fd);
	if (buf)
		gs_parse_rank_env(buf, len, rank, local_rank, world_size);
	free(buf);
	return err;
}

static void read_facts(struct gs_proc_tree_entry *e)
{
	gs_read_comm(e->pid, e->pid, e->comm, sizeof(e->comm));
	gs_read_rank_env(e->pid, &e->rank, &e->local_rank, NULL);
}

int gs_proc_tree__add(struct gs_proc_tree *tree, pid_t pid, pid_t ppid)
{
	struct gs_proc_tree_entry *e = find(tree, pid);

	if (!e || e->exited) {
		if (GS_ARRAY_RESERVE(tree->entries, tree->nr, tree->cap, 16) ||
		    gs_pid_index__set(&tree->newest, pid, tree->nr))
			return -ENOMEM;
		e = &tree->entries[tree->nr++];
	}
	*e = (struct gs_proc_tree_entry){ .pid = pid, .ppid = ppid };
	read_facts(e);
	return 0;
}

void gs_proc_tree__exec(struct gs_proc_tree *tree, pid_t pid)
{
	struct gs_proc_tree_entry *e = find(tree, pid);

	if (e && !e->exited)
		read_facts(e);
}

void gs_proc_tree__exit(struct gs_proc_tree *tree, pid_t pid)
{
	struct gs_proc_tree_entry *e = find(tree, pid);

	if (e)
		e->exited = true;
}

/* The parent of pid from /proc/PID/stat; 0 when unreadable. */
static pid_t read_ppid(pid_t pid)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd, ppid;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* the comm, in parentheses, may hold ')' and spaces: the fields follow the last ')' */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1 || ppid < 0)
		return 0;
	return (pid_t)ppid;
}

struct proc_list {
	pid_t *pids, *ppids;
	size_t nr, cap, cap_ppids;
};

static int list_append(struct proc_list *l, pid_t pid, pid_t ppid)
{
	if (GS_ARRAY_RESERVE(l->pids, l->nr, l->cap, 64) ||
	    GS_ARRAY_RESERVE(l->ppids, l->nr, l->cap_ppids, 64))
		return -ENOMEM;
	l->pids[l->nr] = pid;
	l->ppids[l->nr++] = ppid;
	return 0;
}

static void list_release(struct proc_list *l)
{
	free(l->pids);
	free(l->ppids);
}

/* Every process of the system with its parent. */
static int list_processes(struct proc_list *all)
{
	DIR *dir = opendir("/proc");
	struct dirent *de;
	int err = 0;

	if (!dir)
		return -errno;
	while ((de = readdir(dir)) && !err) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || pid > 0x3fffffff)
			continue;
		err = list_append(all, (pid_t)pid, read_ppid((pid_t)pid));
	}
	closedir(dir);
	return err;
}

static bool listed(const struct proc_list *l, pid_t pid)
{
	for (size_t i = 0; i < l->nr; i++)
		if (l->pids[i] == pid)
			return true;
	return false;
}

int gs_proc_tree_descendants(const pid_t *roots, size_t nr_roots, pid_t **pids, pid_t **ppids,
			     size_t *nr)
{
	struct proc_list all = { 0 }, out = { 0 };
	size_t next = 0;
	int err = list_processes(&all);

	/* breadth first from the roots: parents come before their children */
	for (size_t r = 0; r < nr_roots && !err; r++)
		err = list_append(&out, roots[r], 0);
	for (; next < out.nr && !err; next++) {
		for (size_t i = 0; i < all.nr && !err; i++)
			if (all.ppids[i] == out.pids[next] && !listed(&out, all.pids[i]))
				err = list_append(&out, all.pids[i], out.pids[next]);
	}
	list_release(&all);
	if (err || out.nr == nr_roots) {
		list_release(&out);
		*pids = *ppids = NULL;
		*nr = 0;
		return err;
	}
	/* the roots themselves are not descendants */
	memmove(out.pids, out.pids + nr_roots, (out.nr - nr_roots) * sizeof(pid_t));
	memmove(out.ppids, out.ppids + nr_roots, (out.nr - nr_roots) * sizeof(pid_t));
	*pids = out.pids;
	*ppids = out.ppids;
	*nr = out.nr - nr_roots;
	return 0;
}
