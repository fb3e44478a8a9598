/* SPDX-License-Identifier: MIT */
/* gdb.h: gdbstub client -- connection and handshake (gdb_handshake.c), requests, stop/continue/detach
 * (gdb.c); the reply parsers they use are in gdb_reply.h. */
#ifndef GDB_H
#define GDB_H
#include "err.h"
#include "arch.h"
#include "conn.h"
#include "rsp.h"
#include <signal.h>
#include "gdb_reply.h"

#define GDB_MAX_CPUS 256
#define GDB_REQ_MAX 3072       /* we never send a write larger than this (QEMU drops > 4096) */
#define GDB_MEM_MAX 2048       /* largest `m` length QEMU <= 10.1 accepts */

/*
 * Bounds on what a stub can make us do: a misbehaving or hostile stub must not hold gdbsample
 * past its timeouts nor make it allocate without limit. Each is far above what QEMU needs.
 */
#define GDB_REQ_TIMEOUT_MS 3000 /* a reply, measured from its request whatever else arrives
				 * meanwhile (acks, console output, stray stops); QEMU answers in
				 * well under a millisecond */
#define GDB_ACCEPT_MS 1500     /* a free QEMU gdbstub accepts a client within milliseconds, one
				* attached to another never; a client on its way out (a killed
				* gdbsample's guard drains for 0.5 s) leaves within this */
#define GDB_XML_MAX (1 << 20)  /* target.xml with its includes (QEMU's largest, aarch64 with its
				* system registers, is ~100 KiB): a stub answering `m...` forever stops here */
#define GDB_XML_READS 1024     /* qXfer reads for one description: 1 MiB at QEMU's ~4 KiB a read
				* takes 256; a stub dribbling a byte a read stops here */
#define GDB_XML_FILES 32       /* annexes in one description (QEMU uses 1 to 5) */
#define GDB_XML_DEPTH 4        /* nesting of <xi:include> (QEMU nests 1 deep) */
#define GDB_THREAD_QUERIES (GDB_MAX_CPUS + 2) /* qfThreadInfo, one qsThreadInfo per vCPU (QEMU lists
				* one a reply), the closing `l`: a list that never ends stops here */

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
	long long sent_ms;              /* monotonic time of the last write: replies are due from it */
	int late_read;                  /* a read past the reply deadline was made since that write */
	int req_ms;                     /* per-request timeout (0: GDB_REQ_TIMEOUT_MS; tests shorten it) */
	int multiprocess;               /* stub agreed to multiprocess+: thread ids are p1.N */
	int noack;                      /* QStartNoAckMode in force */
	int running;                    /* we resumed the VM and have not stopped it since (or it is
					 * held by someone else: our next stop starts with a 0x03) */
	int owed;                       /* the stub sent a packet we have not acknowledged: QEMU 7.2
					 * then drops every byte but '+' and '$' -- a 0x03 included */
	int greeted;                    /* a stop reply came before the first reply: connecting
					 * stopped a running VM (QEMU < 8.1 says so; later ones never) */
	int qemu_version;               /* major * 100 + minor from qRcmd "info version" (0: unknown) */
	char runstate[24];              /* QEMU's run state after connecting, if not plain "paused"
					 * ("postmigrate", "prelaunch"...; "" if plain or unknown) */
	int capture;                    /* gdb_next keeps console ('O') text in cons */
	char cons[512];                 /* that text, NUL-terminated (truncated) */
	size_t conslen;                 /* its length */
	int raced;                      /* a write the pause watchdog raced: call gdb_resync */
	int packet_size;                /* PacketSize from qSupported */
	char first[64];                 /* the first bytes the peer sent (a QEMU monitor's greeting?) */
	size_t firstlen;                /* how many */
	int not_stub;                   /* they were a QEMU monitor's greeting (error set) */
	struct layout layout;           /* register layout from target.xml */
	int ncpu;                       /* vCPUs (threads) */
	int tids[GDB_MAX_CPUS];         /* thread id of vCPU i (QEMU: i + 1) */
	int pids[GDB_MAX_CPUS];         /* process id of vCPU i (QEMU: 1) */
	struct gdb_stats st;            /* protocol counters */
	/* Around every write: gate(arg, 1) before (-1 forbids it: the pause watchdog resumed the VM
	 * meanwhile, see guard.h), gate(arg, 0) after (-1: it did so during the write). NULL: none. */
	int (*gate)(void *arg, int enter);
	void *gate_arg;                 /* its argument */
	int err;                        /* sticky error code (err.h) */
	char errstr[ERR_MAX];               /* what went wrong */
};

