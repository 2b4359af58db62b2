// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_profile.c: folded text exactly, and the pprof encoding decoded back field by field. */
#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>
#include "tests/unit/harness.h"
#include "user/profile.h"

/* ---- a minimal protobuf reader, independent of the encoder ---- */

struct pb {
	const uint8_t *p, *end;
	bool bad;
};

static uint64_t pb_varint(struct pb *b)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		if (b->p >= b->end) {
			b->bad = true;
			return 0;
		}
		v |= (uint64_t)(*b->p & 0x7f) << shift;
		if (!(*b->p++ & 0x80))
			return v;
	}
	b->bad = true;
	return 0;
}

/* Next field: its number; a varint in *v or a length-delimited body in *sub. 0 at the end. */
static uint32_t pb_next(struct pb *b, uint64_t *v, struct pb *sub)
{
	uint64_t key, len;

	if (b->p >= b->end || b->bad)
		return 0;
	key = pb_varint(b);
	switch (key & 7) {
	case 0:
		*v = pb_varint(b);
		*sub = (struct pb){ NULL, NULL, false };
		break;
	case 2:
		len = pb_varint(b);
		if (len > (uint64_t)(b->end - b->p)) {
			b->bad = true;
			return 0;
		}
		*sub = (struct pb){ b->p, b->p + len, false };
		b->p += len;
		*v = 0;
		break;
	default: /* the encoder uses no other wire type */
		b->bad = true;
		return 0;
	}
	return b->bad ? 0 : (uint32_t)(key >> 3);
}

/* A repeated scalar, packed (a body) or not (one varint). */
static size_t pb_repeated(uint64_t v, struct pb *sub, uint64_t *out, size_t max)
{
	size_t n = 0;

	if (!sub->p) {
		out[0] = v;
		return 1;
	}
	while (sub->p < sub->end && n < max)
		out[n++] = pb_varint(sub);
	return n;
}

#define MAX 64

struct d_sample {
	uint64_t loc[MAX], val[MAX];
	size_t nr_loc, nr_val;
	int64_t pid, comm; /* labels: num of "pid", str of "comm" */
	size_t nr_labels;
};
struct d_location {
	uint64_t id, mapping, address, function;
	size_t nr_lines;
};
struct d_function {
	uint64_t id, name, system_name, filename;
};
struct d_mapping {
	uint64_t id, start, limit, offset, filename, build_id, has_functions;
};

struct decoded {
	char *strings[MAX * 4];
	size_t nr_strings;
	uint64_t sample_type[4][2];
	size_t nr_sample_types;
	struct d_sample samples[MAX];
	size_t nr_samples;
	struct d_location locations[MAX * 4];
	size_t nr_locations;
	struct d_function functions[MAX * 4];
	size_t nr_functions;
	struct d_mapping mappings[MAX];
	size_t nr_mappings;
	uint64_t time_nanos, duration_nanos, period, period_type[2];
	bool bad;
};

static void decode_value_type(struct pb *b, uint64_t out[2])
{
	struct pb sub;
	uint64_t v;
	uint32_t f;

	out[0] = out[1] = 0;
	while ((f = pb_next(b, &v, &sub)))
		if (f == 1 || f == 2)
			out[f - 1] = v;
}

static void decode_sample(struct decoded *d, struct pb *b, const uint64_t *label_keys)
{
	struct d_sample *s = &d->samples[d->nr_samples++];
	struct pb sub, lb, unused;
	uint64_t v, key, str, num;
	uint32_t f, g;

	while ((f = pb_next(b, &v, &sub))) {
		if (f == 1)
			s->nr_loc += pb_repeated(v, &sub, s->loc + s->nr_loc, MAX - s->nr_loc);
		else if (f == 2)
			s->nr_val += pb_repeated(v, &sub, s->val + s->nr_val, MAX - s->nr_val);
		else if (f == 3) {
			lb = sub;
			key = str = num = 0;
			while ((g = pb_next(&lb, &v, &unused)))
				*(g == 1 ? &key : g == 2 ? &str : &num) = v;
			s->nr_labels++;
			/* label keys are string ids: resolved after the string table is read */
			if (key == label_keys[0])
				s->pid = (int64_t)num;
			if (key == label_keys[1])
				s->comm = (int64_t)str;
		}
	}
}

