// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* perfetto_row.c: yajl callbacks building a tree in an arena sized from the text's length. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>
#include "user/json_tape.h"
#include "user/perfetto_intern.h"
#include "user/perfetto_row.h"

#define MAX_DEPTH   32
#define RAW_SLOTS   256	 /* raw arrays of strings (stacks) kept parsed, direct-mapped */
#define RAW_MAX_LEN 8192 /* bytes of text of one */

/* A raw JSON array of strings met before: its text, and its strings read. */
struct raw_entry {
	uint64_t hash, row;
	size_t len, n;
	char *mem; /* the text, NUL, then the n strings, each NUL-terminated */
};

struct gs_row_parser {
	yajl_handle h;
	char *arena; /* nodes, strings, child arrays of the row being parsed */
	size_t cap, used;
	yajl_val *kids; /* children of the open containers, stacked */
	char **keys;	/* their keys, for objects */
	size_t nr_kids, kids_cap;
	yajl_val open[MAX_DEPTH];
	size_t first[MAX_DEPTH]; /* where each open container's children begin */
	int depth;
	char *key; /* the key of the next value in an object */
	yajl_val root;
	int oom;
	struct raw_entry *raw; /* RAW_SLOTS, made on first use */
	uint64_t row;	       /* rows parsed: an entry a row's tree points into stays */
};

static void *take(struct gs_row_parser *p, size_t size)
{
	void *at;

	size = (size + 7) & ~(size_t)7;
	if (size > p->cap - p->used) {
		p->oom = 1;
		return NULL;
	}
	at = p->arena + p->used;
	p->used += size;
	return at;
}

static char *copy(struct gs_row_parser *p, const unsigned char *s, size_t len)
{
	char *c = take(p, len + 1);

	if (c) {
		memcpy(c, s, len);
		c[len] = '\0';
	}
	return c;
}

static int add(struct gs_row_parser *p, yajl_val v)
{
	if (!v)
		return 0;
	if (!p->depth) {
		p->root = v;
		return 1;
	}
	if (p->nr_kids >= p->kids_cap)
		return 0;
	p->keys[p->nr_kids] = p->key;
	p->kids[p->nr_kids++] = v;
	p->key = NULL;
	return 1;
}

static yajl_val node(struct gs_row_parser *p, yajl_type type)
{
	yajl_val v = take(p, sizeof(*v));

	if (v) {
		memset(v, 0, sizeof(*v));
		v->type = type;
	}
	return v;
}

static int on_null(void *ctx)
{
	return add(ctx, node(ctx, yajl_t_null));
}

static int on_bool(void *ctx, int b)
{
	return add(ctx, node(ctx, b ? yajl_t_true : yajl_t_false));
}

/*
 * A decimal of at most 15 digits ("1234.567", every row's ts and dur) as a double with no
 * strtod: the digits as an integer and a power of ten are both exact, so their quotient is
 * the correctly rounded value strtod gives (Clinger's fast path). False for other text.
 */
static bool short_decimal(const char *s, size_t len, double *d)
{
	static const double pow10[] = { 1,   1e1, 1e2,	1e3,  1e4,  1e5,  1e6,	1e7,
					1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15 };
	uint64_t m = 0;
	int digits = 0, frac = -1;

	for (size_t i = 0; i < len; i++) {
		if (s[i] == '.' && frac < 0 && digits) {
			frac = 0;
			continue;
		}
		if (s[i] < '0' || s[i] > '9' || ++digits > 15)
			return false;
		m = m * 10 + (uint64_t)(s[i] - '0');
		frac += frac >= 0;
	}
	if (frac <= 0) /* no point, or nothing after it: strtoll's or strtod's */
		return false;
	*d = (double)m / pow10[frac];
	return true;
}

static int on_number(void *ctx, const char *s, size_t len)
{
	struct gs_row_parser *p = ctx;
	yajl_val v = node(p, yajl_t_number);
	char *end;

	if (!v || !(v->u.number.r = copy(p, (const unsigned char *)s, len)))
		return 0;
	if (short_decimal(s, len, &v->u.number.d)) {
		v->u.number.flags = YAJL_NUMBER_DOUBLE_VALID;
		return add(p, v);
	}
	errno = 0;
	v->u.number.i = strtoll(v->u.number.r, &end, 10);
	if (!errno && !*end) {
		v->u.number.flags = YAJL_NUMBER_INT_VALID;
	} else {
		v->u.number.d = strtod(v->u.number.r, &end);
		if (!*end)
			v->u.number.flags = YAJL_NUMBER_DOUBLE_VALID;
	}
	return add(p, v);
}

