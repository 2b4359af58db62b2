// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* top.c: `gpusnoop top`, a live per-process view of CUDA memory, launches, syncs and copies. */
#include <argp.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "profilers/cmd/subcommands.h"
#include "profilers/cuda/api.h"
#include "profilers/cuda/call.h"
#include "profilers/cuda/kernel_names.h"
#include "profilers/mem_model.h"
#include "profilers/options.h"
#include "profilers/proc_tree.h"
#include "profilers/run_loop.h"
#include "profilers/top_model.h"
#include "profilers/top_term.h"
#include "profilers/top_view.h"
#include "profilers/tracker.h"
#include "user/clock.h"
#include "user/log.h"
#include "user/stack_table.h"

#define POLL_MS		   100
#define DEFAULT_INTERVAL_S 2.0
#define MIN_INTERVAL_S	   0.1
#define PAGE_ROWS	   10 /* PgUp/PgDn move the selection so many rows */
/* what may wait for a slow reader: a few frames, or many batch iterations */
#define OUT_QUEUE (1 << 20)

enum { OPT_NO_TORCH = 0x2100, OPT_DURATION };

struct top_opts {
	struct gs_common_opts common;
	double interval_s;
	uint64_t iterations; /* -n; 0: no limit */
	bool batch;
	bool no_torch;
	enum gs_top_sort sort;
};

struct top {
	struct top_opts opts;
	struct gs_tracker *tracker;
	struct gs_stack_table *stacks;
	struct gs_kernel_names *names;
	struct gs_mem_model mem; /* what the memory events did: the rows' memory columns */
	struct gs_top_model model;
	struct gs_top_view view;
	struct gs_top_screen screen;
	struct gs_top_out out;
	bool full;	 /* the full-screen view (else --batch lines) */
	bool keys;	 /* stdin is the terminal, read for keys */
	bool keys_ready; /* the wait saw them readable (a read of 0 then is the end) */
	bool redraw;	 /* a key changed the view: draw it now */
	uint64_t interval_ns, next_refresh_ns;
	int rows, cols; /* the size of the last frame */
	int error;
};

static void fatal(struct top *t, int err)
{
	if (!t->error) {
		gs_err("following processes: %s", strerror(-err));
		t->error = err;
	}
}

/* pid's row, made at its first event with its comm and ranks */
static struct gs_top_proc *row(struct top *t, pid_t pid)
{
	struct gs_top_proc *p = gs_top_model__proc(&t->model, pid, false);
	const struct gs_proc_tree_entry *e;

	if (p && !p->gone)
		return p;
	if (p) /* the pid of an exited process, reused: a new row */
		gs_top_model__remove(&t->model, pid);
	p = gs_top_model__proc(&t->model, pid, true);
	if (!p)
		return NULL; /* past the cap (counted) or out of memory: its events still count */
	snprintf(p->comm, sizeof(p->comm), "%s", gs_tracker__comm(t->tracker, pid));
	e = gs_tracker__proc(t->tracker, pid);
	if (e) {
		p->rank = e->rank;
		p->local_rank = e->local_rank;
	} else {
		/* -a: not in the followed tree; its environment read once, bounded */
		gs_read_rank_env(pid, &p->rank, &p->local_rank, NULL);
	}
	return p;
}

static void on_alloc(void *ctx, const struct gs_mem_alloc *e)
{
	struct top *t = ctx;
	struct gs_mem_effect fx;
	struct gs_top_proc *p = row(t, (pid_t)e->hdr.pid);
	int err = gs_mem_model__alloc(&t->mem, e, &fx);

	if (err)
		fatal(t, err);
	else if (fx.cuda_oom && p)
		p->total.ooms++;
}

static void on_free(void *ctx, const struct gs_mem_free *e)
{
	struct top *t = ctx;
	struct gs_mem_effect fx;
	int err;

	row(t, (pid_t)e->hdr.pid);
	err = gs_mem_model__free(&t->mem, e, &fx);
	if (err)
		fatal(t, err);
}

static void on_free_ret(void *ctx, const struct gs_mem_free_ret *e)
{
	struct top *t = ctx;
	struct gs_mem_effect fx;

	gs_mem_model__free_ret(&t->mem, e, &fx);
}

