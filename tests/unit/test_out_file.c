// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_out_file.c: outputs renamed into place only when complete, with their real errno. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "tests/unit/harness.h"
#include "user/out_file.h"

static char dir[64];
static char path[128];

/* A fresh directory holding "out" (or name) with old content when old is not NULL. */
static bool setup(const char *name, const char *old)
{
	FILE *f;

	snprintf(dir, sizeof(dir), "/tmp/gs-test-out-XXXXXX");
	if (!mkdtemp(dir))
		return false;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!old)
		return true;
	f = fopen(path, "w");
	if (!f)
		return false;
	fputs(old, f);
	return !fclose(f);
}

/* Entries of dir other than . and .., and the first one's name. */
static int entries(char *first, size_t len)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!n++ && first)
			snprintf(first, len, "%s", de->d_name);
	}
	closedir(d);
	return n;
}

static char *slurp(const char *p)
{
	static char buf[1 << 16];
	gzFile gz = gzopen(p, "rb"); /* plain files read as they are */
	int n;

	if (!gz)
		return NULL;
	n = gzread(gz, buf, sizeof(buf) - 1);
	gzclose(gz);
	if (n < 0)
		return NULL;
	buf[n] = '\0';
	return buf;
}

static void teardown(void)
{
	char first[256], p[384];

	while (entries(first, sizeof(first)) > 0) {
		snprintf(p, sizeof(p), "%s/%s", dir, first);
		if (unlink(p))
			break;
	}
	rmdir(dir);
}

/* Lowers the file size limit (SIGXFSZ ignored, so write(2) fails with EFBIG); 0 restores. */
static void limit_fsize(rlim_t bytes)
{
	static struct rlimit saved;
	static bool have;
	struct rlimit rl;

	if (!have) {
		getrlimit(RLIMIT_FSIZE, &saved);
		signal(SIGXFSZ, SIG_IGN);
		have = true;
	}
	rl = saved;
	if (bytes)
		rl.rlim_cur = bytes;
	setrlimit(RLIMIT_FSIZE, &rl);
}

GS_TEST(renamed_over_the_old_file_only_when_closed)
{
	struct gs_out *o;
	char first[256];

	if (!GS_EXPECT(setup("out.json", "old")))
		return;
	if (!GS_EXPECT_EQ(gs_out__open(&o, path, 0), 0))
		goto out;
	fputs("new content", gs_out__file(o));
	fflush(gs_out__file(o));
	/* while written: the old file as it was, and one temporary beside it */
	GS_EXPECT_STR_EQ(slurp(path), "old");
	GS_EXPECT_EQ(entries(NULL, 0), 2);
	GS_EXPECT_EQ(gs_out__close(o), 0);
	GS_EXPECT_STR_EQ(slurp(path), "new content");
	GS_EXPECT_EQ(entries(first, sizeof(first)), 1);
	GS_EXPECT_STR_EQ(first, "out.json");
out:
	teardown();
}

GS_TEST(abort_leaves_the_old_file_and_no_temporary)
{
	struct gs_out *o;
	char first[256];

	if (!GS_EXPECT(setup("out.json", "old")))
		return;
	if (!GS_EXPECT_EQ(gs_out__open(&o, path, 0), 0))
		goto out;
	fputs("half a trace", gs_out__file(o));
	gs_out__abort(o);
	GS_EXPECT_STR_EQ(slurp(path), "old");
	GS_EXPECT_EQ(entries(first, sizeof(first)), 1);
	GS_EXPECT_STR_EQ(first, "out.json");
	/* a writer's failure: the same, and its error returned */
	if (!GS_EXPECT_EQ(gs_out__open(&o, path, 0), 0))
		goto out;
	fputs("half a trace", gs_out__file(o));
	GS_EXPECT_EQ(gs_out__fail(o, -ENOMEM), -ENOMEM);
	GS_EXPECT_STR_EQ(slurp(path), "old");
	GS_EXPECT_EQ(entries(NULL, 0), 1);
out:
	teardown();
}

