// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* inject.c: CUPTI injection library; completed activity records go to gpusnoop by USDT. */

/*
 * The CUDA driver loads this library when CUDA_INJECTION64_PATH names it and calls
 * InitializeInjection() at its initialisation. It enables CUPTI's kernel, memcpy and memset
 * records and API callbacks, and hands every completed record to a USDT probe: gpusnoop's
 * BPF copies it into its ring buffer. While traced, completed records are asked for at the
 * return of every CUDA call, not only at exit: a process that ends in _exit() (a forked
 * worker, Python's multiprocessing) runs no atexit handler, and what CUPTI still held would
 * be lost with it. Nothing here opens a file or a socket. With no
 * gpusnoop attached (the probes' semaphores are 0) CUPTI is offered no buffer, so it keeps
 * no records and the API callback returns after one look at a semaphore.
 */
#define _SDT_HAS_SEMAPHORES 1
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/sdt.h>
#include <cupti.h>
#include "profilers/cupti/cupti_abi.h"
#include "profilers/cupti/cupti_bind.h"

#define BUFFER_BYTES	(256 * 1024)
#define BUFFER_ALIGN	8
#define FLUSH_PERIOD_MS 500    /* records of a running process reach gpusnoop within this */
#define CUPTI_12_6_API	24     /* CUPTI_API_VERSION of CUDA 12.6 (all its updates) */
#define CUPTI_13_1_API	130100 /* ... of CUDA 13.1: xxyyzz from 13.0 on */
#define EXPORT		__attribute__((visibility("default")))

/*
 * The offsets gpusnoop decodes, checked against the newest records of the headers this is
 * built with (CUDA 12 or 13); older CUPTIs write the same fields at the same offsets.
 */