/* Two passes: the string table first, so label keys can be compared by name. */
static void decode(struct decoded *d, const uint8_t *buf, size_t len)
{
	struct pb b = { buf, buf + len, false }, sub, inner, unused;
	uint64_t v, label_keys[2] = { UINT64_MAX, UINT64_MAX };
	uint32_t f, g;

	memset(d, 0, sizeof(*d));
	while ((f = pb_next(&b, &v, &sub)))
		if (f == 6 && d->nr_strings < MAX * 4)
			d->strings[d->nr_strings++] =
				strndup((const char *)sub.p, (size_t)(sub.end - sub.p));
	for (size_t i = 0; i < d->nr_strings; i++) {
		if (!strcmp(d->strings[i], "pid"))
			label_keys[0] = i;
		if (!strcmp(d->strings[i], "comm"))
			label_keys[1] = i;
	}
	b = (struct pb){ buf, buf + len, false };
	while ((f = pb_next(&b, &v, &sub))) {
		switch (f) {
		case 1:
			decode_value_type(&sub, d->sample_type[d->nr_sample_types++]);
			break;
		case 2:
			decode_sample(d, &sub, label_keys);
			break;
		case 3: {
			struct d_mapping *m = &d->mappings[d->nr_mappings++];

			while ((g = pb_next(&sub, &v, &unused)))
				if (g == 1)
					m->id = v;
				else if (g == 2)
					m->start = v;
				else if (g == 3)
					m->limit = v;
				else if (g == 4)
					m->offset = v;
				else if (g == 5)
					m->filename = v;
				else if (g == 6)
					m->build_id = v;
				else if (g == 7)
					m->has_functions = v;
			break;
		}
		case 4: {
			struct d_location *l = &d->locations[d->nr_locations++];

			while ((g = pb_next(&sub, &v, &inner))) {
				if (g == 1)
					l->id = v;
				else if (g == 2)
					l->mapping = v;
				else if (g == 3)
					l->address = v;
				else if (g == 4) {
					l->nr_lines++;
					while (pb_next(&inner, &v, &unused) == 1)
						l->function = v;
				}
			}
			break;
		}
		case 5: {
			struct d_function *fn = &d->functions[d->nr_functions++];

			while ((g = pb_next(&sub, &v, &unused)))
				if (g == 1)
					fn->id = v;
				else if (g == 2)
					fn->name = v;
				else if (g == 3)
					fn->system_name = v;
				else if (g == 4)
					fn->filename = v;
			break;
		}
		case 9:
			d->time_nanos = v;
			break;
		case 10:
			d->duration_nanos = v;
			break;
		case 11:
			decode_value_type(&sub, d->period_type);
			break;
		case 12:
			d->period = v;
			break;
		default:
			break;
		}
	}
	d->bad = b.bad;
}

static void decoded_free(struct decoded *d)
{
	for (size_t i = 0; i < d->nr_strings; i++)
		free(d->strings[i]);
}

static const char *str(const struct decoded *d, uint64_t id)
{
	return id < d->nr_strings ? d->strings[id] : "<bad string id>";
}

static const struct d_location *location(const struct decoded *d, uint64_t id)
{
	for (size_t i = 0; i < d->nr_locations; i++)
		if (d->locations[i].id == id)
			return &d->locations[i];
	return NULL;
}

/* Function name of a location, "" for one without a line. */
static const char *location_name(const struct decoded *d, uint64_t id)
{
	const struct d_location *l = location(d, id);

	if (!l)
		return "<no location>";
	for (size_t i = 0; i < d->nr_functions; i++)
		if (l->nr_lines && d->functions[i].id == l->function)
			return str(d, d->functions[i].name);
	return "";
}