static void on_torch_mem(void *ctx, const struct gs_torch_mem *e)
{
	struct top *t = ctx;
	struct gs_mem_effect fx;
	int err;

	row(t, (pid_t)e->hdr.pid);
	err = gs_mem_model__tensor(&t->mem, e, &fx);
	if (err)
		fatal(t, err);
}

static void on_torch_oom(void *ctx, const struct gs_torch_oom *e)
{
	struct top *t = ctx;
	struct gs_mem_effect fx;
	struct gs_top_proc *p = row(t, (pid_t)e->hdr.pid);
	int err = gs_mem_model__torch_oom(&t->mem, e, &fx);

	if (err)
		fatal(t, err);
	else if (fx.torch_oom && p)
		p->total.ooms++;
}

static void on_cuda_call(void *ctx, const struct gs_cuda_call *e)
{
	struct top *t = ctx;
	const struct gs_cuda_api *api = gs_cuda_api_get(e->api);
	struct gs_top_proc *p;
	struct gs_mem_effect fx;
	struct gs_launch l;

	if (!api)
		return;
	if (api->family == GS_FAM_NAMES) {
		gs_kernel_names__learn_call(t->names, api, e);
		return;
	}
	if (api->family == GS_FAM_MEM) { /* cuMemMap/cuMemUnmap of PyTorch's segments */
		gs_mem_model__cuda_call(&t->mem, e, &fx);
		return;
	}
	p = row(t, (pid_t)e->hdr.pid);
	if (!p)
		return;
	gs_top_counts__add_call(&p->total, api, e);
	if (api->family == GS_FAM_LAUNCH && gs_decode_launch(api, e, &l))
		gs_top_proc__launch(
			p, l.graph ? NULL : gs_kernel_names__resolve(t->names, p->pid, l.func));
}

static void on_proc_gone(void *ctx, pid_t pid, bool exec)
{
	struct top *t = ctx;
	struct gs_top_proc *p;

	gs_mem_model__proc_gone(&t->mem, pid, exec);
	gs_kernel_names__forget(t->names, pid);
	if (exec)
		return; /* the same process, its counters go on */
	p = gs_top_model__proc(&t->model, pid, false);
	if (p)
		p->gone = true; /* its totals shown at the next refresh, then it goes */
	if (t->view.detail == pid)
		t->view.detail = 0;		/* its stacks go now */
	gs_stack_table__forget(t->stacks, pid); /* after exit nothing refers to them */
}

