// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_status_line.c: log messages on a terminal erase the status line, then redraw it. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>
#include "tests/unit/harness.h"
#include "user/log.h"
#include "user/status_line.h"

#define ERASE "\r\033[K"

/* stderr moved onto fd (a terminal or a pipe) for the test; the old one kept in *saved. */
static bool redirect_stderr(int fd, int *saved)
{
	fflush(stderr);
	*saved = dup(STDERR_FILENO);
	return *saved >= 0 && dup2(fd, STDERR_FILENO) >= 0;
}

static void restore_stderr(int saved)
{
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
}

/* Everything readable from fd now, NUL-terminated, into buf. */
static size_t read_all(int fd, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n;

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	while (len + 1 < size && (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	return len;
}

/* A pseudo-terminal in raw mode (no "\n" to "\r\n"): *master reads what the slave got. */
static int open_terminal(int *master)
{
	struct termios t;
	int slave;

	*master = posix_openpt(O_RDWR | O_NOCTTY);
	if (*master < 0 || grantpt(*master) || unlockpt(*master))
		return -1;
	slave = open(ptsname(*master), O_RDWR | O_NOCTTY);
	if (slave < 0 || tcgetattr(slave, &t))
		return -1;
	cfmakeraw(&t);
	tcsetattr(slave, TCSANOW, &t);
	return slave;
}

GS_TEST(message_clears_the_status_line_then_redraws_it)
{
	char out[512];
	int master, slave = open_terminal(&master), saved;

	if (!GS_EXPECT(slave >= 0) || !GS_EXPECT(redirect_stderr(slave, &saved)))
		return;
	gs_status_line__show("recording: %d events/s, %d dropped", 5, 0);
	gs_warn("pid %d: exited", 42);
	gs_status_line__show("recording: %d events/s, %d dropped", 7, 1);
	gs_status_line__clear();
	gs_warn("after");
	restore_stderr(saved);
	read_all(master, out, sizeof(out));
	GS_EXPECT_STR_EQ(out, ERASE "recording: 5 events/s, 0 dropped" ERASE
				    "gpusnoop: warning: pid 42: exited\n"
				    "recording: 5 events/s, 0 dropped" ERASE
				    "recording: 7 events/s, 1 dropped" ERASE
				    "gpusnoop: warning: after\n");
	close(slave);
	close(master);
}

/* stderr to a file or pipe: no status line, no escape sequences in the log */
GS_TEST(no_status_line_off_a_terminal)
{
	char out[512];
	int pipe_fd[2], saved;

	if (!GS_EXPECT(!pipe(pipe_fd)) || !GS_EXPECT(redirect_stderr(pipe_fd[1], &saved)))
		return;
	gs_status_line__show("recording: %d events/s", 5);
	gs_warn("hello");
	gs_status_line__clear();
	restore_stderr(saved);
	close(pipe_fd[1]);
	read_all(pipe_fd[0], out, sizeof(out));
	GS_EXPECT_STR_EQ(out, "gpusnoop: warning: hello\n");
	close(pipe_fd[0]);
}

/* a comm in the status line cannot move the cursor or retitle the terminal */
GS_TEST(status_line_escapes_control_bytes)
{
	char out[512];
	int master, slave = open_terminal(&master), saved;

	if (!GS_EXPECT(slave >= 0) || !GS_EXPECT(redirect_stderr(slave, &saved)))
		return;
	gs_status_line__show("comm %s", "evil\033]0;x\007");
	gs_status_line__clear();
	restore_stderr(saved);
	read_all(master, out, sizeof(out));
	GS_EXPECT(!strstr(out, "\033]"));
	GS_EXPECT(!strchr(out, '\007'));
	close(slave);
	close(master);
}

GS_TEST_MAIN(message_clears_the_status_line_then_redraws_it, no_status_line_off_a_terminal,
	     status_line_escapes_control_bytes)