static const char *mapping_file(const struct decoded *d, uint64_t id)
{
	for (size_t i = 0; i < d->nr_mappings; i++)
		if (d->mappings[i].id == id)
			return str(d, d->mappings[i].filename);
	return NULL;
}

/* ---- fixtures ---- */

#define LIBC "/usr/lib/x86_64-linux-gnu/libc.so.6"
#define EXE  "/opt/app/bin/train"

static struct gs_profile *sample_profile(void)
{
	struct gs_profile *p = gs_profile__new();
	/* innermost first, as the sampler hands them over */
	struct gs_profile_frame a[] = {
		{ .name = "burn_a", .module = EXE, .address = 0x401010 },
		{ .name = "main", .module = EXE, .address = 0x401100 },
		{ .module = LIBC, .address = 0x7f0000027249 },
	};
	struct gs_profile_frame b[] = {
		{ .name = "burn_b", .module = EXE, .address = 0x401210 },
		{ .name = "main", .module = EXE, .address = 0x401108 },
		{ .module = LIBC, .address = 0x7f0000027249 },
	};
	struct gs_profile_frame k[] = {
		{ .name = "clear_page_erms",
		  .module = "[kernel.kallsyms]",
		  .address = 0xffffffff81a00010ULL,
		  .kernel = true },
		{ .name = "asm_exc_page_fault",
		  .module = "[kernel.kallsyms]",
		  .address = 0xffffffff81c00020ULL,
		  .kernel = true },
		{ .name = "operator;weird", .module = EXE, .address = 0x401300 },
		{ .address = 0x1234 },
	};

	if (!p)
		return NULL;
	if (gs_profile__add(p, 100, "train", a, 3, 30) ||
	    gs_profile__add(p, 100, "train", b, 3, 10) ||
	    gs_profile__add(p, 100, "train", a, 3, 6) || /* adds up with the first */
	    gs_profile__add(p, 200, "train", a, 3, 4) || /* another process: its own sample */
	    gs_profile__add(p, 100, "worker", k, 4, 2) ||
	    gs_profile__add(p, 300, "idle", NULL, 0, 1)) {
		gs_profile__free(p);
		return NULL;
	}
	return p;
}

static char *folded_text(const struct gs_profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	if (gs_profile__write_folded(p, f)) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	return buf;
}

GS_TEST(folded_exact_lines)
{
	struct gs_profile *p = sample_profile();
	char *text;

	if (!GS_EXPECT(p))
		return;
	GS_EXPECT_EQ(gs_profile__total(p), 30 + 10 + 6 + 4 + 2 + 1);
	GS_EXPECT_EQ(gs_profile__nr_stacks(p), 5);
	text = folded_text(p);
	/* sorted; pids 100 and 200 fold into one line; outermost first; ';' in a name replaced */
	GS_EXPECT_STR_EQ(text, "idle 1\n"
			       "train;[libc.so.6];main;burn_a 40\n"
			       "train;[libc.so.6];main;burn_b 10\n"
			       "worker;[unknown];operator:weird;asm_exc_page_fault_[k];"
			       "clear_page_erms_[k] 2\n");
	free(text);
	gs_profile__free(p);
}

GS_TEST(folded_empty_profile)
{
	struct gs_profile *p = gs_profile__new();
	char *text;

	if (!GS_EXPECT(p))
		return;
	text = folded_text(p);
	GS_EXPECT_STR_EQ(text, "");
	free(text);
	gs_profile__free(p);
}

