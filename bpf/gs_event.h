/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* gs_event.h: record layouts and constants shared by the BPF programs and userspace. */
#ifndef GS_EVENT_H
#define GS_EVENT_H

/*
 * Includes nothing on purpose: the includer supplies __u8..__u64 (vmlinux.h in BPF,
 * <linux/types.h> in userspace). Fields are fixed width with explicit padding only.
 */

#define GS_MAX_STACK	64    /* user frames captured per allocation */
#define GS_MAX_TARGETS	16384 /* processes one session can follow */
#define GS_MAX_UIDS	4096  /* users whose share of the ring buffer is counted (-a) */
#define GS_OOM_PER_UID	16    /* OOM records a second per user on their own buffer */
#define GS_OOM_ERROR	2     /* cudaErrorMemoryAllocation and CUDA_ERROR_OUT_OF_MEMORY alike */
#define GS_MAX_INFLIGHT 65536 /* threads inside a probed call at once */

enum gs_event_type {
	/* process lifecycle, from bpf/proc.bpf.c: 1..15 */
	GS_EV_PROC_EXEC = 1,
	GS_EV_PROC_EXIT = 2,
	GS_EV_LIBS_CHANGED = 3,	 /* the dynamic loader changed the link map */
	GS_EV_PROC_OOM_KILL = 4, /* the kernel OOM killer chose this process (hdr.pid) */
	GS_EV_PROC_FORK = 5,	 /* a target's child became one (struct gs_proc_fork) */
	/* CUDA memory, from bpf/mem.bpf.c: 16..31 */
	GS_EV_MEM_ALLOC = 16,	 /* an allocation call returned, successfully or not */
	GS_EV_MEM_FREE = 17,	 /* a free call was entered */
	GS_EV_MEM_FREE_RET = 18, /* ... returned: failures always, successes when asked */
	/* launches, synchronization, copies and kernel naming, from bpf/cuda.bpf.c: 32..47 */
	GS_EV_CUDA_CALL = 32, /* a probed call returned; userspace decodes args per API */
	/* CPU samples, from bpf/cpu.bpf.c: 48..63 */
	GS_EV_CPU_SAMPLE = 48, /* one perf_event sample of a target thread, with its stacks */
	/* PyTorch allocators, from bpf/torch.bpf.c: 64..79 */
	GS_EV_TORCH_MEM = 64, /* a tensor block was allocated or freed (struct gs_torch_mem) */
	GS_EV_TORCH_OOM = 65, /* PyTorch ran out of memory (struct gs_torch_oom) */
	/* user stack slices for DWARF unwinding, from gs_ustack.bpf.h: 80..95 */
	GS_EV_USTACK = 80, /* struct gs_ustack_event, just before the record it belongs to */
	/* GPU activity from the CUPTI injection library's USDT probes, bpf/gpu.bpf.c: 112..127 */
	GS_EV_GPU_RECORD = 112,	 /* a completed CUPTI activity record (struct gs_gpu_record) */
	GS_EV_GPU_API = 113,	 /* a CUDA API call's correlation id (struct gs_gpu_api) */
	GS_EV_GPU_DROPPED = 114, /* records CUPTI dropped (struct gs_gpu_dropped) */
	GS_EV_GPU_CLOCK = 115,	 /* a check of CUPTI's clock mapping (struct gs_gpu_clock) */
	GS_EV_NVTX = 116,	 /* an NVTX range, mark or name (struct gs_nvtx_event, gs_nvtx.h) */
	/* Python frames of the current thread, from gs_python.bpf.h: 96..111 */
	GS_EV_PYSTACK = 96, /* struct gs_py_stack_event, just before the record it belongs to */
	GS_EV_PYCODE = 97,  /* struct gs_py_code_event: a code object's names, first seen */
};

struct gs_event_hdr {
	__u16 type;
	__u16 flags;
	__u32 size;  /* bytes of this record that are valid */
	__u64 ts_ns; /* CLOCK_MONOTONIC */
	__u32 pid;   /* thread group id */
	__u32 tid;
};

/* values of the targets map: a pid's entry holds only while start matches its process */
struct gs_target {
	__u32 flags;	  /* GS_TARGET_* */
	__u32 skip_loads; /* loader events not to stop at: the start-up of an image probed already */
	__u64 start;	  /* start time, clock ticks after boot (/proc/PID/stat field 22); 0: any */
};

