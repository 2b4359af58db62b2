// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* profile.c: interned strings, frames and stacks; folded text and hand-encoded pprof out. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "user/array.h"
#include "user/hash_index.h"
#include "user/profile.h"
#include "user/text_escape.h"

/*
 * pprof is written by hand: profile.proto's wire format needs only varints and
 * length-delimited fields, write-only, which is less code than generating protobuf-c
 * bindings and adds no build-time compiler or runtime library (see the README's dependency list).
 */

struct frame {
	uint32_t name, module; /* string ids; 0 = "" = unknown */
	uint32_t mapping;      /* mapping id + 1; 0: no module */
	uint64_t address;
	bool kernel;
	bool python;  /* a Python function: its name is no symbol for pprof to demangle */
	int32_t line; /* Python frames: the source line; 0: none */
};

/* A file's place in one process; only the module's name (all else 0) when unknown. */
struct mapping {
	uint32_t file, build_id; /* string ids; build_id 0: none */
	uint64_t start, limit, offset;
	bool executable;
};

struct stack {
	pid_t pid;
	pid_t tid;     /* 0: the samples of every thread named comm */
	uint32_t comm; /* string id */
	uint32_t nr;
	uint32_t *frames; /* frame ids, innermost first */
	uint64_t count;
};

struct gs_profile {
	char **strings; /* string table: strings[0] is "" */
	size_t nr_strings, cap_strings;
	struct gs_hash_index string_index;
	struct frame *frames;
	size_t nr_frames, cap_frames;
	struct gs_hash_index frame_index;
	struct mapping *mappings;
	size_t nr_mappings, cap_mappings;
	struct gs_hash_index mapping_index;
	struct stack *stacks;
	size_t nr_stacks, cap_stacks;
	struct gs_hash_index stack_index;
	uint64_t total;
};

static uint64_t hash_bytes(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 1099511628211ULL;
	}
	return h;
}

#define HASH_SEED 1469598103934665603ULL

typedef bool (*eq_fn)(const struct gs_profile *p, uint32_t id, const void *key);

struct lookup {
	const struct gs_profile *p;
	eq_fn eq;
	const void *key;
};

static bool lookup_eq(const void *ctx, size_t id)
{
	const struct lookup *l = ctx;

	return l->eq(l->p, (uint32_t)id, l->key);
}

/* Whether ix has an id equal to key per eq(); *id is it. */
static bool index_find(const struct gs_hash_index *ix, uint64_t hash, eq_fn eq,
		       const struct gs_profile *p, const void *key, uint32_t *id)
{
	struct lookup l = { .p = p, .eq = eq, .key = key };
	size_t pos;

	if (!gs_hash_index__find(ix, hash, lookup_eq, &l, &pos))
		return false;
	*id = (uint32_t)pos;
	return true;
}

static uint64_t string_hash(const char *s)
{
	return gs_hash_u64(hash_bytes(HASH_SEED, s, strlen(s)));
}

static bool string_eq(const struct gs_profile *p, uint32_t id, const void *key)
{
	return !strcmp(p->strings[id], key);
}

/* The id of s in the string table, adding it. Returns a negative errno on failure. */
static int64_t intern_string(struct gs_profile *p, const char *s)
{
	uint64_t hash;
	uint32_t id;
	char *copy;

	if (!s)
		s = "";
	hash = string_hash(s);
	if (index_find(&p->string_index, hash, string_eq, p, s, &id))
		return id;
	if (GS_ARRAY_RESERVE(p->strings, p->nr_strings, p->cap_strings, 64))
		return -ENOMEM;
	copy = strdup(s);
	if (!copy || gs_hash_index__add(&p->string_index, hash, p->nr_strings)) {
		free(copy);
		return -ENOMEM;
	}
	p->strings[p->nr_strings] = copy;
	return (int64_t)p->nr_strings++;
}

