// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_debuginfod_client.c: debuginfod only when DEBUGINFOD_URLS says so; a bounded queue. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests/unit/harness.h"
#include "user/clock.h"
#include "user/debuginfod_client.h"

GS_TEST(debuginfod_only_with_urls_set_and_not_empty)
{
	unsetenv("DEBUGINFOD_URLS");
	GS_EXPECT(!gs_debuginfod_enabled());
	GS_EXPECT(!gs_debuginfod__new());
	setenv("DEBUGINFOD_URLS", "", 1);
	GS_EXPECT(!gs_debuginfod_enabled());
	setenv("DEBUGINFOD_URLS", "  ", 1);
	GS_EXPECT(!gs_debuginfod_enabled());
	GS_EXPECT(!gs_debuginfod__new());
	setenv("DEBUGINFOD_URLS", "http://127.0.0.1:1", 1);
	GS_EXPECT(gs_debuginfod_enabled());
	unsetenv("DEBUGINFOD_URLS");
}

/* A server nobody listens on: every fetch fails fast; the queue's rules hold. */
GS_TEST(debuginfod_queue_validates_dedups_and_fails_fetches)
{
	struct gs_debuginfod *d;
	char hex[2 * 64 + 1];
	char cache[] = "/tmp/gs_debuginfod_XXXXXX";
	uint64_t t0;

	GS_EXPECT(mkdtemp(cache));
	setenv("DEBUGINFOD_URLS", "http://127.0.0.1:1", 1);
	setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
	setenv("DEBUGINFOD_TIMEOUT", "3", 1);
	d = gs_debuginfod__new();
	unsetenv("DEBUGINFOD_URLS");
	if (!d && errno == ENOENT) {
		printf("skip: libdebuginfod.so.1 not installed\n");
		return;
	}
	GS_EXPECT(d);
	GS_EXPECT_EQ(gs_debuginfod__take(d, hex), -EAGAIN);
	GS_EXPECT_EQ(gs_debuginfod__request(d, "../../etc/passwd"), -EINVAL);
	GS_EXPECT_EQ(gs_debuginfod__request(d, "ABCD"), -EINVAL); /* lowercase only */
	GS_EXPECT_EQ(gs_debuginfod__request(d, "abc"), -EINVAL);  /* whole bytes */
	GS_EXPECT_EQ(gs_debuginfod__request(d, "0123456789abcdef0123"), 0);
	GS_EXPECT_EQ(gs_debuginfod__request(d, "0123456789abcdef0123"), 0); /* once */
	t0 = gs_clock_ns(CLOCK_MONOTONIC);
	GS_EXPECT_EQ(gs_debuginfod__wait(d), 0);
	GS_EXPECT(gs_clock_ns(CLOCK_MONOTONIC) - t0 < 3500000000ULL);
	GS_EXPECT(gs_debuginfod__has_news(d));
	GS_EXPECT(gs_debuginfod__take(d, hex) < 0); /* refused: nothing listens */
	GS_EXPECT_STR_EQ(hex, "0123456789abcdef0123");
	GS_EXPECT_EQ(gs_debuginfod__take(d, hex), -EAGAIN); /* asked once only */
	GS_EXPECT(!gs_debuginfod__has_news(d));
	gs_debuginfod__free(d);
	gs_debuginfod__free(NULL);
	snprintf(hex, sizeof(hex), "rm -rf '%s'", cache);
	GS_EXPECT(!system(hex));
}

GS_TEST_MAIN(debuginfod_only_with_urls_set_and_not_empty,
	     debuginfod_queue_validates_dedups_and_fails_fetches)
