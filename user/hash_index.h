/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* hash_index.h: find entries of a caller's array by key, in constant time (open addressing). */
#ifndef GS_HASH_INDEX_H
#define GS_HASH_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The one hash table of user/: tables keep their entries in an array of their own (stable
 * order, one allocation per growth, no per-entry nodes) and find them through this index of
 * (hash, position) slots. Linear probing at most half full, deletion by backward shift (no
 * tombstones to rehash away). Zero-initialised it is empty.
 *
 * Hashes must be well mixed (gs_hash_u64(), gs_hash_combine()): the low bits pick the slot.
 * Lookups compare the stored hash first and call match only on equal hashes; a NULL match
 * means equal hashes are equal keys, which holds for gs_hash_u64() of one value of up to 64
 * bits (a bijection): a pid, an address.
 */
struct gs_hash_slot {
	uint64_t hash;
	uint32_t pos_plus1; /* 0: an empty slot */
};

struct gs_hash_index {
	struct gs_hash_slot *slots;
	size_t nr, cap; /* cap: 0 or a power of two */
};

/* whether the caller's entry at pos has the key looked for (ctx: the caller's) */
typedef bool (*gs_hash_match_fn)(const void *ctx, size_t pos);

/* A bijective mix of v (splitmix64's finalizer). */
uint64_t gs_hash_u64(uint64_t v);
/* h with v mixed in, for keys of several fields. */
uint64_t gs_hash_combine(uint64_t h, uint64_t v);

/* The position of the entry with this hash that match accepts; false when there is none. */
bool gs_hash_index__find(const struct gs_hash_index *x, uint64_t hash, gs_hash_match_fn match,
			 const void *ctx, size_t *pos);
/* Records an entry at pos (the caller knows its key is absent). 0 or -ENOMEM (x unchanged). */
int gs_hash_index__add(struct gs_hash_index *x, uint64_t hash, size_t pos);
/* The entry (hash, from) is at to now; false when there is no such entry. */
bool gs_hash_index__move(struct gs_hash_index *x, uint64_t hash, size_t from, size_t to);
/* Forgets the entry (hash, pos); false when there is none. */
bool gs_hash_index__remove(struct gs_hash_index *x, uint64_t hash, size_t pos);
/* Forgets every entry, keeping the memory (re-adding after a sort cannot fail). */
void gs_hash_index__clear(struct gs_hash_index *x);
void gs_hash_index__release(struct gs_hash_index *x);

#endif /* GS_HASH_INDEX_H */
