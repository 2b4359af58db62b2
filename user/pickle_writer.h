/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* pickle_writer.h: a small Python pickle (protocol 2) encoder of dicts, lists, ints and strings. */
#ifndef GS_PICKLE_WRITER_H
#define GS_PICKLE_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * Protocol 2: every Python 3 (and 2.3+) reads it, it needs no framing (protocol 4's FRAME is
 * optional anyway), and its BINUNICODE carries a 4-byte length, so one opcode fits every string.
 * Only data opcodes are written (no GLOBAL, REDUCE, BUILD, INST): the output loads under an
 * Unpickler whose find_class refuses everything. Every string is a BINUNICODE with its length,
 * made valid UTF-8 first (invalid bytes and encoded surrogates become U+FFFD), so nothing from
 * a traced process is ever read as an opcode. The memo (BINPUT/BINGET) shares repeated keys
 * and frame lists.
 */
struct gs_pickle {
	FILE *f;
	int err;	    /* first write error (-errno), sticky */
	uint32_t next_memo; /* memo index the next put takes */
	const char *keys[64];
	uint32_t key_memo[64];
	size_t nr_keys;
};

void gs_pickle__begin(struct gs_pickle *p, FILE *f); /* PROTO 2 */
int gs_pickle__end(struct gs_pickle *p);	     /* STOP, flush; 0 or -errno */

void gs_pickle__none(struct gs_pickle *p);
void gs_pickle__bool(struct gs_pickle *p, bool v);
void gs_pickle__int(struct gs_pickle *p, int64_t v);
void gs_pickle__uint(struct gs_pickle *p, uint64_t v);
/* s of len bytes, any bytes; written as valid UTF-8 */
void gs_pickle__str(struct gs_pickle *p, const char *s, size_t len);
void gs_pickle__cstr(struct gs_pickle *p, const char *s); /* NULL: "" */
/* a constant key string: memoized, the second use costs 2 or 5 bytes */
void gs_pickle__key(struct gs_pickle *p, const char *key);

/* dict: begin, then key/value pairs, then end (SETITEMS); list: the same with APPENDS */
void gs_pickle__dict_begin(struct gs_pickle *p);
void gs_pickle__dict_end(struct gs_pickle *p);
void gs_pickle__list_begin(struct gs_pickle *p);
void gs_pickle__list_end(struct gs_pickle *p);
/* the pair (a, b) of the two values written last */
void gs_pickle__tuple2(struct gs_pickle *p);

/* Memoizes the object on top of the stack; returns its index for gs_pickle__get. */
uint32_t gs_pickle__put(struct gs_pickle *p);
void gs_pickle__get(struct gs_pickle *p, uint32_t idx);

/*
 * The length of s (len bytes) once made valid UTF-8: each invalid sequence (bad lead or
 * continuation byte, overlong form, surrogate, past U+10FFFF, cut short) counts as U+FFFD.
 */
size_t gs_utf8_valid_len(const char *s, size_t len);
/* Strings longer than this are cut (at a character boundary) before encoding. */
#define GS_PICKLE_MAX_STR 65536

#endif /* GS_PICKLE_WRITER_H */
