/* SPDX-License-Identifier: MIT */
/* dwtop.c: every top-level DIE of an image's DWARF, unit by unit (libdw). */
#include "dwtop.h"

int dw_each_top(Dwarf *dw, int (*each)(Dwarf_Die *d, void *arg), void *arg)
{
	Dwarf_Off cu = 0, next;
	size_t hsize;
	while (dwarf_nextcu(dw, cu, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cudie, d;
		if (dwarf_offdie(dw, cu + hsize, &cudie) && dwarf_child(&cudie, &d) == 0) {
			do {
				int r = each(&d, arg);
				if (r) return r;
			} while (dwarf_siblingof(&d, &d) == 0);
		}
		cu = next;
	}
	return 0;
}
