/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* gs_nvtx.h: NVTX ranges, marks and names from the injection library's nvtx USDT probe. */
#ifndef GS_NVTX_H
#define GS_NVTX_H

/*
 * The injection library (profilers/cupti/nvtx_inject.c) answers NVTX's injection hook and
 * fires gpusnoop:nvtx(const struct gs_nvtx_usdt *) once per forwarded call; bpf/gpu.bpf.c
 * copies the struct and the strings it points to (bounded) into one struct gs_nvtx_event.
 * Includes nothing: the includer supplies __u16.. __u64 (like gs_event.h).
 */

/* gs_nvtx_usdt.kind, gs_nvtx_event.kind */
#define GS_NVTX_PUSH	       1 /* nvtxRangePush*, nvtxDomainRangePushEx */
#define GS_NVTX_POP	       2 /* nvtxRangePop, nvtxDomainRangePop */
#define GS_NVTX_START	       3 /* nvtxRangeStart*, nvtxDomainRangeStartEx: range_id */
#define GS_NVTX_END	       4 /* nvtxRangeEnd, nvtxDomainRangeEnd: range_id */
#define GS_NVTX_MARK	       5 /* nvtxMark*, nvtxDomainMarkEx */
#define GS_NVTX_DOMAIN_CREATE  6 /* nvtxDomainCreate*: message is the domain's name */
#define GS_NVTX_DOMAIN_DESTROY 7 /* nvtxDomainDestroy */
#define GS_NVTX_NAME_THREAD    8 /* nvtxNameOsThread*: range_id is the thread id */
#define GS_NVTX_KIND_MAX       8

/* gs_nvtx_usdt.payload_type: NVTX's nvtxPayloadType_t (0: none) */
#define GS_NVTX_PAYLOAD_U64    1
#define GS_NVTX_PAYLOAD_I64    2
#define GS_NVTX_PAYLOAD_DOUBLE 3
#define GS_NVTX_PAYLOAD_U32    4
#define GS_NVTX_PAYLOAD_I32    5
#define GS_NVTX_PAYLOAD_FLOAT  6

/* What the probe's one argument points to, in the traced process: 72 bytes. */
struct gs_nvtx_usdt {
	__u32 kind;	    /* GS_NVTX_* */
	__u32 category;	    /* NVTX category id, 0: none */
	__u64 domain;	    /* the library's domain number, 0: NVTX's default domain */
	__u64 range_id;	    /* START/END: the range's id; NAME_THREAD: the thread id */
	__u64 payload;	    /* raw bits, as payload_type says */
	__u32 payload_type; /* GS_NVTX_PAYLOAD_*, 0: none */
	__u32 color;	    /* ARGB, when has_color */
	__u32 has_color;    /* NVTX_COLOR_ARGB was given */
	__u32 pad;
	__u64 message;	     /* const char *, UTF-8, or 0 */
	__u64 domain_name;   /* const char *: the domain's name, or 0 */
	__u64 category_name; /* const char *: the category's name, or 0 */
};

#define GS_NVTX_MESSAGE_BYTES 256
#define GS_NVTX_NAME_BYTES    64

/* gs_nvtx_event.flags */
#define GS_NVTX_F_MESSAGE_TRUNCATED 0x1 /* message went on past GS_NVTX_MESSAGE_BYTES - 1 */
#define GS_NVTX_F_NAME_TRUNCATED    0x2 /* a domain or category name was cut */

/* One forwarded NVTX call; strings NUL-terminated, "" when absent or unreadable. */
struct gs_nvtx_event {
	struct gs_event_hdr hdr; /* ts_ns: at the call, on the calling thread */
	__u32 kind;
	__u32 category;
	__u64 domain;
	__u64 range_id;
	__u64 payload;
	__u32 payload_type;
	__u32 color;
	__u32 has_color;
	__u32 flags; /* GS_NVTX_F_* */
	char message[GS_NVTX_MESSAGE_BYTES];
	char domain_name[GS_NVTX_NAME_BYTES];
	char category_name[GS_NVTX_NAME_BYTES];
};

#endif /* GS_NVTX_H */
