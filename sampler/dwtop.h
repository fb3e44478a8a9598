/* SPDX-License-Identifier: MIT */
/* dwtop.h: every top-level DIE of an image's DWARF, unit by unit (libdw) -- the walk the task descriptions and --off-cpu share. */
#ifndef DWTOP_H
#define DWTOP_H
#include <elfutils/libdw.h>

/* Calls each(d, arg) on every top-level DIE of every unit until it returns nonzero; that value,
 * or 0 when none did. */
int dw_each_top(Dwarf *dw, int (*each)(Dwarf_Die *d, void *arg), void *arg);

#endif
