// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* nvtx_inject.c: NVTX's injection hook; ranges, marks and names go to gpusnoop by USDT. */

/*
 * Part of libgpusnoop-cupti.so: a process whose NVTX_INJECTION64_PATH names the library
 * calls InitializeInjectionNvtx2() at its first NVTX call (nvtxInit.h), as it does for
 * Nsight Systems. The handlers fire the gpusnoop:nvtx probe with a struct gs_nvtx_usdt;
 * gpusnoop's BPF copies it and its strings, bounded. With no gpusnoop attached (the probe's
 * semaphore is 0) a handler returns after one load and branch; only what later calls need
 * is kept then: push depths, range ids, and domains, categories and strings as registered
 * (rare calls). Handles given to the process are indices into bounded tables, never
 * pointers, so a stale or made-up handle names nothing rather than reading wild memory.
 * Needs no CUDA and no NVTX header (profilers/cupti/nvtx_abi.h).
 */
#define _SDT_HAS_SEMAPHORES 1
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>
#include <linux/types.h>
#include "bpf/gs_event.h"
#include "bpf/gs_nvtx.h"
#include "profilers/cupti/nvtx_abi.h"

_Static_assert(sizeof(struct gs_nvtx_attrs) == 48, "nvtxEventAttributes_v2");
_Static_assert(offsetof(struct gs_nvtx_attrs, message) == 40, "nvtxEventAttributes_v2.message");

#define EXPORT	       __attribute__((visibility("default")))
#define MAX_DOMAINS    256		     /* domain numbers 1..255; 0 is NVTX's default domain */
#define MAX_CATEGORIES 256		     /* named categories per domain */
#define MAX_STRINGS    65536		     /* registered strings, over all domains */
#define NAME_BYTES     GS_NVTX_MESSAGE_BYTES /* a copy kept of a name or string */

__extension__ unsigned short gpusnoop_nvtx_semaphore __attribute__((unused))
__attribute__((section(".probes"))) __attribute__((visibility("hidden")));

#define TRACED() (__atomic_load_n(&gpusnoop_nvtx_semaphore, __ATOMIC_RELAXED) != 0)

struct category {
	uint32_t id;
	const char *name;
};

struct domain {
	const char *name; /* NULL for the default domain */
	struct category categories[MAX_CATEGORIES];
	_Atomic uint32_t nr_categories;
};

/* entries are written under lock, then published by the count (release) */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct domain domains[MAX_DOMAINS];
static _Atomic uint32_t nr_domains = 1;
static const char *strings[MAX_STRINGS];
static _Atomic uint32_t nr_strings;
static _Atomic uint64_t next_range_id = 1;
static __thread int depth; /* this thread's open pushes, over every domain */

/* A wide string (UTF-32 on Linux) as UTF-8 in buf, cut at a whole character. */
static const char *utf8_of(const wchar_t *w, char *buf, size_t len)
{
	size_t n = 0;

	if (!w)
		return NULL;
	for (; *w; w++) {
		uint32_t c = (uint32_t)*w, need;
		char seq[4];

		if (c >= 0xd800 && (c < 0xe000 || c > 0x10ffff))
			c = '?';
		need = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
		if (n + need >= len)
			break;
		if (need == 1) {
			seq[0] = (char)c;
		} else {
			for (uint32_t i = need - 1; i > 0; i--, c >>= 6)
				seq[i] = (char)(0x80 | (c & 0x3f));
			seq[0] = (char)((0xf00u >> need) | c);
		}
		memcpy(buf + n, seq, need);
		n += need;
	}
	buf[n] = '\0';
	return buf;
}

/* A bounded copy that lives as long as the process (names are registered once). */
static const char *keep(const char *s)
{
	size_t len = s ? strnlen(s, NAME_BYTES - 1) : 0;
	char *copy = s ? malloc(len + 1) : NULL;

	if (!copy)
		return NULL;
	memcpy(copy, s, len);
	copy[len] = '\0';
	return copy;
}

static const char *keep_wide(const wchar_t *w)
{
	char buf[NAME_BYTES];

	return keep(utf8_of(w, buf, sizeof(buf)));
}

static struct domain *domain_of(gs_nvtxDomainHandle_t handle)
{
	uintptr_t i = (uintptr_t)handle;

	return i < atomic_load_explicit(&nr_domains, memory_order_acquire) ? &domains[i] : NULL;
}

static const char *string_of(gs_nvtxStringHandle_t handle)
{
	uintptr_t i = (uintptr_t)handle;

	return i && i <= atomic_load_explicit(&nr_strings, memory_order_acquire) ? strings[i - 1]
										 : NULL;
}

