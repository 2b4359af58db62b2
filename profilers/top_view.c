// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* top_view.c: what `gpusnoop top` draws: the table, the detail pane, and --batch lines. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "profilers/cuda/api.h"
#include "profilers/leak_report.h"
#include "profilers/mem_model.h"
#include "profilers/top_view.h"
#include "user/stack_table.h"
#include "user/text_escape.h"

#define LINE_MAX_BYTES 4096
#define DETAIL_STACKS  5 /* allocation stacks shown, each with its innermost frames */
#define DETAIL_FRAMES  4
#define DETAIL_KERNELS 10

static void append(struct gs_top_screen *s, const char *data, size_t len)
{
	if (s->failed)
		return;
	if (s->len + len + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 8192;
		char *buf;

		while (cap < s->len + len + 1)
			cap *= 2;
		buf = realloc(s->buf, cap);
		if (!buf) {
			s->failed = true;
			return;
		}
		s->buf = buf;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, data, len);
	s->len += len;
	s->buf[s->len] = '\0';
}

static void append_str(struct gs_top_screen *s, const char *str)
{
	append(s, str, strlen(str));
}

void gs_top_screen__begin(struct gs_top_screen *s, int rows, int cols, bool full)
{
	s->len = 0;
	s->line = 0;
	s->rows = rows > 0 ? rows : 1;
	s->cols = cols > 0 ? cols : 1;
	s->full = full;
	s->failed = false;
	if (full)
		append_str(s, "\033[H");
}

/* bytes of text that hold at most cols characters (UTF-8 code points) */
static size_t cut_at_columns(const char *text, size_t len, int cols, int *used_cols)
{
	size_t off = 0;
	int n = 0;

	while (off < len && n < cols) {
		int32_t cp;

		off += gs_utf8_decode(text + off, len - off < 4 ? len - off : 4, &cp);
		n++;
	}
	*used_cols = n;
	return off < len ? off : len;
}

void gs_top_screen__line(struct gs_top_screen *s, bool inverse, const char *fmt, ...)
{
	char text[LINE_MAX_BYTES];
	va_list ap;
	int n, used;
	size_t len;

	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	len = (size_t)n < sizeof(text) ? (size_t)n : sizeof(text) - 1;
	if (!s->full) {
		append(s, text, len);
		append_str(s, "\n");
		s->line++;
		return;
	}
	if (s->line >= s->rows)
		return;
	if (s->line)
		append_str(s, "\r\n");
	len = cut_at_columns(text, len, s->cols, &used);
	if (inverse)
		append_str(s, "\033[7m");
	append(s, text, len);
	/* a reverse-video bar spans the width; any line erases what the last frame left */
	for (; inverse && used < s->cols; used++)
		append_str(s, " ");
	append_str(s, inverse ? "\033[0m" : "\033[K");
	s->line++;
}

void gs_top_screen__end(struct gs_top_screen *s)
{
	if (s->full)
		append_str(s, "\033[J"); /* below the last line */
}

void gs_top_screen__release(struct gs_top_screen *s)
{
	free(s->buf);
	memset(s, 0, sizeof(*s));
}

void gs_top_format_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char units[] = "KMGTP";
	double v = (double)bytes;
	int u = -1;

	if (bytes < 1024) {
		snprintf(buf, len, "%" PRIu64 "B", bytes);
		return;
	}
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, v < 100 ? "%.1f%c" : "%.0f%c", v, units[u]);
}

static void rank_text(const struct gs_top_proc *p, char *buf, size_t len)
{
	if (p->rank >= 0)
		snprintf(buf, len, "%d", (int)p->rank);
	else
		snprintf(buf, len, "-");
}

static const char *top_kernel_name(const struct gs_top_proc *p)
{
	const struct gs_top_kernel *k = gs_top_proc__top_kernel(p);

	return k ? k->name : "-";
}

/* " (more not shown: ...)" once processes went past the model's cap on rows, else "" */
static const char *refused_text(const struct gs_top_model *m, char *buf, size_t len)
{
	buf[0] = '\0';
	if (m->refused)
		snprintf(buf, len, " (more not shown: at most %d rows)", GS_TOP_MAX_PROCS);
	return buf;
}