GS_TEST(pprof_decodes_back)
{
	struct gs_pprof_info info = { .period_ns = 10101010,
				      .time_ns = 1700000000123456789ULL,
				      .duration_ns = 5000000000ULL };
	struct gs_profile *p = sample_profile();
	uint64_t total = 0;
	struct decoded d;
	uint8_t *buf;
	size_t len;

	if (!GS_EXPECT(p) || !GS_EXPECT_EQ(gs_profile__encode_pprof(p, &info, &buf, &len), 0))
		return;
	decode(&d, buf, len);
	GS_EXPECT(!d.bad);
	GS_EXPECT(d.nr_strings > 0 && !strcmp(d.strings[0], ""));
	if (!GS_EXPECT_EQ(d.nr_sample_types, 2))
		goto out;
	GS_EXPECT_STR_EQ(str(&d, d.sample_type[0][0]), "samples");
	GS_EXPECT_STR_EQ(str(&d, d.sample_type[0][1]), "count");
	GS_EXPECT_STR_EQ(str(&d, d.sample_type[1][0]), "cpu");
	GS_EXPECT_STR_EQ(str(&d, d.sample_type[1][1]), "nanoseconds");
	GS_EXPECT_STR_EQ(str(&d, d.period_type[0]), "cpu");
	GS_EXPECT_STR_EQ(str(&d, d.period_type[1]), "nanoseconds");
	GS_EXPECT_EQ(d.period, 10101010);
	GS_EXPECT_EQ(d.time_nanos, 1700000000123456789ULL);
	GS_EXPECT_EQ(d.duration_nanos, 5000000000ULL);

	/* one sample per (pid, comm, stack): the pid-200 copy of stack a stays apart */
	if (!GS_EXPECT_EQ(d.nr_samples, 5))
		goto out;
	for (size_t i = 0; i < d.nr_samples; i++) {
		const struct d_sample *s = &d.samples[i];

		if (!GS_EXPECT_EQ(s->nr_val, 2))
			continue;
		GS_EXPECT_EQ(s->val[1], s->val[0] * 10101010);
		GS_EXPECT_EQ(s->nr_labels,
			     3); /* pid, comm, thread_name (thread_id: per thread only) */
		total += s->val[0];
	}
	GS_EXPECT_EQ(total, gs_profile__total(p));

	/* the first sample is the first stack added: burn_a <- main <- libc, leaf first */
	{
		const struct d_sample *s = &d.samples[0];
		const struct d_location *libc;

		GS_EXPECT_EQ(s->val[0], 36);
		GS_EXPECT_EQ(s->pid, 100);
		GS_EXPECT_STR_EQ(str(&d, (uint64_t)s->comm), "train");
		if (GS_EXPECT_EQ(s->nr_loc, 3)) {
			GS_EXPECT_STR_EQ(location_name(&d, s->loc[0]), "burn_a");
			GS_EXPECT_STR_EQ(location_name(&d, s->loc[1]), "main");
			GS_EXPECT_STR_EQ(location_name(&d, s->loc[2]), ""); /* no symbol: no line */
			libc = location(&d, s->loc[2]);
			if (GS_EXPECT(libc)) {
				GS_EXPECT_EQ(libc->address, 0x7f0000027249ULL);
				GS_EXPECT_STR_EQ(mapping_file(&d, libc->mapping), LIBC);
			}
			GS_EXPECT_EQ(location(&d, s->loc[0])->address, 0x401010);
			GS_EXPECT_STR_EQ(mapping_file(&d, location(&d, s->loc[0])->mapping), EXE);
		}
	}
	GS_EXPECT_EQ(d.samples[2].pid, 200);
	GS_EXPECT_EQ(d.samples[2].val[0], 4);
	/* the stackless sample */
	GS_EXPECT_EQ(d.samples[4].nr_loc, 0);

	/* main at two addresses: two locations, one function; functions are (name, file) */
	{
		size_t mains = 0;

		for (size_t i = 0; i < d.nr_functions; i++) {
			if (!strcmp(str(&d, d.functions[i].name), "main")) {
				mains++;
				GS_EXPECT_STR_EQ(str(&d, d.functions[i].filename), EXE);
			}
			GS_EXPECT_EQ(d.functions[i].system_name, d.functions[i].name);
			GS_EXPECT(d.functions[i].id != 0);
		}
		GS_EXPECT_EQ(mains, 1);
		/* burn_a, main, burn_b, clear_page_erms, asm_exc_page_fault, operator;weird */
		GS_EXPECT_EQ(d.nr_functions, 6);
	}
	/* locations: every distinct frame once, ids from 1 */
	GS_EXPECT_EQ(d.nr_locations, 3 + 2 + 4);
	for (size_t i = 0; i < d.nr_locations; i++)
		GS_EXPECT_EQ(d.locations[i].id, i + 1);
	/* mappings: the executable, libc and the kernel; libc's frames have no names */
	if (GS_EXPECT_EQ(d.nr_mappings, 3)) {
		GS_EXPECT_STR_EQ(str(&d, d.mappings[0].filename), EXE);
		GS_EXPECT_EQ(d.mappings[0].has_functions, 1);
		GS_EXPECT_STR_EQ(str(&d, d.mappings[1].filename), LIBC);
		GS_EXPECT_EQ(d.mappings[1].has_functions, 0);
		GS_EXPECT_STR_EQ(str(&d, d.mappings[2].filename), "[kernel.kallsyms]");
		GS_EXPECT_EQ(d.mappings[2].has_functions, 1);
	}
out:
	decoded_free(&d);
	free(buf);
	gs_profile__free(p);
}