/* The newest name given to category id in d. */
static const char *category_of(const struct domain *d, uint32_t id)
{
	uint32_t n = d ? atomic_load_explicit(&d->nr_categories, memory_order_acquire) : 0;

	while (id && n--)
		if (d->categories[n].id == id)
			return d->categories[n].name;
	return NULL;
}

/* The message of an event's attributes, as UTF-8 (buf holds a converted wide one). */
static const char *message_of(const struct gs_nvtx_attrs *a, char *buf, size_t len)
{
	if (a->size < sizeof(*a))
		return NULL; /* no message field */
	switch (a->message_type) {
	case GS_NVTX_MESSAGE_ASCII:
		return a->message.ascii;
	case GS_NVTX_MESSAGE_UNICODE:
		return utf8_of(a->message.unicode, buf, len);
	case GS_NVTX_MESSAGE_REGISTERED:
		return string_of(a->message.registered);
	default:
		return NULL;
	}
}

/* Fires the probe; a, msg and domain are optional. */
static void fire(uint32_t kind, gs_nvtxDomainHandle_t domain, const struct gs_nvtx_attrs *a,
		 const char *msg, uint64_t range_id)
{
	const struct domain *d = domain_of(domain);
	struct gs_nvtx_usdt u = {
		.kind = kind,
		.domain = d ? (uintptr_t)domain : 0,
		.range_id = range_id,
		.domain_name = d && d->name ? (uintptr_t)d->name : 0,
	};
	char buf[GS_NVTX_MESSAGE_BYTES];

	if (a && a->size >= offsetof(struct gs_nvtx_attrs, message_type)) {
		u.category = a->category;
		u.category_name = (uintptr_t)category_of(d, a->category);
		u.has_color = a->color_type == GS_NVTX_COLOR_ARGB;
		u.color = u.has_color ? a->color : 0;
		u.payload_type = a->payload_type > 0 ? (uint32_t)a->payload_type : 0;
		u.payload = u.payload_type ? a->payload : 0;
		msg = message_of(a, buf, sizeof(buf));
	}
	u.message = (uintptr_t)msg;
	/* the probe reads u through its address: every store lands before it */
	__asm__ __volatile__("" : : "r"(&u) : "memory");
	STAP_PROBE1(gpusnoop, nvtx, &u);
	__asm__ __volatile__("" : : "r"(&u) : "memory");
}

static int push(gs_nvtxDomainHandle_t domain, const struct gs_nvtx_attrs *a, const char *msg)
{
	if (TRACED())
		fire(GS_NVTX_PUSH, domain, a, msg, 0);
	return depth++;
}

static int pop(gs_nvtxDomainHandle_t domain)
{
	if (TRACED())
		fire(GS_NVTX_POP, domain, NULL, NULL, 0);
	return depth > 0 ? --depth : -1;
}

static gs_nvtxRangeId_t start(gs_nvtxDomainHandle_t domain, const struct gs_nvtx_attrs *a,
			      const char *msg)
{
	uint64_t id = atomic_fetch_add_explicit(&next_range_id, 1, memory_order_relaxed);

	if (TRACED())
		fire(GS_NVTX_START, domain, a, msg, id);
	return id;
}

static void end(gs_nvtxDomainHandle_t domain, gs_nvtxRangeId_t id)
{
	if (TRACED())
		fire(GS_NVTX_END, domain, NULL, NULL, id);
}

static void mark(gs_nvtxDomainHandle_t domain, const struct gs_nvtx_attrs *a, const char *msg)
{
	if (TRACED())
		fire(GS_NVTX_MARK, domain, a, msg, 0);
}

/* The core module: NVTX's default domain */
static void MarkEx(const struct gs_nvtx_attrs *a)
{
	if (a)
		mark(NULL, a, NULL);
}

static void MarkA(const char *m)
{
	mark(NULL, NULL, m);
}

static void MarkW(const wchar_t *m)
{
	char buf[GS_NVTX_MESSAGE_BYTES];

	if (TRACED())
		mark(NULL, NULL, utf8_of(m, buf, sizeof(buf)));
}

static gs_nvtxRangeId_t RangeStartEx(const struct gs_nvtx_attrs *a)
{
	return a ? start(NULL, a, NULL) : 0;
}

static gs_nvtxRangeId_t RangeStartA(const char *m)
{
	return start(NULL, NULL, m);
}

static gs_nvtxRangeId_t RangeStartW(const wchar_t *m)
{
	char buf[GS_NVTX_MESSAGE_BYTES];

	return start(NULL, NULL, TRACED() ? utf8_of(m, buf, sizeof(buf)) : NULL);
}