static size_t sorted_rows(const struct gs_top_model *m, const struct gs_top_view *v,
			  struct gs_top_proc ***rows)
{
	*rows = calloc(m->nr_procs ? m->nr_procs : 1, sizeof(**rows));
	if (!*rows)
		return 0;
	return gs_top_model__rows(m, v->sort, v->reverse, *rows, m->nr_procs);
}

static void table_row(struct gs_top_screen *s, const struct gs_top_proc *p, bool selected)
{
	char rank[16], comm[GS_TEXT_SAFE_LEN(16)], kernel[GS_TEXT_SAFE_LEN(GS_TOP_KERNEL_NAME)];
	char mem[16], alloc[16] = "-", reserved[16] = "-", tensors[24] = "-";

	rank_text(p, rank, sizeof(rank));
	gs_text_safe(p->comm, comm, sizeof(comm));
	gs_text_safe(top_kernel_name(p), kernel, sizeof(kernel));
	gs_top_format_bytes(p->mem_bytes, mem, sizeof(mem));
	if (p->torch) {
		gs_top_format_bytes(p->torch_allocated, alloc, sizeof(alloc));
		gs_top_format_bytes(p->torch_reserved, reserved, sizeof(reserved));
		snprintf(tensors, sizeof(tensors), "%" PRIu64, p->tensors);
	}
	gs_top_screen__line(s, selected,
			    "%7d %4s %-15s %7s %7s %7s %7s %8.1f %6.2f %6.1f %4" PRIu64 " %s",
			    (int)p->pid, rank, comm, mem, alloc, reserved, tensors, p->launch_rate,
			    p->sync_rate, p->copy_rate, p->total.ooms, kernel);
}

void gs_top_view__table(struct gs_top_screen *s, const struct gs_top_model *m,
			struct gs_top_view *v)
{
	struct gs_top_proc **rows;
	size_t nr = sorted_rows(m, v, &rows), visible, first;
	char refused[48];

	if (v->selected >= nr)
		v->selected = nr ? nr - 1 : 0;
	gs_top_screen__line(
		s, false,
		"gpusnoop top: %zu process%s%s, sort %s%s, every %.1f s, %" PRIu64 " events lost",
		nr, nr == 1 ? "" : "es", refused_text(m, refused, sizeof(refused)),
		gs_top_sort_name(v->sort), v->reverse ? " (reversed)" : "", v->interval_s, v->lost);
	gs_top_screen__line(s, false,
			    "keys: m l s c t o p r sort, < > column, R reverse, Enter/1-9 detail, "
			    "q quit");
	gs_top_screen__line(s, false, "%s", v->message ? v->message : "");
	gs_top_screen__line(s, true,
			    "    PID RANK COMM                MEM   ALLOC RESERVD TENSORS LAUNCH/s "
			    "SYNC/s COPY/s OOMS TOP KERNEL");
	/* the selected row stays on screen: the table scrolls under the four header lines */
	visible = s->rows > 5 ? (size_t)s->rows - 4 : 1;
	first = v->selected >= visible ? v->selected - visible + 1 : 0;
	for (size_t i = first; i < nr; i++)
		table_row(s, rows[i], i == v->selected);
	if (!nr)
		gs_top_screen__line(s, false, "(no CUDA activity seen yet)");
	free(rows);
}

/* a comm as one blank-free column: its spaces become \x20 (control bytes already are \xNN) */
static void unblank(const char *in, char *out, size_t len)
{
	size_t o = 0;

	for (const char *c = in; *c && o + 5 < len; c++) {
		if (*c == ' ') {
			memcpy(out + o, "\\x20", 4);
			o += 4;
		} else {
			out[o++] = *c;
		}
	}
	out[o] = '\0';
}

