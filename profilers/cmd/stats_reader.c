// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* stats_reader.c: the rows of a parsed trace's events, for the summary engine (trace_stats). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>
#include "profilers/cmd/stats_reader.h"
#include "profilers/timeline/trace_stats.h"
#include "stitch/trace_parse.h"

/* "cat":"..." of the categories counted: other rows skip the tree parse */
static bool counted_category(const char *rest, size_t len)
{
	static const char *const cats[] = { "\"cat\":\"cuda_runtime\"", "\"cat\":\"cuda_driver\"",
					    "\"cat\":\"kernel\"", "\"cat\":\"gpu_mem",
					    "\"cat\":\"nvtx\"" };

	for (size_t i = 0; i < sizeof(cats) / sizeof(cats[0]); i++)
		if (memmem(rest, len, cats[i], strlen(cats[i])))
			return true;
	return false;
}

static const char *tree_string(yajl_val v, const char **path)
{
	yajl_val x = yajl_tree_get(v, path, yajl_t_string);

	return x ? YAJL_GET_STRING(x) : NULL;
}

/* A number of microseconds (dur) in ns; false when absent or not a non-negative number. */
static bool tree_us(yajl_val v, const char **path, uint64_t *ns)
{
	yajl_val x = yajl_tree_get(v, path, yajl_t_number);
	int64_t n;

	if (!x || gs_parse_us_ns(YAJL_GET_NUMBER(x), strlen(YAJL_GET_NUMBER(x)), &n) || n < 0)
		return false;
	*ns = (uint64_t)n;
	return true;
}

static bool tree_u64(yajl_val v, const char **path, uint64_t *out)
{
	yajl_val x = yajl_tree_get(v, path, yajl_t_number);
	int64_t n;

	if (!x || gs_parse_i64(YAJL_GET_NUMBER(x), strlen(YAJL_GET_NUMBER(x)), &n) || n < 0)
		return false;
	*out = (uint64_t)n;
	return true;
}

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

/* The row of an X slice or a b/e async range, from its fields (rest) parsed as an object. */
static int slice_row(struct gs_stats_reader *rd, const struct gs_trace_event *ev)
{
	static const char *name_p[] = { "name", NULL }, *cat_p[] = { "cat", NULL },
			  *dur_p[] = { "dur", NULL }, *kernel_p[] = { "args", "kernel", NULL },
			  *kind_p[] = { "args", "kind", NULL },
			  *bytes_p[] = { "args", "bytes", NULL },
			  *error_p[] = { "args", "error", NULL },
			  *ext_p[] = { "args", "External id", NULL },
			  *cbid_p[] = { "args", "cbid", NULL };
	static const char *id_p[] = { "id", NULL }, *id2_p[] = { "id2", "local", NULL };
	struct gs_stats_row row = { .ph = ev->ph[0], .pid = ev->pid, .ts_ns = ev->ts_ns };
	const char *sid;
	size_t need = ev->rest_len + 3;
	yajl_val v;
	int err;

	if (need > rd->cap) {
		char *grown = realloc(rd->obj, need);

		if (!grown)
			return -ENOMEM;
		rd->obj = grown;
		rd->cap = need;
	}
	/* rest is `,"key":value,...`: its first comma becomes the brace */
	rd->obj[0] = '{';
	memcpy(rd->obj + 1, ev->rest_len ? ev->rest + 1 : "", ev->rest_len ? ev->rest_len - 1 : 0);
	memcpy(rd->obj + (ev->rest_len ? ev->rest_len : 1), "}", 2);
	v = yajl_tree_parse(rd->obj, NULL, 0);
	if (!v)
		return 0; /* the streaming parser took it: cannot happen; not counted */
	row.name = tree_string(v, name_p);
	row.cat = tree_string(v, cat_p);
	row.kernel = tree_string(v, kernel_p);
	row.kind = tree_string(v, kind_p);
	row.has_bytes = tree_u64(v, bytes_p, &row.bytes);
	row.error = yajl_tree_get(v, error_p, yajl_t_any) != NULL;
	err = 0;
	if (row.ph != 'X') { /* an async range: its id, an integer or a string ("0x1") */
		sid = tree_string(v, id_p) ?: tree_string(v, id2_p);
		row.id = ev->has_id ? (uint64_t)ev->id : sid ? str_hash(sid) : 0;
		if (row.cat && (ev->has_id || sid))
			err = gs_trace_stats__add(rd->stats, &row);
	} else if (row.name && row.cat && tree_us(v, dur_p, &row.dur_ns) &&
		   !yajl_tree_get(v, ext_p, yajl_t_any) && !yajl_tree_get(v, cbid_p, yajl_t_any)) {
		err = gs_trace_stats__add(rd->stats, &row);
	}
	yajl_tree_free(v);
	return err;
}

int gs_stats_reader_event(void *ctx, const struct gs_trace_event *ev)
{
	struct gs_stats_reader *rd = ctx;

	if (ev->ph[1] || !ev->has_pid || ev->pid_is_str)
		return 0;
	if (ev->ph[0] == 'M' && ev->is_process_name && ev->args_name)
		return gs_trace_stats__add(rd->stats,
					   &(struct gs_stats_row){ .ph = 'M',
								   .name = "process_name",
								   .pid = ev->pid,
								   .label = ev->args_name });
	if ((ev->ph[0] != 'X' && ev->ph[0] != 'b' && ev->ph[0] != 'e') || !ev->has_ts ||
	    !counted_category(ev->rest, ev->rest_len))
		return 0;
	return slice_row(rd, ev);
}
