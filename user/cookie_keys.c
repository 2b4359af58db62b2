// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cookie_keys.c: the set of (file, offset) -> cookie entries the 5.10 builds' map holds. */
#include <errno.h>
#include <stdlib.h>
#include "user/array.h"
#include "user/cookie_keys.h"

struct entry {
	struct gs_cookie_key key;
	uint64_t cookie;
};

/* a plain array: a few hundred probed functions per library, a few libraries */
struct gs_cookie_keys {
	struct entry *items;
	size_t nr, cap_items, cap;
};

struct gs_cookie_keys *gs_cookie_keys__new(size_t cap)
{
	struct gs_cookie_keys *s = calloc(1, sizeof(*s));

	if (s)
		s->cap = cap;
	return s;
}

void gs_cookie_keys__free(struct gs_cookie_keys *s)
{
	if (!s)
		return;
	free(s->items);
	free(s);
}

static struct entry *find(struct gs_cookie_keys *s, const struct gs_cookie_key *k)
{
	for (size_t i = 0; i < s->nr; i++) {
		struct gs_cookie_key *e = &s->items[i].key;

		if (e->dev == k->dev && e->ino == k->ino && e->off == k->off)
			return &s->items[i];
	}
	return NULL;
}

int gs_cookie_keys__add(struct gs_cookie_keys *s, const struct gs_cookie_key *k, uint64_t cookie)
{
	struct entry *e = find(s, k);

	if (e && e->cookie == cookie)
		return 0;
	if (e) { /* two names at one address (aliases): the last one probed, as the map had */
		e->cookie = cookie;
		return 1;
	}
	if (s->nr >= s->cap)
		return -ENOSPC;
	if (GS_ARRAY_RESERVE(s->items, s->nr, s->cap_items, 64))
		return -ENOMEM;
	s->items[s->nr++] = (struct entry){ .key = *k, .cookie = cookie };
	return 1;
}

void gs_cookie_keys__remove(struct gs_cookie_keys *s, const struct gs_cookie_key *k)
{
	struct entry *e = find(s, k);

	if (e)
		*e = s->items[--s->nr];
}

size_t gs_cookie_keys__take_file(struct gs_cookie_keys *s, uint64_t dev, uint64_t ino,
				 struct gs_cookie_key *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nr && n < max;) {
		if (s->items[i].key.dev == dev && s->items[i].key.ino == ino) {
			out[n++] = s->items[i].key;
			s->items[i] = s->items[--s->nr];
		} else {
			i++;
		}
	}
	return n;
}

size_t gs_cookie_keys__count(const struct gs_cookie_keys *s)
{
	return s->nr;
}