static uint64_t mapping_hash(const struct mapping *m)
{
	uint64_t h = hash_bytes(HASH_SEED, &m->file, sizeof(m->file));

	h = hash_bytes(h, &m->build_id, sizeof(m->build_id));
	h = hash_bytes(h, &m->start, sizeof(m->start));
	h = hash_bytes(h, &m->limit, sizeof(m->limit));
	h = hash_bytes(h, &m->offset, sizeof(m->offset));
	return gs_hash_u64(hash_bytes(h, &m->executable, sizeof(m->executable)));
}

static bool mapping_eq(const struct gs_profile *p, uint32_t id, const void *key)
{
	const struct mapping *a = &p->mappings[id], *b = key;

	return a->file == b->file && a->build_id == b->build_id && a->start == b->start &&
	       a->limit == b->limit && a->offset == b->offset && a->executable == b->executable;
}

/* The mapping id + 1 of module (a string id) placed as in says; 0 for no module. */
static int64_t intern_mapping(struct gs_profile *p, uint32_t module,
			      const struct gs_profile_mapping *in)
{
	int64_t build_id = intern_string(p, in ? in->build_id : NULL);
	struct mapping m = { .file = module };
	uint32_t id;

	if (!module)
		return 0;
	if (build_id < 0)
		return -ENOMEM;
	if (in)
		m = (struct mapping){ .file = module,
				      .build_id = (uint32_t)build_id,
				      .start = in->start,
				      .limit = in->limit,
				      .offset = in->offset,
				      .executable = in->executable };
	if (index_find(&p->mapping_index, mapping_hash(&m), mapping_eq, p, &m, &id))
		return (int64_t)id + 1;
	if (GS_ARRAY_RESERVE(p->mappings, p->nr_mappings, p->cap_mappings, 64) ||
	    gs_hash_index__add(&p->mapping_index, mapping_hash(&m), p->nr_mappings))
		return -ENOMEM;
	p->mappings[p->nr_mappings] = m;
	return (int64_t)++p->nr_mappings;
}

static uint64_t frame_hash(const struct frame *f)
{
	uint64_t h = hash_bytes(HASH_SEED, &f->name, sizeof(f->name));

	h = hash_bytes(h, &f->module, sizeof(f->module));
	h = hash_bytes(h, &f->mapping, sizeof(f->mapping));
	h = hash_bytes(h, &f->address, sizeof(f->address));
	h = hash_bytes(h, &f->line, sizeof(f->line));
	h = hash_bytes(h, &f->python, sizeof(f->python));
	return gs_hash_u64(hash_bytes(h, &f->kernel, sizeof(f->kernel)));
}

static bool frame_eq(const struct gs_profile *p, uint32_t id, const void *key)
{
	const struct frame *a = &p->frames[id], *b = key;

	return a->name == b->name && a->module == b->module && a->mapping == b->mapping &&
	       a->address == b->address && a->kernel == b->kernel && a->line == b->line &&
	       a->python == b->python;
}

static int64_t intern_frame(struct gs_profile *p, const struct gs_profile_frame *in)
{
	int64_t name = intern_string(p, in->name), module = intern_string(p, in->module);
	int64_t mapping = module < 0 ? -ENOMEM : intern_mapping(p, (uint32_t)module, in->mapping);
	struct frame f;
	uint32_t id;

	if (name < 0 || module < 0 || mapping < 0)
		return -ENOMEM;
	f = (struct frame){ .name = (uint32_t)name,
			    .module = (uint32_t)module,
			    .mapping = (uint32_t)mapping,
			    .address = in->address,
			    .kernel = in->kernel,
			    .python = in->python,
			    .line = in->line > 0 ? in->line : 0 };
	if (index_find(&p->frame_index, frame_hash(&f), frame_eq, p, &f, &id))
		return id;
	if (GS_ARRAY_RESERVE(p->frames, p->nr_frames, p->cap_frames, 64) ||
	    gs_hash_index__add(&p->frame_index, frame_hash(&f), p->nr_frames))
		return -ENOMEM;
	p->frames[p->nr_frames] = f;
	return (int64_t)p->nr_frames++;
}

