// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* fuzz_gpu_record.c: libFuzzer harness for CUPTI records from the ring buffer and their links. */
#include "profilers/cuda/gpu_activity.h"
#include "profilers/cuda/gpu_correlate.h"
#include "tests/fuzz/fuzz.h"

/*
 * The input is what a traced process can put in a GS_EV_GPU_RECORD: the record bytes its
 * USDT probe pointed at, the size it claimed, the name and name length. The decoder must
 * refuse or decode within the bytes BPF copied; decoded ids then go through the correlator
 * as a hostile process could send them.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct gs_gpu_record e;
	struct gs_gpu_correlate *c;
	struct gs_gpu_op op;
	size_t n = size < sizeof(e) ? size : sizeof(e);
	int err;

	memset(&e, 0, sizeof(e));
	memcpy(&e, data, n);
	/* the ring buffer's size of the record: sometimes short, as a truncated read would be */
	err = gs_gpu_op_decode(&e, gs_fuzz_cut(data, size, 1) ? sizeof(e) : n, &op);
	if (err)
		return 0;
	GS_FUZZ_CHECK(e.size <= GS_GPU_RECORD_BYTES);
	GS_FUZZ_CHECK(op.end_ns >= op.start_ns && op.start_ns);
	if (op.name) {
		GS_FUZZ_CHECK(op.name == e.name);
		GS_FUZZ_CHECK(strlen(op.name) < e.name_len && e.name_len <= GS_GPU_NAME_BYTES);
	}
	GS_FUZZ_CHECK(gs_gpu_copy_kind_name(op.copy_kind) != NULL);
	c = gs_gpu_correlate__new();
	if (!c)
		return 0;
	gs_gpu_correlate__api(c, 1, 2, op.start_ns, op.correlation, op.device);
	if (gs_gpu_correlate__slice(c, 1, 2, op.start_ns, op.end_ns, op.device))
		GS_FUZZ_CHECK(gs_gpu_correlate__launched(c, 1, op.correlation));
	gs_gpu_correlate__launched(c, 1, op.stream);
	gs_gpu_correlate__forget_pid(c, 1);
	gs_gpu_correlate__free(c);
	return 0;
}
