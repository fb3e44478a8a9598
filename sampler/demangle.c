/* SPDX-License-Identifier: MIT */
/* demangle.c: C++ and Rust (legacy and v0) symbol names made readable, through libiberty. */
#include "demangle.h"
#include <libiberty/demangle.h>
#include <stdlib.h>

static int enabled = 1;

void demangle_enable(int on)
{
	enabled = on;
}

int demangle_enabled(void)
{
	return enabled;
}

int demangle_looks_mangled(const char *name)
{
	/* _Z<encoding> (a nested name N, a length digit, a substitution S, a local Z, ...) and
	 * Rust v0's _R<path> (an upper-case tag or an encoding-version digit) */
	if (name[0] != '_' || (name[1] != 'Z' && name[1] != 'R')) return 0;
	char c = name[2];
	return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

char *demangle(const char *name, int *rejected)
{
	*rejected = 0;
	if (!enabled || !demangle_looks_mangled(name)) return NULL;
	/* the style is libiberty's auto (the default): GNU v3 and Rust legacy for _Z, Rust v0 for _R */
	char *d = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI);
	*rejected = d == NULL;
	return d;
}
