// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* metrics.c: what the daemon counts, as Prometheus text exposition. */
#include <inttypes.h>
#include <stdio.h>
#include "profilers/daemon/daemon.h"
#include "profilers/tracker.h"
#include "user/event_decode.h"
#include "user/text_escape.h"

static void metric_header(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

enum proc_value {
	OUTSTANDING_BYTES,
	OUTSTANDING_ALLOCATIONS,
	PINNED_BYTES,
	ALLOCATIONS,
	FREES,
	FAILED_ALLOCATIONS,
	LAUNCHES,
	SYNCS,
	SYNC_SECONDS,
};

static double proc_value(struct gs_daemon *d, const struct gs_daemon_proc *st,
			 enum proc_value which)
{
	struct gs_mem_proc *p = gs_mem_model__proc(&d->mem, st->pid, false);

	switch (which) {
	case OUTSTANDING_BYTES:
		return p ? (double)gs_alloc_table__bytes(p->allocs) : 0;
	case OUTSTANDING_ALLOCATIONS:
		return p ? (double)gs_alloc_table__count(p->allocs) : 0;
	case PINNED_BYTES:
		return p ? (double)p->pinned_bytes : 0;
	case ALLOCATIONS:
		return p ? (double)p->allocations : 0;
	case FREES:
		return p ? (double)p->frees : 0;
	case FAILED_ALLOCATIONS:
		return p ? (double)p->failed_allocations : 0;
	/* counted in BPF, and as records when its map was full */
	case LAUNCHES:
		return (double)(st->calls.launches + st->in_kernel.launches);
	case SYNCS:
		return (double)(st->calls.syncs + st->in_kernel.syncs);
	case SYNC_SECONDS:
		return (double)(st->calls.sync_ns + st->in_kernel.sync_ns) / 1e9;
	}
	return 0;
}

/* Per-process series, one metric family at a time as the exposition format wants. */
static void proc_family(FILE *f, struct gs_daemon *d, const char *name, const char *type,
			const char *help, enum proc_value which)
{
	metric_header(f, name, type, help);
	for (size_t i = 0; i < d->nr_procs; i++) {
		const struct gs_daemon_proc *st = &d->procs[i];

		/* the comm is the process's choice of bytes: escaped, and made UTF-8 */
		fprintf(f, "%s{pid=\"%d\",comm=\"", name, (int)st->pid);
		gs_prom_write_label_value(f, gs_tracker__comm(d->tracker, st->pid));
		fprintf(f, "\"} %.17g\n", proc_value(d, st, which));
	}
}

/* PyTorch's allocated and reserved bytes per process and device. */
static void torch_families(FILE *f, struct gs_daemon *d)
{
	static const char *const names[2] = { "gpusnoop_torch_allocated_bytes",
					      "gpusnoop_torch_reserved_bytes" };
	static const char *const helps[2] = {
		"Bytes of PyTorch tensors (torch.cuda.memory_allocated), per device.",
		"Bytes the caching allocator holds (torch.cuda.memory_reserved), per device.",
	};

	for (int which = 0; which < 2; which++) {
		metric_header(f, names[which], "gauge", helps[which]);
		for (size_t i = 0; i < d->mem.torch.nr_procs; i++) {
			struct gs_torch_proc *tp = d->mem.torch.procs[i];

			gs_torch_proc__update(tp);
			for (size_t k = 0; k < tp->nr_devs; k++) {
				const struct gs_torch_device *dev = &tp->devs[k];
				char name[16];

				if (dev->key == GS_TORCH_DEV_UNKNOWN)
					continue;
				gs_torch_device_name(dev->key, name, sizeof(name));
				fprintf(f, "%s{pid=\"%d\",comm=\"", names[which], (int)tp->pid);
				gs_prom_write_label_value(f, gs_tracker__comm(d->tracker, tp->pid));
				fprintf(f, "\",device=\"%s\"} %" PRIu64 "\n", name,
					which ? dev->reserved : dev->allocated);
			}
		}
	}
}

static void scalar_metric(FILE *f, const char *name, const char *help, uint64_t value)
{
	metric_header(f, name, "counter", help);
	fprintf(f, "%s %" PRIu64 "\n", name, value);
}

/* Per user, the records dropped for being over its share (64 users at most, as ctl status). */
static void user_drops(FILE *f, struct gs_daemon *d)
{
	uint32_t uids[64];
	uint64_t drops[64];
	size_t n = gs_tracker__uid_drops(d->tracker, uids, drops, 64);

	metric_header(f, "gpusnoop_user_events_lost_total", "counter",
		      "Events of a user dropped for writing past its share of the ring buffer.");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "gpusnoop_user_events_lost_total{uid=\"%u\"} %" PRIu64 "\n", uids[i],
			drops[i]);
}

