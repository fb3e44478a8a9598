/* SPDX-License-Identifier: MIT */
/* demangle.h: C++ and Rust (legacy and v0) symbol names made readable, through libiberty. */
#ifndef SAMPLER_DEMANGLE_H /* not DEMANGLE_H: libiberty's demangle.h uses that guard */
#define SAMPLER_DEMANGLE_H
#include <stdint.h>

/* Whether names are demangled (default on; --no-demangle turns it off). */
void demangle_enable(int on);
int demangle_enabled(void);
/* Whether a name looks like a C++ (Itanium ABI: _Z) or Rust v0 (_R) mangled one. Pure. */
int demangle_looks_mangled(const char *name);
/* The readable form of name (malloc'd), or NULL: demangling is off, name is not mangled, or
 * libiberty rejects it (then *rejected = 1: the caller keeps the raw name and counts it).
 * Parameters are kept, as c++filt -i writes them (overloads stay apart); Rust's legacy hash
 * suffix is dropped, as c++filt -i does. */
char *demangle(const char *name, int *rejected);

#endif
