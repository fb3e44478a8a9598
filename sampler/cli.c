/* SPDX-License-Identifier: MIT */
/* cli.c: command-line parsing into an options struct (no I/O; errors in errstr). */
#include "cli.h"
#include "conn.h"
#include "err.h"
#include "phase.h"
#include "textnum.h"
#include "virt.h"
#include <ctype.h>
#include <getopt.h>
#include <stdlib.h>

const char cli_usage[] =
	"usage: gdbsample [record|dump|top|replay|count] (-p PORT | -H HOST:PORT | -u SOCKET | --qmp SOCKET |\n"
	"                 --domain NAME)\n"
	"                 [options]\n"
	"  record (default)   sample until Ctrl-C or -d, then write the result\n"
	"  dump               stop once and print every vCPU's stack\n"
	"  top                live view of the hottest functions and chains; on a terminal full screen,\n"
	"                     keys q quit, s/t sort by self/total samples, c chains, p pause\n"
	"  replay             drive a QEMU replaying a recording (-icount shift=N,rr=replay,rrfile=F):\n"
	"                     sample at every multiple of --every instructions, to the recording's end\n"
	"                     or --until; the same recording gives the same profile on every replay\n"
	"  count FUNC...      count calls of each function (its entry, by a gdbstub breakpoint) until\n"
	"                     Ctrl-C or -d: hits and hits per second, like a function tracer's counts\n"
	"  -p PORT            gdbstub on 127.0.0.1:PORT\n"
	"  -H HOST:PORT       gdbstub on HOST:PORT\n"
	"  -u PATH            gdbstub on a unix socket (QEMU -gdb unix:PATH,server=on)\n"
	"  --qmp PATH         a running VM's QMP socket: open a gdbstub for the run, close it after\n"
	"  --domain NAME      the same for a libvirt domain\n"
	"  --connect URI      with --domain: the libvirt URI, e.g. qemu:///system (default libvirt's)\n"
	"  -r HZ              samples per second, 1-10000 (default 100)\n"
	"  -d SECONDS         stop after SECONDS (default: until SIGINT/SIGTERM)\n"
	"  --interval SECONDS top: seconds between refreshes, 0.1-3600 (default 1)\n"
	"  --every N          replay: instructions between samples, 1000-10^15 (default 10000000)\n"
	"  --from ICOUNT      replay: the first instruction count sampled at (rounded up to --every)\n"
	"  --until ICOUNT     replay: the last instruction count sampled at (default the recording's end)\n"
	"  --resume-paused    replay: drive a replay that is paused when gdbsample comes (a monitor\n"
	"                     `stop` to attach before --from); it is left running at the end\n"
	"  --max-hits N       count: breakpoint hits a second at most, 1-100000 (default 1000): past\n"
	"                     it the breakpoints are out for the rest of that second (each hit stops\n"
	"                     the VM; the summary says how long they were out); with --phase, a\n"
	"                     phase hit past it ends the run (its bounds could no longer be kept)\n"
	"  --phase NAME=BEGIN:END  record: sample only while the phase is open -- from a vCPU's\n"
	"                     entry into BEGIN to one's entry into END (functions or 0x addresses,\n"
	"                     gdbstub breakpoints, removed on every way out); the capture keeps each\n"
	"                     occurrence's bounds, the summary their count and sampled time\n"
	"  --phase-occurrence N  sample only the phase's Nth occurrence; the run ends when it closes\n"
	"  --off-cpu          record: every task that is not running too, each stop -- its saved stack\n"
	"                     under off-cpu/blocked, off-cpu/uninterruptible or off-cpu/runnable,\n"
	"                     weighed by the wall time it waited (-f folded, svg, report or capture; our\n"
	"                     test kernel's tasks through its DWARF, an x86_64 or arm64 Linux's through\n"
	"                     its BTF)\n"
	"  --off-cpu-slice N  tasks each stop reads (default 4, a Linux list's 2, at most 16): every task is\n"
	"                     seen each tasks/N stops, weighed by the time between; more costs more pause\n"
	"  -e FILE            the guest kernel: an ELF (vmlinux), a compressed vmlinuz/bzImage, or a\n"
	"                     symbol map (System.map, /proc/kallsyms); repeat for an image and a map;\n"
	"                     without -e a Linux guest's kernel is read from its memory (and cached)\n"
	"  --no-cache         neither read nor keep the cache ($XDG_CACHE_HOME/gdbsample): a vmlinuz's\n"
	"                     decompressed kernel, a kernel read from guest memory\n"
	"  --unwind METHOD    auto (default: ORC, else DWARF CFI, else frame pointers, per frame),\n"
	"                     fp, cfi or orc\n"
	"  --kaslr-offset HEX the guest's KASLR offset (default: found by reading the guest)\n"
	"  -o FILE            write the result to FILE (default stdout)\n"
	"  -f FORMAT          report (default), folded, capture, svg (a flame graph) or speedscope\n"
	"                     (svg and speedscope through gdbsample-analyze; speedscope needs -e)\n"
	"  --chains N         chains in the report (default 8)\n"
	"  --max-frames N     frames per sample, 1-255 (default 64)\n"
	"  --kernel-range LO:HI  kernel addresses, hex (default the upper half; for a kernel linked\n"
	"                        below it, as our aarch64 kernel, the image's text)\n"
	"  --cpus LIST        vCPUs to sample, e.g. 0,2-3 (default all)\n"
	"  --idle             report idle samples (default: count and drop them)\n"
	"  --os OS            who runs on each vCPU: auto (default: Linux from the image's BTF, our\n"
	"                     test kernel from its DWARF), linux, testkernel or none\n"
	"  --tasks FILE       how to find the current task in any kernel with DWARF: a task\n"
	"                     description (docs/tasks.md; - reads stdin), resolved in the image (-e)\n"
	"  --task-format F    the folded stack's root when tasks are known: comm (default), comm-pid,\n"
	"                     pid or cpu\n"
	"  --pid LIST         keep only samples of these pids or thread-group ids, e.g. 1,5-7\n"
	"  --comm REGEX       keep only samples whose task name matches (POSIX extended regex)\n"
	"  --no-verify        skip checking the image against the guest (and finding the KASLR offset)\n"
	"  --no-demangle      keep C++ and Rust symbol names as the image holds them (_ZN..., _R...)\n"
	"  --max-pause SECONDS  resume the guest if one sample keeps it stopped longer (gdbsample\n"
	"                     stopped or starved); 0 turns the watchdog off (default 1)\n"
	"  --connect-timeout SECONDS  give up if connecting and the handshake with the gdbstub take\n"
	"                     longer, 0.1-3600 (default 10); finding the kernel in the guest then\n"
	"                     gets 120 s, or SECONDS if longer\n"
	"  -q, --quiet        nothing on stderr but errors: no warnings, no live status line (drawn\n"
	"                     only when stderr is a terminal), no end-of-run summary\n"
	"  --summary          print the end-of-run summary on stderr even with -q\n"
	"  --summary-format F the summary as human (default), kv (key value lines, as in a capture)\n"
	"                     or json (one object, docs/json.md); implies --summary\n"
	"  --version          print gdbsample's version and exit\n"
	"  -h, --help         print this help and exit\n";

