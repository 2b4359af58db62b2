// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* top_term.c: `gpusnoop top`'s terminal: keys, the full screen, its restoration on every exit. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>
#include "profilers/options.h"
#include "profilers/top_term.h"
#include "user/log.h"
#include "user/text_escape.h"

/* alternate screen (xterm 1049: saves the cursor and the main screen), cursor hidden */
#define ENTER_SEQ "\033[?1049h\033[?25l\033[H\033[2J"
/*
 * CAN first: a frame cut off inside an escape sequence (a crash mid-write) is cancelled, so
 * what follows is read as the sequences it is. Then attributes off, cursor shown, main screen.
 */
#define LEAVE_SEQ "\030\033[0m\033[?25h\033[?1049l"
/* what stderr got while the screen was taken, replayed at most this much (its end) */
#define REPLAY_MAX (64 << 10)

static const int crash_signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };

/*
 * The terminal's state lives in file-scope variables because a signal handler must reach it
 * to restore the terminal; there is one terminal per process.
 */
static volatile sig_atomic_t entered;
static int term_in = -1, term_out = -1;
static bool have_termios;
static struct termios saved_termios;
static int saved_stderr = -1, captured_stderr = -1;
static struct sigaction saved_actions[sizeof(crash_signals) / sizeof(crash_signals[0])];

static void write_all(int fd, const char *s, size_t len)
{
	while (len) {
		ssize_t n = write(fd, s, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		s += n;
		len -= (size_t)n;
	}
}

/* the end of what stderr got while captured, to the real stderr (async-signal-safe) */
static void replay_stderr(void)
{
	struct stat st;
	char buf[4096];
	off_t off;

	if (fstat(captured_stderr, &st))
		return;
	off = st.st_size > REPLAY_MAX ? st.st_size - REPLAY_MAX : 0;
	for (;;) {
		ssize_t n = pread(captured_stderr, buf, sizeof(buf), off);

		if (n <= 0)
			return;
		write_all(STDERR_FILENO, buf, (size_t)n);
		off += n;
	}
}

void gs_top_term__leave(void)
{
	int err = errno;

	if (!entered)
		return;
	entered = 0;
	/* a later crash needs no terminal restored: the handlers as they were */
	for (size_t i = 0; i < sizeof(crash_signals) / sizeof(crash_signals[0]); i++)
		sigaction(crash_signals[i], &saved_actions[i], NULL);
	write_all(term_out, LEAVE_SEQ, sizeof(LEAVE_SEQ) - 1);
	if (have_termios)
		tcsetattr(term_in, TCSANOW, &saved_termios);
	if (saved_stderr >= 0) {
		dup2(saved_stderr, STDERR_FILENO);
		close(saved_stderr);
		saved_stderr = -1;
		replay_stderr();
		close(captured_stderr);
		captured_stderr = -1;
	}
	errno = err;
}

bool gs_top_term__active(void)
{
	return entered;
}

/* A crash: the terminal first, then the signal's own course (a core, a death). */
static void on_crash(int sig)
{
	gs_top_term__leave();
	signal(sig, SIG_DFL);
	raise(sig); /* delivered when the handler returns: sig is blocked inside it */
}

/* The terminal hung up: nothing more to draw; the session ends as on SIGTERM. */
static void on_hangup(int sig)
{
	gs_top_term__leave();
	gs_stop_requested = sig;
}

static int raw_mode(int in_fd)
{
	struct termios raw;

	if (!isatty(in_fd) || tcgetattr(in_fd, &saved_termios))
		return 0; /* no keys then: the view still refreshes */
	raw = saved_termios;
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	/* Ctrl-Z would leave a stopped gpusnoop holding a raw, alternate screen: off */
	raw.c_cc[VSUSP] = _POSIX_VDISABLE;
	if (tcsetattr(in_fd, TCSANOW, &raw))
		return -errno;
	have_termios = true;
	return 0;
}

/* stderr to a memory file while the screen is taken, when stderr is a terminal */
static void capture_stderr(void)
{
	int fd;

	if (!isatty(STDERR_FILENO))
		return;
	fd = memfd_create("gpusnoop-top-stderr", MFD_CLOEXEC);
	if (fd < 0)
		return; /* messages then land on the screen, redrawn at the next refresh */
	saved_stderr = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	if (saved_stderr < 0 || dup2(fd, STDERR_FILENO) < 0) {
		if (saved_stderr >= 0)
			close(saved_stderr);
		saved_stderr = -1;
		close(fd);
		return;
	}
	captured_stderr = fd;
}

int gs_top_term__enter(int in_fd, int out_fd)
{
	struct sigaction sa = { .sa_handler = on_crash };
	struct sigaction hup = { .sa_handler = on_hangup };
	int err;

	if (entered)
		return 0;
	term_in = in_fd;
	term_out = out_fd;
	have_termios = false;
	err = raw_mode(in_fd);
	if (err) {
		gs_err("terminal: %s", strerror(-err));
		return err;
	}
	/* the handlers before the screen changes: from here on any end restores it */
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(crash_signals) / sizeof(crash_signals[0]); i++)
		sigaction(crash_signals[i], &sa, &saved_actions[i]);
	/* kept after the screen is given back: a hang-up stops the session as SIGTERM does */
	sigaction(SIGHUP, &hup, NULL);
	/* as Ctrl-Z (off above): a stopped gpusnoop would hold the screen and its probes */
	signal(SIGTSTP, SIG_IGN);
	capture_stderr();
	entered = 1;
	write_all(term_out, ENTER_SEQ, sizeof(ENTER_SEQ) - 1);
	return 0;
}