static int on_string(void *ctx, const unsigned char *s, size_t len)
{
	struct gs_row_parser *p = ctx;
	yajl_val v = node(p, yajl_t_string);

	return v && (v->u.string = copy(p, s, len)) && add(p, v);
}

static int on_key(void *ctx, const unsigned char *s, size_t len)
{
	struct gs_row_parser *p = ctx;

	p->key = copy(p, s, len);
	return p->key != NULL;
}

static int open_container(struct gs_row_parser *p, yajl_type type)
{
	yajl_val v = node(p, type);

	if (!v || p->depth >= MAX_DEPTH)
		return 0;
	v->u.object.keys = (const char **)p->key; /* the container's own key, kept until closed */
	p->key = NULL;
	p->first[p->depth] = p->nr_kids;
	p->open[p->depth++] = v;
	return 1;
}

static int on_start_map(void *ctx)
{
	return open_container(ctx, yajl_t_object);
}

static int on_start_array(void *ctx)
{
	return open_container(ctx, yajl_t_array);
}

static int close_container(struct gs_row_parser *p)
{
	yajl_val v = p->open[--p->depth];
	size_t first = p->first[p->depth], n = p->nr_kids - first;
	yajl_val *values = take(p, n * sizeof(*values) + 1);

	if (!values)
		return 0;
	memcpy(values, p->kids + first, n * sizeof(*values));
	p->key = (char *)v->u.object.keys; /* its key, for add() */
	if (v->type == yajl_t_object) {
		const char **keys = take(p, n * sizeof(*keys) + 1);

		if (!keys)
			return 0;
		memcpy(keys, p->keys + first, n * sizeof(*keys));
		v->u.object.keys = keys;
		v->u.object.values = values;
		v->u.object.len = n;
	} else {
		v->u.array.values = values;
		v->u.array.len = n;
	}
	p->nr_kids = first;
	return add(p, v);
}

static const yajl_callbacks callbacks = {
	.yajl_null = on_null,
	.yajl_boolean = on_bool,
	.yajl_number = on_number,
	.yajl_string = on_string,
	.yajl_start_map = on_start_map,
	.yajl_map_key = on_key,
	.yajl_end_map = (int (*)(void *))close_container,
	.yajl_start_array = on_start_array,
	.yajl_end_array = (int (*)(void *))close_container,
};

struct gs_row_parser *gs_row_parser__new(void)
{
	struct gs_row_parser *p = calloc(1, sizeof(*p));

	if (!p)
		errno = ENOMEM;
	return p;
}

void gs_row_parser__free(struct gs_row_parser *p)
{
	if (!p)
		return;
	if (p->h)
		yajl_free(p->h);
	free(p->arena);
	free(p->kids);
	free(p->keys);
	for (size_t i = 0; p->raw && i < RAW_SLOTS; i++)
		free(p->raw[i].mem);
	free(p->raw);
	free(p);
}

/* Room for the tree of len bytes of text: a value takes at least one byte of it. */
static int reserve(struct gs_row_parser *p, size_t len)
{
	size_t need = (len + 1) * (sizeof(struct yajl_val_s) + 2 * sizeof(void *) + 16) + 64;

	if (len > SIZE_MAX / 128)
		return -ENOMEM;
	if (need > p->cap) {
		char *a = realloc(p->arena, need);

		if (!a)
			return -ENOMEM;
		p->arena = a;
		p->cap = need;
	}
	if (len + 1 > p->kids_cap) {
		yajl_val *k = realloc(p->kids, (len + 1) * sizeof(*k));
		char **keys = k ? realloc(p->keys, (len + 1) * sizeof(*keys)) : NULL;

		if (k)
			p->kids = k;
		if (!keys)
			return -ENOMEM;
		p->keys = keys;
		p->kids_cap = len + 1;
	}
	return 0;
}

