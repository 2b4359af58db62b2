// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cupti_bind.c: finds the process's CUPTI and binds the functions the library calls. */

/*
 * The library links no CUPTI: a process holds one already where PyTorch is loaded (its
 * libtorch maps the libcupti.so.N of the CUDA it was built for), and a second CUPTI of
 * another major version in the same process would compete with it for the driver. The
 * fields gpusnoop decodes sit at the same offsets in every record version since CUDA 11.6
 * (CUpti_ActivityKernel7..10, Memcpy4..6, Memset4), so any of them will do.
 * GPUSNOOP_CUPTI_LIBRARY=PATH in the process's environment names the one to use instead.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include "profilers/cupti/cupti_bind.h"

/* CUDA 11.6: the timestamp callback, and the oldest record layouts checked against ours */
#define OLDEST_CUPTI_API 17

struct gs_cupti_fns gs_cupti;

/*
 * Newest first: a process with two (it should not have) is traced with the newer. CUDA 11
 * named its CUPTI by minor version too, and 11.6 is the oldest that will do.
 */
static const char *const sonames[] = { "libcupti.so.13",   "libcupti.so.12",   "libcupti.so.11.8",
				       "libcupti.so.11.7", "libcupti.so.11.6", "libcupti.so" };

static void *already_loaded(void)
{
	for (size_t i = 0; i < sizeof(sonames) / sizeof(sonames[0]); i++) {
		void *h = dlopen(sonames[i], RTLD_NOW | RTLD_NOLOAD);

		if (h)
			return h;
	}
	return NULL;
}

/* the driver has called us, so its cuDriverGetVersion is there to ask */
static void *for_driver(char *name, size_t len)
{
	int (*driver_version)(int *) = (int (*)(int *))dlsym(RTLD_DEFAULT, "cuDriverGetVersion");
	int version = 0;
	void *h;

	if (driver_version && driver_version(&version) == 0 && version >= 1000) {
		snprintf(name, len, "libcupti.so.%d", version / 1000);
		h = dlopen(name, RTLD_NOW);
		if (h)
			return h;
	}
	snprintf(name, len, "%s", GS_CUPTI_BUILT_SONAME);
	return dlopen(name, RTLD_NOW);
}

#define BIND(h, fn)                                                     \
	((gs_cupti.fn = (__typeof__(gs_cupti.fn))dlsym(h, #fn)) != NULL \
		 ? 0                                                    \
		 : (snprintf(why, len, "its CUPTI has no %s", #fn), -1))

static int bind_all(void *h, char *why, size_t len)
{
	return BIND(h, cuptiGetVersion) ?: BIND(h, cuptiSubscribe) ?: BIND(h, cuptiEnableDomain)
		?: BIND(h, cuptiGetTimestamp) ?: BIND(h, cuptiActivityRegisterTimestampCallback)
		?: BIND(h, cuptiActivityRegisterCallbacks) ?: BIND(h, cuptiActivityEnable)
		?: BIND(h, cuptiActivityFlushPeriod) ?: BIND(h, cuptiActivityFlushAll)
		?: BIND(h, cuptiActivityGetNextRecord)
		?: BIND(h, cuptiActivityGetNumDroppedRecords);
}

/* The CUPTI to use: GPUSNOOP_CUPTI_LIBRARY's, the process's own, the driver's, ours. */
static void *find_cupti(char *why, size_t len)
{
	const char *chosen = secure_getenv("GPUSNOOP_CUPTI_LIBRARY");
	char name[32];
	void *h;

	if (chosen && *chosen) {
		h = dlopen(chosen, RTLD_NOW);
		if (!h)
			snprintf(why, len, "GPUSNOOP_CUPTI_LIBRARY: %s", dlerror());
		return h;
	}
	h = already_loaded();
	if (!h)
		h = for_driver(name, sizeof(name));
	if (!h)
		snprintf(why, len, "no CUPTI to load (%s: %s)", name, dlerror());
	return h;
}

int gs_cupti_bind(uint32_t *api, char *why, size_t len)
{
	void *h = find_cupti(why, len);

	*api = 0;
	if (!h)
		return -1;
	if (bind_all(h, why, len))
		return -1;
	if (gs_cupti.cuptiGetVersion(api) != CUPTI_SUCCESS || *api < OLDEST_CUPTI_API) {
		snprintf(why, len, "CUPTI API version %u is older than CUDA 11.6's (%d)", *api,
			 OLDEST_CUPTI_API);
		return -1;
	}
	return 0;
}