/* /proc/PID/comm, for a process the session knows no comm of (-a) */
static void read_comm(pid_t pid, char *buf, size_t len)
{
	char path[32];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/* Each row's comm and memory columns, from the session and the memory model. */
static void update_rows(struct top *t)
{
	for (size_t i = 0; i < t->model.nr_procs; i++) {
		struct gs_top_proc *p = t->model.procs[i];
		struct gs_torch_proc *tp = gs_mem_model__torch_proc(&t->mem, p->pid);
		const char *comm = gs_tracker__comm(t->tracker, p->pid);

		if (strcmp(comm, "?"))
			snprintf(p->comm, sizeof(p->comm), "%s", comm);
		else if (!p->comm[0])
			read_comm(p->pid, p->comm, sizeof(p->comm));
		p->mem_bytes = gs_mem_model__cuda_bytes(&t->mem, p->pid);
		p->torch_allocated = p->torch_reserved = p->tensors = 0;
		p->torch = tp != NULL;
		if (!tp)
			continue;
		gs_torch_proc__update(tp);
		for (size_t k = 0; k < tp->nr_devs; k++) {
			const struct gs_torch_device *d = &tp->devs[k];

			if (d->key != GS_TORCH_DEV_UNKNOWN && d->key >> 8 == GS_TORCH_DEV_CPU)
				continue; /* host memory: not what a GPU view counts */
			p->torch_allocated += d->allocated;
			p->torch_reserved += d->reserved;
			p->tensors += d->tensors;
		}
		/* the caching allocator's segments are device memory the process holds */
		p->mem_bytes += p->torch_reserved;
	}
}

/* Writes what waits; a reader that went away (top -b | head) ends the session quietly. */
static void flush_out(struct top *t)
{
	int err = gs_top_out__flush(&t->out);

	if (err == -EPIPE) {
		gs_stop_requested = SIGPIPE;
	} else if (err && !t->error) {
		gs_err("writing output: %s", strerror(-err));
		t->error = err;
	}
}

/* One frame (or one batch iteration); a terminal still busy with the last frame gets none. */
static void draw(struct top *t, uint64_t now_ns)
{
	char msg[256] = "";
	int rows = 0, cols = 0;

	if (t->full) {
		if (gs_top_out__pending(&t->out))
			return; /* the view lags rather than the ring buffer's drain */
		gs_top_term__size(&rows, &cols);
		t->rows = rows;
		t->cols = cols;
		gs_top_term__last_message(msg, sizeof(msg));
	}
	t->view.message = msg;
	t->view.lost = gs_tracker__dropped(t->tracker);
	gs_top_screen__begin(&t->screen, rows, cols, t->full);
	if (!t->full)
		gs_top_view__batch(&t->screen, &t->model, &t->view);
	else if (t->view.detail)
		gs_top_view__detail(&t->screen, &t->model, &t->view, &t->mem, t->stacks, now_ns);
	else
		gs_top_view__table(&t->screen, &t->model, &t->view);
	gs_top_screen__end(&t->screen);
	t->view.message = NULL;
	if (!t->screen.failed)
		gs_top_out__put(&t->out, t->screen.buf, t->screen.len); /* a drop is counted */
	flush_out(t);
}

/* The pid of the table's row at index (as sorted now), 0 when there is none. */
static pid_t row_pid(struct top *t, size_t index)
{
	struct gs_top_proc **rows;
	size_t nr;
	pid_t pid = 0;

	if (index >= t->model.nr_procs)
		return 0;
	rows = calloc(index + 1, sizeof(*rows));
	if (!rows)
		return 0;
	nr = gs_top_model__rows(&t->model, t->view.sort, t->view.reverse, rows, index + 1);
	if (nr > index)
		pid = rows[index]->pid;
	free(rows);
	return pid;
}

static const struct {
	int key;
	enum gs_top_sort sort;
} sort_keys[] = {
	{ 'p', GS_TOP_SORT_PID },   { 'r', GS_TOP_SORT_RANK },	  { 'm', GS_TOP_SORT_MEM },
	{ 'a', GS_TOP_SORT_TORCH }, { 't', GS_TOP_SORT_TENSORS }, { 'l', GS_TOP_SORT_LAUNCHES },
	{ 's', GS_TOP_SORT_SYNC },  { 'c', GS_TOP_SORT_COPIES },  { 'o', GS_TOP_SORT_OOMS },
};

static bool sort_key(struct gs_top_view *v, int key)
{
	for (size_t i = 0; i < sizeof(sort_keys) / sizeof(sort_keys[0]); i++) {
		if (sort_keys[i].key == key) {
			v->sort = sort_keys[i].sort;
			return true;
		}
	}
	if (key == '<' && v->sort > 0)
		v->sort--;
	else if (key == '>' && v->sort + 1 < GS_TOP_SORT__MAX)
		v->sort++;
	else if (key == 'R')
		v->reverse = !v->reverse;
	return key == '<' || key == '>' || key == 'R';
}

static void handle_key(struct top *t, int key)
{
	struct gs_top_view *v = &t->view;

	t->redraw = true;
	if (key == 'q') {
		gs_stop_requested = SIGTERM; /* the loop ends as on SIGTERM: a clean exit, 0 */
	} else if (v->detail) {
		if (key == GS_KEY_ESC || key == GS_KEY_ENTER || key == GS_KEY_BACKSPACE ||
		    key == 'b')
			v->detail = 0;
	} else if (sort_key(v, key)) {
		v->selected = 0;
	} else if (key == GS_KEY_UP || key == 'k') {
		v->selected -= v->selected > 0;
	} else if (key == GS_KEY_DOWN || key == 'j') {
		v->selected++; /* clamped when drawn */
	} else if (key == GS_KEY_PGUP) {
		v->selected = v->selected > PAGE_ROWS ? v->selected - PAGE_ROWS : 0;
	} else if (key == GS_KEY_PGDN) {
		v->selected += PAGE_ROWS;
	} else if (key == GS_KEY_ENTER) {
		v->detail = row_pid(t, v->selected);
	} else if (key >= '1' && key <= '9') {
		v->detail = row_pid(t, (size_t)(key - '1'));
	} else {
		t->redraw = false;
	}
}

static void read_keys(struct top *t)
{
	unsigned char buf[64];
	ssize_t n;
	size_t off = 0, used;

	if (!t->keys || !t->keys_ready)
		return;
	t->keys_ready = false;
	n = read(STDIN_FILENO, buf, sizeof(buf));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) { /* the terminal went away: no more keys, the view goes on */
		t->keys = false;
		return;
	}
	while (off < (size_t)n) {
		int key = gs_top_key_parse(buf + off, (size_t)n - off, &used);

		if (key != GS_KEY_NONE)
			handle_key(t, key);
		off += used ? used : 1;
	}
}

