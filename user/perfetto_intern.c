// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* perfetto_intern.c: linear probing, word-at-a-time hashes, keys copied (the caller's borrowed). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "user/perfetto_intern.h"

struct slot {
	uint64_t hash;
	uint64_t id; /* 0: empty */
	size_t len;
	void *key;
};

struct gs_intern {
	struct slot *slots;
	size_t mask;
	size_t count, bytes, max_bytes;
};

/* Eight bytes at a time, multiplied and folded (frames' names are long; FNV's byte loop was
 * a tenth of the encoder's time) */
uint64_t gs_intern__hash(const void *key, size_t len)
{
	const unsigned char *p = key;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ len, w;

	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	w = 0;
	memcpy(&w, p, len);
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 29);
}

struct gs_intern *gs_intern__new(size_t slots_log2, size_t max_bytes)
{
	struct gs_intern *t = calloc(1, sizeof(*t));

	if (!t || slots_log2 > 30)
		goto out_free;
	t->slots = calloc((size_t)1 << slots_log2, sizeof(*t->slots));
	if (!t->slots)
		goto out_free;
	t->mask = ((size_t)1 << slots_log2) - 1;
	t->max_bytes = max_bytes;
	return t;
out_free:
	free(t);
	errno = ENOMEM;
	return NULL;
}

void gs_intern__clear(struct gs_intern *t)
{
	/* only used slots are written: the others may still be untouched (not resident) */
	for (size_t i = 0; i <= t->mask && t->count; i++) {
		if (!t->slots[i].id)
			continue;
		free(t->slots[i].key);
		t->slots[i] = (struct slot){ 0 };
		t->count--;
	}
	t->count = 0;
	t->bytes = 0;
}

void gs_intern__free(struct gs_intern *t)
{
	if (!t)
		return;
	gs_intern__clear(t);
	free(t->slots);
	free(t);
}

bool gs_intern__filling(const struct gs_intern *t)
{
	return t->count >= (t->mask + 1) / 4 || t->bytes >= t->max_bytes / 2;
}

size_t gs_intern__count(const struct gs_intern *t)
{
	return t->count;
}

/* The slot holding key, or the empty one where it would go. */
static struct slot *find(const struct gs_intern *t, const void *key, size_t len, uint64_t h)
{
	for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
		struct slot *s = &t->slots[i];

		if (!s->id || (s->hash == h && s->len == len && !memcmp(s->key, key, len)))
			return s;
	}
}

bool gs_intern__has(const struct gs_intern *t, const void *key, size_t len)
{
	return find(t, key, len, gs_intern__hash(key, len))->id != 0;
}

uint64_t gs_intern__get(struct gs_intern *t, const void *key, size_t len, bool *added)
{
	uint64_t h = gs_intern__hash(key, len);
	struct slot *s = find(t, key, len, h);

	*added = false;
	if (s->id)
		return s->id;
	if (t->count >= (t->mask + 1) / 2 || len > t->max_bytes - t->bytes)
		return 0;
	s->key = malloc(len ? len : 1);
	if (!s->key)
		return 0;
	memcpy(s->key, key, len);
	s->hash = h;
	s->len = len;
	s->id = ++t->count;
	t->bytes += len;
	*added = true;
	return s->id;
}