yajl_val gs_row_parser__parse(struct gs_row_parser *p, const char *text, size_t len)
{
	yajl_status st;

	if (reserve(p, len))
		return NULL;
	if (!p->h) { /* one handle for every row: they are values one after the other */
		p->h = yajl_alloc(&callbacks, NULL, p);
		if (!p->h || !yajl_config(p->h, yajl_allow_multiple_values, 1))
			return NULL;
	}
	p->used = 0;
	p->nr_kids = 0;
	p->depth = 0;
	p->key = NULL;
	p->root = NULL;
	p->oom = 0;
	st = yajl_parse(p->h, (const unsigned char *)text, len);
	if (st != yajl_status_ok || p->depth || !p->root) {
		yajl_free(p->h); /* a failed handle parses nothing more; a fresh one next time */
		p->h = NULL;
		return NULL;
	}
	return p->root;
}

/* ---- tapes: the same tree from typed tokens (json_tape.h), no text parsed ---- */

struct tape {
	const char *at, *end;
};

/* The next n bytes of t, or NULL when the tape is short. */
static const char *bytes(struct tape *t, size_t n)
{
	const char *at = t->at;

	if ((size_t)(t->end - t->at) < n)
		return NULL;
	t->at += n;
	return at;
}

/* A NUL-terminated text of the tape (key: u16 length, else u32), borrowed; NULL if short. */
static const char *text(struct tape *t, bool key, size_t *len)
{
	uint16_t n16;
	uint32_t n32;
	const char *s;

	if (key) {
		if (!(s = bytes(t, sizeof(n16))))
			return NULL;
		memcpy(&n16, s, sizeof(n16));
		if (n16 == GS_TAPE_NO_KEY) {
			*len = SIZE_MAX;
			return "";
		}
		*len = n16;
	} else {
		if (!(s = bytes(t, sizeof(n32))))
			return NULL;
		memcpy(&n32, s, sizeof(n32));
		*len = n32;
	}
	s = bytes(t, *len + 1);
	return s && !s[*len] ? s : NULL;
}

/* v's decimal text in the arena (u.number.r), as gs_json wrote it. */
static int int_node(struct gs_row_parser *p, uint64_t v, bool neg)
{
	char buf[24];
	size_t i = sizeof(buf);
	uint64_t m = neg && (int64_t)v < 0 ? -v : v;
	yajl_val n = node(p, yajl_t_number);

	do {
		buf[--i] = (char)('0' + m % 10);
		m /= 10;
	} while (m);
	if (neg && (int64_t)v < 0)
		buf[--i] = '-';
	if (!n || !(n->u.number.r = copy(p, (const unsigned char *)buf + i, sizeof(buf) - i)))
		return 0;
	n->u.number.i = (long long)v;
	n->u.number.flags = YAJL_NUMBER_INT_VALID;
	if (!neg && v > INT64_MAX) { /* as yajl reads it: not an integer */
		n->u.number.d = (double)v;
		n->u.number.flags = YAJL_NUMBER_DOUBLE_VALID;
	}
	return add(p, n);
}

/* The array's strings from the entry, as yajl would have given them. */
static int raw_from_cache(struct gs_row_parser *p, struct raw_entry *e)
{
	const char *s = e->mem + e->len + 1;

	if (!open_container(p, yajl_t_array))
		return 0;
	for (size_t i = 0; i < e->n; i++) {
		yajl_val v = node(p, yajl_t_string);

		if (!v)
			return 0;
		v->u.string = (char *)s;
		s += strlen(s) + 1;
		if (!add(p, v))
			return 0;
	}
	e->row = p->row;
	return close_container(p);
}

/* Keeps the array of strings v (parsed from s) in e, when no tree of this row uses e. */
static void raw_to_cache(struct gs_row_parser *p, struct raw_entry *e, uint64_t h, const char *s,
			 size_t len, yajl_val v)
{
	size_t size = len + 1;
	char *mem, *at;

	if (e->mem && e->row == p->row)
		return;
	for (size_t i = 0; i < v->u.array.len; i++) {
		if (!YAJL_IS_STRING(v->u.array.values[i]))
			return;
		size += strlen(v->u.array.values[i]->u.string) + 1;
	}
	mem = malloc(size);
	if (!mem)
		return; /* only slower */
	memcpy(mem, s, len);
	mem[len] = '\0';
	at = mem + len + 1;
	for (size_t i = 0; i < v->u.array.len; i++) {
		size_t n = strlen(v->u.array.values[i]->u.string) + 1;

		memcpy(at, v->u.array.values[i]->u.string, n);
		at += n;
	}
	free(e->mem);
	*e = (struct raw_entry){ .hash = h, .row = 0, .len = len, .n = v->u.array.len, .mem = mem };
}

