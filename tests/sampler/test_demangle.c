/* SPDX-License-Identifier: MIT */
/* test_demangle.c: C++ and Rust names through libiberty, as c++filt -i writes them; --no-demangle. */
#include "check.h"
#include "../../sampler/demangle.h"
#include "../../sampler/symbols.h"
#include <stdlib.h>
#include <string.h>

/* name -> expected (NULL: left alone; "" : looks mangled, rejected) */
static const char *const cases[][2] = {
	{ "_ZN2ns11SymbolTable7ResolveEm", "ns::SymbolTable::Resolve(unsigned long)" },
	{ "_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector<int, std::allocator<int> >::push_back(int const&)" },
	{ "_ZN2ns5Table7ResolveEv", "ns::Table::Resolve()" },
	{ "_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write" },       /* Rust legacy: hash dropped */
	{ "_RNvCs15kBYyAo9fc_7mycrate7example", "mycrate::example" },            /* Rust v0 */
	{ "_ZN12_GLOBAL__N_14workEv", "(anonymous namespace)::work()" },
	{ "_ZN3foo", "" },                                                       /* looks mangled, is not */
	{ "_RX", "" },
	{ "chain4", NULL },                                                      /* C */
	{ "_Zero", NULL },                                                       /* _Z then lower case: C */
	{ "_raw_spin_lock", NULL },
	{ "_", NULL },
	{ "", NULL },
};

static void test_cases(void)
{
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int rejected = -1;
		char *d = demangle(cases[i][0], &rejected);
		if (!cases[i][1]) {
			CHECK(d == NULL && rejected == 0);
		} else if (!cases[i][1][0]) {
			CHECK(d == NULL && rejected == 1);
		} else {
			CHECK(d != NULL && rejected == 0);
			if (d) CHECK_STR(d, cases[i][1]);
		}
		free(d);
	}
}

/* Symbol tables hold the readable names, count what was demangled and refused; off keeps raw. */
static void test_tables(void)
{
	struct symtab t = { 0 };
	CHECK(syms_add(&t, 0x1000, 16, "_ZN2ns5Table7ResolveEv") == 0);
	CHECK(syms_add_mod(&t, 0x2000, 16, "_RNvCs15kBYyAo9fc_7mycrate7example", "rmod") == 0);
	CHECK(syms_add(&t, 0x3000, 16, "_ZN3foo") == 0);
	CHECK(syms_add(&t, 0x4000, 16, "plain_c") == 0);
	syms_finish(&t);
	char out[128];
	syms_format(&t, 0x1004, out, sizeof out);
	CHECK_STR(out, "ns::Table::Resolve()+0x4");
	syms_format(&t, 0x2000, out, sizeof out);
	CHECK_STR(out, "mycrate::example+0x0 [rmod]");
	syms_format(&t, 0x3001, out, sizeof out);
	CHECK_STR(out, "_ZN3foo+0x1");
	CHECK(t.demangled == 2 && t.undemangled == 1);
	syms_free(&t);

	demangle_enable(0);                                  /* --no-demangle */
	struct symtab r = { 0 };
	CHECK(syms_add(&r, 0x1000, 16, "_ZN2ns5Table7ResolveEv") == 0);
	syms_finish(&r);
	syms_format(&r, 0x1000, out, sizeof out);
	CHECK_STR(out, "_ZN2ns5Table7ResolveEv+0x0");
	CHECK(r.demangled == 0 && r.undemangled == 0);
	syms_free(&r);
	demangle_enable(1);
}

void test_demangle(void)
{
	test_cases();
	test_tables();
}
