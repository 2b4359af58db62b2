// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* python_code.c: code objects read with process_vm_readv: bounded, checked, cached. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include "user/python_code.h"

#define MAX_NAME     512	/* characters of a name or file read */
#define MAX_LINES    (64 << 10) /* bytes of a line table */
#define MAX_CODES    65536	/* cached code objects per process; then the cache restarts */
#define HEADER_BYTES 160	/* covers every field read of every layout */
#define OB_TYPE	     8
/*
 * A cached code object is checked against the process (is it still the object named?) at
 * most this often: a check per frame per event would cost the reader a system call per
 * frame, and an address is reused only once its code object was freed, which functions
 * defined at import never are.
 */
#define RECHECK_NS 1000000000ULL
#define STR_LENGTH 16
#define BYTES_SIZE 16
#define BYTES_DATA 32

struct code_entry {
	uint64_t addr; /* 0: free slot */
	uint64_t name_ptr, file_ptr, lines_ptr;
	int firstlineno;
	uint32_t gen;
	uint64_t checked_ns; /* CLOCK_MONOTONIC of the last check against the process */
	char *qualname, *file;
	uint8_t *lines;
	size_t nr_lines;
};

struct gs_py_codes {
	pid_t pid;
	const struct gs_py_interp *in;
	struct code_entry *slots; /* open addressing by address */
	size_t nr_slots, nr_used;
	uint32_t next_gen;
};

static int read_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

struct gs_py_codes *gs_py_codes__new(pid_t pid, const struct gs_py_interp *interp)
{
	struct gs_py_codes *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->pid = pid;
	c->in = interp;
	return c;
}

static void clear_entry(struct code_entry *e)
{
	free(e->qualname);
	free(e->file);
	free(e->lines);
	*e = (struct code_entry){ 0 };
}

void gs_py_codes__free(struct gs_py_codes *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nr_slots; i++)
		clear_entry(&c->slots[i]);
	free(c->slots);
	free(c);
}

/* UCS-1/2/4 code points to UTF-8, '?' for what is not a scalar value */
static void to_utf8(const uint8_t *data, size_t n, int kind, char *out, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < n && o + 5 < len; i++) {
		uint16_t u16;
		uint32_t cp;

		if (kind == 1) {
			cp = data[i];
		} else if (kind == 2) {
			memcpy(&u16, data + 2 * i, sizeof(u16));
			cp = u16;
		} else {
			memcpy(&cp, data + 4 * i, sizeof(cp));
		}

		if (cp < 0x80) {
			out[o++] = (char)cp;
		} else if (cp < 0x800) {
			out[o++] = (char)(0xc0 | cp >> 6);
			out[o++] = (char)(0x80 | (cp & 0x3f));
		} else if (cp < 0x10000 && (cp < 0xd800 || cp > 0xdfff)) {
			out[o++] = (char)(0xe0 | cp >> 12);
			out[o++] = (char)(0x80 | ((cp >> 6) & 0x3f));
			out[o++] = (char)(0x80 | (cp & 0x3f));
		} else if (cp >= 0x10000 && cp < 0x110000) {
			out[o++] = (char)(0xf0 | cp >> 18);
			out[o++] = (char)(0x80 | ((cp >> 12) & 0x3f));
			out[o++] = (char)(0x80 | ((cp >> 6) & 0x3f));
			out[o++] = (char)(0x80 | (cp & 0x3f));
		} else {
			out[o++] = '?';
		}
	}
	out[o] = '\0';
}