void gs_top_term__size(int *rows, int *cols)
{
	struct winsize ws;

	*rows = 24;
	*cols = 80;
	if (term_out >= 0 && !ioctl(term_out, TIOCGWINSZ, &ws) && ws.ws_row && ws.ws_col) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}

/* ESC [ ... final: the key a CSI sequence names, *used its length */
static int csi_key(const unsigned char *buf, size_t len, size_t *used)
{
	size_t i = 2;

	while (i < len && (buf[i] < 0x40 || buf[i] > 0x7e))
		i++;
	if (i == len) { /* cut off: only the ESC counts */
		*used = 1;
		return GS_KEY_ESC;
	}
	*used = i + 1;
	if (i == 2 && buf[2] == 'A')
		return GS_KEY_UP;
	if (i == 2 && buf[2] == 'B')
		return GS_KEY_DOWN;
	if (i == 3 && buf[2] == '5' && buf[3] == '~')
		return GS_KEY_PGUP;
	if (i == 3 && buf[2] == '6' && buf[3] == '~')
		return GS_KEY_PGDN;
	return GS_KEY_NONE; /* a key the view has no use for: skipped */
}

int gs_top_key_parse(const unsigned char *buf, size_t len, size_t *used)
{
	*used = len ? 1 : 0;
	if (!len)
		return GS_KEY_NONE;
	switch (buf[0]) {
	case 0x1b:
		if (len >= 2 && buf[1] == '[')
			return csi_key(buf, len, used);
		if (len >= 3 && buf[1] == 'O' && (buf[2] == 'A' || buf[2] == 'B')) {
			*used = 3;
			return buf[2] == 'A' ? GS_KEY_UP : GS_KEY_DOWN;
		}
		return GS_KEY_ESC;
	case '\r':
	case '\n':
		return GS_KEY_ENTER;
	case 0x7f:
	case 0x08:
		return GS_KEY_BACKSPACE;
	default:
		return buf[0];
	}
}

void gs_top_term__last_message(char *buf, size_t len)
{
	char tail[512];
	struct stat st;
	off_t off;
	ssize_t n;
	char *end, *start;

	buf[0] = '\0';
	if (captured_stderr < 0 || fstat(captured_stderr, &st) || !st.st_size)
		return;
	off = st.st_size > (off_t)sizeof(tail) - 1 ? st.st_size - (off_t)sizeof(tail) + 1 : 0;
	n = pread(captured_stderr, tail, sizeof(tail) - 1, off);
	if (n <= 0)
		return;
	tail[n] = '\0';
	end = tail + n;
	while (end > tail && (end[-1] == '\n' || end[-1] == '\r'))
		*--end = '\0';
	start = strrchr(tail, '\n');
	start = start ? start + 1 : tail;
	/* log lines name what processes chose: no raw escapes reach the screen */
	gs_text_safe(start, buf, len);
}

static int reopen_nonblocking(int fd)
{
	struct stat st;
	char path[64];

	if (fstat(fd, &st) || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)))
		return -1;
	if (snprintf(path, sizeof(path), "/proc/self/fd/%d", fd) >= (int)sizeof(path))
		return -1;
	return open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
}

int gs_top_out__open(struct gs_top_out *o, int fd, size_t max_queue)
{
	int nfd;

	memset(o, 0, sizeof(*o));
	o->buf = malloc(max_queue);
	if (!o->buf)
		return -ENOMEM;
	o->cap = max_queue;
	nfd = reopen_nonblocking(fd);
	o->fd = nfd >= 0 ? nfd : fd;
	o->own_fd = nfd >= 0;
	return 0;
}

int gs_top_out__put(struct gs_top_out *o, const char *data, size_t len)
{
	if (o->off == o->len)
		o->off = o->len = 0;
	if (o->off && o->len + len > o->cap) { /* compact first */
		memmove(o->buf, o->buf + o->off, o->len - o->off);
		o->len -= o->off;
		o->off = 0;
	}
	if (len > o->cap - o->len) {
		o->dropped += len;
		return -ENOBUFS;
	}
	memcpy(o->buf + o->len, data, len);
	o->len += len;
	return 0;
}

int gs_top_out__flush(struct gs_top_out *o)
{
	while (o->off < o->len) {
		ssize_t n = write(o->fd, o->buf + o->off, o->len - o->off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n < 0)
			return -errno;
		o->off += (size_t)n;
	}
	o->off = o->len = 0;
	return 0;
}

size_t gs_top_out__pending(const struct gs_top_out *o)
{
	return o->len - o->off;
}

int gs_top_out__drain(struct gs_top_out *o, int timeout_ms)
{
	struct pollfd p = { .fd = o->fd, .events = POLLOUT };
	int err = gs_top_out__flush(o);

	while (!err && gs_top_out__pending(o)) {
		if (poll(&p, 1, timeout_ms) <= 0)
			return -ETIMEDOUT;
		err = gs_top_out__flush(o);
	}
	return err;
}

void gs_top_out__close(struct gs_top_out *o)
{
	if (o->own_fd)
		close(o->fd);
	free(o->buf);
	memset(o, 0, sizeof(*o));
	o->fd = -1;
}
