// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_out_dir.c: the daemon's output directory: private or refused, files renamed in whole. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tests/unit/harness.h"
#include "user/out_dir.h"
#include "user/out_file.h"

static char dir[64];

static bool setup(mode_t mode)
{
	snprintf(dir, sizeof(dir), "/tmp/gs-test-outdir-XXXXXX");
	return mkdtemp(dir) && !chmod(dir, mode);
}

static int entries(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

static void teardown(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dirfd(d), de->d_name, 0);
	if (d)
		closedir(d);
	rmdir(dir);
}

static bool exists(const char *name)
{
	char p[400];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return !access(p, F_OK);
}

GS_TEST(writable_by_others_is_refused)
{
	struct gs_out_dir *d = NULL;

	if (!GS_EXPECT(setup(0777)))
		return;
	GS_EXPECT_EQ(gs_out_dir__open(&d, dir, "gs-", 0), -EPERM);
	chmod(dir, 0770);
	GS_EXPECT_EQ(gs_out_dir__open(&d, dir, "gs-", 0), -EPERM);
	chmod(dir, 0755);
	if (GS_EXPECT_EQ(gs_out_dir__open(&d, dir, "gs-", 0), 0))
		gs_out_dir__free(d);
	teardown();
}

GS_TEST(owned_by_another_user_is_refused)
{
	struct gs_out_dir *d = NULL;

	if (geteuid() != 0) /* only root can give a directory away */
		return;
	if (!GS_EXPECT(setup(0700)))
		return;
	if (GS_EXPECT(!chown(dir, 65534, 65534)))
		GS_EXPECT_EQ(gs_out_dir__open(&d, dir, "gs-", 0), -EPERM);
	teardown();
}

GS_TEST(report_is_renamed_in_whole_never_over_a_file)
{
	struct gs_out_dir *d = NULL;
	struct gs_out *o;
	char path[256];

	if (!GS_EXPECT(setup(0700)))
		return;
	if (!GS_EXPECT_EQ(gs_out_dir__open(&d, dir, "gs-", 0), 0))
		goto out;
	if (GS_EXPECT_EQ(gs_out_dir__create(d, "a.json", &o, path, sizeof(path)), 0)) {
		fputs("{}", gs_out__file(o));
		fflush(gs_out__file(o));
		GS_EXPECT(!exists("gs-a.json")); /* only its temporary while written */
		GS_EXPECT_EQ(entries(), 1);
		GS_EXPECT_EQ(gs_out__close(o), 0);
	}
	GS_EXPECT(exists("gs-a.json"));
	GS_EXPECT_EQ(entries(), 1);
	/* the same name again: refused at the rename, the first file stays, no temporary */
	if (GS_EXPECT_EQ(gs_out_dir__create(d, "a.json", &o, path, sizeof(path)), 0)) {
		fputs("{\"again\":1}", gs_out__file(o));
		GS_EXPECT_EQ(gs_out__close(o), -EEXIST);
	}
	GS_EXPECT_EQ(entries(), 1);
	gs_out_dir__free(d);
out:
	teardown();
}

GS_TEST(child_temporary_committed_or_discarded)
{
	struct gs_out_dir *d = NULL;
	char tmp[320], path[256];
	int fd;

	if (!GS_EXPECT(setup(0700)))
		return;
	if (!GS_EXPECT_EQ(gs_out_dir__open(&d, dir, "gs-", 0), 0))
		goto out;
	fd = gs_out_dir__create_tmp(d, "rec.json.gz", tmp, sizeof(tmp), path, sizeof(path));
	if (GS_EXPECT(fd >= 0)) {
		close(fd);
		GS_EXPECT_EQ(gs_out_dir__commit(d, tmp, "rec.json.gz"), 0);
	}
	GS_EXPECT(exists("gs-rec.json.gz"));
	fd = gs_out_dir__create_tmp(d, "failed.json.gz", tmp, sizeof(tmp), path, sizeof(path));
	if (GS_EXPECT(fd >= 0)) {
		close(fd);
		GS_EXPECT(exists(tmp));
		gs_out_dir__discard(d, tmp);
	}
	GS_EXPECT_EQ(entries(), 1);
	/* a temporary a killed run left goes at the next open; other files stay */
	fd = gs_out_dir__create_tmp(d, "killed.json.gz", tmp, sizeof(tmp), path, sizeof(path));
	if (GS_EXPECT(fd >= 0))
		close(fd);
	gs_out_dir__free(d);
	GS_EXPECT_EQ(entries(), 2);
	if (GS_EXPECT_EQ(gs_out_dir__open(&d, dir, "gs-", 0), 0))
		gs_out_dir__free(d);
	GS_EXPECT_EQ(entries(), 1);
	GS_EXPECT(exists("gs-rec.json.gz"));
out:
	teardown();
}

GS_TEST_MAIN(writable_by_others_is_refused, owned_by_another_user_is_refused,
	     report_is_renamed_in_whole_never_over_a_file, child_temporary_committed_or_discarded)