/* A compact str object (every name and file name CPython makes) as UTF-8; NULL if not one. */
static char *read_str(const struct gs_py_codes *c, uint64_t addr)
{
	const struct gs_py_layout *l = &c->in->layout;
	uint8_t data[MAX_NAME * 4];
	char utf8[MAX_NAME * 4 + 1];
	uint8_t head[64];
	int64_t length;
	uint32_t state;
	int kind;

	if (!addr || read_mem(c->pid, addr, head, sizeof(head)))
		return NULL;
	memcpy(&length, head + STR_LENGTH, sizeof(length));
	memcpy(&state, head + l->str_state, sizeof(state));
	kind = (state >> 2) & 7;
	if (!(state & (1u << 5)) || (kind != 1 && kind != 2 && kind != 4) || length < 0)
		return NULL; /* not compact: a legacy string no code object has */
	if (length > MAX_NAME)
		length = MAX_NAME;
	if (read_mem(c->pid, addr + (state & (1u << 6) ? l->str_ascii_data : l->str_compact_data),
		     data, (size_t)length * kind))
		return NULL;
	to_utf8(data, (size_t)length, kind, utf8, sizeof(utf8));
	return strdup(utf8);
}

/* A bytes object's contents (the line table); false if unreadable or too large */
static bool read_bytes(const struct gs_py_codes *c, uint64_t addr, uint8_t **out, size_t *len)
{
	int64_t size;

	if (!addr || read_mem(c->pid, addr + BYTES_SIZE, &size, sizeof(size)) || size < 0 ||
	    size > MAX_LINES)
		return false;
	*out = malloc(size ? (size_t)size : 1);
	if (!*out)
		return false;
	if (read_mem(c->pid, addr + BYTES_DATA, *out, (size_t)size)) {
		free(*out);
		return false;
	}
	*len = (size_t)size;
	return true;
}

static uint64_t field(const uint8_t *head, uint16_t off)
{
	uint64_t v;

	memcpy(&v, head + off, sizeof(v));
	return v;
}

/* Fills e from the object at addr whose header is head. Returns 0 or -errno. */
static int fill_entry(struct gs_py_codes *c, struct code_entry *e, uint64_t addr,
		      const uint8_t *head)
{
	const struct gs_py_layout *l = &c->in->layout;
	int32_t first;

	memcpy(&first, head + l->co_firstlineno, sizeof(first));
	e->addr = addr;
	e->name_ptr = field(head, l->co_qualname ? l->co_qualname : l->co_name);
	e->file_ptr = field(head, l->co_filename);
	e->lines_ptr = field(head, l->co_lines);
	e->firstlineno = first;
	e->gen = c->next_gen++;
	e->qualname = read_str(c, e->name_ptr);
	e->file = read_str(c, e->file_ptr);
	if (!e->qualname || !e->file || !read_bytes(c, e->lines_ptr, &e->lines, &e->nr_lines)) {
		clear_entry(e);
		return -EINVAL;
	}
	return 0;
}

static bool entry_matches(const struct gs_py_codes *c, const struct code_entry *e,
			  const uint8_t *head)
{
	const struct gs_py_layout *l = &c->in->layout;
	int32_t first;

	memcpy(&first, head + l->co_firstlineno, sizeof(first));
	return e->name_ptr == field(head, l->co_qualname ? l->co_qualname : l->co_name) &&
	       e->file_ptr == field(head, l->co_filename) &&
	       e->lines_ptr == field(head, l->co_lines) && e->firstlineno == first;
}

/* The slot of addr: its entry, or the free slot where it goes; NULL without memory */
static struct code_entry *slot_of(struct gs_py_codes *c, uint64_t addr)
{
	size_t i;

	if (c->nr_used >= MAX_CODES || !c->nr_slots) {
		for (size_t j = 0; j < c->nr_slots; j++)
			clear_entry(&c->slots[j]);
		free(c->slots);
		c->nr_slots = 2 * MAX_CODES;
		c->nr_used = 0;
		c->slots = calloc(c->nr_slots, sizeof(*c->slots));
		if (!c->slots) {
			c->nr_slots = 0;
			return NULL;
		}
	}
	i = (addr >> 3) * 0x9e3779b97f4a7c15ULL % c->nr_slots;
	while (c->slots[i].addr && c->slots[i].addr != addr)
		i = (i + 1) % c->nr_slots;
	return &c->slots[i];
}

