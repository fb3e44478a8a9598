/* gdb.h: gdbstub client -- handshake, register layout, vCPU list, stop/continue/detach, requests. */
#ifndef GDB_H
#define GDB_H
#include "arch.h"
#include "conn.h"
#include "rsp.h"

#define GDB_MAX_CPUS 256
#define GDB_REQ_MAX 3072       /* we never send a write larger than this (QEMU drops > 4096) */
#define GDB_MEM_MAX 2048       /* largest `m` length QEMU <= 10.1 accepts */

/* What gdb_next returns. */
enum gdb_ev {
	GDB_EV_PACKET = 1, /* a packet: g->dec.pkt / g->dec.len */
	GDB_EV_NAK,        /* the stub rejected one of our packets (no reply will come for it) */
	GDB_EV_BAD,        /* a reply with a bad checksum (dropped; counts as that request's reply) */
	GDB_EV_TIMEOUT,    /* nothing within the timeout */
	GDB_EV_ERROR,      /* the connection failed or closed: g->err */
};

/* Counters of protocol trouble, all reported in the summary. */
struct gdb_stats {
	unsigned long naks;        /* '-' received */
	unsigned long retransmits; /* packets sent again after a '-' */
	unsigned long badsum;      /* replies with a bad checksum */
	unsigned long console;     /* 'O' console packets skipped */
	unsigned long stray_stops; /* stop replies that arrived when none was awaited */
	unsigned long recover;     /* stops where no stop reply came and `?` was used */
};

struct gdb {
	struct conn conn;               /* transport */
	struct rsp_dec dec;             /* decoder state; holds the last packet */
	uint8_t rbuf[65536];            /* bytes read but not yet decoded */
	size_t roff, rlen;              /* undecoded span of rbuf */
	char last[GDB_REQ_MAX];         /* last single packet sent, for retransmission */
	size_t lastlen;                 /* its length */
	int multiprocess;               /* stub agreed to multiprocess+: thread ids are p1.N */
	int noack;                      /* QStartNoAckMode in force */
	int running;                    /* we resumed the VM and have not stopped it since */
	int was_paused;                 /* no stop reply greeted us: the VM was already stopped when we
					 * connected (left so by an earlier client, the monitor or -S) */
	int packet_size;                /* PacketSize from qSupported */
	struct layout layout;           /* register layout from target.xml */
	int ncpu;                       /* vCPUs (threads) */
	int tids[GDB_MAX_CPUS];         /* thread id of vCPU i (QEMU: i + 1) */
	int pids[GDB_MAX_CPUS];         /* process id of vCPU i (QEMU: 1) */
	struct gdb_stats st;            /* protocol counters */
	int err;                        /* sticky error code (err.h) */
	char errstr[128];               /* what went wrong */
};

/* Connect (QEMU stops the VM when a client connects). */
int gdb_connect(struct gdb *g, const char *host, int port, const char *path);
/* Handshake: qSupported, stop state, target.xml layout, vCPU list. VM left stopped. */
int gdb_handshake(struct gdb *g);
/* Send one packet and wait for its reply (acks, console output, stray stops skipped). */
int gdb_request(struct gdb *g, const char *payload, int timeout_ms);
/* Raw write of already framed bytes (a pipelined batch). */
int gdb_write(struct gdb *g, const void *buf, size_t len);
/* Next reply event from the stream (acks skipped). */
enum gdb_ev gdb_next(struct gdb *g, int timeout_ms);
/* Stop the VM: 0x03 and wait for the stop reply; without one, recover with `?`. */
int gdb_stop(struct gdb *g);
/* Resume with `c` (no reply expected). */
int gdb_cont(struct gdb *g);
/* Skip every reply still in flight (after a failed batch): send qC, drop all up to its answer. */
int gdb_sync(struct gdb *g);
/* Detach with D;1: the VM resumes. */
int gdb_detach(struct gdb *g);
/* Format the Hg packet payload for vCPU i into out. */
void gdb_hg(const struct gdb *g, int cpu, char *out, size_t cap);
/* Read registers of vCPU i (Hg + g); fills regs, returns its length or -1. */
int gdb_regs(struct gdb *g, int cpu, uint8_t *regs, int cap);
/* Read len <= GDB_MEM_MAX bytes of vCPU i's memory at addr (Hg + m); 0 ok, -1 error (err not set
 * for E replies, which return -2). */
int gdb_mem(struct gdb *g, int cpu, uint64_t addr, uint8_t *out, int len);
/* Read len bytes (any size) of vCPU i's memory at addr, GDB_MEM_MAX per `m`, many `m` per
 * write; 0 ok, -1 connection error (err set), -2 some of it is unmapped. */
int gdb_read_block(struct gdb *g, int cpu, uint64_t addr, uint8_t *out, size_t len);
/* Parse a thread id "p1.2" / "2" (hex) into its thread number; -1 if malformed. */
int gdb_parse_tid(const char *s, const char **end);
void gdb_close(struct gdb *g);

#endif