#if CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityKernel10 kernel_record;
typedef CUpti_ActivityMemcpy6 memcpy_record;
#elif CUPTI_API_VERSION >= 19
typedef CUpti_ActivityKernel9 kernel_record;
typedef CUpti_ActivityMemcpy5 memcpy_record;
#else
#error "libgpusnoop-cupti.so needs CUPTI headers of CUDA 12 or later"
#endif
typedef CUpti_ActivityMemset4 memset_record;
#define SAME_OFFSET(type, field, off) \
	_Static_assert(offsetof(type, field) == (off), #type "." #field " moved")
SAME_OFFSET(kernel_record, registersPerThread, GS_CUPTI_KERNEL_REGISTERS);
SAME_OFFSET(kernel_record, start, GS_CUPTI_KERNEL_START);
SAME_OFFSET(kernel_record, end, GS_CUPTI_KERNEL_END);
SAME_OFFSET(kernel_record, deviceId, GS_CUPTI_KERNEL_DEVICE);
SAME_OFFSET(kernel_record, contextId, GS_CUPTI_KERNEL_CONTEXT);
SAME_OFFSET(kernel_record, streamId, GS_CUPTI_KERNEL_STREAM);
SAME_OFFSET(kernel_record, gridX, GS_CUPTI_KERNEL_GRID);
SAME_OFFSET(kernel_record, blockX, GS_CUPTI_KERNEL_BLOCK);
SAME_OFFSET(kernel_record, staticSharedMemory, GS_CUPTI_KERNEL_STATIC_SMEM);
SAME_OFFSET(kernel_record, dynamicSharedMemory, GS_CUPTI_KERNEL_DYNAMIC_SMEM);
SAME_OFFSET(kernel_record, correlationId, GS_CUPTI_KERNEL_CORRELATION);
SAME_OFFSET(kernel_record, name, GS_CUPTI_KERNEL_NAME);
SAME_OFFSET(memcpy_record, copyKind, GS_CUPTI_MEMCPY_COPY_KIND);
SAME_OFFSET(memcpy_record, bytes, GS_CUPTI_MEMCPY_BYTES);
SAME_OFFSET(memcpy_record, start, GS_CUPTI_MEMCPY_START);
SAME_OFFSET(memcpy_record, end, GS_CUPTI_MEMCPY_END);
SAME_OFFSET(memcpy_record, deviceId, GS_CUPTI_MEMCPY_DEVICE);
SAME_OFFSET(memcpy_record, contextId, GS_CUPTI_MEMCPY_CONTEXT);
SAME_OFFSET(memcpy_record, streamId, GS_CUPTI_MEMCPY_STREAM);
SAME_OFFSET(memcpy_record, correlationId, GS_CUPTI_MEMCPY_CORRELATION);
SAME_OFFSET(memset_record, value, GS_CUPTI_MEMSET_VALUE);
SAME_OFFSET(memset_record, bytes, GS_CUPTI_MEMSET_BYTES);
SAME_OFFSET(memset_record, start, GS_CUPTI_MEMSET_START);
SAME_OFFSET(memset_record, end, GS_CUPTI_MEMSET_END);
SAME_OFFSET(memset_record, deviceId, GS_CUPTI_MEMSET_DEVICE);
SAME_OFFSET(memset_record, contextId, GS_CUPTI_MEMSET_CONTEXT);
SAME_OFFSET(memset_record, streamId, GS_CUPTI_MEMSET_STREAM);
SAME_OFFSET(memset_record, correlationId, GS_CUPTI_MEMSET_CORRELATION);
_Static_assert(sizeof(kernel_record) >= GS_CUPTI_KERNEL_NEED, "kernel record");
_Static_assert(sizeof(memcpy_record) >= GS_CUPTI_MEMCPY_NEED, "memcpy record");
_Static_assert(sizeof(memset_record) >= GS_CUPTI_MEMSET_NEED, "memset record");
_Static_assert(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL == GS_CUPTI_KIND_CONCURRENT_KERNEL, "kind");
_Static_assert(CUPTI_ACTIVITY_KIND_MEMCPY == GS_CUPTI_KIND_MEMCPY, "kind");
_Static_assert(CUPTI_ACTIVITY_KIND_MEMSET == GS_CUPTI_KIND_MEMSET, "kind");
_Static_assert(CUPTI_CB_DOMAIN_RUNTIME_API == GS_CUPTI_DOMAIN_RUNTIME_API, "domain");
_Static_assert(CUPTI_CB_DOMAIN_DRIVER_API == GS_CUPTI_DOMAIN_DRIVER_API, "domain");

/* gpusnoop's uprobes raise these while attached (the kernel's uprobe ref_ctr_offset) */
#define SEMAPHORE(name)                                                                  \
	__extension__ unsigned short gpusnoop_##name##_semaphore __attribute__((unused)) \
	__attribute__((section(".probes"))) __attribute__((visibility("hidden")))
SEMAPHORE(activity);
SEMAPHORE(api);
SEMAPHORE(dropped);
SEMAPHORE(clock);

#define TRACED(name) (__atomic_load_n(&gpusnoop_##name##_semaphore, __ATOMIC_RELAXED) != 0)

/* true while the last buffer request found nobody attached; its drops are not losses */
static atomic_bool dormant = true;
/* the last buffer handed back, kept for the next request: buffers come and go per call */
static _Atomic(uint8_t *) spare;
static _Atomic uint64_t last_clock_check_ns;

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* CUPTI converts its GPU timestamps to this clock, the one gpusnoop's BPF stamps with. */
static uint64_t CUPTIAPI timestamp(void)
{
	return monotonic_ns();
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	size_t ignored;

	*max_records = 0; /* as many as fit */
	if (!TRACED(activity)) {
		atomic_store(&dormant, true);
		*buffer = NULL; /* CUPTI keeps nothing: the untraced cost */
		*size = 0;
		return;
	}
	/* what was dropped while nobody listened is reset, not reported as a loss */
	if (atomic_exchange(&dormant, false))
		gs_cupti.cuptiActivityGetNumDroppedRecords(NULL, 0, &ignored);
	*buffer = atomic_exchange(&spare, NULL);
	if (!*buffer)
		*buffer = aligned_alloc(BUFFER_ALIGN, BUFFER_BYTES);
	*size = *buffer ? BUFFER_BYTES : 0;
}

/* Kept as the spare when there is none; freed otherwise. */
static void give_back(uint8_t *buffer)
{
	uint8_t *none = NULL;

	if (buffer && !atomic_compare_exchange_strong(&spare, &none, buffer))
		free(buffer);
}

/*
 * The bytes of a record gpusnoop decodes (the same in every record version); 0 for the kinds
 * it does not want.
 */
static uint32_t record_size(const CUpti_Activity *rec, const char **name)
{
	*name = NULL;
	switch (rec->kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		*name = ((const kernel_record *)rec)->name;
		return GS_CUPTI_KERNEL_NEED;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		return GS_CUPTI_MEMCPY_NEED;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		return GS_CUPTI_MEMSET_NEED;
	default:
		return 0;
	}
}

static void deliver(uint8_t *buffer, size_t valid)
{
	CUpti_Activity *rec = NULL;
	const char *name;
	uint32_t size;

	while (gs_cupti.cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
		size = record_size(rec, &name);
		if (size && TRACED(activity))
			STAP_PROBE3(gpusnoop, activity, rec, size, name);
	}
}

static void report_drops(CUcontext ctx, uint32_t stream)
{
	size_t dropped = 0;

	if (gs_cupti.cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS &&
	    dropped && TRACED(dropped))
		STAP_PROBE1(gpusnoop, dropped, (uint64_t)dropped);
}

/*
 * One reading of CUPTI's clock between two of CLOCK_MONOTONIC: the mapping's error bound.
 * At most one per flush period: buffers are handed back at every traced call's return.
 */
static void check_clock(void)
{
	uint64_t before, cupti = 0, after, last;

	if (!TRACED(clock))
		return;
	before = monotonic_ns();
	last = atomic_load(&last_clock_check_ns);
	if (last && before - last < FLUSH_PERIOD_MS * 1000000ULL)
		return;
	if (!atomic_compare_exchange_strong(&last_clock_check_ns, &last, before))
		return; /* another thread checks now */
	if (gs_cupti.cuptiGetTimestamp(&cupti) != CUPTI_SUCCESS)
		return;
	after = monotonic_ns();
	STAP_PROBE3(gpusnoop, clock, before, cupti, after);
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
				      size_t valid)
{
	if (buffer && valid)
		deliver(buffer, valid);
	report_drops(ctx, stream);
	check_clock();
	give_back(buffer);
}

/*
 * At a call's entry, on the calling thread: gpusnoop's uprobe on the same call is in flight,
 * so it ties this correlation id to that slice, and the id is the one of every record the
 * call causes (all the kernels of a graph launch). At its return, while traced, the records
 * completed so far are handed over (CUPTI returns only buffers whose records are all
 * complete; Kineto flushes from this callsite too): after a process's last synchronising
 * call nothing of its work is left for an exit handler that _exit() would skip.
 */
static void CUPTIAPI api_called(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
				const void *data)
{
	const CUpti_CallbackData *cb = data;

	if (cb->callbackSite == CUPTI_API_EXIT) {
		if (TRACED(activity))
			gs_cupti.cuptiActivityFlushAll(0);
		return;
	}
	if (!TRACED(api) || cb->callbackSite != CUPTI_API_ENTER)
		return;
	STAP_PROBE3(gpusnoop, api, cb->correlationId, (uint32_t)cbid, (uint32_t)domain);
}

static void flush_at_exit(void)
{
	gs_cupti.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

/* why InitializeInjection set up no GPU activity; "" before it ran and when it did */
static char status[192];

/* gpusnoop --inject calls this after InitializeInjection to say why, in its own output */
EXPORT const char *gpusnoop_cupti_status(void)
{
	return status;
}

/* Keeps why (the status) and says it on the process's stderr; returns false. */
__attribute__((format(printf, 1, 2))) static bool fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(status, sizeof(status), fmt, ap);
	va_end(ap);
	fprintf(stderr, "gpusnoop-cupti: %s; no GPU activity for gpusnoop\n", status);
	return false;
}

static bool check(CUptiResult res, const char *what)
{
	return res == CUPTI_SUCCESS || fail("%s: CUPTI error %d", what, (int)res);
}

/* CUPTI takes one subscriber per process: one already there (PyTorch's profiler) wins. */
static bool subscribe(void)
{
	CUpti_SubscriberHandle subscriber;
	CUptiResult res = gs_cupti.cuptiSubscribe(&subscriber, api_called, NULL);

	if (res == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
		return fail("CUPTI has another subscriber (PyTorch's profiler?)");
	if (!check(res, "cuptiSubscribe"))
		return false;
	gs_cupti.cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
	gs_cupti.cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
	return true;
}

/*
 * Whether CUPTI keeps its own clock (CLOCK_REALTIME on Linux), which gpusnoop shifts onto
 * CLOCK_MONOTONIC. Otherwise a timestamp callback gives CLOCK_MONOTONIC itself, registered
 * before any kind is enabled; but from CUDA 12.6 Update 2 until 13.1, CUPTI then writes kernel
 * records without timestamps (PyTorch issue 192021), and their API versions (24 is all of
 * 12.6) keep CUPTI's clock.
 */
static bool clock_is_cuptis(uint32_t api)
{
	return api >= CUPTI_12_6_API && api < CUPTI_13_1_API;
}

/*
 * Returns 1 when GPU activity is set up, 0 when not (said on stderr and kept for
 * gpusnoop_cupti_status()): the driver ignores it, gpusnoop's --inject reports it.
 */
EXPORT int InitializeInjection(void)
{
	char why[160];
	uint32_t api;

	if (gs_cupti_bind(&api, why, sizeof(why)))
		return fail("%s", why);
	if (!clock_is_cuptis(api) &&
	    !check(gs_cupti.cuptiActivityRegisterTimestampCallback(timestamp),
		   "timestamp callback"))
		return 0;
	if (!check(gs_cupti.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed),
		   "buffer callbacks"))
		return 0;
	if (!subscribe())
		return 0;
	if (!check(gs_cupti.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
		   "kernel records") ||
	    !check(gs_cupti.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), "memcpy records") ||
	    !check(gs_cupti.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET), "memset records"))
		return 0;
	gs_cupti.cuptiActivityFlushPeriod(FLUSH_PERIOD_MS);
	atexit(flush_at_exit);
	return 1;
}
