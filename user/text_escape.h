/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* text_escape.h: one place that makes process-chosen text safe for JSON, Prometheus and terminals. */
#ifndef GS_TEXT_ESCAPE_H
#define GS_TEXT_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * Comms, symbol names, module paths and kernel names come from the traced processes: any
 * bytes their owners chose, valid UTF-8 or not, control characters and terminal escapes
 * included. Every output format spells them through one of the functions below:
 *
 *   JSON        valid UTF-8 passes through; each ill-formed part becomes \ufffd; control
 *               characters (< 0x20, 0x7f, U+0080..U+009F) become \u00XX (\n \t \r short).
 *   Prometheus  label values escape \\ \" \n as the exposition format says; each ill-formed
 *               part becomes U+FFFD; other control characters are spelled as the text \xNN
 *               (a backslash escaped as \\), so a scrape printed on a terminal stays inert.
 *   terminal    valid printable UTF-8 passes through; control bytes (< 0x20, 0x7f, ESC),
 *               C1 controls and every byte of an ill-formed part are shown as \xNN.
 *
 * "Ill-formed part" is Unicode's maximal subpart (the U+FFFD substitution of Python's and
 * browsers' decoders): a stray continuation byte, an overlong form, a surrogate, a code
 * point above U+10FFFF, a lead byte that cannot start a sequence, or a truncated sequence.
 */

/*
 * Decodes the character at s[0..n), n >= 1: returns its length (1..4) with its code point in
 * *cp, or, when s starts no well-formed sequence, the length of the ill-formed part (1..3)
 * with *cp = -1. Nothing past a NUL is read (a NUL never continues a sequence), so for a
 * NUL-terminated string n may simply be 4.
 */
size_t gs_utf8_decode(const char *s, size_t n, int32_t *cp);
/* Whether s[0..n) is entirely well-formed UTF-8. */
bool gs_utf8_is_valid(const char *s, size_t n);

/* The longest escape gs_json_escape_char writes: "\ufffd". */
#define GS_JSON_ESC_MAX 6
/* How many leading bytes of s[0..n) a JSON string takes verbatim. */
size_t gs_json_plain_run(const char *s, size_t n);
/*
 * The JSON spelling of the character at s[0..n) that gs_json_plain_run stopped at (n >= 1):
 * writes it to out (at most GS_JSON_ESC_MAX bytes, or the character itself when it needs no
 * escape), returns its length and sets *used to the bytes of s it stands for.
 */
size_t gs_json_escape_char(const char *s, size_t n, char *out, size_t *used);

/* Writes s as a Prometheus label value, without the quotes. */
void gs_prom_write_label_value(FILE *f, const char *s);

/* The most bytes gs_text_safe needs for a source of n bytes: each may become \xNN. */
#define GS_TEXT_SAFE_LEN(n) (4 * (n) + 1)
/*
 * s made safe for a terminal into buf[0..len) (always terminated; cut before an escape or a
 * character that does not fit); returns buf, so it can be an argument of printf.
 */
const char *gs_text_safe(const char *s, char *buf, size_t len);
/* s made safe for a terminal, written to f. */
void gs_text_write(FILE *f, const char *s);

#endif /* GS_TEXT_ESCAPE_H */