GS_TEST(pprof_file_is_gzip_of_the_encoding)
{
	struct gs_pprof_info info = { .period_ns = 1000000 };
	struct gs_profile *p = sample_profile();
	uint8_t *raw, out[1 << 16];
	char *gz = NULL;
	size_t raw_len, gz_len = 0;
	z_stream zs = { 0 };
	FILE *f;

	if (!GS_EXPECT(p) || !GS_EXPECT_EQ(gs_profile__encode_pprof(p, &info, &raw, &raw_len), 0))
		return;
	f = open_memstream(&gz, &gz_len);
	GS_EXPECT_EQ(gs_profile__write_pprof(p, &info, f), 0);
	fclose(f);
	/* the gzip magic, then inflate with gzip decoding (windowBits 15 + 16) */
	GS_EXPECT(gz_len > 2 && (uint8_t)gz[0] == 0x1f && (uint8_t)gz[1] == 0x8b);
	if (GS_EXPECT_EQ(inflateInit2(&zs, 15 + 16), Z_OK)) {
		zs.next_in = (uint8_t *)gz;
		zs.avail_in = (uInt)gz_len;
		zs.next_out = out;
		zs.avail_out = sizeof(out);
		GS_EXPECT_EQ(inflate(&zs, Z_FINISH), Z_STREAM_END);
		GS_EXPECT_EQ(zs.total_out, raw_len);
		GS_EXPECT(!memcmp(out, raw, raw_len));
		inflateEnd(&zs);
	}
	free(gz);
	free(raw);
	gs_profile__free(p);
}

GS_TEST(pprof_empty_profile)
{
	struct gs_pprof_info info = { .period_ns = 1 };
	struct gs_profile *p = gs_profile__new();
	struct decoded d;
	uint8_t *buf;
	size_t len;

	if (!GS_EXPECT(p) || !GS_EXPECT_EQ(gs_profile__encode_pprof(p, &info, &buf, &len), 0))
		return;
	decode(&d, buf, len);
	GS_EXPECT(!d.bad);
	GS_EXPECT_EQ(d.nr_samples, 0);
	GS_EXPECT_EQ(d.nr_sample_types, 2);
	GS_EXPECT(d.nr_strings > 0 && !strcmp(d.strings[0], ""));
	decoded_free(&d);
	free(buf);
	gs_profile__free(p);
}