/* Writes well past limit bytes and closes: the real errno, the old file untouched. */
static void write_error_keeps_errno(const char *name, unsigned int flags)
{
	static char chunk[4096];
	struct gs_out *o;
	char first[256];
	int err;

	if (!GS_EXPECT(setup(name, "old")))
		return;
	if (!GS_EXPECT_EQ(gs_out__open(&o, path, flags), 0))
		goto out;
	limit_fsize(8192);
	for (size_t i = 0; i < sizeof(chunk); i++) /* incompressible enough for gzip */
		chunk[i] = (char)(' ' + (i * 7919 + i / 13) % 90);
	for (int i = 0; i < 512; i++)
		fwrite(chunk, 1, sizeof(chunk), gs_out__file(o));
	err = gs_out__close(o);
	limit_fsize(0);
	GS_EXPECT_EQ(err, -EFBIG);
	GS_EXPECT_STR_EQ(slurp(path), "old");
	GS_EXPECT_EQ(entries(first, sizeof(first)), 1);
	GS_EXPECT_STR_EQ(first, name);
out:
	teardown();
}

GS_TEST(write_error_is_efbig_not_eio)
{
	write_error_keeps_errno("out.json", 0);
}

GS_TEST(gzip_write_error_is_efbig_not_eio)
{
	write_error_keeps_errno("out.json.gz", 0);
}

GS_TEST(gzip_by_name_and_members_per_sync)
{
	struct gs_out *o;

	if (!GS_EXPECT(setup("out.txt.gz", NULL)))
		return;
	if (!GS_EXPECT_EQ(gs_out__open(&o, path, 0), 0))
		goto out;
	fputs("first\n", gs_out__file(o));
	GS_EXPECT_EQ(gs_out__sync(o), 0);
	/* in place and a whole gzip file after the first sync */
	GS_EXPECT_STR_EQ(slurp(path), "first\n");
	fputs("second\n", gs_out__file(o));
	GS_EXPECT_EQ(gs_out__close(o), 0);
	GS_EXPECT_STR_EQ(slurp(path), "first\nsecond\n");
	GS_EXPECT_EQ(entries(NULL, 0), 1);
out:
	teardown();
}

GS_TEST(failed_part_after_a_sync_is_cut_off)
{
	static char chunk[4096];
	struct gs_out *o;
	int err;

	if (!GS_EXPECT(setup("leaks.txt", "old")))
		return;
	if (!GS_EXPECT_EQ(gs_out__open(&o, path, 0), 0))
		goto out;
	fputs("report 1\n", gs_out__file(o));
	GS_EXPECT_EQ(gs_out__sync(o), 0);
	GS_EXPECT_STR_EQ(slurp(path), "report 1\n");
	memset(chunk, 'x', sizeof(chunk));
	limit_fsize(1024);
	fwrite(chunk, 1, sizeof(chunk), gs_out__file(o));
	err = gs_out__sync(o);
	limit_fsize(0);
	GS_EXPECT_EQ(err, -EFBIG);
	GS_EXPECT_STR_EQ(slurp(path), "report 1\n");
	GS_EXPECT_EQ(gs_out__close(o), -EFBIG);
	GS_EXPECT_STR_EQ(slurp(path), "report 1\n");
	GS_EXPECT_EQ(entries(NULL, 0), 1);
out:
	teardown();
}

GS_TEST(mode_of_a_new_file_honours_umask_an_old_one_is_kept)
{
	struct gs_out *o;
	struct stat st;
	mode_t mask = umask(027);

	if (!GS_EXPECT(setup("out.json", NULL)))
		goto out_mask;
	if (GS_EXPECT_EQ(gs_out__open(&o, path, 0), 0))
		GS_EXPECT_EQ(gs_out__close(o), 0);
	GS_EXPECT(!stat(path, &st) && (st.st_mode & 0777) == 0640);
	chmod(path, 0604);
	if (GS_EXPECT_EQ(gs_out__open(&o, path, 0), 0))
		GS_EXPECT_EQ(gs_out__close(o), 0);
	GS_EXPECT(!stat(path, &st) && (st.st_mode & 0777) == 0604);
	teardown();
out_mask:
	umask(mask);
}