/* The source line of instr, an instruction as the walk recorded it (python_layout.h) */
static int line_of(const struct gs_py_codes *c, const struct code_entry *e, uint32_t instr)
{
	const struct gs_py_layout *l = &c->in->layout;
	int64_t addr;

	if (l->line_format == GS_PY_LINES_LNOTAB)
		addr = (int32_t)instr; /* f_lasti in bytes */
	else if (l->line_format == GS_PY_LINES_LINETABLE)
		addr = (int64_t)(int32_t)instr * 2; /* f_lasti in code units */
	else
		addr = (int64_t)(int32_t)instr - (int64_t)c->in->code_header;
	return gs_py_addr2line(l->line_format, e->lines, e->nr_lines, e->firstlineno, addr);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The characters BPF copied, as UTF-8; NULL if it could not read them */
static char *copied_str(const struct gs_py_str *s, const uint8_t *data, size_t size)
{
	char utf8[GS_PY_FILE_BYTES * 4 + 1];
	size_t n = s->length;

	if (s->kind != 1 && s->kind != 2 && s->kind != 4)
		return NULL;
	if (n > size / s->kind)
		n = size / s->kind; /* longer than BPF's buffer: the start of it */
	to_utf8(data, n, s->kind, utf8, sizeof(utf8));
	return strdup(utf8);
}

int gs_py_codes__learn(struct gs_py_codes *c, const struct gs_py_code_event *ev)
{
	struct code_entry *e = slot_of(c, ev->code);
	size_t n = ev->lines_size < GS_PY_LINES_BYTES ? ev->lines_size : GS_PY_LINES_BYTES;

	if (!e)
		return -ENOMEM;
	if (e->addr) {
		clear_entry(e);
		c->nr_used--;
	}
	*e = (struct code_entry){ .addr = ev->code,
				  .name_ptr = ev->name_ptr,
				  .file_ptr = ev->file_ptr,
				  .lines_ptr = ev->lines_ptr,
				  .firstlineno = ev->firstlineno,
				  .gen = c->next_gen++ };
	e->qualname = copied_str(&ev->name, ev->name_data, sizeof(ev->name_data));
	e->file = copied_str(&ev->file, ev->file_data, sizeof(ev->file_data));
	e->lines = malloc(n ? n : 1);
	if (!e->qualname || !e->file || !e->lines || ev->lines_size > GS_PY_LINES_BYTES) {
		clear_entry(e); /* read from the process when a frame needs it */
		return -EINVAL;
	}
	memcpy(e->lines, ev->lines, n);
	e->nr_lines = n;
	e->checked_ns = now_ns(); /* BPF read it just now */
	c->nr_used++;
	return 0;
}

int gs_py_codes__where(struct gs_py_codes *c, uint64_t code, uint32_t instr,
		       struct gs_py_where *out)
{
	uint8_t head[HEADER_BYTES];
	struct code_entry *e;
	uint64_t now = now_ns();
	int err;

	if (!code || (code & 7))
		return -EINVAL;
	e = slot_of(c, code);
	if (!e)
		return -ENOMEM;
	if (e->addr && now - e->checked_ns < RECHECK_NS)
		goto found;
	err = read_mem(c->pid, code, head, sizeof(head));
	if (!err && field(head, OB_TYPE) != c->in->code_type)
		err = -EINVAL; /* a 3.13 C-stack shim's None, or freed since the walk */
	/*
	 * The process is gone, or the object was freed since the walk saw it (a short-lived
	 * process tearing down): what BPF sent or was read before names it. Only another code
	 * object at the address means the cached one is stale.
	 */
	if (err && e->addr)
		goto found;
	if (err)
		return err;
	if (e->addr && !entry_matches(c, e, head)) {
		clear_entry(e); /* freed, and another code object took its address */
		c->nr_used--;
	}
	if (!e->addr) {
		err = fill_entry(c, e, code, head);
		if (err)
			return err;
		c->nr_used++;
	}
	e->checked_ns = now;
found:
	out->qualname = e->qualname;
	out->file = e->file;
	out->line = line_of(c, e, instr);
	out->gen = e->gen;
	return 0;
}
