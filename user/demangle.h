/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* demangle.h: Itanium C++ ABI demangling. */
#ifndef GS_DEMANGLE_H
#define GS_DEMANGLE_H

/* The demangled form of a mangled C++ name, or NULL when name is not one; caller frees. */
char *gs_demangle(const char *name);

#endif /* GS_DEMANGLE_H */