static uint64_t stack_hash(const struct stack *s)
{
	uint64_t h = hash_bytes(HASH_SEED, &s->pid, sizeof(s->pid));

	h = hash_bytes(h, &s->tid, sizeof(s->tid));

	h = hash_bytes(h, &s->comm, sizeof(s->comm));
	return gs_hash_u64(hash_bytes(h, s->frames, s->nr * sizeof(*s->frames)));
}

static bool stack_eq(const struct gs_profile *p, uint32_t id, const void *key)
{
	const struct stack *a = &p->stacks[id], *b = key;

	return a->pid == b->pid && a->tid == b->tid && a->comm == b->comm && a->nr == b->nr &&
	       !memcmp(a->frames, b->frames, a->nr * sizeof(*a->frames));
}

/* The string table starts with what pprof needs besides names, at these ids. */
enum {
	STR_EMPTY,
	STR_SAMPLES,
	STR_COUNT,
	STR_CPU,
	STR_NANOSECONDS,
	STR_PID,
	STR_COMM,
	STR_THREAD_ID,
	STR_THREAD_NAME
};
static const char *const fixed_strings[] = { "",     "samples",	    "count",
					     "cpu",  "nanoseconds", "pid",
					     "comm", "thread_id",   "thread_name" };

struct gs_profile *gs_profile__new(void)
{
	struct gs_profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	for (size_t i = 0; i < sizeof(fixed_strings) / sizeof(fixed_strings[0]); i++) {
		if (intern_string(p, fixed_strings[i]) != (int64_t)i) {
			gs_profile__free(p);
			return NULL;
		}
	}
	return p;
}

void gs_profile__free(struct gs_profile *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nr_strings; i++)
		free(p->strings[i]);
	for (size_t i = 0; i < p->nr_stacks; i++)
		free(p->stacks[i].frames);
	free(p->strings);
	gs_hash_index__release(&p->string_index);
	free(p->frames);
	gs_hash_index__release(&p->frame_index);
	free(p->mappings);
	gs_hash_index__release(&p->mapping_index);
	free(p->stacks);
	gs_hash_index__release(&p->stack_index);
	free(p);
}

int gs_profile__add(struct gs_profile *p, pid_t pid, const char *comm,
		    const struct gs_profile_frame *frames, size_t nr, uint64_t count)
{
	return gs_profile__add_thread(p, pid, 0, comm, frames, nr, count);
}

int gs_profile__add_thread(struct gs_profile *p, pid_t pid, pid_t tid, const char *comm,
			   const struct gs_profile_frame *frames, size_t nr, uint64_t count)
{
	int64_t comm_id = intern_string(p, comm);
	struct stack s = { .pid = pid, .tid = tid, .nr = (uint32_t)nr, .count = count };
	uint32_t found;
	int err = -ENOMEM;

	if (comm_id < 0)
		return -ENOMEM;
	s.comm = (uint32_t)comm_id;
	s.frames = malloc((nr ? nr : 1) * sizeof(*s.frames));
	if (!s.frames)
		return -ENOMEM;
	for (size_t i = 0; i < nr; i++) {
		int64_t id = intern_frame(p, &frames[i]);

		if (id < 0)
			goto out_free;
		s.frames[i] = (uint32_t)id;
	}
	if (index_find(&p->stack_index, stack_hash(&s), stack_eq, p, &s, &found)) {
		p->stacks[found].count += count;
		p->total += count;
		err = 0;
		goto out_free;
	}
	if (GS_ARRAY_RESERVE(p->stacks, p->nr_stacks, p->cap_stacks, 64) ||
	    gs_hash_index__add(&p->stack_index, stack_hash(&s), p->nr_stacks))
		goto out_free;
	p->stacks[p->nr_stacks] = s;
	p->nr_stacks++;
	p->total += count;
	return 0;

out_free:
	free(s.frames);
	return err;
}

