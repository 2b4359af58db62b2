// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* perfetto_trace.c: rows -> TracePacket/TrackEvent; field numbers from perfetto_trace.proto. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/perfetto_intern.h"
#include "user/perfetto_pb.h"
#include "user/perfetto_trace.h"

/*
 * Field numbers of perfetto/trace/perfetto_trace.proto, checked against the descriptors of
 * the PyPI perfetto package's perfetto_trace_pb2 (0.59.1).
 */
enum {
	TRACE_PACKET = 1,
	/* TracePacket */
	TP_CLOCK_SNAPSHOT = 6,
	TP_TIMESTAMP = 8,
	TP_SEQUENCE_ID = 10, /* trusted_packet_sequence_id */
	TP_TRACK_EVENT = 11,
	TP_INTERNED_DATA = 12,
	TP_SEQUENCE_FLAGS = 13,
	TP_TIMESTAMP_CLOCK_ID = 58,
	TP_DEFAULTS = 59,
	TP_TRACK_DESCRIPTOR = 60,
	SEQ_INCREMENTAL_STATE_CLEARED = 1,
	SEQ_NEEDS_INCREMENTAL_STATE = 2,
	/* TracePacketDefaults */
	TPD_TIMESTAMP_CLOCK_ID = 58,
	TPD_TRACK_EVENT_DEFAULTS = 11,
	TED_TRACK_UUID = 11, /* TrackEventDefaults */
	/* ClockSnapshot, ClockSnapshot.Clock */
	CS_CLOCKS = 1,
	CS_PRIMARY_TRACE_CLOCK = 2,
	CLK_ID = 1,
	CLK_TIMESTAMP = 2,
	CLK_IS_INCREMENTAL = 3,
	CLK_UNIT_MULTIPLIER_NS = 4,
	BUILTIN_CLOCK_MONOTONIC = 3,
	CLOCK_DELTA = 64, /* sequence-scoped clocks are 64..127 */
	/* TrackDescriptor, ProcessDescriptor, ThreadDescriptor, CounterDescriptor */
	TD_UUID = 1,
	TD_NAME = 2,
	TD_PROCESS = 3,
	TD_THREAD = 4,
	TD_PARENT_UUID = 5,
	TD_COUNTER = 8,
	PD_PID = 1,
	PD_PROCESS_NAME = 6,
	THD_PID = 1,
	THD_TID = 2,
	THD_THREAD_NAME = 5,
	/* TrackEvent */
	TE_CATEGORY_IIDS = 3,
	TE_DEBUG_ANNOTATIONS = 4,
	TE_TYPE = 9,
	TE_NAME_IID = 10,
	TE_TRACK_UUID = 11,
	TE_NAME = 23,
	TE_COUNTER_VALUE = 30,
	TE_DOUBLE_COUNTER_VALUE = 44,
	TE_FLOW_IDS = 47,
	TE_TERMINATING_FLOW_IDS = 48,
	TE_CALLSTACK_IID = 56,
	TYPE_SLICE_BEGIN = 1,
	TYPE_SLICE_END = 2,
	TYPE_INSTANT = 3,
	TYPE_COUNTER = 4,
	/* DebugAnnotation */
	DA_NAME_IID = 1,
	DA_BOOL = 2,
	DA_INT = 4,
	DA_DOUBLE = 5,
	DA_STRING = 6,
	DA_LEGACY_JSON = 9,
	DA_NAME = 10,
	DA_DICT_ENTRIES = 11,
	DA_ARRAY_VALUES = 12,
	DA_STRING_IID = 17,
	/* InternedData and its entries (EventName, EventCategory, DebugAnnotationName,
	 * InternedString: iid 1, name/str 2; Frame; Callstack) */
	ID_EVENT_CATEGORIES = 1,
	ID_EVENT_NAMES = 2,
	ID_DEBUG_ANNOTATION_NAMES = 3,
	ID_FUNCTION_NAMES = 5,
	ID_FRAMES = 6,
	ID_CALLSTACKS = 7,
	ID_DEBUG_ANNOTATION_STRING_VALUES = 29,
	ENTRY_IID = 1,
	ENTRY_NAME = 2,
	FRAME_FUNCTION_NAME_ID = 2,
	CALLSTACK_FRAME_IDS = 2,
};

enum intern_kind { IN_NAMES, IN_CATS, IN_ARG_NAMES, IN_STRINGS, IN_FUNCS, IN_STACKS, NR_INTERN };

/* InternedData's field for each table (frames go with function names: same iid) */
static const uint32_t intern_field[NR_INTERN] = {
	[IN_NAMES] = ID_EVENT_NAMES,
	[IN_CATS] = ID_EVENT_CATEGORIES,
	[IN_ARG_NAMES] = ID_DEBUG_ANNOTATION_NAMES,
	[IN_STRINGS] = ID_DEBUG_ANNOTATION_STRING_VALUES,
	[IN_FUNCS] = ID_FUNCTION_NAMES,
	[IN_STACKS] = ID_CALLSTACKS,
};

#define INTERN_SLOTS_LOG2 15	     /* per table: 8k entries before starting over */
#define INTERN_MAX_BYTES  (2u << 20) /* per table, of keys */
#define TRACK_SLOTS_LOG2  15
#define MAX_OPEN_SLICES	  (1u << 16) /* X slices whose end is not written yet */
#define MAX_FRAMES	  256	     /* of one callstack */
#define SEQUENCE_ID	  1
#define MAX_TRACK_NAME	  512	 /* of a counter track, in its key */
#define SEEN_SLOTS	  4096	 /* string values met once, remembered (direct-mapped) */
#define FLOW_NAME	  "ac2g" /* name and category of record's flows (timeline/vocab.h) */

