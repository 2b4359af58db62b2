// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* stack_cache.c: the reader's copy of the stacks BPF sent once, and references resolved. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "user/event_decode.h"
#include "user/stack_cache.h"

struct entry {
	__u32 pid;
	__u32 nr;
	__u64 frames[GS_MAX_STACK];
};

struct gs_stack_cache {
	struct entry *entries[GS_STACK_CACHE_MAX]; /* each allocated when first sent */
	struct gs_stack_cache_stats stats;
};

struct gs_stack_cache *gs_stack_cache__new(void)
{
	return calloc(1, sizeof(struct gs_stack_cache));
}

void gs_stack_cache__free(struct gs_stack_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < GS_STACK_CACHE_MAX; i++)
		free(c->entries[i]);
	free(c);
}

/* A stack sent whole: kept in its entry, for the references that follow. */
static void keep(struct gs_stack_cache *c, const struct gs_event_hdr *hdr, const __u64 *frames,
		 __u16 nr)
{
	struct entry **slot = &c->entries[GS_EV_STACK_SLOT(hdr->flags)];

	if (!*slot)
		*slot = malloc(sizeof(**slot));
	if (!*slot)
		return; /* its references go unresolved, counted */
	(*slot)->pid = hdr->pid;
	(*slot)->nr = nr;
	memcpy((*slot)->frames, frames, nr * sizeof(__u64));
	c->stats.sent++;
}

const void *gs_stack_cache__resolve(struct gs_stack_cache *c, const void *data, size_t *size,
				    void *buf, size_t buf_size)
{
	const struct gs_event_hdr *hdr = data;
	struct gs_event_hdr *out = buf;
	size_t off, nr_off;
	const struct entry *e;
	__u16 nr;

	if (!(hdr->flags & (GS_EV_F_STACK_NEW | GS_EV_F_STACK_REF)) ||
	    !gs_event_frames_layout(hdr->type, &off, &nr_off))
		return data;
	memcpy(&nr, (const char *)data + nr_off, sizeof(nr));
	if (GS_EV_STACK_SITE_ONLY(hdr->flags)) { /* --stack-sample: the call site alone */
		c->stats.site_only++;
		return data;
	}
	if (hdr->flags & GS_EV_F_STACK_NEW) {
		if (nr) /* within hdr.size: gs_event_decode() checked it */
			keep(c, hdr, (const __u64 *)((const char *)data + off), nr);
		return data;
	}
	e = c->entries[GS_EV_STACK_SLOT(hdr->flags)];
	if (nr || !e || e->pid != hdr->pid || off + e->nr * sizeof(__u64) > buf_size) {
		c->stats.unresolved++;
		return data;
	}
	memcpy(buf, data, off);
	memcpy((char *)buf + off, e->frames, e->nr * sizeof(__u64));
	nr = (__u16)e->nr;
	memcpy((char *)buf + nr_off, &nr, sizeof(nr));
	out->size = (__u32)(off + e->nr * sizeof(__u64));
	*size = out->size;
	c->stats.refs++;
	return buf;
}

void gs_stack_cache__stats(const struct gs_stack_cache *c, struct gs_stack_cache_stats *out)
{
	*out = c ? c->stats : (struct gs_stack_cache_stats){ 0 };
}
