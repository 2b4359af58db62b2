// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* call.c: decode the raw argument words of a generic call record. */
#include "profilers/cuda/call.h"

#define CONFIG_WORD(e, i) ((e)->args[GS_CALL_REG_ARGS + GS_CALL_STACK_ARGS + (i)])
#define STACK_ARG(e, i)	  ((e)->args[GS_CALL_REG_ARGS + (i)])

static uint32_t lo32(uint64_t v)
{
	return (uint32_t)v;
}

static uint32_t hi32(uint64_t v)
{
	return (uint32_t)(v >> 32);
}

/*
 * cudaLaunchConfig_t and CUlaunchConfig share one layout (notes §1.1): grid x,y,z at 0,
 * block x,y,z at 12, shared memory at 24 (size_t / unsigned), stream at 32.
 */
static void decode_config(const struct gs_cuda_call *e, bool driver, struct gs_launch *out)
{
	uint64_t w0 = CONFIG_WORD(e, 0), w1 = CONFIG_WORD(e, 1), w2 = CONFIG_WORD(e, 2);

	out->grid[0] = lo32(w0);
	out->grid[1] = hi32(w0);
	out->grid[2] = lo32(w1);
	out->block[0] = hi32(w1);
	out->block[1] = lo32(w2);
	out->block[2] = hi32(w2);
	out->shared_mem = driver ? lo32(CONFIG_WORD(e, 3)) : CONFIG_WORD(e, 3);
	out->stream = CONFIG_WORD(e, 4);
}

bool gs_decode_launch(const struct gs_cuda_api *api, const struct gs_cuda_call *e,
		      struct gs_launch *out)
{
	*out = (struct gs_launch){ .func = e->args[0] };
	switch (api->shape) {
	case GS_SHAPE_LAUNCH_RT:
		/* a dim3 by value takes two registers: x|y<<32, then z */
		out->grid[0] = lo32(e->args[1]);
		out->grid[1] = hi32(e->args[1]);
		out->grid[2] = lo32(e->args[2]);
		out->block[0] = lo32(e->args[3]);
		out->block[1] = hi32(e->args[3]);
		out->block[2] = lo32(e->args[4]);
		out->shared_mem = STACK_ARG(e, 0);
		out->stream = STACK_ARG(e, 1);
		return true;
	case GS_SHAPE_LAUNCH_DRV:
		out->grid[0] = lo32(e->args[1]);
		out->grid[1] = lo32(e->args[2]);
		out->grid[2] = lo32(e->args[3]);
		out->block[0] = lo32(e->args[4]);
		out->block[1] = lo32(e->args[5]);
		out->block[2] = lo32(STACK_ARG(e, 0));
		out->shared_mem = lo32(STACK_ARG(e, 1));
		out->stream = STACK_ARG(e, 2);
		return true;
	case GS_SHAPE_LAUNCH_RT_CONFIG:
	case GS_SHAPE_LAUNCH_DRV_CONFIG:
		out->func = e->args[1];
		decode_config(e, api->shape == GS_SHAPE_LAUNCH_DRV_CONFIG, out);
		return true;
	case GS_SHAPE_GRAPH_LAUNCH:
		out->stream = e->args[1];
		out->graph = true;
		return true;
	default:
		return false;
	}
}

static uint64_t arg_at(const struct gs_cuda_call *e, int8_t pos)
{
	return pos >= 0 && pos < GS_CALL_REG_ARGS + GS_CALL_STACK_ARGS ? e->args[pos] : 0;
}

bool gs_decode_copy(const struct gs_cuda_api *api, const struct gs_cuda_call *e,
		    struct gs_copy *out)
{
	const struct gs_copy_shape *c = &api->copy;

	if (api->shape != GS_SHAPE_COPY)
		return false;
	out->bytes = arg_at(e, c->bytes) * (c->rows >= 0 ? arg_at(e, c->rows) : 1) *
		     (c->elem_size ? c->elem_size : 1);
	/* cudaMemcpyKind is an int: only its low 32 bits are the argument */
	out->kind = c->fixed_kind == GS_COPY_FROM_ARG ? lo32(arg_at(e, c->kind)) : c->fixed_kind;
	out->has_stream = c->stream >= 0;
	out->stream = arg_at(e, c->stream);
	return true;
}

bool gs_decode_sync_handle(const struct gs_cuda_api *api, const struct gs_cuda_call *e,
			   uint64_t *handle)
{
	if (api->shape != GS_SHAPE_SYNC || api->handle_arg < 0)
		return false;
	*handle = arg_at(e, api->handle_arg);
	return true;
}
