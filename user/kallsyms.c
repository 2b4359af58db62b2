// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* kallsyms.c: /proc/kallsyms parsed into one sorted array, looked up by binary search. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/array.h"
#include "user/kallsyms.h"
#include "user/proc_info.h"
#include "user/sym_search.h"

struct ksym {
	uint64_t addr;
	char *name;
	const char *module; /* points into modules, or NULL */
};

struct gs_kallsyms {
	struct ksym *syms;
	size_t nr, cap;
	char **modules; /* one copy per module name */
	size_t nr_modules;
};

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* aliases at one address: the alphabetically first, so lookups are deterministic */
	return strcmp(x->name, y->name);
}

static const char *intern_module(struct gs_kallsyms *ks, const char *name, size_t len)
{
	char **grown;

	for (size_t i = 0; i < ks->nr_modules; i++)
		if (strlen(ks->modules[i]) == len && !strncmp(ks->modules[i], name, len))
			return ks->modules[i];
	grown = realloc(ks->modules, (ks->nr_modules + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	ks->modules = grown;
	grown[ks->nr_modules] = strndup(name, len);
	return grown[ks->nr_modules] ? grown[ks->nr_modules++] : NULL;
}

/* One line, without its newline. Returns 0, or -ENOMEM; lines of no interest are skipped. */
static int parse_line(struct gs_kallsyms *ks, const char *line, size_t len)
{
	char buf[512], type, *end, *name, *mod;
	uint64_t addr;
	struct ksym *s;

	if (len >= sizeof(buf))
		return 0; /* no real symbol line is this long */
	memcpy(buf, line, len);
	buf[len] = '\0';
	errno = 0;
	addr = strtoull(buf, &end, 16);
	if (errno || end == buf || *end != ' ' || !end[1] || end[2] != ' ')
		return 0;
	type = end[1];
	if (type != 't' && type != 'T' && type != 'w' && type != 'W')
		return 0;
	if (!addr)
		return 0;
	name = end + 3;
	mod = strchr(name, '\t');
	if (mod)
		*mod++ = '\0';
	if (!*name)
		return 0;
	if (GS_ARRAY_RESERVE(ks->syms, ks->nr, ks->cap, 4096))
		return -ENOMEM;
	s = &ks->syms[ks->nr];
	s->addr = addr;
	s->module = NULL;
	if (mod && mod[0] == '[') {
		size_t mlen = strcspn(mod + 1, "]");

		s->module = intern_module(ks, mod + 1, mlen);
		if (!s->module)
			return -ENOMEM;
	}
	s->name = strdup(name);
	if (!s->name)
		return -ENOMEM;
	ks->nr++;
	return 0;
}

struct gs_kallsyms *gs_kallsyms__parse(const char *text)
{
	struct gs_kallsyms *ks = calloc(1, sizeof(*ks));
	const char *p = text;
	int err = 0;

	if (!ks)
		return NULL;
	while (*p && !err) {
		size_t len = strcspn(p, "\n");

		err = parse_line(ks, p, len);
		p += len + (p[len] == '\n');
	}
	if (!err && !ks->nr)
		err = -EINVAL;
	if (err) {
		gs_kallsyms__free(ks);
		errno = -err;
		return NULL;
	}
	qsort(ks->syms, ks->nr, sizeof(*ks->syms), cmp_ksym);
	return ks;
}

struct gs_kallsyms *gs_kallsyms__read(const char *path)
{
	struct gs_kallsyms *ks;
	char *text = gs_read_text_file(path, NULL);

	if (!text)
		return NULL;
	ks = gs_kallsyms__parse(text);
	free(text);
	return ks;
}

void gs_kallsyms__free(struct gs_kallsyms *ks)
{
	if (!ks)
		return;
	for (size_t i = 0; i < ks->nr; i++)
		free(ks->syms[i].name);
	for (size_t i = 0; i < ks->nr_modules; i++)
		free(ks->modules[i]);
	free(ks->syms);
	free(ks->modules);
	free(ks);
}

const char *gs_kallsyms__lookup(const struct gs_kallsyms *ks, uint64_t addr, uint64_t *offset,
				const char **module)
{
	/* the last symbol whose address is <= addr; among aliases, the first of them */
	size_t lo = GS_SYM_SEARCH(ks->syms, ks->nr, addr, addr);

	if (!lo)
		return NULL;
	lo--;
	while (lo && ks->syms[lo - 1].addr == ks->syms[lo].addr)
		lo--;
	if (offset)
		*offset = addr - ks->syms[lo].addr;
	if (module)
		*module = ks->syms[lo].module;
	return ks->syms[lo].name;
}

uint64_t gs_kallsyms__count(const struct gs_kallsyms *ks)
{
	return ks->nr;
}
