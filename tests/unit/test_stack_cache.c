// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_stack_cache.c: stacks sent once and the records that refer to them, resolved. */
#include <string.h>
#include <linux/types.h>
#include "tests/unit/harness.h"
#include "user/event_decode.h"
#include "user/stack_cache.h"

static struct gs_mem_alloc alloc(__u32 pid, __u16 flags, __u16 nr, __u64 first)
{
	struct gs_mem_alloc e;

	memset(&e, 0, sizeof(e));
	e.hdr.type = GS_EV_MEM_ALLOC;
	e.hdr.flags = flags;
	e.hdr.pid = pid;
	e.size = 4096;
	e.nr_frames = nr;
	for (__u16 i = 0; i < nr; i++)
		e.frames[i] = first + i;
	e.hdr.size = offsetof(struct gs_mem_alloc, frames) + nr * 8;
	return e;
}

static const struct gs_mem_alloc *resolve(struct gs_stack_cache *c, const struct gs_mem_alloc *e,
					  union gs_stack_record *buf)
{
	size_t size = e->hdr.size;

	GS_EXPECT_EQ(gs_event_decode(e, size), GS_EV_MEM_ALLOC);
	return gs_stack_cache__resolve(c, e, &size, buf, sizeof(*buf));
}

GS_TEST(a_reference_gets_the_frames_its_entry_was_sent_with)
{
	struct gs_stack_cache *c = gs_stack_cache__new();
	struct gs_mem_alloc sent = alloc(7, GS_EV_F_STACK_NEW | 5, 3, 0x1000);
	struct gs_mem_alloc ref = alloc(7, GS_EV_F_STACK_REF | 5, 0, 0);
	struct gs_stack_cache_stats st;
	union gs_stack_record buf;
	const struct gs_mem_alloc *got;

	GS_EXPECT(resolve(c, &sent, &buf) == &sent);
	got = resolve(c, &ref, &buf);
	GS_EXPECT(got == &buf.alloc);
	GS_EXPECT_EQ(got->nr_frames, 3);
	GS_EXPECT_EQ(got->frames[2], 0x1002);
	GS_EXPECT_EQ(got->size, 4096);
	GS_EXPECT_EQ(got->hdr.size, offsetof(struct gs_mem_alloc, frames) + 3 * 8);
	GS_EXPECT_EQ(gs_event_decode(got, got->hdr.size), GS_EV_MEM_ALLOC);
	/* the entry sent again: later references get the new stack */
	sent = alloc(7, GS_EV_F_STACK_NEW | 5, 2, 0x2000);
	resolve(c, &sent, &buf);
	got = resolve(c, &ref, &buf);
	GS_EXPECT_EQ(got->nr_frames, 2);
	GS_EXPECT_EQ(got->frames[0], 0x2000);
	gs_stack_cache__stats(c, &st);
	GS_EXPECT_EQ(st.sent, 2);
	GS_EXPECT_EQ(st.refs, 2);
	GS_EXPECT_EQ(st.unresolved, 0);
	gs_stack_cache__free(c);
}

GS_TEST(a_reference_to_nothing_or_another_process_stays_without_frames)
{
	struct gs_stack_cache *c = gs_stack_cache__new();
	struct gs_mem_alloc sent = alloc(7, GS_EV_F_STACK_NEW | 9, 3, 0x1000);
	struct gs_mem_alloc none = alloc(7, GS_EV_F_STACK_REF | 10, 0, 0);
	struct gs_mem_alloc other = alloc(8, GS_EV_F_STACK_REF | 9, 0, 0);
	struct gs_stack_cache_stats st;
	union gs_stack_record buf;

	resolve(c, &sent, &buf);
	GS_EXPECT(resolve(c, &none, &buf) == &none);
	GS_EXPECT(resolve(c, &other, &buf) == &other);
	gs_stack_cache__stats(c, &st);
	GS_EXPECT_EQ(st.unresolved, 2);
	GS_EXPECT_EQ(st.refs, 0);
	gs_stack_cache__free(c);
}

GS_TEST(a_call_site_alone_is_neither_kept_nor_resolved)
{
	struct gs_stack_cache *c = gs_stack_cache__new();
	struct gs_mem_alloc site = alloc(7, GS_EV_F_STACK_NEW | GS_EV_F_STACK_REF, 1, 0x1000);
	struct gs_mem_alloc ref = alloc(7, GS_EV_F_STACK_REF, 0, 0);
	struct gs_stack_cache_stats st;
	union gs_stack_record buf;

	GS_EXPECT(resolve(c, &site, &buf) == &site);
	GS_EXPECT(resolve(c, &ref, &buf) == &ref); /* slot 0 was never sent */
	gs_stack_cache__stats(c, &st);
	GS_EXPECT_EQ(st.site_only, 1);
	GS_EXPECT_EQ(st.sent, 0);
	GS_EXPECT_EQ(st.unresolved, 1);
	gs_stack_cache__free(c);
}

GS_TEST(records_without_stacks_pass_as_they_are)
{
	struct gs_stack_cache *c = gs_stack_cache__new();
	struct gs_mem_alloc plain = alloc(7, 0, 2, 0x1000);
	union gs_stack_record buf;

	GS_EXPECT(resolve(c, &plain, &buf) == &plain);
	gs_stack_cache__free(c);
}

GS_TEST_MAIN(a_reference_gets_the_frames_its_entry_was_sent_with,
	     a_reference_to_nothing_or_another_process_stays_without_frames,
	     a_call_site_alone_is_neither_kept_nor_resolved,
	     records_without_stacks_pass_as_they_are)
