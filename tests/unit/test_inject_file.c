// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_inject_file.c: which files --inject loads, resolved where the target sees them. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "tests/unit/harness.h"
#include "user/inject_file.h"
#include "user/proc_maps.h"

GS_TEST(only_root_owned_files_nobody_else_writes)
{
	struct stat st = { .st_mode = S_IFREG | 0755, .st_uid = 0 };

	GS_EXPECT(!gs_inject_file__why_not(&st));
	st.st_mode = S_IFREG | 0775;
	GS_EXPECT_STR_EQ(gs_inject_file__why_not(&st), "writable by group or others");
	st.st_mode = S_IFREG | 0757;
	GS_EXPECT_STR_EQ(gs_inject_file__why_not(&st), "writable by group or others");
	st.st_mode = S_IFREG | 0755;
	st.st_uid = 1000;
	GS_EXPECT_STR_EQ(gs_inject_file__why_not(&st), "not owned by root");
	st = (struct stat){ .st_mode = S_IFIFO | 0644 };
	GS_EXPECT_STR_EQ(gs_inject_file__why_not(&st), "not a regular file");
}

/* a symbolic link in the target's root resolves inside it, never to the caller's files */
GS_TEST(links_resolve_inside_the_root)
{
	char dir[] = "/tmp/gs-inject-XXXXXX", path[128];
	struct gs_file_id id = { 0 };
	const char *why = NULL;
	struct stat st;
	int root, fd, err;

	if (!GS_EXPECT(mkdtemp(dir)))
		return;
	snprintf(path, sizeof(path), "%s/lib.so", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0644);
	GS_EXPECT(fd >= 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/escape.so", dir);
	GS_EXPECT_EQ(symlink("/lib.so", path), 0); /* /lib.so of the root: dir/lib.so */
	root = open(dir, O_PATH | O_DIRECTORY);
	err = gs_inject_file__check_at(root, "/escape.so", &id, &why);
	snprintf(path, sizeof(path), "%s/lib.so", dir);
	GS_EXPECT_EQ(stat(path, &st), 0);
	if (getuid() == 0) {
		GS_EXPECT_EQ(err, 0);
		GS_EXPECT_EQ(id.inode, st.st_ino);
		GS_EXPECT_EQ(id.dev, st.st_dev);
		chmod(path, 0666);
		GS_EXPECT_EQ(gs_inject_file__check_at(root, "/lib.so", &id, &why), -EPERM);
		GS_EXPECT_STR_EQ(why, "writable by group or others");
	} else {
		GS_EXPECT_EQ(err, -EPERM);
		GS_EXPECT_STR_EQ(why, "not owned by root");
	}
	GS_EXPECT_EQ(gs_inject_file__check_at(root, "/missing.so", &id, &why), -ENOENT);
	close(root);
	unlink(path);
	snprintf(path, sizeof(path), "%s/escape.so", dir);
	unlink(path);
	rmdir(dir);
}

GS_TEST(loaded_file_found_by_device_and_inode)
{
	static const char sample[] =
		"7f0000000000-7f0000001000 r-xp 00000000 08:01 4242 /opt/lib.so\n"
		"7f0000001000-7f0000002000 rw-p 00000000 00:00 0\n";
	struct gs_maps *maps = gs_maps__parse(1, sample);
	struct gs_file_id same = { makedev(8, 1), 4242 }, other = { makedev(8, 2), 4242 };

	if (!GS_EXPECT(maps))
		return;
	GS_EXPECT(gs_inject_file__mapped(maps, &same));
	GS_EXPECT(!gs_inject_file__mapped(maps, &other));
	GS_EXPECT(!gs_inject_file__mapped(NULL, &same));
	gs_maps__free(maps);
}

GS_TEST_MAIN(only_root_owned_files_nobody_else_writes, links_resolve_inside_the_root,
	     loaded_file_found_by_device_and_inode)