/*
 * The stopped set (bpf/proc.bpf.c): pid -> its process's stop, from the SIGSTOP until
 * userspace answers it. A stop whose record was lost is found here and resumed.
 */
#define GS_MAX_STOPPED 4096
struct gs_stopped {
	__u64 start;   /* as gs_target.start */
	__u32 foreign; /* someone else stopped it meanwhile: it stays stopped */
	__u32 pad;
};
/* task start_boottime (ns) to clock ticks: USER_HZ is 100 on every architecture we build */
#define GS_NS_PER_TICK 10000000ULL

#define GS_TARGET_TRACED       0x1
#define GS_TARGET_STOP_ON_LOAD 0x2 /* SIGSTOP at each link-map change (spawned child) */
/* its new processes become targets too (flags inherited, plus STOP_ON_LOAD); SIGSTOP at exec */
#define GS_TARGET_CHILDREN 0x4
/* stops at every exec, probed image or not: a rank's environment is read there */
#define GS_TARGET_ALWAYS_STOP 0x8

/* probed_files key: an image or loader probed already (kernel dev_t: major << 20 | minor) */
#define GS_MAX_PROBED_FILES 1024
struct gs_file_key {
	__u64 dev;
	__u64 ino;
};

/* kernels without bpf_cookie (5.10): probe_cookies key, a probed function's file and offset */
#define GS_OLD_PROBES 8192
struct gs_probe_key {
	__u64 dev; /* kernel dev_t, as gs_file_key */
	__u64 ino;
	__u64 off;
};

/* gs_event_hdr.flags of GS_EV_LIBS_CHANGED */
#define GS_LIBS_F_STOPPED 0x1 /* the process was sent SIGSTOP and waits for SIGCONT */
/* ... of GS_EV_PROC_EXEC too: a GS_TARGET_CHILDREN target stops before its new image runs */
#define GS_EXEC_F_STOPPED 0x1

struct gs_proc_event {
	struct gs_event_hdr hdr;
	__u64 start;   /* the process's start time, as gs_target.start */
	char comm[16]; /* at the event (an exec's: the new image's) */
};

/* GS_EV_PROC_FORK: hdr.pid is the new process, reported before it first runs */
struct gs_proc_fork {
	struct gs_event_hdr hdr;
	__u32 ppid; /* the target that forked it (thread group id) */
	__u32 pad;
};

/* bpf_cookie of every memory probe: which API it is attached to (see profilers/cuda/api.c) */
struct gs_mem_alloc {
	struct gs_event_hdr hdr;
	__u64 ptr; /* 0 when the call failed */
	__u64 size;
	__u64 entry_ts_ns;
	__s32 ret; /* cudaError_t / CUresult; 0 = success */
	__u16 api;
	__u16 nr_frames;	    /* valid entries of frames[] */
	__u64 frames[GS_MAX_STACK]; /* user stack at return, innermost first */
};

struct gs_mem_free {
	struct gs_event_hdr hdr;
	__u64 ptr;
	__u16 api;
	__u16 pad[3];
};

struct gs_mem_free_ret {
	struct gs_event_hdr hdr;
	__u64 ptr;
	__u64 entry_ts_ns;
	__s32 ret;
	__u16 api;
	__u16 nr_frames;	    /* stacks only when successes are reported too */
	__u64 frames[GS_MAX_STACK]; /* user stack at return, innermost first */
};

/*
 * bpf_cookie of the generic call probes (bpf/cuda.bpf.c): the API id in the low 16 bits,
 * GS_CALL_F_* above them, telling the probe what to read besides the argument registers.
 */
#define GS_CALL_F_STACK_ARGS 0x1  /* arguments 7..9 from the caller's stack */
#define GS_CALL_F_DEREF_ARG0 0x2  /* 40 bytes at argument 1 (a launch config struct) */
#define GS_CALL_F_READ_OUT0  0x4  /* at return, the u64 argument 1 points to */
#define GS_CALL_F_READ_STR2  0x8  /* at return, the string argument 3 points to; no stack */
#define GS_CALL_F_USER_STACK 0x10 /* the user stack at return */
#define GS_CALL_F_AT_ENTRY   0x20 /* sent at entry, no return probe: no duration, no result */
/* only counted, in the kernel's call_counts map (the daemon's metrics): a launch, a sync */
#define GS_CALL_F_COUNT_LAUNCH 0x40
#define GS_CALL_F_COUNT_SYNC   0x80

