/* SPDX-License-Identifier: MIT */
/* udpsh.h: the shell over UDP (docs/udp-shell.md): requests in, chunked replies out. */
#ifndef UDPSH_H
#define UDPSH_H
#include "lib.h"
#include "net.h"

#define UDPSH_PORT 9000

void udpsh_start(uint16_t port);	/* listen and start the task that runs the commands */
int udpsh_peer(struct udp_peer *p, uint16_t *port);	/* 1 inside a UDP command: who asked, our port */
void udpsh_print(struct out *o);	/* counters, for `net` */
#endif