static void RangeEnd(gs_nvtxRangeId_t id)
{
	end(NULL, id);
}

static int RangePushEx(const struct gs_nvtx_attrs *a)
{
	return a ? push(NULL, a, NULL) : -1;
}

static int RangePushA(const char *m)
{
	return push(NULL, NULL, m);
}

static int RangePushW(const wchar_t *m)
{
	char buf[GS_NVTX_MESSAGE_BYTES];

	return push(NULL, NULL, TRACED() ? utf8_of(m, buf, sizeof(buf)) : NULL);
}

static int RangePop(void)
{
	return pop(NULL);
}

/* Names a category of d (kept even while untraced: events later name it). */
static void name_category(struct domain *d, uint32_t id, const char *name)
{
	uint32_t n;

	if (!d || !name)
		return;
	pthread_mutex_lock(&lock);
	n = atomic_load_explicit(&d->nr_categories, memory_order_relaxed);
	if (n < MAX_CATEGORIES) {
		d->categories[n] = (struct category){ .id = id, .name = name };
		atomic_store_explicit(&d->nr_categories, n + 1, memory_order_release);
	} else {
		free((void *)name);
	}
	pthread_mutex_unlock(&lock);
}

static void NameCategoryA(uint32_t id, const char *name)
{
	name_category(&domains[0], id, keep(name));
}

static void NameCategoryW(uint32_t id, const wchar_t *name)
{
	name_category(&domains[0], id, keep_wide(name));
}

static void NameOsThreadA(uint32_t tid, const char *name)
{
	if (TRACED())
		fire(GS_NVTX_NAME_THREAD, NULL, NULL, name, tid);
}

static void NameOsThreadW(uint32_t tid, const wchar_t *name)
{
	char buf[GS_NVTX_MESSAGE_BYTES];

	if (TRACED())
		fire(GS_NVTX_NAME_THREAD, NULL, NULL, utf8_of(name, buf, sizeof(buf)), tid);
}

/* The core2 module: domains */
static void DomainMarkEx(gs_nvtxDomainHandle_t d, const struct gs_nvtx_attrs *a)
{
	if (a)
		mark(d, a, NULL);
}

static gs_nvtxRangeId_t DomainRangeStartEx(gs_nvtxDomainHandle_t d, const struct gs_nvtx_attrs *a)
{
	return a ? start(d, a, NULL) : 0;
}

static void DomainRangeEnd(gs_nvtxDomainHandle_t d, gs_nvtxRangeId_t id)
{
	end(d, id);
}

static int DomainRangePushEx(gs_nvtxDomainHandle_t d, const struct gs_nvtx_attrs *a)
{
	return a ? push(d, a, NULL) : -1;
}

static int DomainRangePop(gs_nvtxDomainHandle_t d)
{
	return pop(d);
}

static void DomainNameCategoryA(gs_nvtxDomainHandle_t d, uint32_t id, const char *name)
{
	name_category(domain_of(d), id, keep(name));
}

static void DomainNameCategoryW(gs_nvtxDomainHandle_t d, uint32_t id, const wchar_t *name)
{
	name_category(domain_of(d), id, keep_wide(name));
}

/* A registered string's handle: its number, from 1; NULL when the table is full. */
static gs_nvtxStringHandle_t register_string(const char *s)
{
	uint32_t n;

	if (!s)
		return NULL;
	pthread_mutex_lock(&lock);
	n = atomic_load_explicit(&nr_strings, memory_order_relaxed);
	if (n < MAX_STRINGS) {
		strings[n] = s;
		atomic_store_explicit(&nr_strings, n + 1, memory_order_release);
	}
	pthread_mutex_unlock(&lock);
	if (n >= MAX_STRINGS) {
		free((void *)s);
		return NULL;
	}
	return (gs_nvtxStringHandle_t)(uintptr_t)(n + 1);
}

static gs_nvtxStringHandle_t DomainRegisterStringA(gs_nvtxDomainHandle_t d, const char *s)
{
	return register_string(keep(s));
}

static gs_nvtxStringHandle_t DomainRegisterStringW(gs_nvtxDomainHandle_t d, const wchar_t *s)
{
	return register_string(keep_wide(s));
}

/*
 * A domain's handle: its number, from 1, the same for the same name (a library that creates
 * its domain at every call keeps one); NULL (the default domain) when the table is full.
 */