#define GS_CALL_REG_ARGS    6
#define GS_CALL_STACK_ARGS  3
#define GS_CALL_DEREF_WORDS 5
#define GS_CALL_ARGS	    (GS_CALL_REG_ARGS + GS_CALL_STACK_ARGS + GS_CALL_DEREF_WORDS)
#define GS_CALL_STR	    128

/*
 * args[0..5] are the argument registers at entry, args[6..8] the stack slots after the
 * return address (7th.. arguments), args[9..13] the words of the struct argument 1 points to.
 */
struct gs_cuda_call {
	struct gs_event_hdr hdr;
	__u64 args[GS_CALL_ARGS];
	__u64 out; /* GS_CALL_F_READ_OUT0 */
	__u64 entry_ts_ns;
	__s32 ret;   /* cudaError_t / CUresult; 0 for void functions */
	__u32 flags; /* GS_CALL_F_* the probe ran with */
	__u16 api;
	__u16 nr_frames;
	__u32 pad;
	/*
	 * A call with a stack has no string (GS_CALL_F_READ_STR2 is for calls without one): a
	 * launch's record is reserved without the string's 128 bytes, two cache lines fewer of
	 * the ring buffer per record.
	 */
	union {
		char str[GS_CALL_STR]; /* GS_CALL_F_READ_STR2, NUL-terminated */
		__u64 frames[GS_MAX_STACK];
	};
};

/* call_counts' value per process (bpf/gs_call_counts.bpf.h): summed over CPUs by its reader */
struct gs_call_counts {
	__u64 launches;
	__u64 syncs;
	__u64 sync_ns; /* time threads spent inside the syncs */
};

/* uid_shares' value: what one user wrote to events under pressure, what it lost for it (-a) */
struct gs_uid_share {
	__u64 epoch;	     /* the pressure period bytes counts in (gs_share_state.epoch) */
	__u64 bytes;	     /* written to events in it */
	__u64 dropped;	     /* records dropped for being over the share, ever */
	__u64 oom_window_ns; /* start of the current OOM window */
	__u64 ooms;	     /* OOM records put on oom_events in it */
};

/* share_state's one value: whether events is under pressure (over half full), and since when */
struct gs_share_state {
	__u64 epoch;	/* one more each time a pressure period ends */
	__u64 pressure; /* 1 while events was last seen over half full */
	__u64 users;	/* users that wrote in this pressure period */
};

/* slots of the per-CPU stats map: losses are counted, never silent */
enum gs_stat {
	GS_STAT_RINGBUF_FULL = 0, /* records dropped: ring buffer had no room */
	GS_STAT_INFLIGHT_FULL,	  /* calls not followed: per-thread state map full */
	GS_STAT_STACK_FAILED,	  /* allocations recorded without a stack */
	GS_STAT_USER_READ_FAILED, /* out-parameter unreadable at return */
	GS_STAT_CPU_STACK_LOST,	  /* CPU samples counted without a stack: stack map full */
	GS_STAT_CPU_COUNTS_FULL,  /* CPU samples lost: the in-kernel counts map was full */
	GS_STAT_USTACK_FAILED,	  /* --stacks dwarf: no byte of the user stack was readable */
	GS_STAT_PY_TRUNCATED,	  /* Python stacks cut at GS_PY_MAX_FRAMES (outermost lost) */
	GS_STAT_GPU_TOO_BIG,	  /* CUPTI records larger than GS_GPU_RECORD_BYTES: not copied */
	GS_STAT_TARGETS_FULL,	  /* new processes of a followed tree not traced: targets full */
	GS_STAT_STOPS,		  /* processes stopped for probing (not a loss: not in "lost") */
	GS_STAT_STOPS_SKIPPED,	  /* stops not sent: their record or the stopped set had no room */
	GS_STAT_OOM_FALLBACK,	  /* OOM records sent on the shared buffer: their own one full */
	GS_STAT_UID_OVER_SHARE,	  /* records dropped: their user wrote past its share (-a) */
	GS_STAT_OOM_LOST,	  /* OOM records lost: their own buffer and the shared one full */
	GS_STAT__MAX,
};

#define GS_CPU_KERNEL_STACK 32 /* kernel frames captured per CPU sample */

