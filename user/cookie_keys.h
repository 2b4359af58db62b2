/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* cookie_keys.h: the probe cookies the 5.10 builds hold, by file and offset: bounded, pruned. */
#ifndef GS_COOKIE_KEYS_H
#define GS_COOKIE_KEYS_H

#include <stddef.h>
#include <stdint.h>

/*
 * The 5.10 builds find an entry probe's cookie in a BPF hash keyed by the probed file (kernel
 * dev_t, inode) and offset (bpf/gs_calls.bpf.h, probe_cookies). This set mirrors what is in
 * it, so that the entries of a file no longer probed (its processes gone) are deleted, and
 * the map never fills with stale ones: at most cap keys, the map's size.
 */
struct gs_cookie_key {
	uint64_t dev; /* kernel dev_t: major << 20 | minor */
	uint64_t ino;
	uint64_t off;
};

struct gs_cookie_keys;

/* an empty set of at most cap keys; NULL with errno set. Free with gs_cookie_keys__free(). */
struct gs_cookie_keys *gs_cookie_keys__new(size_t cap);
void gs_cookie_keys__free(struct gs_cookie_keys *s);

/*
 * Adds k with its cookie: 1 if the map must be written (a new key, or another cookie for
 * it: two names at one address, the last one wins), 0 if it holds that already, -ENOSPC
 * when the set is full, -ENOMEM.
 */
int gs_cookie_keys__add(struct gs_cookie_keys *s, const struct gs_cookie_key *k, uint64_t cookie);

/* Removes k (an add whose map write failed); no-op if absent. */
void gs_cookie_keys__remove(struct gs_cookie_keys *s, const struct gs_cookie_key *k);

/*
 * Takes the keys of file (dev, ino) out of the set, at most max of them into out (call again
 * while it returns max); returns how many, for the caller to delete from the map.
 */
size_t gs_cookie_keys__take_file(struct gs_cookie_keys *s, uint64_t dev, uint64_t ino,
				 struct gs_cookie_key *out, size_t max);

/* keys held */
size_t gs_cookie_keys__count(const struct gs_cookie_keys *s);

#endif /* GS_COOKIE_KEYS_H */
