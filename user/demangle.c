// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* demangle.c: C++ demangling through libstdc++'s __cxa_demangle (the ABI's own demangler). */
#include <stdlib.h>
#include <string.h>
#include "user/demangle.h"

char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

char *gs_demangle(const char *name)
{
	int status = 0;
	char *out;

	if (strncmp(name, "_Z", 2) != 0)
		return NULL;
	out = __cxa_demangle(name, NULL, NULL, &status);
	if (status != 0) {
		free(out);
		return NULL;
	}
	return out;
}