/* One CPU sample (`record -e cpu`): where the thread was, user and kernel side. */
struct gs_cpu_sample {
	struct gs_event_hdr hdr;
	__u32 cpu;
	__u16 nr_kernel;		   /* valid entries of kernel[] */
	__u16 nr_frames;		   /* valid entries of frames[] */
	char comm[16];			   /* the thread's name */
	__u64 kernel[GS_CPU_KERNEL_STACK]; /* kernel stack, innermost (the sampled IP) first */
	__u64 frames[GS_MAX_STACK];	   /* user stack, innermost (the sampled IP) first */
};

/* Key of the in-kernel aggregation (`profile`): samples per thread name and stack pair. */
struct gs_cpu_key {
	__u32 pid;
	__s32 user_stack_id;   /* in the stacks map; negative: none (kernel thread, lost) */
	__s32 kernel_stack_id; /* negative: the sample hit user mode, or lost */
	__u32 tid;	       /* profile --per-thread; else 0 */
	char comm[16];
};

/* gs_torch_mem.source / the bpf_cookie of the torch probes: where the block event came from */
#define GS_TORCH_SRC_USDT    1 /* pytorch:malloc / pytorch:free in libc10_cuda.so */
#define GS_TORCH_SRC_REPORT  2 /* c10::reportMemoryUsageToProfiler in libc10.so */
#define GS_TORCH_SRC_SYMBOLS 3 /* the caching allocator's malloc/free from .symtab */
#define GS_TORCH_SRC_CPU     4 /* c10::alloc_cpu / c10::free_cpu in libc10.so */

#define GS_TORCH_OP_ALLOC 1
#define GS_TORCH_OP_FREE  2

/* c10::DeviceType values gpusnoop names */
#define GS_TORCH_DEV_CPU  0
#define GS_TORCH_DEV_CUDA 1

/* gs_torch_mem.flags */
#define GS_TORCH_F_TOTALS 0x1 /* total_allocated/total_reserved are PyTorch's own counters */

struct gs_torch_mem {
	struct gs_event_hdr hdr;
	__u64 ptr;
	__u64 size; /* bytes (the block's for REPORT, the request's otherwise); 0 unknown */
	__u64 total_allocated; /* GS_TORCH_F_TOTALS: after this event, for the device */
	__u64 total_reserved;
	__u64 stream;
	__u8 source;	  /* GS_TORCH_SRC_* */
	__u8 op;	  /* GS_TORCH_OP_* */
	__u8 device_type; /* GS_TORCH_DEV_* (c10::DeviceType) */
	__s8 device;	  /* index; -1 unknown */
	__u16 flags;
	__u16 nr_frames;
	__u64 frames[GS_MAX_STACK]; /* user stack, innermost first; allocations only */
};

#define GS_TORCH_OOM_REPORT 1 /* c10::reportOutOfMemoryToProfiler */
#define GS_TORCH_OOM_THROW  2 /* __cxa_throw of c10::OutOfMemoryError */

struct gs_torch_oom {
	struct gs_event_hdr hdr;
	__u64 size; /* requested bytes (REPORT); 0 for THROW */
	__u64 total_allocated;
	__u64 total_reserved;
	__u8 source; /* GS_TORCH_OOM_* */
	__u8 device_type;
	__s8 device;
	__u8 pad;
	__u16 nr_frames;
	__u16 pad2;
	__u64 frames[GS_MAX_STACK];
};

/*
 * DWARF unwinding (--stacks dwarf): BPF copies the registers and a slice of the user stack
 * above sp; userspace unwinds it with the CFI of the mapped files (user/unwind.c).
 *
 * 16 KiB, twice perf's default for --call-graph dwarf. Measured on Debian's PyTorch 1.13
 * and Python 3.11 (tests/tools/gs_ustack_snap at c10::alloc_cpu): a CPU tensor allocated in
 * the forward pass of nn.Linear inside two nested nn.Sequential has 57 frames up to _start;
 * 4 KiB of stack reaches 22 of them (the first Python frame), 8 KiB 48; all 57 took the
 * 11.6 KiB up to the end of the stack. Deeper models need more. The slice is read
 * straight into the reserved ring-buffer record: it costs ring-buffer space, not a copy.
 */
#define GS_USTACK_BYTES	 16384
#define GS_USTACK_REG_IP 0
#define GS_USTACK_REG_SP 1
#define GS_USTACK_REG_BP 2

struct gs_ustack {
	__u64 regs[3]; /* ip, sp, bp at the probe */
	__u32 size;    /* bytes of data[] copied from sp; 0 when none could be read */
	__u32 pad;
	__u8 data[GS_USTACK_BYTES];
};