/* Waits for records, keys, or room for waiting output, at most until the next refresh. */
static int wait_events(void *ctx, int timeout_ms)
{
	struct top *t = ctx;
	struct pollfd fds[3] = {
		{ .fd = gs_tracker__fd(t->tracker), .events = POLLIN },
		{ .fd = t->keys ? STDIN_FILENO : -1, .events = POLLIN },
		{ .fd = gs_top_out__pending(&t->out) ? t->out.fd : -1, .events = POLLOUT },
	};
	uint64_t now = gs_clock_ns(CLOCK_MONOTONIC);

	if (t->next_refresh_ns > now && (t->next_refresh_ns - now) / 1000000 < (uint64_t)timeout_ms)
		timeout_ms = (int)((t->next_refresh_ns - now) / 1000000) + 1;
	else if (t->next_refresh_ns <= now)
		timeout_ms = 0;
	if (poll(fds, 3, timeout_ms) < 0 && errno != EINTR) {
		gs_err("poll: %s", strerror(errno));
		return -errno;
	}
	if (fds[1].revents)
		t->keys_ready = true;
	return 0;
}

/* One iteration: the rows' figures, their rates since the last one, drawn; the exited go. */
static void refresh(struct top *t, uint64_t now_ns)
{
	update_rows(t);
	gs_top_model__sample(&t->model, now_ns);
	t->view.iteration++;
	draw(t, now_ns);
	gs_top_model__remove_gone(&t->model);
}

/* A resized terminal is drawn again at once (checked at each wait's end: no SIGWINCH flag). */
static void check_size(struct top *t)
{
	int rows, cols;

	if (!t->full)
		return;
	gs_top_term__size(&rows, &cols);
	if (rows != t->rows || cols != t->cols)
		t->redraw = true;
}

static int tick(void *ctx, uint64_t now_ns)
{
	struct top *t = ctx;

	read_keys(t);
	check_size(t);
	if (now_ns >= t->next_refresh_ns) {
		refresh(t, now_ns);
		t->next_refresh_ns += t->interval_ns;
		if (t->next_refresh_ns <= now_ns) /* a late tick: the next a whole interval on */
			t->next_refresh_ns = now_ns + t->interval_ns;
		if (t->opts.iterations && t->view.iteration >= t->opts.iterations)
			gs_stop_requested = SIGTERM; /* -n: ends as q does */
	} else if (t->redraw) {
		update_rows(t);
		draw(t, now_ns);
	}
	t->redraw = false;
	if (gs_top_out__pending(&t->out))
		flush_out(t);
	return 0;
}

static const struct argp_option top_options[] = {
	{ "delay", 'd', "SECS", 0, "Refresh every SECS seconds (default 2), as top's -d", 0 },
	{ "iterations", 'n', "N", 0, "Stop after N refreshes", 0 },
	{ "batch", 'b', NULL, 0,
	  "Plain lines, one block per refresh (the default when stdout is not a terminal)", 0 },
	{ "sort", 's', "KEY", 0,
	  "Sort by pid, rank, mem (default), torch, tensors, launches, sync, copies or ooms", 0 },
	{ "no-torch", OPT_NO_TORCH, NULL, 0,
	  "Ignore PyTorch: no tensors, its segments counted as plain CUDA allocations", 0 },
	{ 0 },
};