static int bad(struct opts *o, const char *fmt, const char *a, const char *b)
{
	ERR_SET(o, ERR_USAGE, fmt, a, b);
	return -1;
}

/* Strict integer in [lo, hi]. */
static int num(struct opts *o, const char *flag, const char *s, long lo, long hi, int *out)
{
	char *e;
	errno = 0;
	long v = strtol(s, &e, 10);
	if (!*s || !(isdigit((unsigned char)*s) || (*s == '-' && isdigit((unsigned char)s[1]))) || *e || errno ||
	    v < lo || v > hi) { /* strtol would skip leading spaces: " 80" is not a number here */
		char range[64];
		snprintf(range, sizeof range, "%ld-%ld", lo, hi);
		ERR_SET(o, ERR_USAGE, "%s: bad value '%.40s' (expected %s)", flag, s, range);
		return -1;
	}
	*out = (int)v;
	return 0;
}

/* The n bytes at s as a 64-bit hex number, "0x" optional, nothing else (no space, sign or
 * other byte, as strtoull would take): 0, or -1. */
static int hexarg(const char *s, size_t n, uint64_t *out)
{
	if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s += 2, n -= 2;
	return textnum_hex(s, n, UINT64_MAX, out);
}

/* A duration or time limit: ASCII digits with an optional fraction and exponent, as strtod
 * reads them -- but never its leading spaces, sign, hex floats, "inf" or "nan". */