/*
 * gs_event_hdr.flags bit of any record type: a GS_EV_USTACK record of the same tid and
 * ts_ns came just before this one (the same BPF program emitted both, in that order).
 */
#define GS_EV_F_USTACK 0x8000

struct gs_ustack_event {
	struct gs_event_hdr hdr;
	struct gs_ustack st;
};

/*
 * Python frames (gs_python.bpf.h). Userspace finds the interpreter of a process and writes
 * where its thread states are and how its frames are laid out into the py_procs map (pid ->
 * struct gs_py_proc); at each event that records a user stack, BPF walks the current
 * thread's frame chain and emits a GS_EV_PYSTACK record just before the event's own record,
 * which then has GS_EV_F_PYSTACK in hdr.flags and the same ts_ns. Userspace names the code
 * objects and merges the frames into the native stack (user/python.c).
 */
#define GS_PY_MAX_FRAMES 128 /* Python frames recorded per stack, innermost first */
#define GS_PY_MAX_PROCS	 4096
#define GS_PY_PID_SLOTS	 4096 /* py_pids: a power of 2 */

/* gs_py_proc.flag_kind: how a frame says that it ends a run of _PyEval_EvalFrameDefault */
#define GS_PY_RUN_EVERY	   0 /* 3.8-3.10: one C evaluation per Python frame */
#define GS_PY_RUN_IS_ENTRY 1 /* 3.11: the frame's is_entry byte */
#define GS_PY_RUN_OWNER	   2 /* 3.12+: the next frame is a C-stack shim (owner == 3) */

/* Where the frame chain of a process's threads is: offsets for its CPython version. */
struct gs_py_proc {
	__u64 tss_key;	      /* address of _PyRuntime's autoTSSkey (Py_tss_t: int init; key) */
	__u16 pthread_first;  /* glibc struct pthread: specific_1stblock (keys < 32) */
	__u16 pthread_second; /* ... specific[] (pointers to blocks of 32 keys) */
	__u16 tstate_frame;   /* thread state -> frame (3.11, 3.12: -> cframe) */
	__u16 cframe_frame;   /* 3.11, 3.12: cframe -> current frame; 0xffff: no cframe */
	__u16 frame_code;     /* frame -> code object (3.13: f_executable) */
	__u16 frame_back;     /* frame -> previous frame */
	__u16 frame_instr;    /* 3.8-3.10: int f_lasti; 3.11+: pointer to the instruction */
	__u16 frame_flag;     /* is_entry (3.11) or owner (3.12+) byte */
	__u8 flag_kind;	      /* GS_PY_RUN_* */
	__u8 instr_is_ptr;    /* frame_instr is a pointer (3.11+), not an int */
	__u16 code_name;      /* code object -> co_qualname (co_name before 3.11) */
	__u16 code_file;      /* -> co_filename */
	__u16 code_lines;     /* -> co_lnotab / co_linetable */
	__u16 code_firstlineno;
	__u16 str_ascii_data;	/* str: where a compact ASCII object's characters start */
	__u16 str_compact_data; /* ... and a compact UCS-1/2/4 one's */
	__s32 tls_tstate;	/* not 0: the thread state is at fs base + this (3.15's gilstate) */
};

/* gs_py_frame.flags */
#define GS_PY_F_RUN_END 0x1 /* the outermost frame of one _PyEval_EvalFrameDefault run */

struct gs_py_frame {
	__u64 code;  /* code object address */
	__u32 instr; /* 3.8-3.10: f_lasti; 3.11+: instruction pointer - code (bytes) */
	__u32 flags; /* GS_PY_F_* */
};

/* gs_py_stack_event.flags */
#define GS_PY_STACK_F_TRUNCATED 0x1 /* more frames lay beyond frames[GS_PY_MAX_FRAMES - 1] */

struct gs_py_stack_event {
	struct gs_event_hdr hdr;
	__u16 nr_frames;
	__u16 flags;
	__u32 nr_more; /* F_TRUNCATED: frames beyond the recorded ones; 0: more than were counted */
	struct gs_py_frame frames[GS_PY_MAX_FRAMES];
};

/*
 * A code object as BPF found it the first time one of its frames was sent: its names and
 * line table, so that a process which exits before userspace reads it still gets named.
 */
#define GS_PY_NAME_BYTES  256
#define GS_PY_FILE_BYTES  512
#define GS_PY_LINES_BYTES 4096

