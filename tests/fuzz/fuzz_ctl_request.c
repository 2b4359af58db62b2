// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* fuzz_ctl_request.c: libFuzzer harness for the control socket's request lines (ctl_request.c). */
#include <errno.h>
#include <math.h>
#include "profilers/daemon/ctl_request.h"
#include "tests/fuzz/fuzz.h"

/*
 * The reply a client gets is its request's error message: one line of printable ASCII,
 * ending inside msg_len, whatever the client sent. msg is a heap block of exactly msg_len
 * bytes, so that ASan sees a write past it.
 */
static void parse(const char *line, size_t msg_len)
{
	struct gs_ctl_request req;
	char *msg = malloc(msg_len ? msg_len : 1);
	size_t len;
	int err;

	if (!msg)
		abort();
	err = gs_ctl_request__parse(line, &req, msg, msg_len);
	if (err) {
		GS_FUZZ_CHECK(err == -EINVAL);
		if (msg_len) {
			len = strnlen(msg, msg_len);
			GS_FUZZ_CHECK(len < msg_len);
			for (size_t i = 0; i < len; i++)
				GS_FUZZ_CHECK(msg[i] >= 0x20 && msg[i] < 0x7f);
			GS_FUZZ_CHECK(len || msg_len == 1);
		}
		free(msg);
		return;
	}
	free(msg);
	GS_FUZZ_CHECK(strcmp(gs_ctl_verb_name(req.verb), "?"));
	if (req.verb != GS_CTL_STATUS)
		GS_FUZZ_CHECK(req.pid >= 1 && req.pid <= GS_CTL_PID_MAX);
	if (req.verb == GS_CTL_RECORD) {
		GS_FUZZ_CHECK(isfinite(req.secs));
		GS_FUZZ_CHECK(req.secs >= GS_CTL_RECORD_MIN_S && req.secs <= GS_CTL_RECORD_MAX_S);
		GS_FUZZ_CHECK(strnlen(req.events, sizeof(req.events)) < sizeof(req.events));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line = gs_fuzz_strdup(data, size);

	/* as the daemon replies, then with every short buffer a caller might pass */
	parse(line, 256);
	parse(line, gs_fuzz_cut(data, size, 1) % 80);
	parse(line, 0);
	parse(line, 1);
	free(line);
	return 0;
}