static int decimal_ok(const char *s)
{
	const char *p = s;
	int digits = 0;
	for (; *p >= '0' && *p <= '9'; p++) digits++;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++) digits++;
	if (digits && (*p == 'e' || *p == 'E')) {
		p++;
		if (*p == '-' || *p == '+') p++;
		if (!(*p >= '0' && *p <= '9')) return 0;
		while (*p >= '0' && *p <= '9') p++;
	}
	return digits && !*p;
}

static int range(struct opts *o, const char *s)
{
	const char *colon = strchr(s, ':');
	uint64_t lo, hi;
	if (!colon) return bad(o, "--kernel-range: expected LO:HI in hex, got '%.40s'%s", s, "");
	if (hexarg(s, (size_t)(colon - s), &lo) || hexarg(colon + 1, strlen(colon + 1), &hi) || lo >= hi)
		return bad(o, "--kernel-range: expected LO:HI in hex with LO < HI, got '%.40s'%s", s, "");
	o->klo = lo;
	o->khi = hi;
	o->have_range = 1;
	return 0;
}

/* The flag getopt_long complained about: -x for a short one, --name for a long one (optopt is
 * then its value, or 0 when unknown: the argument itself, printable characters only). */
static void flag_name(const struct option *lopts, int opt, const char *arg, char *out, size_t cap)
{
	for (const struct option *l = lopts; opt > 255 && l->name; l++)
		if (l->val == opt) {
			snprintf(out, cap, "--%s", l->name);
			return;
		}
	if (opt > 0 && opt < 256) {
		snprintf(out, cap, "-%c", opt);
		return;
	}
	snprintf(out, cap, "%.40s", arg ? arg : "?");
	for (char *c = out; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f) *c = '?';
}

enum { OPT_MAXF = 256, OPT_RANGE, OPT_CPUS, OPT_IDLE, OPT_CHAINS, OPT_NOVERIFY, OPT_QMP, OPT_DOMAIN, OPT_CONNECT,
       OPT_UNWIND, OPT_KASLR, OPT_MAXPAUSE, OPT_OS, OPT_TASKS, OPT_TASKFMT, OPT_PID, OPT_COMM, OPT_VERSION,
       OPT_CONNTIMEOUT, OPT_SUMMARY, OPT_SUMFMT, OPT_NODEMANGLE };
enum { OPT_INTERVAL = 512, OPT_EVERY, OPT_FROM, OPT_UNTIL, OPT_RESUMEPAUSED, OPT_MAXHITS, OPT_PHASE, OPT_PHASEOCC, OPT_OFFCPU, OPT_OFFCPU_SLICE, OPT_NOCACHE };

