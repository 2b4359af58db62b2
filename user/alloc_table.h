/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* alloc_table.h: the outstanding allocations of one process, keyed by address. */
#ifndef GS_ALLOC_TABLE_H
#define GS_ALLOC_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gs_alloc {
	uint64_t ptr;
	uint64_t size;
	uint64_t ts_ns; /* CLOCK_MONOTONIC at return of the allocation */
	uint32_t stack_id;
	uint16_t api;
	uint16_t in_use; /* internal: slot occupied */
};

struct gs_alloc_table;

struct gs_alloc_table *gs_alloc_table__new(void);
void gs_alloc_table__free(struct gs_alloc_table *t);

/*
 * Records an allocation. An address already present means its free was missed (the
 * process freed it before we attached, or a record was dropped): the old entry is
 * replaced and true is returned so the caller can count it.
 */
int gs_alloc_table__insert(struct gs_alloc_table *t, const struct gs_alloc *a, bool *replaced);
/* Removes ptr; copies the entry to *out when given. Returns false when ptr is unknown. */
bool gs_alloc_table__remove(struct gs_alloc_table *t, uint64_t ptr, struct gs_alloc *out);
bool gs_alloc_table__contains(const struct gs_alloc_table *t, uint64_t ptr);
/* The entry for ptr (borrowed until the table changes), NULL when unknown. */
const struct gs_alloc *gs_alloc_table__find(const struct gs_alloc_table *t, uint64_t ptr);
void gs_alloc_table__clear(struct gs_alloc_table *t);

size_t gs_alloc_table__count(const struct gs_alloc_table *t);
uint64_t gs_alloc_table__bytes(const struct gs_alloc_table *t);

/* Iteration over slots: for (i = 0; i < slots(t); i++) if ((a = at(t, i))) ... */
size_t gs_alloc_table__slots(const struct gs_alloc_table *t);
const struct gs_alloc *gs_alloc_table__at(const struct gs_alloc_table *t, size_t slot);

#endif /* GS_ALLOC_TABLE_H */