GS_TEST(missing_directory_creates_nothing)
{
	struct gs_out *o = NULL;

	if (!GS_EXPECT(setup("out.json", NULL)))
		return;
	snprintf(path, sizeof(path), "%s/no/out.json", dir);
	GS_EXPECT_EQ(gs_out__open(&o, path, 0), -ENOENT);
	GS_EXPECT_EQ(entries(NULL, 0), 0);
	teardown();
}

/* Another user's link is replaced by the output, never written through. */
GS_TEST(foreign_symlink_is_replaced_not_followed)
{
	char target[160];
	struct gs_out *o;
	struct stat st;
	FILE *f;

	if (geteuid() != 0) /* only root can make a link owned by another user */
		return;
	if (!GS_EXPECT(setup("out.json", NULL)))
		return;
	snprintf(target, sizeof(target), "%s/secret", dir);
	f = fopen(target, "w");
	if (!GS_EXPECT(f))
		goto out;
	fputs("root only", f);
	fclose(f);
	if (!GS_EXPECT(!symlink(target, path) && !lchown(path, 65534, 65534)))
		goto out;
	if (GS_EXPECT_EQ(gs_out__open(&o, path, 0), 0)) {
		fputs("trace", gs_out__file(o));
		GS_EXPECT_EQ(gs_out__close(o), 0);
	}
	GS_EXPECT_STR_EQ(slurp(target), "root only");
	GS_EXPECT(!lstat(path, &st) && S_ISREG(st.st_mode));
	GS_EXPECT_STR_EQ(slurp(path), "trace");
out:
	teardown();
}

GS_TEST(adopted_descriptor_written_in_place)
{
	struct gs_out *o;
	int fd;

	if (!GS_EXPECT(setup("out.json.gz", NULL)))
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (!GS_EXPECT(fd >= 0))
		goto out;
	if (GS_EXPECT_EQ(gs_out__open_fd(&o, fd, "fd", GS_OUT_GZIP), 0)) {
		fputs("{\"traceEvents\":[]}", gs_out__file(o));
		GS_EXPECT_EQ(gs_out__close(o), 0);
	}
	GS_EXPECT_STR_EQ(slurp(path), "{\"traceEvents\":[]}");
	GS_EXPECT_EQ(entries(NULL, 0), 1);
out:
	teardown();
}

GS_TEST(tmp_commit_noreplace_keeps_the_existing_file)
{
	char tmp[320];
	int dfd, fd;

	if (!GS_EXPECT(setup("report.json", "first")))
		return;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fd = gs_tmp_create(dfd, "report.json", 0600, tmp, sizeof(tmp));
	if (!GS_EXPECT(dfd >= 0 && fd >= 0))
		goto out;
	GS_EXPECT(!strncmp(tmp, ".report.json.tmp.", 17));
	GS_EXPECT_EQ(write(fd, "second", 6), 6);
	close(fd);
	GS_EXPECT_EQ(gs_tmp_commit(dfd, tmp, "report.json", true), -EEXIST);
	GS_EXPECT_STR_EQ(slurp(path), "first");
	GS_EXPECT_EQ(entries(NULL, 0), 1); /* the temporary went with the failure */
out:
	if (dfd >= 0)
		close(dfd);
	teardown();
}

GS_TEST_MAIN(renamed_over_the_old_file_only_when_closed, abort_leaves_the_old_file_and_no_temporary,
	     write_error_is_efbig_not_eio, gzip_write_error_is_efbig_not_eio,
	     gzip_by_name_and_members_per_sync, failed_part_after_a_sync_is_cut_off,
	     mode_of_a_new_file_honours_umask_an_old_one_is_kept, missing_directory_creates_nothing,
	     foreign_symlink_is_replaced_not_followed, adopted_descriptor_written_in_place,
	     tmp_commit_noreplace_keeps_the_existing_file)