int cli_parse(struct opts *o, int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "max-frames", required_argument, 0, OPT_MAXF },
		{ "kernel-range", required_argument, 0, OPT_RANGE },
		{ "cpus", required_argument, 0, OPT_CPUS },
		{ "idle", no_argument, 0, OPT_IDLE },
		{ "chains", required_argument, 0, OPT_CHAINS },
		{ "no-verify", no_argument, 0, OPT_NOVERIFY },
		{ "no-cache", no_argument, 0, OPT_NOCACHE },
		{ "no-demangle", no_argument, 0, OPT_NODEMANGLE },
		{ "qmp", required_argument, 0, OPT_QMP },
		{ "domain", required_argument, 0, OPT_DOMAIN },
		{ "connect", required_argument, 0, OPT_CONNECT },
		{ "unwind", required_argument, 0, OPT_UNWIND },
		{ "kaslr-offset", required_argument, 0, OPT_KASLR },
		{ "max-pause", required_argument, 0, OPT_MAXPAUSE },
		{ "connect-timeout", required_argument, 0, OPT_CONNTIMEOUT },
		{ "os", required_argument, 0, OPT_OS },
		{ "tasks", required_argument, 0, OPT_TASKS },
		{ "task-format", required_argument, 0, OPT_TASKFMT },
		{ "pid", required_argument, 0, OPT_PID },
		{ "comm", required_argument, 0, OPT_COMM },
		{ "version", no_argument, 0, OPT_VERSION },
		{ "interval", required_argument, 0, OPT_INTERVAL },
		{ "every", required_argument, 0, OPT_EVERY },
		{ "from", required_argument, 0, OPT_FROM },
		{ "until", required_argument, 0, OPT_UNTIL },
		{ "resume-paused", no_argument, 0, OPT_RESUMEPAUSED },
		{ "max-hits", required_argument, 0, OPT_MAXHITS },
		{ "phase", required_argument, 0, OPT_PHASE },
		{ "phase-occurrence", required_argument, 0, OPT_PHASEOCC },
		{ "off-cpu", no_argument, 0, OPT_OFFCPU },
		{ "off-cpu-slice", required_argument, 0, OPT_OFFCPU_SLICE },
		{ "quiet", no_argument, 0, 'q' },
		{ "summary", no_argument, 0, OPT_SUMMARY },
		{ "summary-format", required_argument, 0, OPT_SUMFMT },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	memset(o, 0, sizeof *o);
	o->os = OS_AUTO;
	o->rate = 100;
	o->max_frames = 64;
	o->chains = 8;
	o->verify = 1;
	o->demangle = 1;
	o->max_pause = 1.0;
	o->connect_timeout = 10.0;
	o->interval = 1.0;
	o->klo = 0xffff800000000000ull;
	o->khi = 0xffffffffffffffffull;
	strcpy(o->host, "127.0.0.1");
	int first = 1, conns = 0, c, have_format = 0, have_interval = 0, have_replay = 0, have_rate = 0, have_pause = 0, have_maxhits = 0;
	o->every = 10000000;
	if (argc > 1 && argv[1][0] != '-') {
		if (!strcmp(argv[1], "record")) o->cmd = CMD_RECORD;
		else if (!strcmp(argv[1], "dump")) o->cmd = CMD_DUMP;
		else if (!strcmp(argv[1], "top")) o->cmd = CMD_TOP;
		else if (!strcmp(argv[1], "replay")) o->cmd = CMD_REPLAY;
		else if (!strcmp(argv[1], "count")) o->cmd = CMD_COUNT;
		else return bad(o, "unknown command '%.40s' (record, dump, top, replay or count)%s", argv[1], "");
		first = 2;
	}
	char **av = argv + first - 1; /* av[0] stands for the program name, options follow */
	int ac = argc - first + 1;
	optind = 0; /* 0, not 1: makes glibc reset its internal state for a fresh parse */
	opterr = 0;
	while ((c = getopt_long(ac, av, ":p:H:u:r:d:e:o:f:qh", lopts, NULL)) != -1) {
		char *e;
		switch (c) {
		case 'p':
			if (num(o, "-p", optarg, 1, 65535, &o->port)) return -1;
			conns++;
			break;
		case 'H':
			if (conn_parse_hostport(optarg, o->host, sizeof o->host, &o->port))
				return bad(o, "-H: expected HOST:PORT, got '%.40s'%s", optarg, "");
			conns++;
			break;
		case 'u':
			o->sock = optarg;
			conns++;
			break;
		case 'r':
			if (num(o, "-r", optarg, 1, 10000, &o->rate)) return -1;
			have_rate = 1;
			break;
		case 'd':
			errno = 0;
			o->duration = strtod(optarg, &e);
			if (!decimal_ok(optarg) || *e || errno || !(o->duration >= 0.001) || o->duration > 1e7)
				return bad(o, "-d: bad duration '%.40s' (0.001 to 10000000 seconds)%s", optarg, "");
			break;
		case 'e':
			if (o->nelf == CLI_MAX_ELF) return bad(o, "-e: given more than %s times%s", "16", "");
			if (!*optarg) return bad(o, "-e: empty file name%s%s", "", "");
			o->elf[o->nelf++] = optarg;
			break;
		case 'o': o->out = optarg; break;
		case 'f':
			if (!strcmp(optarg, "report")) o->format = FMT_REPORT;
			else if (!strcmp(optarg, "folded")) o->format = FMT_FOLDED;
			else if (!strcmp(optarg, "capture")) o->format = FMT_CAPTURE;
			else if (!strcmp(optarg, "svg")) o->format = FMT_SVG;
			else if (!strcmp(optarg, "speedscope")) o->format = FMT_SPEEDSCOPE;
			else return bad(o, "-f: unknown format '%.40s' (report, folded, capture, svg or speedscope)%s", optarg, "");
			have_format = 1;
			break;
		case 'q': o->quiet = 1; break;
		case OPT_SUMMARY: o->summary = 1; break;
		case OPT_SUMFMT:
			if (!strcmp(optarg, "human")) o->summary_format = SUMFMT_HUMAN;
			else if (!strcmp(optarg, "kv")) o->summary_format = SUMFMT_KV;
			else if (!strcmp(optarg, "json")) o->summary_format = SUMFMT_JSON;
			else return bad(o, "--summary-format: unknown format '%.40s' (human, kv or json)%s", optarg, "");
			o->summary = 1;
			break;
		case 'h': o->help = 1; return 0;
		case OPT_VERSION: o->version = 1; return 0;
		case OPT_MAXF:
			if (num(o, "--max-frames", optarg, 1, 255, &o->max_frames)) return -1;
			break;
		case OPT_RANGE:
			if (range(o, optarg)) return -1;
			break;
		case OPT_CPUS:
			o->cpus = optarg;
			if (cli_cpus(o, 1 << 16, NULL) < 0) return -1;
			break;
		case OPT_IDLE: o->idle = 1; break;
		case OPT_CHAINS:
			if (num(o, "--chains", optarg, 1, 1000000, &o->chains)) return -1;
			break;
		case OPT_NOVERIFY: o->verify = 0; break;
		case OPT_NOCACHE: o->no_cache = 1; break;
		case OPT_NODEMANGLE: o->demangle = 0; break;
		case OPT_QMP:
			o->qmp = optarg;
			conns++;
			break;
		case OPT_DOMAIN:
			if (!virt_built()) return bad(o, "--domain: gdbsample was built without libvirt%s%s", "", "");
			o->domain = optarg;
			conns++;
			break;
		case OPT_CONNECT: o->uri = optarg; break;
		case OPT_UNWIND:
			if (!strcmp(optarg, "auto")) o->unwind = UNWIND_AUTO;
			else if (!strcmp(optarg, "fp")) o->unwind = UNWIND_FP;
			else if (!strcmp(optarg, "cfi")) o->unwind = UNWIND_CFI;
			else if (!strcmp(optarg, "orc")) o->unwind = UNWIND_ORC;
			else return bad(o, "--unwind: unknown method '%.40s' (auto, fp, cfi or orc)%s", optarg, "");
			break;
		case OPT_OS:
			if (!strcmp(optarg, "auto")) o->os = OS_AUTO;
			else if (!strcmp(optarg, "linux")) o->os = OS_LINUX;
			else if (!strcmp(optarg, "testkernel")) o->os = OS_TESTKERNEL;
			else if (!strcmp(optarg, "none")) o->os = OS_NONE;
			else return bad(o, "--os: unknown OS '%.40s' (auto, linux, testkernel or none)%s", optarg, "");
			break;
		case OPT_TASKS:
			o->tasks = optarg;
			break;
		case OPT_TASKFMT: {
			int k = 0;
			while (k < 4 && strcmp(optarg, task_format_names[k])) k++;
			if (k == 4) return bad(o, "--task-format: unknown format '%.40s' (comm, comm-pid, pid or cpu)%s", optarg, "");
			o->task_format = k;
			break;
		}
		case OPT_PID:
			if (task_filter_pids(&o->filter, optarg) < 0)
				return bad(o, "--pid: expected a list like 1,5-7, got '%.40s'%s", optarg, "");
			break;
		case OPT_COMM: {
			char why[256];
			if (task_filter_comm(&o->filter, optarg, why, sizeof why) < 0)
				return bad(o, "--comm: bad regular expression (%s)%s", why, "");
			break;
		}
		case OPT_MAXPAUSE:
			errno = 0;
			o->max_pause = strtod(optarg, &e);
			if (!decimal_ok(optarg) || *e || errno || !(o->max_pause == 0 || (o->max_pause >= 0.01 && o->max_pause <= 3600)))
				return bad(o, "--max-pause: bad value '%.40s' (0, or 0.01-3600 seconds)%s", optarg, "");
			have_pause = 1;
			break;
		case OPT_CONNTIMEOUT:
			errno = 0;
			o->connect_timeout = strtod(optarg, &e);
			if (!*optarg || *e || errno || !(o->connect_timeout >= 0.1 && o->connect_timeout <= 3600))
				return bad(o, "--connect-timeout: bad value '%.40s' (0.1-3600 seconds)%s", optarg, "");
			break;
		case OPT_EVERY:
		case OPT_FROM:
		case OPT_UNTIL: {
			const char *f = c == OPT_EVERY ? "--every" : c == OPT_FROM ? "--from" : "--until";
			uint64_t v;
			if (textnum_decz(optarg, 1000000000000000000ull, &v) || (c == OPT_EVERY && (v < 1000 || v > 1000000000000000ull)))
				return bad(o, "%s: bad value '%.40s' (an instruction count: decimal digits; --every 1000-10^15)", f,
					   optarg);
			*(c == OPT_EVERY ? &o->every : c == OPT_FROM ? &o->from : &o->until) = v;
			have_replay = 1;
			break;
		}
		case OPT_RESUMEPAUSED:
			o->resume_paused = 1;
			have_replay = 1;
			break;
		case OPT_MAXHITS: {
			uint64_t v;
			if (textnum_decz(optarg, 100000, &v) || v < 1)
				return bad(o, "--max-hits: bad value '%.40s' (1-100000 hits a second)%s", optarg, "");
			o->max_hits = v;
			have_maxhits = 1;
			break;
		}
		case OPT_PHASE: {
			static struct phase ph; /* checked here, parsed again by cmd_record */
			char why[ERR_MAX];
			if (o->phase) return bad(o, "--phase: given twice (one phase a run)%s%s", "", "");
			if (phase_parse(&ph, optarg, why, sizeof why) < 0) return bad(o, "%s%s", why, "");
			o->phase = optarg;
			break;
		}
		case OPT_OFFCPU: o->offcpu = 1; break;
		case OPT_OFFCPU_SLICE: {
			uint64_t v;
			if (textnum_decz(optarg, 4096, &v) || v < 1)
				return bad(o, "--off-cpu-slice: bad value '%.40s' (1-4096 task table entries a stop)%s", optarg, "");
			o->offcpu_slice = (uint32_t)v;
			break;
		}
		case OPT_PHASEOCC:
			if (textnum_decz(optarg, 1000000000, &o->phase_occurrence) || o->phase_occurrence < 1)
				return bad(o, "--phase-occurrence: bad value '%.40s' (1-1000000000)%s", optarg, "");
			break;
		case OPT_INTERVAL:
			errno = 0;
			o->interval = strtod(optarg, &e);
			if (!decimal_ok(optarg) || *e || errno || !(o->interval >= 0.1 && o->interval <= 3600))
				return bad(o, "--interval: bad value '%.40s' (0.1-3600 seconds)%s", optarg, "");
			have_interval = 1;
			break;
		case OPT_KASLR: {
			const char *v = optarg[0] == '-' ? optarg + 1 : optarg;
			uint64_t k;
			if (hexarg(v, strlen(v), &k) || k % 0x1000 || k >= (1ull << 40))
				return bad(o, "--kaslr-offset: expected a page-aligned hex offset, got '%.40s'%s", optarg, "");
			o->kaslr = optarg[0] == '-' ? -(int64_t)k : (int64_t)k;
			o->have_kaslr = 1;
			break;
		}
		case ':': {
			char f[48];
			flag_name(lopts, optopt, av[optind - 1], f, sizeof f);
			return bad(o, "%s: missing value%s", f, "");
		}
		default: {
			char f[48];
			flag_name(lopts, optopt, av[optind - 1], f, sizeof f);
			return bad(o, "unknown option '%s' (see gdbsample -h)%s", f, "");
		}
		}
	}
	if (o->cmd == CMD_COUNT) {
		for (; optind < ac; optind++) {
			if (o->nfuncs == CLI_MAX_FUNCS) return bad(o, "count: more than %s functions%s", "64", "");
			if (!*av[optind]) return bad(o, "count: an empty function name%s%s", "", "");
			o->funcs[o->nfuncs++] = av[optind];
		}
		if (!o->nfuncs) return bad(o, "count: name the functions to count (gdbsample count -p PORT -e IMAGE FUNC...)%s%s", "", "");
	}
	if (optind < ac) return bad(o, "unexpected argument '%.40s'%s", av[optind], "");
	if (conns == 0) return bad(o, "no target: give -p PORT, -H HOST:PORT, -u SOCKET, --qmp SOCKET or --domain NAME%s%s", "", "");
	if (conns > 1) return bad(o, "give only one of -p, -H, -u, --qmp and --domain%s%s", "", "");
	if (o->uri && !o->domain) return bad(o, "--connect needs --domain%s%s", "", "");
	if (!o->max_hits) o->max_hits = 1000;
	if (o->cmd != CMD_COUNT && !o->phase && have_maxhits) return bad(o, "--max-hits is for count and --phase%s%s", "", "");
	if (o->offcpu && (o->cmd != CMD_RECORD || o->phase || !o->nelf || o->os == OS_NONE ||
			  (o->format != FMT_FOLDED && o->format != FMT_SVG && o->format != FMT_CAPTURE && o->format != FMT_REPORT)))
		return bad(o, "--off-cpu is for record -f folded, svg, report or capture, with the kernel image (-e) and its tasks%s%s",
			   o->phase ? ", not with --phase" : "", "");
	if (o->offcpu_slice && !o->offcpu) return bad(o, "--off-cpu-slice needs --off-cpu%s%s", "", "");
	if (o->phase_occurrence && !o->phase) return bad(o, "--phase-occurrence needs --phase%s%s", "", "");
	if (o->phase && o->cmd != CMD_RECORD)
		return bad(o, "--phase is for record (%s)%s", o->cmd == CMD_REPLAY ? "a replay's breakpoints are its instruction counts" :
			   o->cmd == CMD_COUNT ? "count counts calls: name BEGIN and END as functions to count" : "record it, then look", "");
	if (o->cmd == CMD_COUNT && (have_rate || o->out || have_format || o->tasks || task_filter_on(&o->filter)))
		return bad(o, "count counts calls: %s is for sampling%s", have_rate ? "-r" : o->out ? "-o" : have_format ? "-f" :
			   o->tasks ? "--tasks" : "--pid/--comm", "");
	if (o->cmd != CMD_REPLAY && have_replay) return bad(o, "--every, --from, --until and --resume-paused are for replay%s%s", "", "");
	if (o->cmd == CMD_REPLAY && (have_rate || o->duration))
		return bad(o, "replay samples by instruction count: --every, --from and --until, not %s%s",
			   have_rate ? "-r" : "-d", "");
	if (o->cmd == CMD_REPLAY && have_pause)
		return bad(o, "--max-pause is not for replay: a replay waits for gdbsample (nothing runs live)%s%s", "", "");
	if (o->cmd == CMD_REPLAY && o->until && o->until < o->from)
		return bad(o, "--until comes before --from%s%s", "", "");
	if (o->cmd == CMD_REPLAY) o->max_pause = 0; /* session_replay.c: no watchdog */
	if (o->cmd != CMD_RECORD && o->cmd != CMD_REPLAY && o->cmd != CMD_COUNT && o->summary)
		return bad(o, "--summary and --summary-format are for record (%s prints no summary)%s",
			   o->cmd == CMD_DUMP ? "dump" : "top", "");
	if (o->cmd != CMD_RECORD && o->cmd != CMD_REPLAY && (o->out || have_format))
		return bad(o, "%s writes to the terminal: -o and -f are for record%s", o->cmd == CMD_DUMP ? "dump" : "top", "");
	if (o->cmd != CMD_TOP && have_interval) return bad(o, "--interval is for top%s%s", "", "");
	if ((o->os == OS_LINUX || o->os == OS_TESTKERNEL) && !o->nelf)
		return bad(o, "--os %s needs the kernel image (-e)%s", guestos_names[o->os], "");
	if (o->tasks && !o->nelf) return bad(o, "--tasks needs the kernel image (-e), whose DWARF it is resolved in%s%s", "", "");
	if (o->tasks && o->os != OS_AUTO)
		return bad(o, "--tasks and --os %s: give one (a description says how to find the tasks)%s", guestos_names[o->os], "");
	if (task_filter_on(&o->filter) && (!o->nelf || o->os == OS_NONE))
		return bad(o, "--pid and --comm need task attribution: the kernel image (-e) and not --os none%s%s", "", "");
	if ((o->unwind == UNWIND_CFI || o->unwind == UNWIND_ORC) && !o->nelf)
		return bad(o, "--unwind %s needs the kernel image (-e)%s", o->unwind == UNWIND_CFI ? "cfi" : "orc", "");
	return 0;
}