static void batch_row(struct gs_top_screen *s, const struct gs_top_proc *p)
{
	char rank[16], safe[GS_TEXT_SAFE_LEN(16)], comm[4 * GS_TEXT_SAFE_LEN(16)];
	char kernel[GS_TEXT_SAFE_LEN(GS_TOP_KERNEL_NAME)];
	char alloc[24] = "-", reserved[24] = "-", tensors[24] = "-";

	rank_text(p, rank, sizeof(rank));
	gs_text_safe(p->comm, safe, sizeof(safe));
	unblank(safe, comm, sizeof(comm));
	/* the last column: the rest of the line, spaces and all, as top -b's COMMAND */
	gs_text_safe(top_kernel_name(p), kernel, sizeof(kernel));
	if (p->torch) {
		snprintf(alloc, sizeof(alloc), "%" PRIu64, p->torch_allocated);
		snprintf(reserved, sizeof(reserved), "%" PRIu64, p->torch_reserved);
		snprintf(tensors, sizeof(tensors), "%" PRIu64, p->tensors);
	}
	gs_top_screen__line(s, false,
			    "%7d %4s %-15s %12" PRIu64 " %12s %12s %8s %9" PRIu64
			    " %9.1f %8.3f %7" PRIu64 " %7.1f %4" PRIu64 " %s",
			    (int)p->pid, rank, comm, p->mem_bytes, alloc, reserved, tensors,
			    p->total.launches, p->launch_rate, p->sync_rate, p->total.copies,
			    p->copy_rate, p->total.ooms, kernel);
}

void gs_top_view__batch(struct gs_top_screen *s, const struct gs_top_model *m,
			const struct gs_top_view *v)
{
	struct gs_top_proc **rows;
	size_t nr = sorted_rows(m, v, &rows);
	char refused[48];

	gs_top_screen__line(s, false,
			    "gpusnoop top: iteration %" PRIu64 ", %zu process%s%s, %" PRIu64
			    " events lost",
			    v->iteration, nr, nr == 1 ? "" : "es",
			    refused_text(m, refused, sizeof(refused)), v->lost);
	gs_top_screen__line(s, false,
			    "    PID RANK COMM               MEM_BYTES  TORCH_ALLOC TORCH_RESERV  "
			    "TENSORS  LAUNCHES  LAUNCH/S SYNC_S/S  COPIES  COPY/S OOMS TOP_KERNEL");
	for (size_t i = 0; i < nr; i++)
		batch_row(s, rows[i]);
	gs_top_screen__line(s, false, "%s", "");
	free(rows);
}

/* The largest groups of t's allocations, by stack, each with its innermost frames. */
static void detail_stacks(struct gs_top_screen *s, const char *title,
			  const struct gs_alloc_table *t, bool tensors,
			  const struct gs_stack_table *stacks, uint64_t now_ns)
{
	struct gs_leak_group *groups = NULL;
	uint64_t bytes = 0, count = 0;
	char size[16], frame[1024], safe[GS_TEXT_SAFE_LEN(256)], what[32];
	size_t nr = 0;

	if (!t || gs_leak_group_table(t, now_ns, 0, &groups, &nr, &bytes, &count))
		return;
	gs_top_format_bytes(bytes, size, sizeof(size));
	gs_top_screen__line(s, true, "%s: %s in %" PRIu64 ", largest first", title, size, count);
	for (size_t i = 0; i < nr && i < DETAIL_STACKS; i++) {
		const struct gs_leak_group *g = &groups[i];
		const struct gs_stack *st = gs_stack_table__get(stacks, g->stack_id);

		gs_top_format_bytes(g->bytes, size, sizeof(size));
		if (tensors)
			gs_torch_device_name(g->api, what, sizeof(what));
		else
			snprintf(what, sizeof(what), "%s", gs_cuda_api_name(g->api));
		gs_top_screen__line(s, false, "%8s %6" PRIu64 "  %s", size, g->count, what);
		if (!st || !st->nr_frames)
			gs_top_screen__line(s, false, "%17s(no user stack)", "");
		for (uint32_t f = 0; st && f < st->nr_frames && f < DETAIL_FRAMES; f++) {
			/* symbols and paths are the process's text */
			gs_frame_format(&st->frames[f], frame, sizeof(frame));
			gs_top_screen__line(s, false, "%17s%s", "",
					    gs_text_safe(frame, safe, sizeof(safe)));
		}
	}
	if (nr > DETAIL_STACKS)
		gs_top_screen__line(s, false, "%8s (%zu more stacks)", "", nr - DETAIL_STACKS);
	free(groups);
}