struct gs_py_str {
	__u32 length; /* characters of the str object (data holds at most its buffer's bytes) */
	__u8 kind;    /* bytes per character: 1, 2, 4; 0: unreadable or not a compact str */
	__u8 pad[3];
};

struct gs_py_code_event {
	struct gs_event_hdr hdr;
	__u64 code;
	__u64 name_ptr, file_ptr, lines_ptr; /* what the object pointed to */
	__s32 firstlineno;
	__u32 lines_size; /* bytes of the line table; lines[] has the first GS_PY_LINES_BYTES */
	struct gs_py_str name, file;
	__u8 name_data[GS_PY_NAME_BYTES];
	__u8 file_data[GS_PY_FILE_BYTES];
	__u8 lines[GS_PY_LINES_BYTES];
};

/* gs_event_hdr.flags bit of any record type: a GS_EV_PYSTACK record came just before it */
#define GS_EV_F_PYSTACK 0x4000

/*
 * Native stacks sent once (bpf/gs_stack_cache.bpf.h): each CPU keeps the last
 * GS_STACK_CACHE_SLOTS stacks it sent whole. In a record with frames[] (allocations, calls),
 * GS_EV_F_STACK_NEW says its frames are now kept in entry GS_EV_STACK_SLOT(flags) (CPU *
 * slots + slot), GS_EV_F_STACK_REF that it has no frames[] of its own: its stack is that
 * entry's, sent by an earlier record of the same process (user/stack_cache.c).
 */
/* a power of 2; a loop's stacks go round the slots: 4 held none of gs_bench's 5 (0 hits) */
#define GS_STACK_CACHE_SLOTS  8
#define GS_STACK_CACHE_MAX    4096 /* entries: CPUs from 512 on send every stack whole */
#define GS_EV_F_STACK_NEW     0x2000
#define GS_EV_F_STACK_REF     0x1000
#define GS_EV_STACK_SLOT_MASK 0x0fff
#define GS_EV_STACK_SLOT(f)   ((f)&GS_EV_STACK_SLOT_MASK)
/* both bits: --stack-sample left this event's stack out; frames[0] is its call site alone */
#define GS_EV_STACK_SITE_ONLY(f) \
	(((f) & (GS_EV_F_STACK_NEW | GS_EV_F_STACK_REF)) == (GS_EV_F_STACK_NEW | GS_EV_F_STACK_REF))
#define GS_STACK_SITES 4096 /* call sites counted for --stack-sample: a power of 2 */

/*
 * GPU activity (bpf/gpu.bpf.c): the CUPTI injection library (profilers/cupti/) fires one USDT
 * probe per completed kernel, memcpy or memset record; BPF copies the record whole, and the
 * kernel's name its name pointer points to. Userspace decodes the record with the layout of
 * profilers/cupti/cupti_abi.h, checking sizes. Timestamps inside are CLOCK_MONOTONIC already.
 */
#define GS_GPU_RECORD_BYTES 256 /* CUpti_ActivityKernel10, the largest, is 216 */
#define GS_GPU_NAME_BYTES   512

/* gs_gpu_record.flags */
#define GS_GPU_F_NAME_TRUNCATED 0x1 /* the name went on past GS_GPU_NAME_BYTES - 1 */

struct gs_gpu_record {
	struct gs_event_hdr hdr; /* ts_ns: when the library handed the record over */
	__u32 size;		 /* valid bytes of rec[] */
	__u16 name_len;		 /* bytes of name[] with its NUL; 0: no name */
	__u16 flags;		 /* GS_GPU_F_* */
	__u8 rec[GS_GPU_RECORD_BYTES];
	char name[GS_GPU_NAME_BYTES];
};

/* At the entry of a CUDA API call, on its thread: CUPTI's correlation id of the call. */
struct gs_gpu_api {
	struct gs_event_hdr hdr;
	__u32 correlation;
	__u32 cbid;   /* CUPTI callback id of the function */
	__u32 domain; /* GS_CUPTI_DOMAIN_* (profilers/cupti/cupti_abi.h) */
	__u32 pad;
};

struct gs_gpu_dropped {
	struct gs_event_hdr hdr;
	__u64 records; /* CUPTI dropped this many since its last report */
};

/* CUPTI's clock read between two CLOCK_MONOTONIC readings, in the target */
struct gs_gpu_clock {
	struct gs_event_hdr hdr;
	__u64 mono_before;
	__u64 cupti_ns;
	__u64 mono_after;
};

#endif /* GS_EVENT_H */