GS_TEST(many_stacks_grow_the_tables)
{
	struct gs_profile *p = gs_profile__new();
	struct gs_profile_frame f[2] = { { .name = "leaf", .module = "/x", .address = 0 },
					 { .name = "root", .module = "/x", .address = 1 } };
	char *text, *line;
	size_t lines = 0;

	if (!GS_EXPECT(p))
		return;
	for (uint64_t i = 0; i < 5000; i++) {
		f[0].address = 0x1000 + i; /* 5000 locations of one function */
		if (!GS_EXPECT_EQ(gs_profile__add(p, (pid_t)(i % 7), "c", f, 2, 1), 0))
			break;
	}
	GS_EXPECT_EQ(gs_profile__nr_stacks(p), 5000);
	GS_EXPECT_EQ(gs_profile__total(p), 5000);
	text = folded_text(p);
	/* one folded line: addresses and pids do not show in folded stacks */
	for (line = text; line && *line; line = strchr(line, '\n') + 1)
		lines++;
	GS_EXPECT_EQ(lines, 1);
	GS_EXPECT_STR_EQ(text, "c;root;leaf 5000\n");
	free(text);
	gs_profile__free(p);
}

/* a comm, symbol or file name with ';' or a line break cannot add frames or lines */
GS_TEST(folded_hostile_names_stay_one_frame)
{
	struct gs_profile *p = gs_profile__new();
	struct gs_profile_frame f[2] = {
		{ .module = "/lib/a;b\nc 9\rx.so", .address = 0x10 },
		{ .name = "main;fake\nevil 99", .module = "/bin/t", .address = 0x20 }
	};
	char *text;

	if (!GS_EXPECT(p))
		return;
	GS_EXPECT_EQ(gs_profile__add(p, 1, "co;mm\n", f, 2, 3), 0);
	text = folded_text(p);
	GS_EXPECT_STR_EQ(text, "co:mm\\x0a;main:fake\\x0aevil 99;[a:b\\x0ac 9\\x0dx.so] 3\n");
	free(text);
	gs_profile__free(p);
}

