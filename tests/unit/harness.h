// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* harness.h: a header-only unit-test harness: GS_TEST functions, GS_EXPECT_* checks, a summary. */
#ifndef GS_TEST_HARNESS_H
#define GS_TEST_HARNESS_H

/*
 * One test binary per module:
 *
 *	GS_TEST(parses_heap)
 *	{
 *		if (!GS_EXPECT(maps))
 *			return;
 *		GS_EXPECT_EQ(maps->nr, 1);
 *	}
 *
 *	GS_TEST_MAIN(parses_heap, ...)
 *
 * A failed check prints "FAIL name file:line expr" (with the values it compared) and the test
 * goes on; the checks return whether they held, so a test can stop where going on makes no
 * sense. Each test then prints "ok name" or only its FAIL lines, and the binary ends with
 * "N passed, N failed" and exits 1 when a test failed. GS_TEST_MAIN lists the tests: a test
 * left out of it is an unused static function, which -Werror turns into a build error.
 */

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gs_test {
	const char *name;
	void (*fn)(void);
};

/* Single translation unit per binary, so file-scope state is the harness's own. */
static const char *gs_test__name; /* the running test */
static bool gs_test__failed;	  /* the running test failed a check */

#define GS_TEST(name) static void name(void)

static inline void gs_test__fail_expr(const char *file, int line, const char *expr)
{
	gs_test__failed = true;
	printf("FAIL %s %s:%d %s\n", gs_test__name, file, line, expr);
}

/* The FAIL line of a check that compared values: fmt formats them, in parentheses. */
static inline __attribute__((format(printf, 4, 5))) void
gs_test__fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
	va_list ap;

	gs_test__failed = true;
	printf("FAIL %s %s:%d %s (", gs_test__name, file, line, expr);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputs(")\n", stdout);
}

/* Whether an integer expression has a signed type; its operand is not evaluated. */
// clang-format off
#define GS_IS_SIGNED_(x)                                                                \
	_Generic((x), char: CHAR_MIN < 0, signed char: 1, short: 1, int: 1, long: 1,    \
		 long long: 1, default: 0)
// clang-format on

/* a == b for integers of any types: a negative signed value equals no unsigned one */
static inline bool gs_test__int_eq(unsigned long long a, bool a_signed, unsigned long long b,
				   bool b_signed)
{
	if (a_signed != b_signed && (a_signed ? (long long)a < 0 : (long long)b < 0))
		return false;
	return a == b;
}

static inline void gs_test__fail_int(const char *file, int line, const char *expr,
				     unsigned long long a, bool a_signed, unsigned long long b,
				     bool b_signed)
{
	char sa[24], sb[24];

	if (a_signed)
		snprintf(sa, sizeof(sa), "%lld", (long long)a);
	else
		snprintf(sa, sizeof(sa), "%llu", a);
	if (b_signed)
		snprintf(sb, sizeof(sb), "%lld", (long long)b);
	else
		snprintf(sb, sizeof(sb), "%llu", b);
	gs_test__fail(file, line, expr, "%s != %s", sa, sb);
}

static inline bool gs_test__str_eq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* Each check evaluates its operands once and yields true when it held. */
#define GS_EXPECT(cond)                                                \
	({                                                             \
		bool gs_ok__ = (cond);                                 \
		if (!gs_ok__)                                          \
			gs_test__fail_expr(__FILE__, __LINE__, #cond); \
		gs_ok__;                                               \
	})

#define GS_EXPECT_EQ(a, b)                                                                   \
	({                                                                                   \
		unsigned long long gs_a__ = (unsigned long long)(a);                         \
		unsigned long long gs_b__ = (unsigned long long)(b);                         \
		bool gs_ok__ =                                                               \
			gs_test__int_eq(gs_a__, GS_IS_SIGNED_(a), gs_b__, GS_IS_SIGNED_(b)); \
		if (!gs_ok__)                                                                \
			gs_test__fail_int(__FILE__, __LINE__, #a " == " #b, gs_a__,          \
					  GS_IS_SIGNED_(a), gs_b__, GS_IS_SIGNED_(b));       \
		gs_ok__;                                                                     \
	})

#define GS_EXPECT_STR_EQ(a, b)                                                              \
	({                                                                                  \
		const char *gs_a__ = (a), *gs_b__ = (b);                                    \
		bool gs_ok__ = gs_test__str_eq(gs_a__, gs_b__);                             \
		if (!gs_ok__)                                                               \
			gs_test__fail(__FILE__, __LINE__, #a " == " #b, "%s%s%s != %s%s%s", \
				      gs_a__ ? "\"" : "", gs_a__ ? gs_a__ : "NULL",         \
				      gs_a__ ? "\"" : "", gs_b__ ? "\"" : "",               \
				      gs_b__ ? gs_b__ : "NULL", gs_b__ ? "\"" : "");        \
		gs_ok__;                                                                    \
	})

/*
 * Runs fns[i] under the i-th name of names, the comma-separated text of GS_TEST_MAIN's
 * arguments (stringizing the list avoids a bounded FOR_EACH macro).
 */
static inline int gs_test__run(const char *names, void (*const *fns)(void), size_t nr)
{
	int passed = 0, failed = 0;
	const char *p = names;

	/* a crash must not lose what was printed before it when stdout is a pipe */
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < nr; i++) {
		char name[128];
		size_t len;

		while (*p == ',' || *p == ' ')
			p++;
		len = strcspn(p, ", ");
		snprintf(name, sizeof(name), "%.*s", (int)len, p);
		p += len;

		gs_test__name = name;
		gs_test__failed = false;
		fns[i]();
		if (gs_test__failed) {
			failed++;
		} else {
			passed++;
			printf("ok %s\n", name);
		}
	}
	gs_test__name = NULL;
	printf("%d passed, %d failed\n", passed, failed);
	if (fflush(stdout) || ferror(stdout))
		return 1;
	return failed ? 1 : 0;
}

#define GS_TEST_MAIN(...)                                                             \
	int main(void)                                                                \
	{                                                                             \
		static void (*const fns[])(void) = { __VA_ARGS__ };                   \
		return gs_test__run(#__VA_ARGS__, fns, sizeof(fns) / sizeof(fns[0])); \
	}

#endif /* GS_TEST_HARNESS_H */
