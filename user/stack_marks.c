// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* stack_marks.c: the texts of the frames that say what a stack lacks. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/stack_marks.h"

/* a few distinct counts per run: a short list, each text made once and kept */
#define MAX_NAMES 4096

struct name {
	uint32_t count;
	char *text;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct name names[MAX_NAMES];
static size_t nr_names;

static const char *find_or_add(uint32_t count)
{
	char buf[48];

	for (size_t i = 0; i < nr_names; i++)
		if (names[i].count == count)
			return names[i].text;
	if (count == GS_STACK_MARK_MANY)
		snprintf(buf, sizeof(buf), "[truncated: %u+ more]", GS_STACK_MARK_MANY);
	else
		snprintf(buf, sizeof(buf), "[truncated: %u more]", count);
	if (nr_names == MAX_NAMES)
		return NULL;
	names[nr_names].text = strdup(buf);
	if (!names[nr_names].text)
		return NULL;
	names[nr_names].count = count;
	return names[nr_names++].text;
}

const char *gs_stack_mark_name(uint64_t addr)
{
	uint32_t count = (uint32_t)addr;
	const char *s;

	if (!count)
		return "[truncated]";
	pthread_mutex_lock(&lock);
	s = find_or_add(count);
	pthread_mutex_unlock(&lock);
	return s ? s : "[truncated]";
}

void gs_stack_mark_insert_truncated(__u64 *stack, size_t *nr, size_t max, size_t at,
				    uint64_t nr_more)
{
	if (!max)
		return;
	if (*nr >= max) {
		*nr = max - 1;
		if (nr_more && nr_more < GS_STACK_MARK_MANY)
			nr_more++;
	}
	if (at > *nr)
		at = *nr;
	memmove(&stack[at + 1], &stack[at], (*nr - at) * sizeof(*stack));
	stack[at] = gs_stack_mark_truncated(nr_more);
	(*nr)++;
}
