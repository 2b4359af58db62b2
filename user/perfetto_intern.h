/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* perfetto_intern.h: a bounded byte-string -> id table (interned names, tracks, callstacks). */
#ifndef GS_PERFETTO_INTERN_H
#define GS_PERFETTO_INTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Open addressing over a fixed slot array allocated once: ids are 1, 2, 3... in insertion
 * order. Full (half the slots used, or max_bytes of keys held) means no more insertions;
 * the owner clears it (gs_intern__clear()) when its format allows starting over.
 */
struct gs_intern;

/* Caller frees with gs_intern__free(). NULL with errno set. */
/* The tables' hash of len bytes (8 at a time): also the row parser's stack cache key. */
uint64_t gs_intern__hash(const void *key, size_t len);
struct gs_intern *gs_intern__new(size_t slots_log2, size_t max_bytes);
void gs_intern__free(struct gs_intern *t);
void gs_intern__clear(struct gs_intern *t);
/*
 * The id of key, inserting it when new (*added set). 0 when the table is full (or memory
 * ran out) and key is not in it.
 */
uint64_t gs_intern__get(struct gs_intern *t, const void *key, size_t len, bool *added);
/* Whether key is in the table. */
bool gs_intern__has(const struct gs_intern *t, const void *key, size_t len);
/* Whether the table holds at least half of what it may: time to start over. */
bool gs_intern__filling(const struct gs_intern *t);
size_t gs_intern__count(const struct gs_intern *t);

#endif /* GS_PERFETTO_INTERN_H */