struct open_end {
	uint64_t ts_ns;
	uint64_t seq; /* among equal ends the later-begun (inner) slice ends first */
	uint64_t track;
};

struct gs_perfetto {
	FILE *out;
	struct gs_pb packet, event, interned;
	struct gs_intern *intern[NR_INTERN];
	struct gs_intern *tracks;
	bool started;		/* the sequence's first packet (clock, defaults) is out */
	uint64_t default_track; /* the sequence's TrackEventDefaults.track_uuid (0: none) */
	uint64_t last_thread;	/* the last thread track a row was on: the next default */
	uint64_t clock_ns;	/* the incremental clock's value */
	struct open_end *ends;	/* a min-heap on (ts_ns, -seq) */
	size_t nr_ends;
	uint64_t end_seq;
	uint64_t rows, skipped, packets;
	uint64_t seen[SEEN_SLOTS]; /* hashes of string values met once (not interned yet) */
	uint64_t devices;	   /* bit pid: the rows of pid are a GPU's (timeline/gpu_rows.c) */
	/*
	 * The last slice or instant, built but not written: a flow row of the same thread and
	 * time that follows it (a launch's "ac2g" start, a kernel's end) goes on it as its
	 * flow id, the way Perfetto links slices, rather than as an instant of its own.
	 */
	bool held;
	int64_t held_pid, held_tid;
	uint64_t held_ts;
};

struct gs_perfetto *gs_perfetto__new(FILE *out)
{
	struct gs_perfetto *p = calloc(1, sizeof(*p));

	if (!p)
		goto out_nomem;
	p->out = out;
	for (int i = 0; i < NR_INTERN; i++) {
		p->intern[i] = gs_intern__new(INTERN_SLOTS_LOG2, INTERN_MAX_BYTES);
		if (!p->intern[i])
			goto out_free;
	}
	p->tracks = gs_intern__new(TRACK_SLOTS_LOG2, INTERN_MAX_BYTES);
	p->ends = malloc(MAX_OPEN_SLICES * sizeof(*p->ends));
	if (!p->tracks || !p->ends)
		goto out_free;
	return p;
out_free:
	gs_perfetto__free(p);
out_nomem:
	errno = ENOMEM;
	return NULL;
}

void gs_perfetto__free(struct gs_perfetto *p)
{
	if (!p)
		return;
	for (int i = 0; i < NR_INTERN; i++)
		gs_intern__free(p->intern[i]);
	gs_intern__free(p->tracks);
	gs_pb__release(&p->packet);
	gs_pb__release(&p->event);
	gs_pb__release(&p->interned);
	free(p->ends);
	free(p);
}

/* Writes the packet built in p->packet (a Trace's repeated field 1). */
static int flush_packet(struct gs_perfetto *p)
{
	int err = p->packet.oom ? -ENOMEM : 0;

	if (!err && fwrite(p->packet.buf, 1, p->packet.len, p->out) != p->packet.len)
		err = -EIO;
	gs_pb__reset(&p->packet);
	p->packets += !err;
	return err;
}

/*
 * The sequence's first packet, and the one after the intern tables start over: state
 * cleared, the incremental clock defined as CLOCK_MONOTONIC's ts_ns now, and every later
 * packet's timestamp a delta on it by default.
 */
