/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* cupti_bind.h: the CUPTI functions the injection library calls, bound at run time. */
#ifndef GS_CUPTI_BIND_H
#define GS_CUPTI_BIND_H

#include <stddef.h>
#include <stdint.h>
#include <cupti.h>

#define GS_CUPTI_FN(name) __typeof__(&name) name

/* One pointer per function, named as CUPTI names it. */
struct gs_cupti_fns {
	GS_CUPTI_FN(cuptiGetVersion);
	GS_CUPTI_FN(cuptiSubscribe);
	GS_CUPTI_FN(cuptiEnableDomain);
	GS_CUPTI_FN(cuptiGetTimestamp);
	GS_CUPTI_FN(cuptiActivityRegisterTimestampCallback);
	GS_CUPTI_FN(cuptiActivityRegisterCallbacks);
	GS_CUPTI_FN(cuptiActivityEnable);
	GS_CUPTI_FN(cuptiActivityFlushPeriod);
	GS_CUPTI_FN(cuptiActivityFlushAll);
	GS_CUPTI_FN(cuptiActivityGetNextRecord);
	GS_CUPTI_FN(cuptiActivityGetNumDroppedRecords);
};

extern struct gs_cupti_fns gs_cupti;

/*
 * Binds gs_cupti to the process's CUPTI: the one GPUSNOOP_CUPTI_LIBRARY names, else the
 * one it already has loaded (PyTorch maps its own), else the one of the driver's CUDA major
 * version, else the one this library was built with. Returns 0 with its CUPTI_API_VERSION in
 * @api, or -1 with why (one line) in @why.
 */
int gs_cupti_bind(uint32_t *api, char *why, size_t len);

#endif /* GS_CUPTI_BIND_H */
