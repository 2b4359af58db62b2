// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* spawn.c: fork, hold on a pipe until released, then exec; exec errors travel back. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "user/spawn.h"

int gs_spawn(char *const argv[], int stdout_fd, struct gs_child *child)
{
	int hold[2], err_pipe[2];
	pid_t pid;

	if (pipe2(hold, O_CLOEXEC))
		return -errno;
	if (pipe2(err_pipe, O_CLOEXEC)) {
		int err = -errno;

		close(hold[0]);
		close(hold[1]);
		return err;
	}
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		close(hold[0]);
		close(hold[1]);
		close(err_pipe[0]);
		close(err_pipe[1]);
		return err;
	}
	if (pid == 0) {
		char c;
		int e;

		close(hold[1]);
		close(err_pipe[0]);
		/* EOF (parent closed or died) releases us */
		while (read(hold[0], &c, 1) < 0 && errno == EINTR)
			;
		if (stdout_fd < 0 || dup2(stdout_fd, STDOUT_FILENO) >= 0)
			execvp(argv[0], argv);
		e = errno;
		if (write(err_pipe[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(hold[0]);
	close(err_pipe[1]);
	child->pid = pid;
	child->release_fd = hold[1];
	child->error_fd = err_pipe[0];
	return 0;
}

int gs_spawn__release(struct gs_child *child)
{
	ssize_t n;
	int e = 0;

	close(child->release_fd);
	child->release_fd = -1;
	/* the pipe closes on a successful exec (O_CLOEXEC) or carries errno */
	do {
		n = read(child->error_fd, &e, sizeof(e));
	} while (n < 0 && errno == EINTR);
	close(child->error_fd);
	child->error_fd = -1;
	if (n == (ssize_t)sizeof(e)) {
		waitpid(child->pid, NULL, 0);
		return -e;
	}
	return 0;
}

int gs_find_executable(const char *name, char *buf, size_t len)
{
	const char *path = getenv("PATH");
	const char *p;

	if (strchr(name, '/')) {
		if ((size_t)snprintf(buf, len, "%s", name) >= len)
			return -ENAMETOOLONG;
		return access(buf, X_OK) ? -errno : 0;
	}
	for (p = path ? path : "/usr/local/bin:/usr/bin:/bin"; p && *p;) {
		const char *end = strchrnul(p, ':');
		/* an empty element means the current directory, as for execvp */
		int n = end == p ? snprintf(buf, len, "./%s", name)
				 : snprintf(buf, len, "%.*s/%s", (int)(end - p), p, name);

		if (n > 0 && (size_t)n < len && access(buf, X_OK) == 0)
			return 0;
		p = *end ? end + 1 : NULL;
	}
	return -ENOENT;
}

/* the kernel reads this much of a file for its "#!" line, and follows 4 interpreters deep */
#define SHEBANG_BYTES	  256
#define SCRIPT_LEVELS_MAX 4

/* @head's interpreter (head is NUL-terminated), into buf: 0, or -ENOEXEC for none */
static int interpreter_of(const char *head, char *buf, size_t len)
{
	const char *p = head + 2, *end;

	p += strspn(p, " \t");
	end = p + strcspn(p, " \t\n");
	if (end == p)
		return -ENOEXEC;
	if ((size_t)(end - p) >= len)
		return -ENAMETOOLONG;
	memcpy(buf, p, (size_t)(end - p));
	buf[end - p] = '\0';
	return 0;
}

int gs_exec_image(const char *path, char *buf, size_t len)
{
	char head[SHEBANG_BYTES + 1];
	ssize_t n;
	int fd, err;

	if ((size_t)snprintf(buf, len, "%s", path) >= len)
		return -ENAMETOOLONG;
	for (int level = 0; level <= SCRIPT_LEVELS_MAX; level++) {
		fd = open(buf, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		n = read(fd, head, SHEBANG_BYTES);
		err = -errno;
		close(fd);
		if (n < 0)
			return err;
		head[n] = '\0';
		if (n < 2 || head[0] != '#' || head[1] != '!')
			return 0;
		err = interpreter_of(head, buf, len);
		if (err)
			return err;
	}
	return -ELOOP;
}