/* A raw array (a stack): from the cache when its text was met before, else yajl's. */
static int raw_array(struct gs_row_parser *p, const char *s, size_t len)
{
	uint64_t h = len <= RAW_MAX_LEN ? gs_intern__hash(s, len) : 0;
	struct raw_entry *e = NULL;
	yajl_val v;

	if (h && !p->raw)
		p->raw = calloc(RAW_SLOTS, sizeof(*p->raw));
	if (h && p->raw) {
		e = &p->raw[h % RAW_SLOTS];
		if (e->mem && e->hash == h && e->len == len && !memcmp(e->mem, s, len))
			return raw_from_cache(p, e);
	}
	if (yajl_parse(p->h, (const unsigned char *)s, len) != yajl_status_ok)
		return 0;
	v = p->depth ? p->kids[p->nr_kids - 1] : p->root;
	if (e && YAJL_IS_ARRAY(v))
		raw_to_cache(p, e, h, s, len, v);
	return 1;
}

/* Raw JSON text: a number read here, anything else by yajl into the same tree. */
static int raw_value(struct gs_row_parser *p, const char *s, size_t len)
{
	if (!len)
		return 0;
	if ((*s >= '0' && *s <= '9') || *s == '-')
		return on_number(p, s, len);
	if (!p->h) {
		p->h = yajl_alloc(&callbacks, NULL, p);
		if (!p->h || !yajl_config(p->h, yajl_allow_multiple_values, 1))
			return 0;
	}
	/* a literal (true, null) would wait for more text: only containers end by themselves */
	if ((*s != '[' && *s != '{') ||
	    !(*s == '[' ? raw_array(p, s, len)
			: yajl_parse(p->h, (const unsigned char *)s, len) == yajl_status_ok)) {
		yajl_free(p->h);
		p->h = NULL;
		return 0;
	}
	return 1;
}

/* One token's value (its key already taken). */
static int tape_value(struct gs_row_parser *p, struct tape *t, int type)
{
	const char *s;
	size_t len;
	uint64_t v;

	switch (type) {
	case GS_TAPE_OBJECT:
		return on_start_map(p);
	case GS_TAPE_ARRAY:
		return on_start_array(p);
	case GS_TAPE_NULL:
		return on_null(p);
	case GS_TAPE_TRUE:
	case GS_TAPE_FALSE:
		return on_bool(p, type == GS_TAPE_TRUE);
	case GS_TAPE_U64:
	case GS_TAPE_I64:
		if (!(s = bytes(t, sizeof(v))))
			return 0;
		memcpy(&v, s, sizeof(v));
		return int_node(p, v, type == GS_TAPE_I64);
	case GS_TAPE_STRING:
	case GS_TAPE_DOUBLE:
	case GS_TAPE_RAW:
		if (!(s = text(t, false, &len)))
			return 0;
		if (type == GS_TAPE_STRING) {
			yajl_val n = node(p, yajl_t_string);

			if (!n)
				return 0;
			n->u.string = (char *)s; /* the tape's own text, NUL-terminated */
			return add(p, n);
		}
		return type == GS_TAPE_DOUBLE ? on_number(p, s, len) : raw_value(p, s, len);
	default:
		return 0;
	}
}

yajl_val gs_row_parser__tape(struct gs_row_parser *p, const char *tape, size_t len)
{
	struct tape t = { tape, tape + len };

	if (reserve(p, len))
		return NULL;
	p->used = 0;
	p->nr_kids = 0;
	p->depth = 0;
	p->key = NULL;
	p->root = NULL;
	p->oom = 0;
	p->row++;
	while (t.at < t.end) {
		int type = (unsigned char)*t.at++;
		const char *key;
		size_t klen;

		if (type == GS_TAPE_END) {
			if (!p->depth || !close_container(p))
				return NULL;
			if (!p->depth)
				break; /* the row's one value is whole */
			continue;
		}
		if (!(key = text(&t, true, &klen)))
			return NULL;
		p->key = klen == SIZE_MAX ? NULL : (char *)key;
		if (!tape_value(p, &t, type))
			return NULL;
	}
	return p->depth || !p->root ? NULL : p->root;
}