static void detail_kernels(struct gs_top_screen *s, const struct gs_top_proc *p)
{
	struct gs_top_kernel k[DETAIL_KERNELS];
	char safe[GS_TEXT_SAFE_LEN(GS_TOP_KERNEL_NAME)];
	size_t nr = gs_top_proc__kernels(p, k, DETAIL_KERNELS);

	gs_top_screen__line(s, true, "Kernels: %" PRIu64 " launches, most launched first",
			    p->total.launches);
	for (size_t i = 0; i < nr; i++)
		gs_top_screen__line(s, false, "%9" PRIu64 "  %s", k[i].launches,
				    gs_text_safe(k[i].name, safe, sizeof(safe)));
	if (!nr)
		gs_top_screen__line(s, false, "%9s  (no launch seen)", "");
}

static void detail_figures(struct gs_top_screen *s, const struct gs_top_proc *p,
			   const struct gs_mem_proc *raw)
{
	char mem[16], raw_bytes[16], alloc[16], reserved[16], copied[16];
	size_t nr_raw = raw ? gs_alloc_table__count(raw->allocs) : 0;

	gs_top_format_bytes(p->mem_bytes, mem, sizeof(mem));
	gs_top_format_bytes(p->total.copy_bytes, copied, sizeof(copied));
	if (!p->torch) {
		gs_top_screen__line(s, false, "CUDA memory %s in %zu allocations", mem, nr_raw);
	} else {
		gs_top_format_bytes(p->mem_bytes - p->torch_reserved, raw_bytes, sizeof(raw_bytes));
		gs_top_format_bytes(p->torch_allocated, alloc, sizeof(alloc));
		gs_top_format_bytes(p->torch_reserved, reserved, sizeof(reserved));
		gs_top_screen__line(
			s, false,
			"CUDA memory %s: %s in %zu allocations, %s reserved by PyTorch; "
			"PyTorch allocated %s in %" PRIu64 " tensors",
			mem, raw_bytes, nr_raw, reserved, alloc, p->tensors);
	}
	gs_top_screen__line(s, false,
			    "launches %" PRIu64 " (%.1f/s), syncs %" PRIu64 " (%.3f s, %.2f s/s), "
			    "copies %" PRIu64 " (%s, %.1f/s), OOMs %" PRIu64,
			    p->total.launches, p->launch_rate, p->total.syncs,
			    (double)p->total.sync_ns / 1e9, p->sync_rate, p->total.copies, copied,
			    p->copy_rate, p->total.ooms);
}

void gs_top_view__detail(struct gs_top_screen *s, const struct gs_top_model *m,
			 const struct gs_top_view *v, struct gs_mem_model *mem,
			 const struct gs_stack_table *stacks, uint64_t now_ns)
{
	struct gs_top_proc *p = gs_top_model__proc((struct gs_top_model *)m, v->detail, false);
	char rank[16], comm[GS_TEXT_SAFE_LEN(16)];
	const struct gs_mem_proc *raw;
	struct gs_torch_proc *tp;

	if (!p) {
		gs_top_screen__line(s, false, "gpusnoop top: pid %d is gone; Esc: back, q: quit",
				    (int)v->detail);
		return;
	}
	raw = gs_mem_model__proc(mem, p->pid, false);
	tp = gs_mem_model__torch_proc(mem, p->pid);
	rank_text(p, rank, sizeof(rank));
	gs_top_screen__line(s, false, "gpusnoop top: pid %d (%s), rank %s; Esc: back, q: quit",
			    (int)p->pid, gs_text_safe(p->comm, comm, sizeof(comm)), rank);
	detail_figures(s, p, raw);
	gs_top_screen__line(s, false, "%s", v->message ? v->message : "");
	/* a PyTorch process's memory is mostly its tensors: raw allocations only if it has any */
	if (!tp || (raw && gs_alloc_table__count(raw->allocs)))
		detail_stacks(s, "CUDA allocations", raw ? raw->allocs : NULL, false, stacks,
			      now_ns);
	if (tp)
		detail_stacks(s, "PyTorch tensors", tp->blocks, true, stacks, now_ns);
	detail_kernels(s, p);
}