int cli_summary_wanted(const struct opts *o)
{
	return o->summary || !o->quiet;
}

int cli_cpus(struct opts *o, int ncpu, int *out)
{
	int n = 0;
	if (!o->cpus) {
		for (int i = 0; i < ncpu; i++)
			if (out) out[n++] = i;
		return out ? n : ncpu;
	}
	const char *p = o->cpus;
	while (*p) {
		const char *e = p, *q;
		uint64_t a, b;
		while (*e >= '0' && *e <= '9') e++;
		if (textnum_dec(p, (size_t)(e - p), INT32_MAX, &a)) goto bad; /* no space, sign or overflow */
		b = a;
		if (*e == '-') {
			for (q = ++e; *e >= '0' && *e <= '9'; e++) {}
			if (textnum_dec(q, (size_t)(e - q), INT32_MAX, &b) || b < a) goto bad;
		}
		if (*e && *e != ',') goto bad;
		if (b >= (uint64_t)ncpu) {
			char lim[32];
			snprintf(lim, sizeof lim, "%d", ncpu);
			return bad(o, "--cpus: vCPU out of range (the guest has %s)%s", lim, "");
		}
		for (uint64_t i = a; i <= b; i++) {
			int dup = 0;
			for (int k = 0; out && k < n; k++) dup |= (uint64_t)out[k] == i;
			if (!dup && out) out[n++] = (int)i;
			else if (!out) n++;
		}
		p = *e ? e + 1 : e;
		if (*e == ',' && !*p) goto bad;
	}
	if (!n) goto bad;
	return n;
bad:
	return bad(o, "--cpus: expected a list like 0,2-3, got '%.40s'%s", o->cpus, "");
}