uint64_t gs_profile__total(const struct gs_profile *p)
{
	return p->total;
}

size_t gs_profile__nr_stacks(const struct gs_profile *p)
{
	return p->nr_stacks;
}

/* ---- folded ---- */

/*
 * Text chosen by the process (a symbol, comm or file name) inside a folded line: ';'
 * separates frames, so it becomes ':'; control bytes, terminal escapes and ill-formed UTF-8
 * are spelled \xNN (user/text_escape.h), so neither a line end nor an escape sequence
 * reaches the file or the terminal that shows it.
 */
static void put_folded_text(FILE *f, const char *s)
{
	char small[256], *buf = small;
	size_t need = GS_TEXT_SAFE_LEN(strlen(s));

	if (need > sizeof(small) && !(buf = malloc(need)))
		buf = small; /* cut short rather than raw */
	gs_text_safe(s, buf, buf == small ? sizeof(small) : need);
	for (const char *c = buf; *c; c++)
		fputc(*c == ';' ? ':' : *c, f);
	if (buf != small)
		free(buf);
}

/* A frame's label: its symbol, else [file], else [unknown]. */
static void put_label(FILE *f, const struct gs_profile *p, const struct frame *fr)
{
	const char *name = p->strings[fr->name], *module = p->strings[fr->module];
	const char *base = strrchr(module, '/');

	if (*name && fr->line && *module) {
		put_folded_text(f, name);
		fputs(" (", f);
		put_folded_text(f, module);
		fprintf(f, ":%d)", (int)fr->line);
	} else if (*name) {
		put_folded_text(f, name);
	} else if (*module) {
		fputc('[', f);
		put_folded_text(f, base ? base + 1 : module);
		fputc(']', f);
	} else {
		fputs("[unknown]", f);
	}
	if (fr->kernel)
		fputs("_[k]", f);
}

struct folded_line {
	char *text;
	uint64_t count;
};

static int cmp_folded(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->text, ((const struct folded_line *)b)->text);
}

int gs_profile__write_folded(const struct gs_profile *p, FILE *f)
{
	struct folded_line *lines = calloc(p->nr_stacks + 1, sizeof(*lines));
	size_t nr = 0;
	int err = 0;

	if (!lines)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_stacks; i++) {
		const struct stack *s = &p->stacks[i];
		size_t len = 0;
		FILE *mem = open_memstream(&lines[i].text, &len);

		if (!mem) {
			err = -ENOMEM;
			goto out_free;
		}
		put_label(mem, p, &(struct frame){ .name = s->comm });
		for (uint32_t k = s->nr; k-- > 0;) {
			fputc(';', mem);
			put_label(mem, p, &p->frames[s->frames[k]]);
		}
		if (fclose(mem)) {
			err = -ENOMEM;
			goto out_free;
		}
		lines[i].count = s->count;
	}
	/* one line per distinct text: two pids running the same code fold together */
	qsort(lines, p->nr_stacks, sizeof(*lines), cmp_folded);
	for (size_t i = 0; i < p->nr_stacks; i++) {
		if (nr && !strcmp(lines[nr - 1].text, lines[i].text)) {
			lines[nr - 1].count += lines[i].count;
			free(lines[i].text);
			lines[i].text = NULL;
			continue;
		}
		lines[nr++] = (struct folded_line){ lines[i].text, lines[i].count };
		if (nr - 1 != i)
			lines[i].text = NULL;
	}
	for (size_t i = 0; i < nr; i++)
		fprintf(f, "%s %" PRIu64 "\n", lines[i].text, lines[i].count);
	if (ferror(f))
		err = -EIO;
