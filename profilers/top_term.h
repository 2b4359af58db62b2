/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* top_term.h: `gpusnoop top`'s terminal: keys, the full screen, its restoration on every exit. */
#ifndef GS_TOP_TERM_H
#define GS_TOP_TERM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Plain ANSI (VT100/xterm) sequences, no terminal library: what the view needs is a handful
 * of them, and the restoration must run inside a signal handler (a crash), where only
 * write(2) and tcsetattr(3) may be called.
 */

/* keys besides plain bytes */
enum {
	GS_KEY_NONE = -1,
	GS_KEY_UP = 0x100,
	GS_KEY_DOWN,
	GS_KEY_PGUP,
	GS_KEY_PGDN,
	GS_KEY_ESC,
	GS_KEY_ENTER,
	GS_KEY_BACKSPACE,
};

/*
 * Takes over the terminal on out_fd: its alternate screen, cursor hidden, in_fd's keys read
 * one by one without echo (when in_fd is a terminal; Ctrl-C still signals, Ctrl-Z is off).
 * stderr, when it is a terminal, goes to a buffer shown after the screen is restored, so log
 * lines do not scribble over the view. Crash signals (SEGV, BUS, ILL, FPE, ABRT) and SIGHUP
 * restore the terminal first, then take their usual course. Returns 0 or -errno (logged);
 * on failure nothing is changed.
 */
int gs_top_term__enter(int in_fd, int out_fd);
/*
 * Gives the terminal back as it was and replays what stderr got meanwhile; does nothing when
 * not entered. Async-signal-safe, and idempotent.
 */
void gs_top_term__leave(void);
/* Whether the terminal is taken. */
bool gs_top_term__active(void);
/* The screen's size, (24, 80) when it cannot be read. */
void gs_top_term__size(int *rows, int *cols);
/*
 * The next key from buf[0..len) (bytes read from the terminal): its code (a byte or GS_KEY_*)
 * and *used, the bytes it took (>= 1 when len >= 1). GS_KEY_NONE when len is 0.
 */
int gs_top_key_parse(const unsigned char *buf, size_t len, size_t *used);
/* The last line a log message wrote while the terminal was taken, "" when none. */
void gs_top_term__last_message(char *buf, size_t len);

/*
 * An output that never blocks its writer: a bounded queue written as the descriptor takes
 * it. A terminal or a pipe is reopened non-blocking (its own open file description: the
 * shell's keeps its flags); any other file is written as it comes.
 */
struct gs_top_out {
	int fd;
	bool own_fd; /* fd is the reopened descriptor, closed by __close */
	char *buf;
	size_t len, off, cap;
	uint64_t dropped; /* bytes not queued: the reader was too slow */
};

/* fd is borrowed; max_queue bounds what waits. Returns 0 or -ENOMEM. */
int gs_top_out__open(struct gs_top_out *o, int fd, size_t max_queue);
/* Queues data whole, or drops it whole (counted) when it does not fit. Returns 0 or -ENOBUFS. */
int gs_top_out__put(struct gs_top_out *o, const char *data, size_t len);
/* Writes what the descriptor takes now. Returns 0, or -errno of a failed write (EPIPE...). */
int gs_top_out__flush(struct gs_top_out *o);
/* Bytes still waiting. */
size_t gs_top_out__pending(const struct gs_top_out *o);
/* Writes what waits, waiting at most timeout_ms for the reader. Returns 0 or -errno. */
int gs_top_out__drain(struct gs_top_out *o, int timeout_ms);
void gs_top_out__close(struct gs_top_out *o);

#endif /* GS_TOP_TERM_H */
