// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_safe_open.c: files other processes name are opened only when regular; others never. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/openat2.h>
#include "tests/unit/harness.h"
#include "user/safe_open.h"

struct scratch {
	char dir[32];
	int fd; /* O_PATH of dir */
};

static bool scratch_new(struct scratch *s)
{
	snprintf(s->dir, sizeof(s->dir), "/tmp/gs_safe_open_XXXXXX");
	if (!mkdtemp(s->dir))
		return false;
	s->fd = open(s->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return s->fd >= 0;
}

static void scratch_free(struct scratch *s)
{
	char cmd[64];

	close(s->fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", s->dir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", s->dir);
}

static const char *in(const struct scratch *s, const char *name, char *buf)
{
	snprintf(buf, PATH_MAX, "%s/%s", s->dir, name);
	return buf;
}

static void make_file(const struct scratch *s, const char *name, const char *text)
{
	char path[PATH_MAX];
	FILE *f = fopen(in(s, name, path), "we");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/*
 * gs_open_regular_at(name) with an IN_OPEN watch on the file: how many times the file
 * itself was opened (an O_PATH look-up is no open), and what the call returned in *ret.
 */
static int opens_of(const struct scratch *s, const char *name, int *ret)
{
	char path[PATH_MAX], buf[4096];
	int watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC), fd;
	struct stat st;
	ssize_t n;

	if (watch < 0 || inotify_add_watch(watch, in(s, name, path), IN_OPEN) < 0)
		return -1;
	fd = gs_open_regular_at(s->fd, name, RESOLVE_BENEATH, &st);
	*ret = fd < 0 ? fd : 0;
	if (fd >= 0)
		close(fd);
	n = read(watch, buf, sizeof(buf));
	close(watch);
	return n > 0 ? (int)(n / (ssize_t)sizeof(struct inotify_event)) : 0;
}

GS_TEST(regular_file_opens_with_its_stat)
{
	struct scratch s;
	struct stat st, want;
	char path[PATH_MAX], text[8] = "";
	int fd;

	if (!GS_EXPECT(scratch_new(&s)))
		return;
	make_file(&s, "plain", "hello");
	fd = gs_open_regular_at(s.fd, "plain", RESOLVE_BENEATH, &st);
	if (GS_EXPECT(fd >= 0)) {
		GS_EXPECT_EQ(read(fd, text, sizeof(text) - 1), 5);
		GS_EXPECT_STR_EQ(text, "hello");
		GS_EXPECT_EQ(stat(in(&s, "plain", path), &want), 0);
		GS_EXPECT_EQ(st.st_ino, want.st_ino);
		GS_EXPECT_EQ(st.st_dev, want.st_dev);
		close(fd);
	}
	scratch_free(&s);
}

/* a FIFO is looked at, never opened: no IN_OPEN, so no wait for a writer, no reader seen */
GS_TEST(fifo_is_refused_without_being_opened)
{
	struct scratch s;
	char path[PATH_MAX];
	int ret = 0;

	if (!GS_EXPECT(scratch_new(&s)))
		return;
	GS_EXPECT_EQ(mkfifo(in(&s, "fifo", path), 0600), 0);
	GS_EXPECT_EQ(opens_of(&s, "fifo", &ret), 0);
	GS_EXPECT_EQ(ret, -EINVAL);
	/* the watch does see opens: a regular file's is one */
	make_file(&s, "seen", "x");
	GS_EXPECT_EQ(opens_of(&s, "seen", &ret), 1);
	GS_EXPECT_EQ(ret, 0);
	scratch_free(&s);
}

/* a device's open acts (a watchdog starts counting): /dev/null stands for one */
GS_TEST(device_is_refused_even_through_a_swapped_in_directory)
{
	struct scratch s;
	char path[PATH_MAX];
	struct stat st;
	int fd;

	if (!GS_EXPECT(scratch_new(&s)))
		return;
	fd = gs_open_in_root(NULL, "/dev/null", &st);
	GS_EXPECT_EQ(fd, -EINVAL);
	/* a directory of the path replaced by a symlink, as a user can do to their own */
	GS_EXPECT_EQ(symlink("/dev", in(&s, "lib", path)), 0);
	fd = gs_open_in_root(NULL, in(&s, "lib/null", path), &st);
	GS_EXPECT_EQ(fd, -EINVAL);
	if (fd >= 0)
		close(fd);
	scratch_free(&s);
}

GS_TEST(symlink_as_last_component_is_refused)
{
	struct scratch s;
	char path[PATH_MAX], target[PATH_MAX];
	struct stat st;

	if (!GS_EXPECT(scratch_new(&s)))
		return;
	make_file(&s, "target", "secret");
	GS_EXPECT_EQ(symlink(in(&s, "target", target), in(&s, "link", path)), 0);
	GS_EXPECT_EQ(gs_open_regular_at(s.fd, "link", RESOLVE_BENEATH, &st), -ELOOP);
	GS_EXPECT_EQ(gs_open_in_root(NULL, path, &st), -ELOOP);
	scratch_free(&s);
}

/* inside a root, an absolute symlink resolves inside it, not in ours */
GS_TEST(root_confines_absolute_symlinks)
{
	struct scratch s;
	char path[PATH_MAX], text[16] = "";
	struct stat st;
	int fd;

	if (!GS_EXPECT(scratch_new(&s)))
		return;
	GS_EXPECT_EQ(mkdir(in(&s, "etc", path), 0700), 0);
	make_file(&s, "etc/hostname", "inside");
	GS_EXPECT_EQ(symlink("/etc", in(&s, "up", path)), 0);
	fd = gs_open_in_root(s.dir, "/up/hostname", &st);
	if (GS_EXPECT(fd >= 0)) {
		GS_EXPECT_EQ(read(fd, text, sizeof(text) - 1), 6);
		GS_EXPECT_STR_EQ(text, "inside");
		close(fd);
	}
	scratch_free(&s);
}

GS_TEST_MAIN(regular_file_opens_with_its_stat, fifo_is_refused_without_being_opened,
	     device_is_refused_even_through_a_swapped_in_directory,
	     symlink_as_last_component_is_refused, root_confines_absolute_symlinks)