out_free:
	for (size_t i = 0; i < p->nr_stacks; i++)
		free(lines[i].text);
	free(lines);
	return err;
}

/* ---- pprof ---- */

struct pbuf {
	uint8_t *data;
	size_t len, cap;
	bool failed;
};

static void pb_bytes(struct pbuf *b, const void *data, size_t len)
{
	if (b->failed)
		return;
	if (b->len + len > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		uint8_t *grown;

		while (cap < b->len + len)
			cap *= 2;
		grown = realloc(b->data, cap);
		if (!grown) {
			b->failed = true;
			return;
		}
		b->data = grown;
		b->cap = cap;
	}
	memcpy(b->data + b->len, data, len);
	b->len += len;
}

static void pb_varint(struct pbuf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;

	do {
		tmp[n++] = (uint8_t)(v & 0x7f) | (v > 0x7f ? 0x80 : 0);
		v >>= 7;
	} while (v);
	pb_bytes(b, tmp, n);
}

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

static void pb_tag(struct pbuf *b, uint32_t field, uint32_t wire)
{
	pb_varint(b, (uint64_t)field << 3 | wire);
}

/* A varint field; proto3 leaves zero values out. */
static void pb_uint(struct pbuf *b, uint32_t field, uint64_t v)
{
	if (!v)
		return;
	pb_tag(b, field, WIRE_VARINT);
	pb_varint(b, v);
}

static void pb_len(struct pbuf *b, uint32_t field, const void *data, size_t len)
{
	pb_tag(b, field, WIRE_LEN);
	pb_varint(b, len);
	pb_bytes(b, data, len);
}

/* Appends msg as a length-delimited field and empties it for reuse. */
static void pb_message(struct pbuf *b, uint32_t field, struct pbuf *msg)
{
	if (msg->failed)
		b->failed = true;
	pb_len(b, field, msg->data, msg->len);
	msg->len = 0;
}

/* Profile fields (profile.proto) */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
};

static void value_type(struct pbuf *b, uint32_t field, struct pbuf *tmp, int64_t type, int64_t unit)
{
	pb_uint(tmp, 1, (uint64_t)type);
	pb_uint(tmp, 2, (uint64_t)unit);
	pb_message(b, field, tmp);
}

static void encode_sample(struct pbuf *b, struct pbuf *tmp, struct pbuf *packed,
			  const struct stack *s, uint64_t period)
{
	struct pbuf label = { 0 };

	for (uint32_t i = 0; i < s->nr; i++)
		pb_varint(packed, (uint64_t)s->frames[i] + 1); /* location ids, leaf first */
	pb_message(tmp, 1, packed);
	pb_varint(packed, s->count);
	pb_varint(packed, s->count * period);
	pb_message(tmp, 2, packed);
	pb_uint(&label, 1, STR_PID); /* pid: a number */
	pb_uint(&label, 3, (uint64_t)s->pid);
	pb_message(tmp, 3, &label);
	pb_uint(&label, 1, STR_COMM); /* comm: a string */
	pb_uint(&label, 2, s->comm);
	pb_message(tmp, 3, &label);
	/* the thread, by the names pprof's and OpenTelemetry's profilers use */
	pb_uint(&label, 1, STR_THREAD_NAME);
	pb_uint(&label, 2, s->comm);
	pb_message(tmp, 3, &label);
	if (s->tid) {
		pb_uint(&label, 1, STR_THREAD_ID);
		pb_uint(&label, 3, (uint64_t)s->tid);
		pb_message(tmp, 3, &label);
	}
	free(label.data);
	pb_message(b, PROFILE_SAMPLE, tmp);
}

/*
 * pprof's id of each mapping (by internal id + 1; [0] stays 0: none): the executables'
 * first, as pprof names a profile after its first mapping, then the others, each group in
 * first-use order. has[id - 1] tells whether a frame of that mapping was named.
 */
