// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* fuzz_pickle.c: libFuzzer harness for the pickle writer (pickle_writer.c) with hostile names. */
#include "tests/fuzz/fuzz.h"
#include "user/pickle_writer.h"

/*
 * The input is names cut at '\n' (quotes, opcode bytes, invalid UTF-8, any length), written
 * as the snapshot writer writes frames: a list of {"filename", "line", "name"} dicts, with
 * memoized keys and every other list fetched back from the memo. The output is then read by
 * a strict reader of the opcodes it may hold: any other opcode, a length past the end, a
 * string that is not valid UTF-8, a memo index never put, an unbalanced MARK, or bytes after
 * STOP is a crash. Python's pickle.loads with no globals allowed accepts what this accepts
 * (tests/unit/test_pickle_writer.c checks that reader on the same shapes).
 */

struct reader {
	const uint8_t *p, *end;
	uint32_t memo; /* puts seen: indices below are valid */
	int depth;     /* open MARKs */
};

static uint32_t le(const uint8_t *p, size_t n)
{
	uint32_t v = 0;

	for (size_t i = 0; i < n; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}

static size_t need(struct reader *r, size_t n)
{
	GS_FUZZ_CHECK((size_t)(r->end - r->p) >= n);
	return n;
}

static void check_string(struct reader *r)
{
	uint32_t len = le(r->p, need(r, 4));

	r->p += 4;
	need(r, len);
	/* valid UTF-8 exactly: sanitizing it again changes nothing */
	GS_FUZZ_CHECK(gs_utf8_valid_len((const char *)r->p, len) == len);
	GS_FUZZ_CHECK(len <= GS_PICKLE_MAX_STR);
	r->p += len;
}

/* One opcode; false at STOP. */
static bool step(struct reader *r)
{
	uint8_t op;

	need(r, 1);
	op = *r->p++;
	switch (op) {
	case 'X':
		check_string(r);
		break;
	case 'K':
		r->p += need(r, 1);
		break;
	case 'M':
		r->p += need(r, 2);
		break;
	case 'J':
		r->p += need(r, 4);
		break;
	case 0x8a: /* LONG1: a length byte, then that many */
		need(r, 1);
		GS_FUZZ_CHECK(r->p[0] >= 1 && r->p[0] <= 9);
		r->p += need(r, 1 + (size_t)r->p[0]);
		break;
	case 'q':
		need(r, 1);
		GS_FUZZ_CHECK(*r->p++ == r->memo++);
		break;
	case 'r':
		GS_FUZZ_CHECK(le(r->p, need(r, 4)) == r->memo++);
		r->p += 4;
		break;
	case 'h':
		need(r, 1);
		GS_FUZZ_CHECK(*r->p++ < r->memo);
		break;
	case 'j':
		GS_FUZZ_CHECK(le(r->p, need(r, 4)) < r->memo);
		r->p += 4;
		break;
	case '(':
		r->depth++;
		break;
	case 'u':
	case 'e':
		GS_FUZZ_CHECK(r->depth-- > 0);
		break;
	case '}':
	case ']':
	case 'N':
	case 0x86: /* TUPLE2 */
	case 0x88:
	case 0x89:
		break;
	case '.':
		return false;
	default:
		GS_FUZZ_CHECK(!"an opcode the writer never writes");
	}
	return true;
}

static void check(const uint8_t *buf, size_t len)
{
	struct reader r = { .p = buf, .end = buf + len };

	GS_FUZZ_CHECK(len >= 3 && buf[0] == 0x80 && buf[1] == 2);
	r.p += 2;
	while (step(&r))
		;
	GS_FUZZ_CHECK(r.depth == 0);
	GS_FUZZ_CHECK(r.p == r.end);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gs_pickle pk;
	char *buf = NULL;
	size_t len = 0, start = 0, n = 0;
	FILE *f = open_memstream(&buf, &len);
	uint32_t memo = 0;

	if (!f)
		return 0;
	gs_pickle__begin(&pk, f);
	gs_pickle__list_begin(&pk);
	for (size_t i = 0; i <= size; i++) {
		if (i < size && data[i] != '\n')
			continue;
		gs_pickle__list_begin(&pk);
		gs_pickle__dict_begin(&pk);
		gs_pickle__key(&pk, "filename");
		gs_pickle__str(&pk, (const char *)data + start, i - start);
		gs_pickle__key(&pk, "line");
		gs_pickle__int(&pk, (int64_t)gs_fuzz_u64(data, size, start));
		gs_pickle__key(&pk, "name");
		gs_pickle__cstr(&pk, "<name>");
		gs_pickle__dict_end(&pk);
		gs_pickle__list_end(&pk);
		if (n++ % 2)
			gs_pickle__get(&pk, memo);
		else
			memo = gs_pickle__put(&pk);
		gs_pickle__uint(&pk, gs_fuzz_u64(data, size, i));
		start = i + 1;
	}
	gs_pickle__list_end(&pk);
	GS_FUZZ_CHECK(gs_pickle__end(&pk) == 0);
	fclose(f);
	check((const uint8_t *)buf, len);
	free(buf);
	return 0;
}
