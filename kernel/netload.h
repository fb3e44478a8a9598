/* SPDX-License-Identifier: MIT */
/* netload.h: a UDP load test from either end (docs/udp-shell.md): a counting sink, a sender. */
#ifndef NETLOAD_H
#define NETLOAD_H
#include "lib.h"

void netload_command(int argc, char **argv, struct out *o);	/* the shell's `netload` */
#endif