static uint32_t *number_mappings(const struct gs_profile *p, bool *has)
{
	uint32_t *ids = calloc(p->nr_mappings + 1, sizeof(*ids)), nr = 0;

	if (!ids)
		return NULL;
	for (int executables = 1; executables >= 0; executables--)
		for (size_t m = 0; m < p->nr_mappings; m++)
			if (p->mappings[m].executable == executables)
				ids[m + 1] = ++nr;
	for (size_t i = 0; i < p->nr_frames; i++)
		if (p->frames[i].mapping && p->frames[i].name)
			has[ids[p->frames[i].mapping] - 1] = true;
	return ids;
}

/* The Mappings, in pprof's id order. */
static void encode_mappings(struct pbuf *b, struct pbuf *tmp, const struct gs_profile *p,
			    const uint32_t *ids, const bool *has)
{
	uint32_t *by_id = malloc((p->nr_mappings + 1) * sizeof(*by_id));

	if (!by_id) {
		b->failed = true;
		return;
	}
	for (size_t m = 0; m < p->nr_mappings; m++)
		by_id[ids[m + 1] - 1] = (uint32_t)m;
	for (uint32_t id = 1; id <= p->nr_mappings; id++) {
		const struct mapping *map = &p->mappings[by_id[id - 1]];

		pb_uint(tmp, 1, id);
		pb_uint(tmp, 2, map->start);
		pb_uint(tmp, 3, map->limit);
		pb_uint(tmp, 4, map->offset);
		pb_uint(tmp, 5, map->file);
		pb_uint(tmp, 6, map->build_id);
		/* symbolized here: pprof must not look again where a name was found */
		pb_uint(tmp, 7, has[id - 1]);
		pb_message(b, PROFILE_MAPPING, tmp);
	}
	free(by_id);
}

static int cmp_function(const void *a, const void *b, void *arg)
{
	const struct gs_profile *p = arg;
	const struct frame *x = &p->frames[*(const uint32_t *)a];
	const struct frame *y = &p->frames[*(const uint32_t *)b];

	if (x->name != y->name)
		return x->name < y->name ? -1 : 1;
	if (x->module != y->module)
		return x->module < y->module ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/*
 * Function id of each frame (0: unnamed): one function per (name, module). owner[id - 1]
 * gets a frame of each function. Returns the count, or -ENOMEM.
 */
static int64_t number_functions(const struct gs_profile *p, uint32_t *ids, uint32_t *owner)
{
	uint32_t *order = malloc((p->nr_frames + 1) * sizeof(*order)), nr = 0;
	size_t n = 0;

	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_frames; i++)
		if (p->frames[i].name)
			order[n++] = (uint32_t)i;
	qsort_r(order, n, sizeof(*order), cmp_function, (void *)p);
	for (size_t k = 0; k < n; k++) {
		const struct frame *f = &p->frames[order[k]];
		const struct frame *prev = k ? &p->frames[order[k - 1]] : NULL;

		if (!prev || prev->name != f->name || prev->module != f->module)
			owner[nr++] = order[k];
		ids[order[k]] = nr;
	}
	free(order);
	return nr;
}

