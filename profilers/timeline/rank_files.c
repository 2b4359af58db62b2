// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* rank_files.c: the files of `record -o DIR/`, one per rank or rankless process. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profilers/timeline/rank_files.h"
#include "profilers/proc_tree.h"
#include "user/json.h"
#include "user/log.h"
#include "user/out_file.h"

bool gs_rank_files_wanted(const char *output)
{
	struct stat st;
	size_t len = output ? strlen(output) : 0;

	if (!len)
		return false;
	return output[len - 1] == '/' || (!stat(output, &st) && S_ISDIR(st.st_mode));
}

/*
 * DIR itself, never where a symlink named DIR points ("DIR/" would follow one: the slashes
 * go), owned by root or the caller: whoever owns it chooses what its names are.
 */
static int open_dir(const char *dir)
{
	char path[4096];
	size_t len = strlen(dir);
	struct stat st;
	int fd, err;

	while (len > 1 && dir[len - 1] == '/')
		len--;
	if (len >= sizeof(path)) {
		gs_err("-o %s: name too long", dir);
		return -ENAMETOOLONG;
	}
	memcpy(path, dir, len);
	path[len] = '\0';
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		if (!lstat(path, &st) && S_ISLNK(st.st_mode))
			gs_err("-o %s: a symlink: refused (name the directory it points to)", dir);
		else
			gs_err("-o %s: %s", dir, strerror(-err));
		return err;
	}
	if (fstat(fd, &st) || (st.st_uid && st.st_uid != getuid() && st.st_uid != geteuid())) {
		gs_err("-o %s: owned by uid %u, neither yours nor root's: refused", dir,
		       (unsigned int)st.st_uid);
		close(fd);
		return -EPERM;
	}
	return fd;
}

int gs_rank_files__open(struct gs_rank_files **rr, const char *dir, uint64_t window_ns)
{
	struct gs_rank_files *r = calloc(1, sizeof(*r));
	int err;

	*rr = NULL;
	if (!r || !(r->dir = strdup(dir))) {
		free(r);
		gs_err("out of memory");
		return -ENOMEM;
	}
	r->dirfd = -1;
	r->window_ns = window_ns;
	r->held.max = GS_TRACE_WRITER_MAX_HELD_BYTES;
	if (mkdir(dir, 0777) && errno != EEXIST) {
		err = -errno;
		gs_err("%s: %s", dir, strerror(errno));
		gs_rank_files__free(r);
		return err;
	}
	/* every file is made relative to this one descriptor: a directory swapped in later
	 * under the same name changes nothing */
	r->dirfd = open_dir(dir);
	if (r->dirfd < 0) {
		err = r->dirfd;
		gs_rank_files__free(r);
		return err;
	}
	*rr = r;
	return 0;
}

/* What goes between DIR as given and a name in it, for messages: "/" unless it ends in one */
static const char *dir_sep(const struct gs_rank_files *rr)
{
	return rr->dir[strlen(rr->dir) - 1] == '/' ? "" : "/";
}

static long find(const struct gs_rank_files *rr, long rank, pid_t pid)
{
	for (size_t i = 0; i < rr->nr; i++) {
		const struct gs_rank_file *f = &rr->files[i];

		if (rank >= 0 ? f->rank == rank : f->rank < 0 && f->pid == pid)
			return (long)i;
	}
	return -1;
}

static int open_file(struct gs_rank_files *rr, struct gs_rank_file *f)
{
	char name[64], display[4096];
	struct stat st;
	int err;

	if (f->rank >= 0)
		snprintf(name, sizeof(name), "rank-%ld.json", f->rank);
	else
		snprintf(name, sizeof(name), "pid-%d.json", (int)f->pid);
	snprintf(display, sizeof(display), "%s%s%s", rr->dir, dir_sep(rr), name);
	/* an existing file stays as it is; the rename at the end refuses one made meanwhile */
	if (!fstatat(rr->dirfd, name, &st, AT_SYMLINK_NOFOLLOW)) {
		gs_err("%s: exists: not overwritten (remove it or name another directory)",
		       display);
		return -EEXIST;
	}
	err = gs_out__openat(&f->out, rr->dirfd, name, display, 0666, GS_OUT_NOREPLACE);
	if (err)
		return err;
	f->writer = gs_trace_writer__new(gs_out__file(f->out), rr->window_ns);
	if (!f->writer) {
		gs_out__abort(f->out);
		f->out = NULL;
		gs_err("out of memory");
		return -ENOMEM;
	}
	gs_trace_writer__share_budget(f->writer, &rr->held);
	return 0;
}

/*
 * A rank file says its world's size: read from the environment of its processes while they
 * live (their first events), a few times at most (a read can come up empty mid-exec).
 */
static void read_world_size(struct gs_rank_file *f, pid_t pid)
{
	int32_t rank, local_rank, world_size;

	if (f->rank < 0 || f->world_size > 0 || f->size_reads >= 4)
		return;
	f->size_reads++;
	if (!gs_read_rank_env(pid, &rank, &local_rank, &world_size) && world_size > 0)
		f->world_size = world_size;
}

