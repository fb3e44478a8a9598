/* SPDX-License-Identifier: MIT */
/* cli.h: command-line parsing into an options struct (no I/O; errors in errstr). */
#ifndef CLI_H
#define CLI_H
#include "err.h"
#include <stdint.h>
#include "task.h"

enum { CMD_RECORD, CMD_DUMP, CMD_TOP, CMD_REPLAY, CMD_COUNT };
enum { FMT_REPORT, FMT_FOLDED, FMT_CAPTURE, FMT_SVG, FMT_SPEEDSCOPE };
enum { UNWIND_AUTO, UNWIND_FP, UNWIND_CFI, UNWIND_ORC };
enum { SUMFMT_HUMAN, SUMFMT_KV, SUMFMT_JSON }; /* --summary-format */
#define CLI_MAX_FUNCS 64         /* count FUNC...: at most this many (bpcount.h's BPC_MAX) */
#define CLI_MAX_ELF 16           /* -e given this many times at most (an image, a map, .ko files) */

struct opts {
	int cmd;                 /* CMD_* */
	char host[256];          /* -H host, or "127.0.0.1" */
	int port;                /* -p / -H port, 0 if -u */
	const char *sock;        /* -u path */
	const char *qmp;         /* --qmp PATH: open a gdbstub through this QMP socket */
	const char *domain;      /* --domain NAME: the same through libvirt */
	const char *uri;         /* --connect URI for --domain */
	int rate;                /* -r HZ */
	uint64_t every;          /* replay --every N: instructions between samples (default 10^7) */
	uint64_t from, until;    /* replay --from / --until ICOUNT: the instruction counts sampled (0: all) */
	int resume_paused;       /* replay --resume-paused: drive a replay someone paused (e.g. to attach early) */
	const char *funcs[CLI_MAX_FUNCS]; /* count FUNC...: function names or 0x addresses */
	int nfuncs;              /* how many */
	uint64_t max_hits;       /* count, --phase: --max-hits N: breakpoint hits a second at most (default 1000) */
	const char *phase;       /* --phase NAME=BEGIN:END (phase.h), or NULL */
	uint64_t phase_occurrence; /* --phase-occurrence N: sample only the Nth (0: every one) */
	int offcpu;              /* --off-cpu: the tasks that are not running too (offcpu.h) */
	uint32_t offcpu_slice;   /* --off-cpu-slice: table entries a stop reads (0: OFFCPU_SLICE) */
	double duration;         /* -d seconds, 0 = until SIGINT/SIGTERM */
	double connect_timeout;  /* --connect-timeout seconds: connecting, handshake and locating the kernel */
	double max_pause;        /* --max-pause seconds: the watchdog resumes a VM stopped longer (0 = off) */
	const char *elf[CLI_MAX_ELF]; /* -e: kernel ELF, vmlinuz, symbol map, .ko files, directories */
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
	int quiet;               /* -q: nothing on stderr but errors (the summary too, unless asked for) */
	int summary;             /* --summary or --summary-format: the end-of-run summary even with -q */
	int summary_format;      /* --summary-format SUMFMT_*: for people (default), key value, JSON */
	int chains;              /* --chains N */
	double interval;         /* --interval SECONDS: top's time between refreshes (default 1) */
	int verify;              /* ELF check on (--no-verify clears) */
	int no_cache;            /* --no-cache: the caches under $XDG_CACHE_HOME/gdbsample neither read nor kept */
	int demangle;            /* C++/Rust names demangled (--no-demangle clears) */
	int os;                  /* --os: OS_AUTO (default), OS_LINUX, OS_TESTKERNEL or OS_NONE */
	const char *tasks;       /* --tasks FILE: a task description (taskdesc.h; "-": stdin), or NULL */
	int task_format;         /* --task-format TF_*: the folded root when tasks are known */
	struct task_filter filter; /* --pid LIST, --comm REGEX */
	int help;                /* -h: print usage */
	int version;             /* --version: print the version */
	int err;                 /* sticky error code */
	char errstr[ERR_MAX];        /* the one-line message for a bad flag */
};

/* Whether the end-of-run summary is printed: unless -q, or when asked for. */
int cli_summary_wanted(const struct opts *o);
/* Parse argv; -1 with errstr on any bad flag or value. */
int cli_parse(struct opts *o, int argc, char **argv);
/* Expand a --cpus list ("0,2-3") into indexes < ncpu; returns count or -1 (errstr set). */
int cli_cpus(struct opts *o, int ncpu, int *out);
/* The usage text. */
extern const char cli_usage[];

#endif