int gs_profile__encode_pprof(const struct gs_profile *p, const struct gs_pprof_info *info,
			     uint8_t **buf, size_t *len)
{
	struct pbuf b = { 0 }, tmp = { 0 }, packed = { 0 };
	uint32_t *mapping_of = NULL, *function_of = NULL, *function_frame = NULL;
	bool *has_functions = calloc(p->nr_mappings + 1, sizeof(*has_functions));
	int64_t nr_functions = -1;
	int err = -ENOMEM;

	mapping_of = has_functions ? number_mappings(p, has_functions) : NULL;
	function_of = calloc(p->nr_frames + 1, sizeof(*function_of));
	function_frame = calloc(p->nr_frames + 1, sizeof(*function_frame));
	if (mapping_of && function_of && function_frame)
		nr_functions = number_functions(p, function_of, function_frame);
	if (nr_functions < 0)
		goto out_free;

	value_type(&b, PROFILE_SAMPLE_TYPE, &tmp, STR_SAMPLES, STR_COUNT);
	value_type(&b, PROFILE_SAMPLE_TYPE, &tmp, STR_CPU, STR_NANOSECONDS);
	for (size_t i = 0; i < p->nr_stacks; i++)
		encode_sample(&b, &tmp, &packed, &p->stacks[i], info->period_ns);
	encode_mappings(&b, &tmp, p, mapping_of, has_functions);
	for (size_t i = 0; i < p->nr_frames; i++) {
		const struct frame *f = &p->frames[i];

		pb_uint(&tmp, 1, i + 1);
		pb_uint(&tmp, 2, mapping_of[f->mapping]);
		pb_uint(&tmp, 3, f->address);
		if (function_of[i]) {
			pb_uint(&packed, 1, function_of[i]);
			if (f->line)
				pb_uint(&packed, 2, (uint64_t)f->line);
			pb_message(&tmp, 4, &packed);
		}
		pb_message(&b, PROFILE_LOCATION, &tmp);
	}
	for (int64_t id = 1; id <= nr_functions; id++) {
		const struct frame *f = &p->frames[function_frame[id - 1]];

		pb_uint(&tmp, 1, (uint64_t)id);
		pb_uint(&tmp, 2, f->name);
		/*
		 * system_name: pprof demangles a function whose name equals it, and its C++
		 * simplification cuts "<...>": Python's <module> would be left nameless
		 */
		pb_uint(&tmp, 3, f->python ? STR_EMPTY : f->name);
		pb_uint(&tmp, 4, f->module); /* filename: the binary; a Python function's source */
		pb_message(&b, PROFILE_FUNCTION, &tmp);
	}
	for (size_t i = 0; i < p->nr_strings; i++)
		pb_len(&b, PROFILE_STRING_TABLE, p->strings[i], strlen(p->strings[i]));
	pb_uint(&b, PROFILE_TIME_NANOS, info->time_ns);
	pb_uint(&b, PROFILE_DURATION_NANOS, info->duration_ns);
	value_type(&b, PROFILE_PERIOD_TYPE, &tmp, STR_CPU, STR_NANOSECONDS);
	pb_uint(&b, PROFILE_PERIOD, info->period_ns);
	if (!b.failed && !tmp.failed && !packed.failed) {
		*buf = b.data;
		*len = b.len;
		b.data = NULL;
		err = 0;
	}
out_free:
	free(b.data);
	free(tmp.data);
	free(packed.data);
	free(mapping_of);
	free(has_functions);
	free(function_of);
	free(function_frame);
	return err;
}

int gs_gzip_write(FILE *f, const void *data, size_t len)
{
	unsigned char out[65536];
	z_stream zs = { 0 };
	int ret;

	/* windowBits 15 + 16: a gzip header and trailer rather than a zlib one */
	if (deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -ENOMEM;
	zs.next_in = (unsigned char *)data;
	zs.avail_in = (uInt)len;
	do {
		zs.next_out = out;
		zs.avail_out = sizeof(out);
		ret = deflate(&zs, Z_FINISH);
		if (ret == Z_STREAM_ERROR)
			break;
		fwrite(out, 1, sizeof(out) - zs.avail_out, f);
	} while (ret != Z_STREAM_END);
	deflateEnd(&zs);
	if (ret != Z_STREAM_END)
		return -EIO;
	return ferror(f) ? -EIO : 0;
}

int gs_profile__write_pprof(const struct gs_profile *p, const struct gs_pprof_info *info, FILE *f)
{
	uint8_t *buf;
	size_t len;
	int err = gs_profile__encode_pprof(p, info, &buf, &len);

	if (err)
		return err;
	err = gs_gzip_write(f, buf, len);
	free(buf);
	return err;
}