static error_t top_parse(int key, char *arg, struct argp_state *state)
{
	struct top_opts *o = state->input;
	char *end;
	int sort;

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &o->common;
		state->child_inputs[1] = &o->common;
		break;
	case 'd':
		if (gs_parse_seconds(arg, &o->interval_s) || o->interval_s < MIN_INTERVAL_S)
			argp_error(state, "invalid delay '%s' (seconds, at least %.1f)", arg,
				   MIN_INTERVAL_S);
		break;
	case 'n':
		errno = 0;
		o->iterations = strtoull(arg, &end, 10);
		if (errno || *end || *arg == '-' || !o->iterations)
			argp_error(state, "invalid --iterations '%s'", arg);
		break;
	case 'b':
		o->batch = true;
		break;
	case 's':
		sort = gs_top_sort_parse(arg);
		if (sort < 0)
			argp_error(state, "unknown --sort '%s'", arg);
		o->sort = (enum gs_top_sort)sort;
		break;
	case OPT_NO_TORCH:
		o->no_torch = true;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/*
 * The shared target options, but for -d: top's -d is its refresh interval, as top's and
 * nvidia-smi's are; the stop after SECS stays as --duration. A copy of the shared table with
 * that one key moved, parsed by the shared parser.
 */
static struct argp_option *common_options;

static error_t common_parse(int key, char *arg, struct argp_state *state)
{
	return gs_common_argp.parser(key == OPT_DURATION ? 'd' : key, arg, state);
}

static struct argp common_argp = { NULL, common_parse, NULL, NULL, NULL, NULL, NULL };

static int make_common_argp(void)
{
	const struct argp_option *src = gs_common_argp.options;
	size_t n = 0;

	while (src[n].name || src[n].key || src[n].doc || src[n].group)
		n++;
	common_options = calloc(n + 1, sizeof(*common_options));
	if (!common_options)
		return -ENOMEM;
	memcpy(common_options, src, n * sizeof(*src));
	for (size_t i = 0; i < n; i++)
		if (common_options[i].key == 'd')
			common_options[i].key = OPT_DURATION;
		else if (common_options[i].key == 'o') /* refused: not offered */
			common_options[i].flags |= OPTION_HIDDEN;
	common_argp.options = common_options;
	return 0;
}

static const struct argp_child top_children[] = {
	{ &common_argp, 0, "Targets:", 0 },
	{ &gs_stacks_argp, 0, NULL, 0 },
	{ &gs_help_argp, 0, NULL, 0 },
	{ 0 },
};

static const char top_doc[] =
	"A live view of the CUDA processes: memory held, PyTorch's allocated and reserved "
	"memory, tensors, launches, synchronization time and copies per second, out-of-memory "
	"errors and the most launched kernel, one row per process.\v"
	"Keys: m (memory), a (PyTorch allocated), t (tensors), l (launches), s (sync), "
	"c (copies), o (OOMs), p (pid), r (rank) sort; < and > move the sort column, R reverses "
	"it; up/down (or j/k) select a row, Enter or 1-9 opens a process's allocation stacks "
	"and kernels (Esc goes back); q quits. With --batch, or when stdout is not a terminal, "
	"each refresh prints a header line, a column line and one line per process, memory in "
	"bytes, launches and copies as totals and per second.\n\n"
	"EXAMPLES:\n"
	"  gpusnoop top -a                     # every CUDA process on the host\n"
	"  gpusnoop top -p 1234 --children     # a launcher and its ranks\n"
	"  gpusnoop top -d 5 -s launches -a    # every 5 s, busiest launchers first\n"
	"  gpusnoop top -b -n 3 -p 1234        # three refreshes as plain lines\n"
	"  gpusnoop top -- python train.py     # run train.py, watch it";

static const struct argp top_argp = {
	top_options, top_parse, "[-p PID ... | -a | -- CMD ARGS]", top_doc, top_children,
	NULL,	     NULL,
};

static int run(struct top *t)
{
	enum gs_run_end end;
	int err;
	struct gs_run_loop loop = {
		.tracker = t->tracker,
		.start_ns = gs_clock_ns(CLOCK_MONOTONIC),
		.duration_s = t->opts.common.duration_s,
		.poll_ms = POLL_MS,
		.error = &t->error,
		.ctx = t,
		.wait = wait_events,
		.tick = tick,
	};

	t->interval_ns = (uint64_t)(t->opts.interval_s * 1e9);
	t->next_refresh_ns = loop.start_ns + t->interval_ns;
	t->model.last_sample_ns = loop.start_ns; /* the first interval starts with the loop */
	/* the named targets have their rows from the start, idle or not */
	for (size_t i = 0; i < t->opts.common.nr_pids; i++)
		row(t, t->opts.common.pids[i]);
	if (gs_tracker__child(t->tracker))
		row(t, gs_tracker__child(t->tracker));
	if (t->full) {
		err = gs_top_term__enter(STDIN_FILENO, STDOUT_FILENO);
		if (err)
			return err;
		t->redraw = true; /* the table at once, its rates after the first interval */
	}
	err = gs_run_loop(&loop, &end);
	/* --batch: the last figures of targets that ended between two refreshes */
	if (!err && !t->full && end == GS_RUN_TARGETS_GONE && t->model.nr_procs &&
	    (!t->opts.iterations || t->view.iteration < t->opts.iterations))
		refresh(t, gs_clock_ns(CLOCK_MONOTONIC));
	return err;
}

static int check_opts(struct top *t)
{
	if (t->opts.common.output) {
		gs_err("top writes to the terminal, or with --batch to stdout: no -o");
		return -EINVAL;
	}
	t->full = !t->opts.batch && isatty(STDOUT_FILENO);
	t->keys = t->full && isatty(STDIN_FILENO);
	return 0;
}

/* What the session and the view need, after the targets were checked. 0 or -errno (logged). */
static int open_parts(struct top *t)
{
	struct gs_tracker_opts topts = gs_common_opts__tracker(
		&t->opts.common, GS_FAM_BIT(GS_FAM_MEM) | GS_FAM_BIT(GS_FAM_LAUNCH) |
					 GS_FAM_BIT(GS_FAM_SYNC) | GS_FAM_BIT(GS_FAM_COPY) |
					 GS_FAM_BIT(GS_FAM_NAMES));
	struct gs_tracker_ops ops = {
		.ctx = t,
		.mem_alloc = on_alloc,
		.mem_free = on_free,
		.mem_free_ret = on_free_ret,
		.cuda_call = on_cuda_call,
		.torch_mem = on_torch_mem,
		.torch_oom = on_torch_oom,
		.proc_gone = on_proc_gone,
	};
	int err;

	topts.torch = !t->opts.no_torch;
	err = gs_tracker__open(&t->tracker, &topts, &ops);
	if (err)
		return err;
	t->stacks = gs_stack_table__new(gs_tracker__symcache(t->tracker));
	t->names = gs_kernel_names__new(gs_tracker__symcache(t->tracker));
	if (!t->stacks || !t->names || gs_top_out__open(&t->out, STDOUT_FILENO, OUT_QUEUE)) {
		gs_err("out of memory");
		return -ENOMEM;
	}
	gs_mem_model__init(&t->mem, t->stacks, gs_tracker__symcache(t->tracker), !t->opts.no_torch);
	return 0;
}

int gs_cmd_top(int argc, char **argv)
{
	struct top t = { .opts = { .interval_s = DEFAULT_INTERVAL_S, .sort = GS_TOP_SORT_MEM } };
	int err, status = 1;

	t.out.fd = -1;
	if (make_common_argp())
		return 1;
	if (argp_parse(&top_argp, argc, argv, ARGP_IN_ORDER, NULL, &t.opts))
		goto out_free;
	err = gs_common_opts__finish(&t.opts.common) ?: check_opts(&t);
	if (err) {
		status = gs_exit_status(err); /* a usage error: 64 */
		goto out_free;
	}
	/* before the session starts: its start may hand over records already */
	gs_top_model__init(&t.model, gs_clock_ns(CLOCK_MONOTONIC));
	t.view.sort = t.opts.sort;
	t.view.interval_s = t.opts.interval_s;
	if (open_parts(&t) || gs_tracker__start(t.tracker))
		goto out_free;
	gs_info("following CUDA processes%s; q or Ctrl-C to stop",
		t.opts.common.all ? " (every process)" : "");
	err = run(&t);
	/* the screen is given back before anything else is said or undone */
	gs_top_term__leave();
	if (!err && !t.full) {
		/* batch lines still queued for a slow reader: a second's grace */
		int e = gs_top_out__drain(&t.out, 1000);

		if (e && e != -EPIPE) {
			gs_err("writing output: %s", strerror(-e));
			err = e;
		}
	}
	status = err ? 1 : 0;

out_free:
	gs_top_term__leave();
	gs_top_out__close(&t.out);
	gs_top_screen__release(&t.screen);
	gs_top_model__release(&t.model);
	gs_mem_model__release(&t.mem);
	gs_kernel_names__free(t.names);
	gs_stack_table__free(t.stacks);
	gs_tracker__free(t.tracker);
	free(common_options);
	return status;
}