void gs_daemon__render_metrics(struct gs_daemon *d, FILE *f)
{
	uint64_t stats[GS_STAT__MAX];

	proc_family(f, d, "gpusnoop_cuda_outstanding_bytes", "gauge",
		    "Bytes of CUDA memory a process holds from the allocations gpusnoop saw.",
		    OUTSTANDING_BYTES);
	proc_family(f, d, "gpusnoop_cuda_outstanding_allocations", "gauge",
		    "CUDA allocations a process holds.", OUTSTANDING_ALLOCATIONS);
	proc_family(
		f, d, "gpusnoop_cuda_pinned_host_bytes", "gauge",
		"Of the outstanding bytes, pinned host memory (cudaHostAlloc, cudaHostRegister).",
		PINNED_BYTES);
	proc_family(f, d, "gpusnoop_cuda_allocations_total", "counter",
		    "Successful CUDA allocation calls since the daemon saw the process.",
		    ALLOCATIONS);
	proc_family(f, d, "gpusnoop_cuda_frees_total", "counter",
		    "CUDA free calls since the daemon saw the process.", FREES);
	proc_family(f, d, "gpusnoop_cuda_failed_allocations_total", "counter",
		    "CUDA allocation calls that returned an error.", FAILED_ALLOCATIONS);
	if (d->cfg.torch)
		torch_families(f, d);
	if (d->cfg.call_metrics) {
		proc_family(f, d, "gpusnoop_cuda_launches_total", "counter",
			    "Kernel and graph launches (cuda-call-metrics).", LAUNCHES);
		proc_family(f, d, "gpusnoop_cuda_syncs_total", "counter",
			    "Stream, device, event and context synchronizations.", SYNCS);
		proc_family(f, d, "gpusnoop_cuda_sync_seconds_total", "counter",
			    "Time threads spent inside synchronization calls.", SYNC_SECONDS);
	}
	metric_header(f, "gpusnoop_oom_events_total", "counter",
		      "Out-of-memory events seen, by source.");
	fprintf(f, "gpusnoop_oom_events_total{source=\"cuda\"} %" PRIu64 "\n", d->oom_events);
	fprintf(f, "gpusnoop_oom_events_total{source=\"torch\"} %" PRIu64 "\n", d->torch_ooms);
	fprintf(f, "gpusnoop_oom_events_total{source=\"kernel\"} %" PRIu64 "\n", d->oom_kills);
	scalar_metric(f, "gpusnoop_recordings_started_total",
		      "Recordings started: scheduled, after a trigger, or asked by ctl.",
		      d->recordings_started);
	scalar_metric(f, "gpusnoop_reports_written_total",
		      "Reports written to the output directory.", d->reports_written);
	scalar_metric(f, "gpusnoop_report_errors_total", "Reports that could not be written.",
		      d->report_errors);
	scalar_metric(f, "gpusnoop_triggers_suppressed_total",
		      "Triggers not reported because of trigger-interval.", d->triggers_suppressed);
	scalar_metric(f, "gpusnoop_profiles_started_total",
		      "CPU profiles started: scheduled or asked for over HTTP.",
		      d->profiles_started);
	metric_header(f, "gpusnoop_events_lost_total", "counter",
		      "Events lost, by reason: in the kernel (ring buffer full, a user over its "
		      "share, ...) or in the daemon (out of memory).");
	gs_tracker__stats(d->tracker, stats);
	for (int i = 0; i < GS_STAT__MAX; i++)
		if (gs_stat_name(i))
			fprintf(f, "gpusnoop_events_lost_total{reason=\"%s\"} %" PRIu64 "\n",
				gs_stat_name(i), stats[i]);
	for (int i = 0; i < GS_DAEMON_LOSS__MAX; i++)
		fprintf(f, "gpusnoop_events_lost_total{reason=\"%s\"} %" PRIu64 "\n",
			gs_daemon_loss_name(i), d->losses.own[i]);
	user_drops(f, d);
	metric_header(f, "gpusnoop_processes", "gauge", "CUDA processes the daemon follows.");
	fprintf(f, "gpusnoop_processes %zu\n", d->nr_procs);
}