/* The per-request timeout in force: g->req_ms, or GDB_REQ_TIMEOUT_MS if unset. */
static inline int gdb_req_ms(const struct gdb *g)
{
	return g->req_ms > 0 ? g->req_ms : GDB_REQ_TIMEOUT_MS;
}

/* ---- gdb_handshake.c ---- */
/* Connect (QEMU stops the VM when a client connects). */
int gdb_connect(struct gdb *g, const char *host, int port, const char *path);
/* Handshake: qSupported, stop state, target.xml layout, vCPU list. VM left stopped. */
int gdb_handshake(struct gdb *g);
/* ---- gdb.c: the request stream ---- */
/* Send one packet and wait for its reply (acks, console output, stray stops skipped). */
int gdb_request(struct gdb *g, const char *payload, int timeout_ms);
/* Raw write of already framed bytes (a pipelined batch). */
int gdb_write(struct gdb *g, const void *buf, size_t len);
/* After a write failed with ERR_RESCUED and g->raced: it landed while the guard resumed the VM,
 * so the VM may be stopped again and replies may be in flight. Resume it (the guard's bytes,
 * which resume from every state), drain the stream until it is quiet, reset the decoder. */
int gdb_resync(struct gdb *g);
/* Next reply event from the stream (acks and console output skipped). The timeout counts from the
 * last write (the request), not from this call: however many events a caller skips, it hears
 * GDB_EV_TIMEOUT once timeout_ms have passed since it wrote (bytes already received are still
 * delivered, and one last read is made if the caller comes late). */
enum gdb_ev gdb_next(struct gdb *g, int timeout_ms);
/* Stop the VM: 0x03 and wait for the stop reply; without one, recover with `?`. */
int gdb_stop(struct gdb *g);
/* Resume with `c` (no reply expected). */
int gdb_cont(struct gdb *g);
/* Skip every reply still in flight (after a failed batch): send qC, drop all up to its answer. */
int gdb_sync(struct gdb *g);
/* Without waiting: decode what the stub sent unasked since everything asked was answered (after
 * `c`). Returns how many stop replies were among it -- each one a stop someone else caused (a
 * monitor `stop`, a shutdown, an I/O error), the last one's signal in *sig -- or -1 (ERR_EOF:
 * QEMU is gone). Other packets are counted and dropped. */
int gdb_take_unasked(struct gdb *g, int *sig);
/* Is the VM running? Stop it if so: 0x03 then qC. 1: the stop reply came first -- it was running
 * and we stopped it; 0: only qC's answer -- it was stopped already (0x03 to a stopped VM is
 * discarded), by someone else; -1: failed. */
int gdb_probe_stop(struct gdb *g);
/* Does the stub have a thread tid (T packet)? 1 yes, 0 no, -1 failed. VM stopped. */
int gdb_alive(struct gdb *g, int pid, int tid);
/* Detach with D;1: the VM resumes. */
int gdb_detach(struct gdb *g);
/* Format the Hg packet payload for vCPU i into out. */
void gdb_hg(const struct gdb *g, int cpu, char *out, size_t cap);
/* Read registers of vCPU i (Hg + g); fills regs, returns its length or -1 (also for a reply too
 * short to hold pc, sp and fp: layout.need). */
int gdb_regs(struct gdb *g, int cpu, uint8_t *regs, int cap);
/* One register by its number (`p`), little-endian as in `g`: 0 with *val, -1 connection error,
 * -2 the stub refused it. */