/* issue 22: terminal escapes and invalid UTF-8 of a comm or Python name are shown as \xNN */
GS_TEST(folded_escapes_control_bytes)
{
	struct gs_profile *p = gs_profile__new();
	char long_name[600];
	struct gs_profile_frame f[2] = {
		{ .name = "f\x1b]0;title\x07", .module = "/s\x9b.py", .address = 0x10, .line = 3 },
		{ .name = long_name, .module = "/bin/t", .address = 0x20 }
	};
	char *text;

	if (!GS_EXPECT(p))
		return;
	memset(long_name, '\x1b', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	GS_EXPECT_EQ(gs_profile__add(p, 1, "gs\xff\x1b[31m", f, 2, 3), 0);
	text = folded_text(p);
	GS_EXPECT(!strchr(text, '\x1b') && !strchr(text, '\x07'));
	GS_EXPECT(!strncmp(text, "gs\\xff\\x1b[31m;\\x1b\\x1b", 22));
	GS_EXPECT(strstr(text, ";f\\x1b]0:title\\x07 (/s\\x9b.py:3) 3\n"));
	free(text);
	gs_profile__free(p);
}

/*
 * Real mappings: range, offset and build id as given, one Mapping per process placement,
 * the executable first even when a kernel and a library frame came first.
 */
GS_TEST(pprof_mappings_placed_executable_first)
{
	static const struct gs_profile_mapping exe_map = { 0x555555554000ULL, 0x555555556000ULL,
							   0x1000, "0123456789abcdef", true };
	static const struct gs_profile_mapping libc_map = { 0x7f0000026000ULL, 0x7f000017b000ULL,
							    0x26000, "fedcba9876543210", false };
	/* libc of another process, mapped elsewhere: a Mapping of its own */
	static const struct gs_profile_mapping libc_map2 = { 0x7f1000026000ULL, 0x7f100017b000ULL,
							     0x26000, "fedcba9876543210", false };
	struct gs_profile_frame s1[] = {
		{ .name = "clear_page_erms",
		  .module = "[kernel.kallsyms]",
		  .address = 0xffffffff81a00010ULL,
		  .kernel = true },
		{ .module = LIBC, .address = 0x7f0000027249ULL, .mapping = &libc_map },
		{ .name = "main",
		  .module = EXE,
		  .address = 0x555555555100ULL,
		  .mapping = &exe_map },
	};
	struct gs_profile_frame s2[] = {
		{ .name = "memcpy",
		  .module = LIBC,
		  .address = 0x7f1000027000ULL,
		  .mapping = &libc_map2 },
	};
	struct gs_pprof_info info = { .period_ns = 1 };
	struct gs_profile *p = gs_profile__new();
	const struct d_mapping *m;
	struct decoded d;
	uint8_t *buf;
	size_t len;

	if (!GS_EXPECT(p) || !GS_EXPECT_EQ(gs_profile__add(p, 100, "train", s1, 3, 1), 0) ||
	    !GS_EXPECT_EQ(gs_profile__add(p, 200, "train", s2, 1, 1), 0) ||
	    !GS_EXPECT_EQ(gs_profile__encode_pprof(p, &info, &buf, &len), 0)) {
		gs_profile__free(p);
		return;
	}
	decode(&d, buf, len);
	GS_EXPECT(!d.bad);
	if (GS_EXPECT_EQ(d.nr_mappings, 4)) {
		m = &d.mappings[0];
		GS_EXPECT_EQ(m->id, 1);
		GS_EXPECT_STR_EQ(str(&d, m->filename), EXE);
		GS_EXPECT_EQ(m->start, 0x555555554000ULL);
		GS_EXPECT_EQ(m->limit, 0x555555556000ULL);
		GS_EXPECT_EQ(m->offset, 0x1000);
		GS_EXPECT_STR_EQ(str(&d, m->build_id), "0123456789abcdef");
		GS_EXPECT_EQ(m->has_functions, 1);
		/* then in first-use order: the kernel (a name only), libc, libc elsewhere */
		m = &d.mappings[1];
		GS_EXPECT_STR_EQ(str(&d, m->filename), "[kernel.kallsyms]");
		GS_EXPECT_EQ(m->start | m->limit | m->offset | m->build_id, 0);
		m = &d.mappings[2];
		GS_EXPECT_STR_EQ(str(&d, m->filename), LIBC);
		GS_EXPECT_EQ(m->start, 0x7f0000026000ULL);
		GS_EXPECT_EQ(m->limit, 0x7f000017b000ULL);
		GS_EXPECT_EQ(m->offset, 0x26000);
		GS_EXPECT_STR_EQ(str(&d, m->build_id), "fedcba9876543210");
		GS_EXPECT_EQ(m->has_functions, 0); /* its frame had no name */
		m = &d.mappings[3];
		GS_EXPECT_EQ(m->start, 0x7f1000026000ULL);
		GS_EXPECT_EQ(m->has_functions, 1);
	}
	if (GS_EXPECT_EQ(d.nr_samples, 2) && GS_EXPECT_EQ(d.samples[0].nr_loc, 3)) {
		GS_EXPECT_EQ(location(&d, d.samples[0].loc[2])->mapping, 1);
		GS_EXPECT_EQ(location(&d, d.samples[0].loc[1])->mapping, 3);
		GS_EXPECT_EQ(location(&d, d.samples[0].loc[1])->address, 0x7f0000027249ULL);
	}
	decoded_free(&d);
	free(buf);
	gs_profile__free(p);
}

GS_TEST_MAIN(folded_exact_lines, folded_empty_profile, pprof_decodes_back,
	     pprof_file_is_gzip_of_the_encoding, pprof_empty_profile, many_stacks_grow_the_tables,
	     folded_hostile_names_stay_one_frame, folded_escapes_control_bytes,
	     pprof_mappings_placed_executable_first)
