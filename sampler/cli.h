/* SPDX-License-Identifier: MIT */
/* cli.h: command-line parsing into an options struct (no I/O; errors in errstr). */
#ifndef CLI_H
#define CLI_H
#include <stdint.h>
#include "task.h"

enum { CMD_RECORD, CMD_DUMP, CMD_TOP };
enum { FMT_REPORT, FMT_FOLDED, FMT_CAPTURE };
enum { UNWIND_AUTO, UNWIND_FP, UNWIND_CFI, UNWIND_ORC };
#define CLI_MAX_ELF 4            /* -e given this many times at most (an image and a map) */

struct opts {
	int cmd;                 /* CMD_* */
	char host[256];          /* -H host, or "127.0.0.1" */
	int port;                /* -p / -H port, 0 if -u */
	const char *sock;        /* -u path */
	const char *qmp;         /* --qmp PATH: open a gdbstub through this QMP socket */
	const char *domain;      /* --domain NAME: the same through libvirt */
	const char *uri;         /* --connect URI for --domain */
	int rate;                /* -r HZ */
	double duration;         /* -d seconds, 0 = until SIGINT/SIGTERM */
	double connect_timeout;  /* --connect-timeout seconds: connecting, handshake and locating the kernel */
	double max_pause;        /* --max-pause seconds: the watchdog resumes a VM stopped longer (0 = off) */
	const char *elf[CLI_MAX_ELF]; /* -e: kernel ELF, vmlinuz, and/or symbol map */
	int nelf;                /* how many -e */
	int unwind;              /* --unwind UNWIND_* */
	int64_t kaslr;           /* --kaslr-offset */
	int have_kaslr;          /* --kaslr-offset given */
	const char *out;         /* -o FILE, NULL = stdout */
	int format;              /* -f FMT_* */
	int max_frames;          /* --max-frames */
	uint64_t klo, khi;       /* --kernel-range */
	int have_range;          /* --kernel-range given */
	const char *cpus;        /* --cpus LIST (validated against the vCPU count later) */
	int idle;                /* --idle: report idle samples */
	int quiet;               /* -q */
	int chains;              /* --chains N */
	int verify;              /* ELF check on (--no-verify clears) */
	int os;                  /* --os: OS_AUTO (default), OS_LINUX, OS_TESTKERNEL or OS_NONE */
	int task_format;         /* --task-format TF_*: the folded root when tasks are known */
	struct task_filter filter; /* --pid LIST, --comm REGEX */
	int help;                /* -h: print usage */
	int version;             /* --version: print the version */
	int err;                 /* sticky error code */
	char errstr[128];        /* the one-line message for a bad flag */
};

/* Parse argv; -1 with errstr on any bad flag or value. */
int cli_parse(struct opts *o, int argc, char **argv);
/* Expand a --cpus list ("0,2-3") into indexes < ncpu; returns count or -1 (errstr set). */
int cli_cpus(struct opts *o, int ncpu, int *out);
/* The usage text. */
extern const char cli_usage[];

#endif