int gdb_reg(struct gdb *g, int cpu, int num, uint64_t *val);
/* Read len <= GDB_MEM_MAX bytes of vCPU i's memory at addr (Hg + m); 0 ok, -1 error (err not set
 * for E replies, which return -2). */
int gdb_mem(struct gdb *g, int cpu, uint64_t addr, uint8_t *out, int len);
/* Read len bytes (any size) of vCPU i's memory at addr, GDB_MEM_MAX per `m`, many `m` per
 * write; 0 ok, -1 connection error (err set), -2 some of it is unmapped. */
int gdb_read_block(struct gdb *g, int cpu, uint64_t addr, uint8_t *out, size_t len);
/* Several blocks in as few round trips as gdb_read_block takes for their total: each block's
 * ok says whether all of it came. 0 all came, -2 some did not, -1 connection error (err set). */
struct gdb_block {
	uint64_t addr;
	size_t len;
	uint8_t *out;
	int ok;
};
int gdb_read_blocks(struct gdb *g, int cpu, struct gdb_block *b, int nb);
/* Close the connection to the stub. */
void gdb_close(struct gdb *g);

/* QEMU's run state now, through the monitor (qRcmd "info status"; one round trip): 0 running, 1
 * stopped (state: "debug" when stopped by a gdbstub client, "finish-migrate", "paused", ...; "" for
 * plain paused), -1 on an error (g->err). Only for a QEMU stub (qemu_version set). */
int gdb_run_state(struct gdb *g, char *state, size_t cap);
/* Whether QEMU is migrating the VM (qRcmd "info migrate"; one round trip, only with the VM
 * stopped: a byte sent to a running QEMU stops it): gdb_parse_migration's 1 or 0, 2 when the text
 * was unreadable, -1 on a lost connection (g->err). Only for a QEMU stub. */
int gdb_migrating(struct gdb *g);
/* Record/replay through the monitor (qRcmd; one round trip each, VM stopped): the mode
 * (GDB_RR_* of gdb_reply.h) and *icount, from "info replay" (-1: lost connection, or a text that
 * is not QEMU's: ERR_PROTO); and a breakpoint at instruction count icount (replay_break: 0, -1
 * lost connection or refused -- ERR_PROTO with QEMU's words). */
int gdb_replay_info(struct gdb *g, uint64_t *icount);
int gdb_replay_break(struct gdb *g, uint64_t icount);
/* Resume with `c` and wait up to timeout_ms for the VM to stop by itself (a replay breakpoint):
 * 0 stopped, 1 the target exited (a W/X reply: a replay whose recording ended; *code its status),
 * 2 *intr was set meanwhile (a signal): stopped with 0x03 instead, -1 error (ERR_TIMEOUT when
 * no stop came in time; the VM is then stopped with 0x03 if it can be). */
int gdb_cont_until_stop(struct gdb *g, int timeout_ms, volatile sig_atomic_t *intr, int *code);
/* After `c`: wait until timeout_ms from it for a stop reply. 0 stopped (*si), 1 none came (the VM
 * runs on), -1 error (g->err). */
int gdb_wait_stop(struct gdb *g, int timeout_ms, struct gdb_stopinfo *si);
/* Single-step vCPU cpu alone (vCont;s: the others stay stopped) and wait for its stop reply
 * (*si): 0, -1 error (ERR_TIMEOUT when none came: the VM is then stopped with 0x03). */
int gdb_step(struct gdb *g, int cpu, struct gdb_stopinfo *si);
/* Resume the VM through the monitor (qRcmd "cont"; one round trip) rather than `c`: QEMU checks
 * the run state and resumes under one lock, and refuses a VM a migration is finishing, which `c`
 * would start (and QEMU then aborts: 'running' -> 'postmigrate'). 0 resumed, 1 refused (the text
 * in g->cons), -1 on a lost connection (g->err). Only for a QEMU stub. */
int gdb_monitor_cont(struct gdb *g);

#endif
