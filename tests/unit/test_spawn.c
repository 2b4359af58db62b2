// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_spawn.c: a held command's start and its stdout; the file the kernel loads for it. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tests/unit/harness.h"
#include "user/spawn.h"

static char dir[64];

/* dir/name holding text, executable; its path in path */
static bool script(const char *name, const char *text, char *path, size_t len)
{
	FILE *f;

	snprintf(path, len, "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return false;
	fputs(text, f);
	return !fclose(f) && !chmod(path, 0755);
}

static bool setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/gs-test-spawn-XXXXXX");
	return mkdtemp(dir) != NULL;
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	GS_EXPECT_EQ(system(cmd), 0);
}

GS_TEST(an_elf_file_is_its_own_image)
{
	char image[PATH_MAX];

	if (GS_EXPECT_EQ(gs_exec_image("/bin/sh", image, sizeof(image)), 0))
		GS_EXPECT_STR_EQ(image, "/bin/sh");
}

GS_TEST(scripts_are_followed_to_their_interpreter_as_the_kernel_does)
{
	char one[PATH_MAX], two[PATH_MAX], text[PATH_MAX + 16], image[PATH_MAX];

	if (!GS_EXPECT(setup()))
		return;
	/* spaces after "#!", an argument after the interpreter, no newline needed at the end */
	if (GS_EXPECT(script("one", "#!  /bin/sh -e\necho\n", one, sizeof(one))) &&
	    GS_EXPECT_EQ(gs_exec_image(one, image, sizeof(image)), 0))
		GS_EXPECT_STR_EQ(image, "/bin/sh");
	/* a script whose interpreter is itself a script */
	snprintf(text, sizeof(text), "#!%s", one);
	if (GS_EXPECT(script("two", text, two, sizeof(two))) &&
	    GS_EXPECT_EQ(gs_exec_image(two, image, sizeof(image)), 0))
		GS_EXPECT_STR_EQ(image, "/bin/sh");
	teardown();
}

GS_TEST(bad_scripts_are_refused_with_the_kernels_errors)
{
	char path[PATH_MAX], text[PATH_MAX + 16], image[PATH_MAX], image64[64];

	if (!GS_EXPECT(setup()))
		return;
	if (GS_EXPECT(script("empty", "#!\n/bin/sh\n", path, sizeof(path))))
		GS_EXPECT_EQ(gs_exec_image(path, image, sizeof(image)), -ENOEXEC);
	if (GS_EXPECT(script("spaces", "#!   \t\n", path, sizeof(path))))
		GS_EXPECT_EQ(gs_exec_image(path, image, sizeof(image)), -ENOEXEC);
	/* an interpreter's name longer than the caller's buffer, which holds the script's */
	snprintf(text, sizeof(text), "#!/%0100d\n", 0);
	if (GS_EXPECT(script("long", text, path, sizeof(path))))
		GS_EXPECT_EQ(gs_exec_image(path, image64, sizeof(image64)), -ENAMETOOLONG);
	/* a script that names itself: more levels than the kernel follows */
	snprintf(path, sizeof(path), "%s/self", dir);
	snprintf(text, sizeof(text), "#!%s\n", path);
	if (GS_EXPECT(script("self", text, path, sizeof(path))))
		GS_EXPECT_EQ(gs_exec_image(path, image, sizeof(image)), -ELOOP);
	snprintf(path, sizeof(path), "%s/missing", dir);
	GS_EXPECT_EQ(gs_exec_image(path, image, sizeof(image)), -ENOENT);
	teardown();
}

/* what the command prints on stdout, spawned with stdout_fd (-1: inherited) */
static void run_echo(int stdout_fd, int *status)
{
	char *const argv[] = { "/bin/sh", "-c", "echo spawned", NULL };
	struct gs_child child;

	GS_EXPECT_EQ(gs_spawn(argv, stdout_fd, &child), 0);
	GS_EXPECT_EQ(gs_spawn__release(&child), 0);
	GS_EXPECT_EQ(waitpid(child.pid, status, 0), child.pid);
}

GS_TEST(a_command_prints_where_it_is_told)
{
	int out[2], status = -1;
	char buf[32] = "";

	GS_EXPECT_EQ(pipe(out), 0);
	run_echo(out[1], &status);
	close(out[1]);
	GS_EXPECT_EQ(read(out[0], buf, sizeof(buf) - 1), 8);
	GS_EXPECT(!strcmp(buf, "spawned\n"));
	GS_EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(out[0]);
	/* a descriptor that is not open: the exec fails with its errno, nothing runs */
	{
		char *const argv[] = { "/bin/true", NULL };
		struct gs_child child;

		GS_EXPECT_EQ(gs_spawn(argv, 1000, &child), 0);
		GS_EXPECT_EQ(gs_spawn__release(&child), -EBADF);
	}
}

GS_TEST_MAIN(a_command_prints_where_it_is_told, an_elf_file_is_its_own_image,
	     scripts_are_followed_to_their_interpreter_as_the_kernel_does,
	     bad_scripts_are_refused_with_the_kernels_errors)