long gs_rank_files__file(struct gs_rank_files *rr, long rank, pid_t pid)
{
	long i = find(rr, rank, pid);
	struct gs_rank_file *f;
	int err;

	if (i >= 0) {
		read_world_size(&rr->files[i], pid);
		return i;
	}
	if (rr->error)
		return rr->error;
	if (rr->nr == rr->cap) {
		size_t cap = rr->cap ? 2 * rr->cap : 8;
		struct gs_rank_file *files = realloc(rr->files, cap * sizeof(*files));

		if (!files) {
			gs_err("out of memory");
			return rr->error = -ENOMEM;
		}
		rr->files = files;
		rr->cap = cap;
	}
	f = &rr->files[rr->nr];
	*f = (struct gs_rank_file){ .rank = rank < 0 ? -1 : rank, .world_size = -1, .pid = pid };
	read_world_size(f, pid);
	err = open_file(rr, f);
	if (err)
		return rr->error = err;
	return (long)rr->nr++;
}

void gs_rank_files__distributed_info(struct gs_json *j, long rank, long world_size)
{
	char info[96];

	if (rank < 0)
		return;
	/* HTA finds the rank by searching the text for "rank": N, space included */
	if (world_size >= 0)
		snprintf(info, sizeof(info), "{\"rank\": %ld, \"world_size\": %ld}", rank,
			 world_size);
	else
		snprintf(info, sizeof(info), "{\"rank\": %ld}", rank);
	gs_json__raw(j, "distributedInfo", info);
}

void gs_rank_files__top_level(const struct gs_rank_file *f, struct gs_json *j)
{
	gs_rank_files__distributed_info(j, f->rank, f->world_size > 0 ? f->world_size : -1);
}

/*
 * Holistic Trace Analysis loads every *.json of DIR as a rank, a file without "rank" as
 * rank 0: beside rank files, a rankless process's (the launcher's, sampled with -e cpu)
 * would take rank 0's place. With ranks in DIR such files move to DIR/no-rank/, once
 * complete; one that cannot stays where it is, said once.
 */
static void move_rankless(struct gs_rank_files *rr)
{
	const char *sep = dir_sep(rr);
	bool ranks = false, rankless = false;
	size_t moved = 0;
	char name[64];
	struct stat st;
	int fd;

	for (size_t i = 0; i < rr->nr; i++) {
		if (rr->files[i].rank >= 0)
			ranks = true;
		else
			rankless = true;
	}
	if (!ranks || !rankless)
		return;
	if (mkdirat(rr->dirfd, GS_RANK_FILES_NO_RANK_DIR, 0777) && errno != EEXIST)
		goto out_warn;
	fd = openat(rr->dirfd, GS_RANK_FILES_NO_RANK_DIR,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		goto out_warn;
	/* as DIR: root's or the caller's, whoever made it */
	if (fstat(fd, &st) || (st.st_uid && st.st_uid != getuid() && st.st_uid != geteuid())) {
		close(fd);
		errno = EPERM;
		goto out_warn;
	}
	for (size_t i = 0; i < rr->nr; i++) {
		if (rr->files[i].rank >= 0)
			continue;
		snprintf(name, sizeof(name), "pid-%d.json", (int)rr->files[i].pid);
		if (renameat2(rr->dirfd, name, fd, name, RENAME_NOREPLACE))
			gs_warn("%s%s%s: not moved to %s/: %s", rr->dir, sep, name,
				GS_RANK_FILES_NO_RANK_DIR, strerror(errno));
		else
			moved++;
	}
	close(fd);
	if (moved)
		gs_info("%s%s%s/: %zu trace%s of processes without a rank, apart from the ranks'",
			rr->dir, sep, GS_RANK_FILES_NO_RANK_DIR, moved, moved == 1 ? "" : "s");
	return;
out_warn:
	gs_warn("%s%s%s/: %s: the pid-P.json files stay beside the ranks'", rr->dir, sep,
		GS_RANK_FILES_NO_RANK_DIR, strerror(errno));
}

int gs_rank_files__close(struct gs_rank_files *rr)
{
	int ret = 0;

	for (size_t i = 0; i < rr->nr; i++) {
		int err = gs_out__close(rr->files[i].out);

		rr->files[i].out = NULL;
		if (err && !ret)
			ret = err;
	}
	if (!ret)
		move_rankless(rr);
	return ret;
}

void gs_rank_files__free(struct gs_rank_files *rr)
{
	if (!rr)
		return;
	for (size_t i = 0; i < rr->nr; i++) {
		gs_trace_writer__free(rr->files[i].writer);
		gs_out__abort(rr->files[i].out);
	}
	free(rr->files);
	if (rr->dirfd >= 0)
		close(rr->dirfd);
	free(rr->dir);
	free(rr);
}