static int start_sequence(struct gs_perfetto *p, uint64_t ts_ns)
{
	struct gs_pb *pb = &p->packet;

	for (int i = 0; i < NR_INTERN; i++)
		gs_intern__clear(p->intern[i]);
	gs_pb__begin(pb, TRACE_PACKET);
	gs_pb__varint(pb, TP_TIMESTAMP, ts_ns);
	gs_pb__varint(pb, TP_TIMESTAMP_CLOCK_ID, BUILTIN_CLOCK_MONOTONIC);
	gs_pb__varint(pb, TP_SEQUENCE_ID, SEQUENCE_ID);
	gs_pb__varint(pb, TP_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	gs_pb__begin(pb, TP_CLOCK_SNAPSHOT);
	gs_pb__begin(pb, CS_CLOCKS);
	gs_pb__varint(pb, CLK_ID, BUILTIN_CLOCK_MONOTONIC);
	gs_pb__varint(pb, CLK_TIMESTAMP, ts_ns);
	gs_pb__end(pb);
	gs_pb__begin(pb, CS_CLOCKS);
	gs_pb__varint(pb, CLK_ID, CLOCK_DELTA);
	gs_pb__varint(pb, CLK_TIMESTAMP, ts_ns);
	gs_pb__varint(pb, CLK_IS_INCREMENTAL, 1);
	gs_pb__varint(pb, CLK_UNIT_MULTIPLIER_NS, 1);
	gs_pb__end(pb);
	gs_pb__varint(pb, CS_PRIMARY_TRACE_CLOCK, BUILTIN_CLOCK_MONOTONIC);
	gs_pb__end(pb);
	gs_pb__begin(pb, TP_DEFAULTS);
	gs_pb__varint(pb, TPD_TIMESTAMP_CLOCK_ID, CLOCK_DELTA);
	if (p->last_thread) { /* events on it leave their track_uuid out */
		gs_pb__begin(pb, TPD_TRACK_EVENT_DEFAULTS);
		gs_pb__varint(pb, TED_TRACK_UUID, p->last_thread);
		gs_pb__end(pb);
	}
	gs_pb__end(pb);
	gs_pb__end(pb);
	p->default_track = p->last_thread;
	p->started = true;
	p->clock_ns = ts_ns;
	return flush_packet(p);
}

/* The id of key in table k; new ones go into this packet's interned data. 0 when full. */
static uint64_t intern(struct gs_perfetto *p, enum intern_kind k, const void *key, size_t len)
{
	bool added;
	uint64_t iid = gs_intern__get(p->intern[k], key, len, &added);

	if (!added)
		return iid;
	gs_pb__begin(&p->interned, intern_field[k]);
	gs_pb__varint(&p->interned, ENTRY_IID, iid);
	if (k == IN_STACKS) {
		gs_pb__begin(&p->interned, CALLSTACK_FRAME_IDS); /* packed */
		for (size_t i = 0; i < len / sizeof(uint64_t); i++) {
			uint64_t id;

			memcpy(&id, (const char *)key + i * sizeof(id), sizeof(id));
			gs_pb__raw_varint(&p->interned, id);
		}
		gs_pb__end(&p->interned);
	} else {
		gs_pb__bytes(&p->interned, ENTRY_NAME, key, len);
	}
	gs_pb__end(&p->interned);
	if (k == IN_FUNCS) { /* its frame, of the same iid */
		gs_pb__begin(&p->interned, ID_FRAMES);
		gs_pb__varint(&p->interned, ENTRY_IID, iid);
		gs_pb__varint(&p->interned, FRAME_FUNCTION_NAME_ID, iid);
		gs_pb__end(&p->interned);
	}
	return iid;
}

/* A name as an interned iid (iid_field) or, when its table is full, as text (str_field). */
static void interned_str(struct gs_perfetto *p, struct gs_pb *pb, enum intern_kind k,
			 uint32_t iid_field, uint32_t str_field, const char *s)
{
	uint64_t iid = intern(p, k, s, strlen(s));

	if (iid)
		gs_pb__varint(pb, iid_field, iid);
	else
		gs_pb__string(pb, str_field, s);
}

/*
 * Wraps p->event (a TrackEvent body) in a packet at ts_ns: a delta on the incremental
 * clock, or CLOCK_MONOTONIC itself for a row older than the clock (written late).
 */
static int emit_event(struct gs_perfetto *p, uint64_t ts_ns)
{
	struct gs_pb *pb = &p->packet;
	int err = p->event.oom || p->interned.oom ? -ENOMEM : 0;

	if (!err) {
		gs_pb__begin(pb, TRACE_PACKET);
		if (ts_ns >= p->clock_ns) {
			gs_pb__varint(pb, TP_TIMESTAMP, ts_ns - p->clock_ns);
			p->clock_ns = ts_ns;
		} else {
			gs_pb__varint(pb, TP_TIMESTAMP, ts_ns);
			gs_pb__varint(pb, TP_TIMESTAMP_CLOCK_ID, BUILTIN_CLOCK_MONOTONIC);
		}
		gs_pb__varint(pb, TP_SEQUENCE_ID, SEQUENCE_ID);
		gs_pb__varint(pb, TP_SEQUENCE_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
		if (p->interned.len)
			gs_pb__bytes(pb, TP_INTERNED_DATA, p->interned.buf, p->interned.len);
		gs_pb__bytes(pb, TP_TRACK_EVENT, p->event.buf, p->event.len);
		gs_pb__end(pb);
		err = flush_packet(p);
	}
	gs_pb__reset(&p->event);
	gs_pb__reset(&p->interned);
	return err;
}

/* Writes the held slice or instant. */
static int flush_held(struct gs_perfetto *p)
{
	if (!p->held)
		return 0;
	p->held = false;
	return emit_event(p, p->held_ts);
}

/* ---- tracks ---- */

/* A GPU (pid: its device number) and its streams are tracks of their own, not processes. */
enum track_kind {
	TRACK_PROCESS = 1,
	TRACK_THREAD,
	TRACK_COUNTER,
	TRACK_GLOBAL,
	TRACK_DEVICE,
	TRACK_STREAM,
	TRACK_ASYNC /* an async range (b/e) of a process: tid is its id, its name the range's */
};

#define MAX_DEVICES 64 /* of the bitmap of pids named "GPU <pid>" */

static bool is_device(const struct gs_perfetto *p, int64_t pid)
{
	return pid >= 0 && pid < MAX_DEVICES && (p->devices >> pid & 1);
}

struct track_key {
	uint32_t kind;
	uint32_t pad;
	int64_t pid, tid;
	char name[]; /* counters */
};

/*
 * A TrackDescriptor packet: named (name non-NULL) or not. Processes and threads are
 * Perfetto's own kinds (pid, tid), so they merge with other traces of the same machine.
 */
static int describe(struct gs_perfetto *p, uint64_t uuid, uint64_t parent, enum track_kind kind,
		    int64_t pid, int64_t tid, const char *name)
{
	struct gs_pb *pb = &p->packet;

	gs_pb__begin(pb, TRACE_PACKET);
	gs_pb__varint(pb, TP_SEQUENCE_ID, SEQUENCE_ID);
	gs_pb__begin(pb, TP_TRACK_DESCRIPTOR);
	gs_pb__varint(pb, TD_UUID, uuid);
	if (parent)
		gs_pb__varint(pb, TD_PARENT_UUID, parent);
	if (kind == TRACK_PROCESS) {
		gs_pb__begin(pb, TD_PROCESS);
		gs_pb__int64(pb, PD_PID, pid);
		if (name)
			gs_pb__string(pb, PD_PROCESS_NAME, name);
		gs_pb__end(pb);
	} else if (kind == TRACK_THREAD) {
		gs_pb__begin(pb, TD_THREAD);
		gs_pb__int64(pb, THD_PID, pid);
		gs_pb__int64(pb, THD_TID, tid);
		if (name)
			gs_pb__string(pb, THD_THREAD_NAME, name);
		gs_pb__end(pb);
	} else {
		if (name)
			gs_pb__string(pb, TD_NAME, name);
		if (kind == TRACK_COUNTER) {
			gs_pb__begin(pb, TD_COUNTER);
			gs_pb__end(pb);
		}
	}
	gs_pb__end(pb);
	gs_pb__end(pb);
	return flush_packet(p);
}

/* A splitmix64 of the key: the uuid of a track when the table of small ones is full. */
static uint64_t hashed_uuid(const void *key, size_t len)
{
	const unsigned char *b = key;
	uint64_t h = 0x9e3779b97f4a7c15ull;

	for (size_t i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0xbf58476d1ce4e5b9ull;
		h ^= h >> 31;
	}
	return h | (1ull << 63); /* never one of the small ones */
}

/*
 * The uuid of a track, described the first time (and again when named: rename true).
 * Small uuids (1, 2, 3...) take one or two bytes in every event; 0 on failure.
 */
static uint64_t track(struct gs_perfetto *p, enum track_kind kind, int64_t pid, int64_t tid,
		      const char *counter, const char *name, bool rename)
{
	size_t nlen = counter ? strnlen(counter, MAX_TRACK_NAME) : 0;
	union {
		struct track_key key;
		char bytes[sizeof(struct track_key) + MAX_TRACK_NAME];
	} k;
	uint64_t uuid, parent = 0;
	bool added = true;

	if (kind == TRACK_THREAD && is_device(p, pid))
		kind = TRACK_STREAM;
	k.key = (struct track_key){ .kind = kind, .pid = pid, .tid = tid };
	if (nlen) /* memcpy from NULL, even of 0 bytes, lets the compiler drop NULL checks */
		memcpy(k.key.name, counter, nlen);
	uuid = gs_intern__get(p->tracks, &k, sizeof(k.key) + nlen, &added);
	if (!uuid) /* full: described every time, under a hashed uuid */
		uuid = hashed_uuid(&k, sizeof(k.key) + nlen), added = true;
	if (!added && !rename)
		return uuid;
	if (kind == TRACK_THREAD || kind == TRACK_COUNTER || kind == TRACK_ASYNC)
		parent = track(p, TRACK_PROCESS, pid, 0, NULL, NULL, false);
	else if (kind == TRACK_STREAM)
		parent = track(p, TRACK_DEVICE, pid, 0, NULL, NULL, false);
	if (kind != TRACK_PROCESS && kind != TRACK_GLOBAL && kind != TRACK_DEVICE && !parent)
		return 0;
	return describe(p, uuid, parent, kind, pid, tid, counter && !name ? counter : name) ? 0
											    : uuid;
}

/* ---- debug annotations and callstacks ---- */

/*
 * Whether a string value was met before (recently): only those are interned. A unique
 * value (an allocation's address) costs its text either way, and interning it would only
 * fill the table and make the sequence start over sooner.
 */
static bool seen_before(struct gs_perfetto *p, const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull, *slot;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	h |= 1; /* never 0, an empty slot */
	slot = &p->seen[h % SEEN_SLOTS];
	if (*slot == h)
		return true;
	*slot = h;
	return false;
}

/* A string value: interned when met before, else its text. */
static void string_value(struct gs_perfetto *p, const char *s)
{
	if (gs_intern__has(p->intern[IN_STRINGS], s, strlen(s)) || seen_before(p, s))
		interned_str(p, &p->event, IN_STRINGS, DA_STRING_IID, DA_STRING, s);
	else
		gs_pb__string(&p->event, DA_STRING, s);
}

#define MAX_ANNOTATION_DEPTH 4 /* nested arrays/objects deeper than this go as JSON text */

static void annotation_value(struct gs_perfetto *p, const struct yajl_val_s *v, int depth);

/* One DebugAnnotation (name NULL inside arrays) into p->event, under field. */
static void annotation(struct gs_perfetto *p, uint32_t field, const char *name,
		       const struct yajl_val_s *v, int depth)
{
	gs_pb__begin(&p->event, field);
	if (name)
		interned_str(p, &p->event, IN_ARG_NAMES, DA_NAME_IID, DA_NAME, name);
	annotation_value(p, v, depth);
	gs_pb__end(&p->event);
}

#define SMALL_ARRAY 8 /* integers: a launch's grid and block dimensions */

static bool small_int_array(yajl_val v)
{
	if (!YAJL_IS_ARRAY(v) || !v->u.array.len || v->u.array.len > SMALL_ARRAY)
		return false;
	for (size_t i = 0; i < v->u.array.len; i++)
		if (!YAJL_IS_INTEGER(v->u.array.values[i]))
			return false;
	return true;
}

/*
 * A short array of integers as its JSON text ("[128,2,1]"), an interned string: the same
 * dimensions repeat on every launch, and one string iid takes 2 bytes where the array's
 * values take 4 each.
 */
static void int_array_string(struct gs_perfetto *p, yajl_val v)
{
	char text[SMALL_ARRAY * 21 + 3], digits[24];
	size_t n = 0;

	text[n++] = '[';
	for (size_t i = 0; i < v->u.array.len; i++) {
		long long x = v->u.array.values[i]->u.number.i;
		unsigned long long u = x < 0 ? 0 - (unsigned long long)x : (unsigned long long)x;
		size_t d = 0;

		if (i)
			text[n++] = ',';
		if (x < 0)
			text[n++] = '-';
		do /* no snprintf: this runs for every launch */
			digits[d++] = (char)('0' + u % 10);
		while (u /= 10);
		while (d)
			text[n++] = digits[--d];
	}
	text[n++] = ']';
	text[n] = '\0';
	string_value(p, text);
}

static void annotation_value(struct gs_perfetto *p, const struct yajl_val_s *v, int depth)
{
	struct gs_pb *pb = &p->event;
	yajl_val val = (yajl_val)v;

	if (YAJL_IS_STRING(val)) {
		string_value(p, val->u.string);
	} else if (YAJL_IS_INTEGER(val)) {
		gs_pb__int64(pb, DA_INT, val->u.number.i);
	} else if (YAJL_IS_NUMBER(val)) {
		gs_pb__double(pb, DA_DOUBLE, val->u.number.d);
	} else if (YAJL_IS_TRUE(val) || YAJL_IS_FALSE(val)) {
		gs_pb__varint(pb, DA_BOOL, YAJL_IS_TRUE(val));
	} else if (small_int_array(val)) {
		int_array_string(p, val);
	} else if (YAJL_IS_ARRAY(val) && depth < MAX_ANNOTATION_DEPTH) {
		for (size_t i = 0; i < val->u.array.len; i++)
			annotation(p, DA_ARRAY_VALUES, NULL, val->u.array.values[i], depth + 1);
	} else if (YAJL_IS_OBJECT(val) && depth < MAX_ANNOTATION_DEPTH) {
		for (size_t i = 0; i < val->u.object.len; i++)
			annotation(p, DA_DICT_ENTRIES, val->u.object.keys[i],
				   val->u.object.values[i], depth + 1);
	} else {
		gs_pb__string(pb, DA_LEGACY_JSON, "null"); /* null, or nested too deep */
	}
}

/* Whether v is a non-empty array of strings (a stack). */
static bool is_stack(const struct yajl_val_s *v)
{
	yajl_val val = (yajl_val)v;

	if (!v || !YAJL_IS_ARRAY(val) || !val->u.array.len)
		return false;
	for (size_t i = 0; i < val->u.array.len; i++)
		if (!YAJL_IS_STRING(val->u.array.values[i]))
			return false;
	return true;
}

/* Appends a stack's frames (innermost first in the row) to ids, outermost first. */
static size_t add_frames(struct gs_perfetto *p, const struct yajl_val_s *v, uint64_t *ids, size_t n)
{
	yajl_val val = (yajl_val)v;

	if (val->u.array.len > MAX_FRAMES - n)
		return SIZE_MAX; /* never cut: the stack goes as an annotation, whole */
	for (size_t i = val->u.array.len; i-- > 0;) {
		const char *s = val->u.array.values[i]->u.string;

		ids[n] = intern(p, IN_FUNCS, s, strlen(s));
		if (!ids[n])
			return SIZE_MAX;
		n++;
	}
	return n;
}

/*
 * args.stack (the user stack) and args.kernel_stack (under it) as one interned callstack,
 * outermost frame first. False when they do not fit the tables: they go as annotations.
 */
static bool callstack(struct gs_perfetto *p, const struct yajl_val_s *user,
		      const struct yajl_val_s *kernel)
{
	uint64_t ids[MAX_FRAMES], iid;
	size_t n = 0;

	if (user)
		n = add_frames(p, user, ids, n);
	if (kernel && n != SIZE_MAX)
		n = add_frames(p, kernel, ids, n);
	if (n == SIZE_MAX || !n)
		return false;
	iid = intern(p, IN_STACKS, ids, n * sizeof(ids[0]));
	if (!iid)
		return false;
	gs_pb__varint(&p->event, TE_CALLSTACK_IID, iid);
	return true;
}

#define PACKED_NAME "args" /* the annotation of a row's args packed as one JSON object */
#define MAX_PACKED  1024   /* bytes of such an object's text */

struct text {
	char *buf;
	size_t len, cap; /* len > cap: it did not fit */
};

static void put(struct text *t, const char *s, size_t n)
{
	if (t->len + n <= t->cap)
		memcpy(t->buf + t->len, s, n);
	t->len += n;
}

/* How many leading bytes of s a JSON string takes verbatim (no quote, backslash, control). */
static size_t plain_run(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = 0;

	/* strcspn with a 34-byte set was a twentieth of the encoder's time */
	while (u[n] >= 0x20 && u[n] != '"' && u[n] != '\\')
		n++;
	return n;
}

/* s as a JSON string: the rows' strings are valid UTF-8 (gs_json wrote them). */
static void put_string(struct text *t, const char *s)
{
	put(t, "\"", 1);
	while (*s) {
		size_t run = plain_run(s);
		char esc[8];

		put(t, s, run); /* what needs no escape, in one copy */
		s += run;
		if (!*s)
			break;
		if (*s == '"' || *s == '\\') {
			esc[0] = '\\', esc[1] = *s;
			put(t, esc, 2);
		} else {
			snprintf(esc, sizeof(esc), "\\u%04x", (unsigned char)*s);
			put(t, esc, 6);
		}
		s++;
	}
	put(t, "\"", 1);
}

/* A scalar or a small integer array as JSON text; false for what does not pack. */
static bool put_value(struct text *t, yajl_val v)
{
	if (YAJL_IS_STRING(v)) {
		put_string(t, v->u.string);
	} else if (YAJL_IS_NUMBER(v) && v->u.number.r) {
		put(t, v->u.number.r, strlen(v->u.number.r)); /* its own text: exact */
	} else if (YAJL_IS_TRUE(v) || YAJL_IS_FALSE(v)) {
		put(t, YAJL_IS_TRUE(v) ? "true" : "false", YAJL_IS_TRUE(v) ? 4 : 5);
	} else if (small_int_array(v)) {
		put(t, "[", 1);
		for (size_t i = 0; i < v->u.array.len; i++) {
			const char *r = v->u.array.values[i]->u.number.r;

			if (!r)
				return false;
			if (i)
				put(t, ",", 1);
			put(t, r, strlen(r));
		}
		put(t, "]", 1);
	} else {
		return false;
	}
	return true;
}

/*
 * The args of o but the stacks (skip) as one JSON object's text into buf (NUL-terminated),
 * when each value is a scalar or a small integer array and it fits. False otherwise.
 */
static bool packed_text(yajl_val o, yajl_val skip1, yajl_val skip2, char *buf, size_t cap)
{
	struct text t = { .buf = buf, .cap = cap - 1 };
	size_t n = 0;

	put(&t, "{", 1);
	for (size_t i = 0; i < o->u.object.len; i++) {
		yajl_val v = o->u.object.values[i];

		if (v == skip1 || v == skip2)
			continue;
		if (!strcmp(o->u.object.keys[i], PACKED_NAME))
			return false; /* would read back as the packed set */
		if (n++)
			put(&t, ",", 1);
		put_string(&t, o->u.object.keys[i]);
		put(&t, ":", 1);
		if (!put_value(&t, v))
			return false;
	}
	put(&t, "}", 1);
	if (t.len > t.cap || n < 2)
		return false; /* one arg alone is as small unpacked */
	buf[t.len] = '\0';
	return true;
}

/*
 * A row's args, all of them together, as one annotation, PACKED_NAME, whose value is their
 * JSON object's text: a launch's kernel, grid, block, shared memory and stream repeat launch
 * after launch, and the repeated text is one interned iid where five annotations took 35
 * bytes. Every row whose args pack is packed, met before or not, so a reader (Perfetto's UI,
 * trace_processor's json_extract) finds one shape per kind of row.
 */
static bool packed_args(struct gs_perfetto *p, yajl_val o, yajl_val skip1, yajl_val skip2)
{
	char text[MAX_PACKED];

	if (!packed_text(o, skip1, skip2, text, sizeof(text)))
		return false;
	gs_pb__begin(&p->event, TE_DEBUG_ANNOTATIONS);
	interned_str(p, &p->event, IN_ARG_NAMES, DA_NAME_IID, DA_NAME, PACKED_NAME);
	string_value(p, text);
	gs_pb__end(&p->event);
	return true;
}

/* The row's args: stacks as a callstack, the rest as debug annotations (packed when they can be). */
static void event_args(struct gs_perfetto *p, const struct yajl_val_s *args)
{
	yajl_val o = (yajl_val)args, user = NULL, kernel = NULL;
	bool stacked;

	if (!o || !YAJL_IS_OBJECT(o))
		return;
	for (size_t i = 0; i < o->u.object.len; i++) {
		if (!strcmp(o->u.object.keys[i], "stack") && is_stack(o->u.object.values[i]))
			user = o->u.object.values[i];
		else if (!strcmp(o->u.object.keys[i], "kernel_stack") &&
			 is_stack(o->u.object.values[i]))
			kernel = o->u.object.values[i];
	}
	stacked = (user || kernel) && callstack(p, user, kernel);
	if (packed_args(p, o, stacked ? user : NULL, stacked ? kernel : NULL))
		return;
	for (size_t i = 0; i < o->u.object.len; i++) {
		yajl_val v = o->u.object.values[i];

		if (stacked && (v == user || v == kernel))
			continue;
		annotation(p, TE_DEBUG_ANNOTATIONS, o->u.object.keys[i], v, 0);
	}
}

/* ---- rows ---- */

static bool end_before(const struct open_end *a, const struct open_end *b)
{
	return a->ts_ns < b->ts_ns || (a->ts_ns == b->ts_ns && a->seq > b->seq);
}

static void heap_push(struct gs_perfetto *p, struct open_end e)
{
	size_t i = p->nr_ends++;

	while (i && end_before(&e, &p->ends[(i - 1) / 2])) {
		p->ends[i] = p->ends[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	p->ends[i] = e;
}

static struct open_end heap_pop(struct gs_perfetto *p)
{
	struct open_end top = p->ends[0], last = p->ends[--p->nr_ends];
	size_t i = 0, n = p->nr_ends;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && end_before(&p->ends[c + 1], &p->ends[c]))
			c++;
		if (!end_before(&p->ends[c], &last))
			break;
		p->ends[i] = p->ends[c];
		i = c;
	}
	if (n)
		p->ends[i] = last;
	return top;
}

/* The event's track: left out when it is the sequence's default (2 bytes an event). */
static void event_track(struct gs_perfetto *p, uint64_t uuid)
{
	if (uuid != p->default_track)
		gs_pb__varint(&p->event, TE_TRACK_UUID, uuid);
}

static int slice_end(struct gs_perfetto *p, uint64_t uuid, uint64_t ts_ns)
{
	gs_pb__varint(&p->event, TE_TYPE, TYPE_SLICE_END);
	event_track(p, uuid);
	return emit_event(p, ts_ns);
}

/* Ends the X slices that end at or before ts_ns, in time order. */
static int end_slices(struct gs_perfetto *p, uint64_t ts_ns)
{
	int err = 0;

	while (!err && p->nr_ends && p->ends[0].ts_ns <= ts_ns) {
		struct open_end e = heap_pop(p);

		err = slice_end(p, e.track, e.ts_ns);
	}
	return err;
}

/* An X slice's end: written when time passes it (or now, late, when too many are open). */
static int defer_end(struct gs_perfetto *p, uint64_t uuid, uint64_t ts_ns)
{
	if (p->nr_ends >= MAX_OPEN_SLICES) /* its begin (held) goes first */
		return flush_held(p) ?: slice_end(p, uuid, ts_ns);
	heap_push(p, (struct open_end){ .ts_ns = ts_ns, .seq = ++p->end_seq, .track = uuid });
	return 0;
}

/* Name and category of a row's event, interned. */
static void event_head(struct gs_perfetto *p, int type, uint64_t uuid,
		       const struct gs_perfetto_row *row)
{
	gs_pb__varint(&p->event, TE_TYPE, (uint64_t)type);
	event_track(p, uuid);
	if (row->name)
		interned_str(p, &p->event, IN_NAMES, TE_NAME_IID, TE_NAME, row->name);
	if (row->cat && *row->cat) {
		uint64_t iid = intern(p, IN_CATS, row->cat, strlen(row->cat));

		if (iid)
			gs_pb__varint(&p->event, TE_CATEGORY_IIDS, iid);
	}
}

/* One C row: a counter event per numeric series, each on its own track "name series". */
static int counters(struct gs_perfetto *p, const struct gs_perfetto_row *row)
{
	yajl_val o = (yajl_val)row->args;
	int err = 0, n = 0;

	if (!o || !YAJL_IS_OBJECT(o) || !row->name)
		return 1;
	for (size_t i = 0; i < o->u.object.len && !err; i++) {
		yajl_val v = o->u.object.values[i];
		char name[512];
		uint64_t uuid;

		if (!YAJL_IS_NUMBER(v))
			continue;
		if (snprintf(name, sizeof(name), "%s %s", row->name, o->u.object.keys[i]) >=
		    (int)sizeof(name))
			continue;
		uuid = track(p, TRACK_COUNTER, row->pid, 0, name, NULL, false);
		if (!uuid)
			return -ENOMEM;
		gs_pb__varint(&p->event, TE_TYPE, TYPE_COUNTER);
		event_track(p, uuid);
		if (YAJL_IS_INTEGER(v))
			gs_pb__int64(&p->event, TE_COUNTER_VALUE, v->u.number.i);
		else
			gs_pb__double(&p->event, TE_DOUBLE_COUNTER_VALUE, v->u.number.d);
		err = emit_event(p, row->ts_ns);
		n++;
	}
	return err ?: !n;
}

/* Whether row is a flow of record's own ("ac2g") on the held event's thread and time. */
static bool flow_of_held(const struct gs_perfetto *p, const struct gs_perfetto_row *row)
{
	return p->held && strchr("stf", row->ph) && row->pid == p->held_pid &&
	       row->tid == p->held_tid && row->ts_ns == p->held_ts && row->name && row->cat &&
	       !strcmp(row->name, FLOW_NAME) && !strcmp(row->cat, FLOW_NAME);
}

/* s/t/f: an instant on the thread carrying the flow's id (f: terminating it). */
static int flow(struct gs_perfetto *p, uint64_t uuid, const struct gs_perfetto_row *row)
{
	event_head(p, TYPE_INSTANT, uuid, row);
	gs_pb__fixed64(&p->event, row->ph == 'f' ? TE_TERMINATING_FLOW_IDS : TE_FLOW_IDS, row->id);
	return emit_event(p, row->ts_ns);
}

/* Whether a process name is timeline/gpu_rows.c's of a GPU: "GPU <pid>", the device's number. */
static bool gpu_name(int64_t pid, const char *name)
{
	char want[32];

	if (pid < 0 || pid >= MAX_DEVICES)
		return false;
	snprintf(want, sizeof(want), "GPU %lld", (long long)pid);
	return !strcmp(name, want);
}

/* M rows: process_name and thread_name name their tracks; the others have no form here. */
static int metadata_row(struct gs_perfetto *p, const struct gs_perfetto_row *row)
{
	yajl_val o = (yajl_val)row->args, name = NULL;

	if (!row->name || !o || !YAJL_IS_OBJECT(o))
		return 1;
	for (size_t i = 0; i < o->u.object.len; i++)
		if (!strcmp(o->u.object.keys[i], "name") && YAJL_IS_STRING(o->u.object.values[i]))
			name = o->u.object.values[i];
	if (!name)
		return 1;
	if (!strcmp(row->name, "process_name") && gpu_name(row->pid, name->u.string)) {
		p->devices |= 1ull << row->pid; /* its rows from now on: the GPU's streams */
		return track(p, TRACK_DEVICE, row->pid, 0, NULL, name->u.string, true) ? 0
										       : -ENOMEM;
	}
	if (!strcmp(row->name, "process_name"))
		return track(p, TRACK_PROCESS, row->pid, 0, NULL, name->u.string, true) ? 0
											: -ENOMEM;
	if (!strcmp(row->name, "thread_name"))
		return track(p, TRACK_THREAD, row->pid, row->tid, NULL, name->u.string, true)
			       ? 0
			       : -ENOMEM;
	return 1;
}

/*
 * Before a timed row: earlier ends out, the row's thread track known (the default of a
 * sequence started now), the sequence (re)started when its tables fill.
 */
static int before_row(struct gs_perfetto *p, uint64_t ts_ns, uint64_t uuid)
{
	int err = end_slices(p, ts_ns);
	bool filling = false;

	if (uuid)
		p->last_thread = uuid;
	for (int i = 0; i < NR_INTERN; i++)
		filling |= gs_intern__filling(p->intern[i]);
	if (!err && (!p->started || filling))
		err = start_sequence(p, ts_ns);
	return err;
}

/*
 * b/e: an async range (an NVTX start/end range, which may end on another thread) on a track
 * of its own under its process, one per id as Perfetto's JSON importer makes them.
 */
static int async_row(struct gs_perfetto *p, const struct gs_perfetto_row *row)
{
	uint64_t uuid = track(p, TRACK_ASYNC, row->pid, (int64_t)row->id, NULL,
			      row->ph == 'b' ? row->name : NULL, false);

	if (!uuid)
		return -ENOMEM;
	if (row->ph == 'e')
		return slice_end(p, uuid, row->ts_ns);
	event_head(p, TYPE_SLICE_BEGIN, uuid, row);
	event_args(p, row->args);
	return emit_event(p, row->ts_ns);
}

/* A row on a thread track (uuid; 0 for counters, on their own tracks). */
static int timed_row(struct gs_perfetto *p, const struct gs_perfetto_row *row, uint64_t uuid)
{
	int err;

	if (row->ph == 'C')
		return counters(p, row);
	switch (row->ph) {
	case 'X':
	case 'B':
	case 'i':
	case 'I':
		event_head(p,
			   row->ph == 'B' || (row->ph == 'X' && row->dur_ns) ? TYPE_SLICE_BEGIN
									     : TYPE_INSTANT,
			   uuid, row);
		event_args(p, row->args);
		p->held = true; /* written by the next row, with its flow id if it is one */
		p->held_pid = row->pid, p->held_tid = row->tid, p->held_ts = row->ts_ns;
		err = 0;
		if (row->ph == 'X' && row->dur_ns)
			err = defer_end(p, uuid, row->ts_ns + row->dur_ns);
		return err;
	case 'E':
		return slice_end(p, uuid, row->ts_ns);
	case 'b':
	case 'e':
		return async_row(p, row);
	case 's':
	case 't':
	case 'f':
		return flow(p, uuid, row);
	default:
		return 1;
	}
}

static int thread_row(struct gs_perfetto *p, const struct gs_perfetto_row *row)
{
	uint64_t uuid = 0;

	if (row->ph != 'C') {
		uuid = track(p, TRACK_THREAD, row->pid, row->tid, NULL, NULL, false);
		if (!uuid)
			return -ENOMEM;
	}
	return before_row(p, row->ts_ns, uuid) ?: timed_row(p, row, uuid);
}

int gs_perfetto__row(struct gs_perfetto *p, const struct gs_perfetto_row *row)
{
	int err;

	if (flow_of_held(p, row)) {
		gs_pb__fixed64(&p->event, row->ph == 'f' ? TE_TERMINATING_FLOW_IDS : TE_FLOW_IDS,
			       row->id);
		err = flush_held(p);
		p->rows += !err;
		return err;
	}
	err = flush_held(p);
	if (err)
		return err;
	if (row->ph == 'M')
		err = metadata_row(p, row);
	else if (!row->ph || !strchr("XBEiICstfbe", row->ph))
		err = 1; /* a phase with no form here: nothing written, not even its track */
	else
		err = thread_row(p, row);
	if (err > 0)
		p->skipped++;
	else if (!err)
		p->rows++;
	return err;
}

int gs_perfetto__top_level(struct gs_perfetto *p, const char *key, const char *json, size_t len)
{
	int err = flush_held(p);
	uint64_t uuid = err ? 0 : track(p, TRACK_GLOBAL, 0, 0, "gpusnoop", NULL, false);

	if (!uuid)
		return -ENOMEM;
	err = before_row(p, p->clock_ns, 0);
	if (err)
		return err;
	gs_pb__varint(&p->event, TE_TYPE, TYPE_INSTANT);
	event_track(p, uuid);
	gs_pb__string(&p->event, TE_NAME, key);
	gs_pb__begin(&p->event, TE_DEBUG_ANNOTATIONS);
	gs_pb__string(&p->event, DA_NAME, key);
	gs_pb__bytes(&p->event, DA_LEGACY_JSON, json, len);
	gs_pb__end(&p->event);
	return emit_event(p, p->clock_ns);
}

int gs_perfetto__finish(struct gs_perfetto *p)
{
	return flush_held(p) ?: end_slices(p, UINT64_MAX);
}

uint64_t gs_perfetto__rows(const struct gs_perfetto *p)
{
	return p->rows;
}

uint64_t gs_perfetto__skipped(const struct gs_perfetto *p)
{
	return p->skipped;
}

uint64_t gs_perfetto__packets(const struct gs_perfetto *p)
{
	return p->packets;
}