static gs_nvtxDomainHandle_t create_domain(const char *name)
{
	uint32_t n, i;

	if (!name)
		return NULL;
	pthread_mutex_lock(&lock);
	n = atomic_load_explicit(&nr_domains, memory_order_relaxed);
	for (i = 1; i < n && strcmp(domains[i].name, name); i++)
		;
	if (i < n) {
		pthread_mutex_unlock(&lock);
		free((void *)name);
		return (gs_nvtxDomainHandle_t)(uintptr_t)i;
	}
	if (n < MAX_DOMAINS) {
		domains[n].name = name;
		atomic_store_explicit(&nr_domains, n + 1, memory_order_release);
	}
	pthread_mutex_unlock(&lock);
	if (n >= MAX_DOMAINS) {
		free((void *)name);
		return NULL;
	}
	if (TRACED())
		fire(GS_NVTX_DOMAIN_CREATE, (gs_nvtxDomainHandle_t)(uintptr_t)n, NULL, name, 0);
	return (gs_nvtxDomainHandle_t)(uintptr_t)n;
}

static gs_nvtxDomainHandle_t DomainCreateA(const char *name)
{
	return create_domain(keep(name));
}

static gs_nvtxDomainHandle_t DomainCreateW(const wchar_t *name)
{
	return create_domain(keep_wide(name));
}

/* Its number is not reused: events still in flight keep naming it. */
static void DomainDestroy(gs_nvtxDomainHandle_t d)
{
	if (TRACED() && d && domain_of(d))
		fire(GS_NVTX_DOMAIN_DESTROY, d, NULL, NULL, 0);
}

struct slot {
	unsigned int id;
	gs_nvtx_fn fn;
};

#define SLOT(module, name)                                       \
	{                                                        \
		GS_NVTX_CBID_##module##_##name, (gs_nvtx_fn)name \
	}

static const struct slot core_slots[] = {
	SLOT(CORE, MarkEx),	   SLOT(CORE, MarkA),	      SLOT(CORE, MarkW),
	SLOT(CORE, RangeStartEx),  SLOT(CORE, RangeStartA),   SLOT(CORE, RangeStartW),
	SLOT(CORE, RangeEnd),	   SLOT(CORE, RangePushEx),   SLOT(CORE, RangePushA),
	SLOT(CORE, RangePushW),	   SLOT(CORE, RangePop),      SLOT(CORE, NameCategoryA),
	SLOT(CORE, NameCategoryW), SLOT(CORE, NameOsThreadA), SLOT(CORE, NameOsThreadW),
};

static const struct slot core2_slots[] = {
	SLOT(CORE2, DomainMarkEx),	    SLOT(CORE2, DomainRangeStartEx),
	SLOT(CORE2, DomainRangeEnd),	    SLOT(CORE2, DomainRangePushEx),
	SLOT(CORE2, DomainRangePop),	    SLOT(CORE2, DomainNameCategoryA),
	SLOT(CORE2, DomainNameCategoryW),   SLOT(CORE2, DomainRegisterStringA),
	SLOT(CORE2, DomainRegisterStringW), SLOT(CORE2, DomainCreateA),
	SLOT(CORE2, DomainCreateW),	    SLOT(CORE2, DomainDestroy),
};

/* Writes our handlers into the module's slots that the process's NVTX has. */
static bool answer(const struct gs_nvtx_callbacks_table *cb, int module, const struct slot *slots,
		   size_t nr)
{
	gs_nvtx_fn_table table = NULL;
	unsigned int size = 0; /* the highest slot id */

	if (!cb->GetModuleFunctionTable(module, &table, &size) || !table)
		return false;
	for (size_t i = 0; i < nr; i++)
		if (slots[i].id <= size && table[slots[i].id])
			*table[slots[i].id] = slots[i].fn;
	return true;
}

/* NVTX's entry point: nonzero when the handlers are in place (0 leaves NVTX's no-ops). */
EXPORT int InitializeInjectionNvtx2(gs_nvtx_get_export_table get)
{
	const struct gs_nvtx_callbacks_table *cb = get ? get(GS_NVTX_ETID_CALLBACKS) : NULL;

	if (!cb || cb->struct_size < sizeof(*cb) || !cb->GetModuleFunctionTable)
		return 0;
	if (!answer(cb, GS_NVTX_CB_MODULE_CORE, core_slots,
		    sizeof(core_slots) / sizeof(*core_slots)))
		return 0;
	/* an NVTX before domains (v1) has no CORE2: its core calls are still answered */
	answer(cb, GS_NVTX_CB_MODULE_CORE2, core2_slots,
	       sizeof(core2_slots) / sizeof(*core2_slots));
	return 1;
}
