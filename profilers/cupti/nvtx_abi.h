/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* nvtx_abi.h: the part of NVTX's injection ABI that the injection library answers. */
#ifndef GS_NVTX_ABI_H
#define GS_NVTX_ABI_H

#include <stddef.h>
#include <stdint.h>
#include <wchar.h>

/*
 * Written from NVTX v3's headers as the CUDA 13.0 toolkit ships them
 * (include/nvtx3/nvToolsExt.h: nvtxEventAttributes_v2, nvtxMessageType_t,
 * nvtxColorType_t; include/nvtx3/nvtxDetail/nvtxTypes.h: NvtxCallbackModule, the
 * NvtxCallbackId* enums, NvtxExportTableCallbacks; nvtxDetail/nvtxInit.h: the protocol),
 * so that gpusnoop builds without them. These are ABI: NVTX only ever appends to them.
 * tests/fixtures/workloads/gs_nvtx.c checks them against the real headers.
 *
 * The protocol: at the first NVTX call, a process whose NVTX_INJECTION64_PATH names a
 * library dlopen()s it and calls its InitializeInjectionNvtx2(getExportTable); the library
 * asks for GS_NVTX_ETID_CALLBACKS and, per module, writes its handlers into the slots of
 * the module's table it answers. Slots left empty stay no-ops.
 */

typedef uint64_t gs_nvtxRangeId_t;
typedef void *gs_nvtxDomainHandle_t;
typedef void *gs_nvtxStringHandle_t;

#define GS_NVTX_MESSAGE_ASCII	   1 /* NVTX_MESSAGE_TYPE_ASCII */
#define GS_NVTX_MESSAGE_UNICODE	   2 /* NVTX_MESSAGE_TYPE_UNICODE: wchar_t */
#define GS_NVTX_MESSAGE_REGISTERED 3 /* NVTX_MESSAGE_TYPE_REGISTERED: a string handle */
#define GS_NVTX_COLOR_ARGB	   1 /* NVTX_COLOR_ARGB */

/* nvtxEventAttributes_v2 (NVTX_EVENT_ATTRIB_STRUCT_SIZE: 48 bytes) */
struct gs_nvtx_attrs {
	uint16_t version;
	uint16_t size;
	uint32_t category;
	int32_t color_type;
	uint32_t color;
	int32_t payload_type;
	int32_t reserved0;
	uint64_t payload; /* union payload_t: its raw bits */
	int32_t message_type;
	union {
		const char *ascii;
		const wchar_t *unicode;
		gs_nvtxStringHandle_t registered;
	} message;
};

/* NvtxCallbackModule */
#define GS_NVTX_CB_MODULE_CORE	1
#define GS_NVTX_CB_MODULE_CORE2 5

/* NvtxCallbackIdCore */
#define GS_NVTX_CBID_CORE_MarkEx	1
#define GS_NVTX_CBID_CORE_MarkA		2
#define GS_NVTX_CBID_CORE_MarkW		3
#define GS_NVTX_CBID_CORE_RangeStartEx	4
#define GS_NVTX_CBID_CORE_RangeStartA	5
#define GS_NVTX_CBID_CORE_RangeStartW	6
#define GS_NVTX_CBID_CORE_RangeEnd	7
#define GS_NVTX_CBID_CORE_RangePushEx	8
#define GS_NVTX_CBID_CORE_RangePushA	9
#define GS_NVTX_CBID_CORE_RangePushW	10
#define GS_NVTX_CBID_CORE_RangePop	11
#define GS_NVTX_CBID_CORE_NameCategoryA 12
#define GS_NVTX_CBID_CORE_NameCategoryW 13
#define GS_NVTX_CBID_CORE_NameOsThreadA 14
#define GS_NVTX_CBID_CORE_NameOsThreadW 15

/* NvtxCallbackIdCore2 */
#define GS_NVTX_CBID_CORE2_DomainMarkEx		 1
#define GS_NVTX_CBID_CORE2_DomainRangeStartEx	 2
#define GS_NVTX_CBID_CORE2_DomainRangeEnd	 3
#define GS_NVTX_CBID_CORE2_DomainRangePushEx	 4
#define GS_NVTX_CBID_CORE2_DomainRangePop	 5
#define GS_NVTX_CBID_CORE2_DomainNameCategoryA	 8
#define GS_NVTX_CBID_CORE2_DomainNameCategoryW	 9
#define GS_NVTX_CBID_CORE2_DomainRegisterStringA 10
#define GS_NVTX_CBID_CORE2_DomainRegisterStringW 11
#define GS_NVTX_CBID_CORE2_DomainCreateA	 12
#define GS_NVTX_CBID_CORE2_DomainCreateW	 13
#define GS_NVTX_CBID_CORE2_DomainDestroy	 14

/* NvtxExportTableID */
#define GS_NVTX_ETID_CALLBACKS 1

typedef void (*gs_nvtx_fn)(void);
/* NvtxFunctionTable: an array of pointers to the header's function-pointer slots */
typedef gs_nvtx_fn **gs_nvtx_fn_table;

/* NvtxExportTableCallbacks */
struct gs_nvtx_callbacks_table {
	size_t struct_size;
	int (*GetModuleFunctionTable)(int module, gs_nvtx_fn_table *out_table,
				      unsigned int *out_size);
};

typedef const void *(*gs_nvtx_get_export_table)(uint32_t export_table_id);

#endif /* GS_NVTX_ABI_H */
