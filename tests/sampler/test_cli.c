/* SPDX-License-Identifier: MIT */
/* test_cli.c: command-line parsing -- defaults, every flag, and the one-line errors. */
#include "check.h"
#include "../../sampler/cli.h"
#include "../../sampler/err.h"

static int parse(struct opts *o, const char *line)
{
	static char buf[512];
	char *argv[32];
	int argc = 0;
	snprintf(buf, sizeof buf, "gdbsample %s", line);
	for (char *t = strtok(buf, " "); t && argc < 31; t = strtok(NULL, " ")) argv[argc++] = t;
	argv[argc] = NULL;
	return cli_parse(o, argc, argv);
}

static void test_defaults(void)
{
	struct opts o;
	CHECK(parse(&o, "-p 1234") == 0);
	CHECK(o.cmd == CMD_RECORD && o.port == 1234 && !strcmp(o.host, "127.0.0.1"));
	CHECK(o.rate == 100 && o.duration == 0 && o.format == FMT_REPORT && o.max_frames == 64);
	CHECK(o.chains == 8 && o.verify && !o.idle && !o.quiet);
	CHECK(o.klo == 0xffff800000000000ull && o.khi == ~0ull);
}

static void test_flags(void)
{
	struct opts o;
	CHECK(parse(&o, "record -H 10.0.0.2:4321 -r 1000 -d 2.5 -e k.elf -o out -f folded --max-frames 8 "
		       "--kernel-range ffffffff80000000:ffffffffbfffffff --cpus 0,2-3 --idle -q --chains 3 "
		       "--no-verify") == 0);
	CHECK(!strcmp(o.host, "10.0.0.2") && o.port == 4321 && o.rate == 1000 && o.duration == 2.5);
	CHECK(o.nelf == 1 && !strcmp(o.elf[0], "k.elf") && !strcmp(o.out, "out") && o.format == FMT_FOLDED);
	CHECK(o.max_frames == 8 && o.klo == 0xffffffff80000000ull && o.khi == 0xffffffffbfffffffull);
	CHECK(o.idle && o.quiet && o.chains == 3 && !o.verify);
	int cpus[8];
	CHECK(cli_cpus(&o, 4, cpus) == 3 && cpus[0] == 0 && cpus[1] == 2 && cpus[2] == 3);
	CHECK(cli_cpus(&o, 3, cpus) == -1 && strstr(o.errstr, "out of range"));
	CHECK(parse(&o, "-p 1 --quiet") == 0 && o.quiet);
	CHECK(cli_summary_wanted(&o) == 0);                             /* -q: no summary ... */
	CHECK(parse(&o, "-p 1 -q --summary") == 0 && cli_summary_wanted(&o)); /* ... unless asked */
	CHECK(parse(&o, "-p 1 -q --summary-format json") == 0 && cli_summary_wanted(&o) &&
	      o.summary_format == SUMFMT_JSON);
	CHECK(parse(&o, "-p 1") == 0 && cli_summary_wanted(&o) && o.summary_format == SUMFMT_HUMAN);
	CHECK(parse(&o, "-p 1 -f svg") == 0 && o.format == FMT_SVG);
	CHECK(parse(&o, "-p 1 -f speedscope") == 0 && o.format == FMT_SPEEDSCOPE);
	CHECK(parse(&o, "dump -u /tmp/s") == 0 && o.cmd == CMD_DUMP && !strcmp(o.sock, "/tmp/s"));
	CHECK(parse(&o, "top -H [::1]:9") == 0 && o.cmd == CMD_TOP && !strcmp(o.host, "::1"));
	/* dump and top write to the terminal: -o and -f are refused, not ignored */
	CHECK(parse(&o, "top -p 1 -o /dev/full") == -1 && strstr(o.errstr, "-o and -f are for record"));
	/* top's refresh interval: 1 s by default, 0.1-3600 s, and for top only */
	CHECK(parse(&o, "top -p 1") == 0 && o.interval == 1.0);
	CHECK(parse(&o, "top -p 1 --interval 0.25") == 0 && o.interval == 0.25);
	CHECK(parse(&o, "top -p 1 --interval 0.05") == -1 && strstr(o.errstr, "--interval: bad value '0.05' (0.1-3600"));
	CHECK(parse(&o, "top -p 1 --interval 1e9") == -1 && strstr(o.errstr, "--interval: bad value"));
	CHECK(parse(&o, "top -p 1 --interval nan") == -1 && strstr(o.errstr, "--interval: bad value"));
	CHECK(parse(&o, "top -p 1 --interval") == -1 && !strcmp(o.errstr, "--interval: missing value"));
	CHECK(parse(&o, "-p 1 --interval 2") == -1 && !strcmp(o.errstr, "--interval is for top"));
	CHECK(parse(&o, "dump -p 1 --interval 2") == -1 && !strcmp(o.errstr, "--interval is for top"));
	CHECK(parse(&o, "dump -p 1 -f capture") == -1 && strstr(o.errstr, "-o and -f are for record"));
	/* a long option without its value is named; so is an unknown one */
	CHECK(parse(&o, "-p 1 --chains") == -1 && !strcmp(o.errstr, "--chains: missing value"));
	CHECK(parse(&o, "-p 1 --max-pause") == -1 && !strcmp(o.errstr, "--max-pause: missing value"));
	CHECK(parse(&o, "-p 1 --bogus") == -1 && strstr(o.errstr, "'--bogus'"));
	/* numbers are digits only; durations at least a millisecond */
	CHECK(parse(&o, "-d 1e-300 -p 1") == -1 && strstr(o.errstr, "-d: bad duration"));
	CHECK(parse(&o, "--unwind orc -p 1") == -1 && strstr(o.errstr, "needs the kernel image"));
	CHECK(parse(&o, "--unwind orc -e k -p 1 --kaslr-offset 1000 --max-pause 0.5") == 0 && o.unwind == UNWIND_ORC &&
	      o.kaslr == 0x1000 && o.have_kaslr && o.max_pause == 0.5);
	CHECK(parse(&o, "-p 1 --kaslr-offset 123") == -1 && strstr(o.errstr, "page-aligned"));
	CHECK(parse(&o, "-p 1 -ea -eb -ec -ed -ee -ef -eg -eh -ei -ej -ek -el -em -en -eo -ep -eq") == -1 &&
	      strstr(o.errstr, "more than 16 times")); /* an image, a map and .ko files */
	char *spaced[] = { "gdbsample", "-p", " 80", NULL }; /* strtol would take it */
	CHECK(cli_parse(&o, 3, spaced) == -1 && strstr(o.errstr, "-p: bad value"));
	CHECK(parse(&o, "-h") == 0 && o.help);
	CHECK(parse(&o, "--version") == 0 && o.version && !o.help);
	CHECK(parse(&o, "top --version") == 0 && o.version);
}

static void test_errors(void)
{
	static const char *const bad[][2] = {
		{ "", "no target" },
		{ "-p 1 -u /x", "only one of" },
		{ "-p 0", "-p: bad value '0'" },
		{ "-p 1 -r 10001", "-r: bad value '10001' (expected 1-10000)" },
		{ "-p 1 -r 5x", "-r: bad value" },
		{ "-p 1 -d 0", "-d: bad duration" },
		{ "-p 1 -f png", "unknown format 'png' (report, folded, capture, svg or speedscope)" },
		{ "-p 1 --summary-format xml", "--summary-format: unknown format 'xml'" },
		{ "dump -p 1 --summary", "are for record" },
		{ "top -p 1 --summary-format json", "are for record" },
		{ "-p 1 --max-frames 300", "--max-frames: bad value" },
		{ "-p 1 --kernel-range 10:5", "LO < HI" },
		{ "-p 1 --cpus 1,", "--cpus: expected a list" },
		{ "-p 1 --cpus 2-1", "--cpus: expected a list" },
		{ "-p 1 --frob", "unknown option '--frob'" },
		{ "-p 1 -Z", "unknown option '-Z'" },
		{ "-p", "-p: missing value" },
		{ "-p 1 stray", "unexpected argument 'stray'" },
		{ "sample -p 1", "unknown command 'sample'" },
		{ "-H host", "-H: expected HOST:PORT" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct opts o;
		int rc = parse(&o, bad[i][0]);
		CHECK(rc == -1 && o.err == ERR_USAGE);
		if (!strstr(o.errstr, bad[i][1])) {
			check_failed++;
			fprintf(stderr, "FAIL: '%s' gave '%s', wanted '%s'\n", bad[i][0], o.errstr, bad[i][1]);
		}
		CHECK(!strchr(o.errstr, '\n'));
	}
}

/* replay: instruction counts instead of a rate and a duration; its flags nowhere else. */
static void test_replay(void)
{
	struct opts o;
	CHECK(parse(&o, "replay -p 1 -e k.elf") == 0);
	CHECK(o.cmd == CMD_REPLAY && o.every == 10000000 && !o.from && !o.until && o.max_pause == 0);
	CHECK(parse(&o, "replay -p 1 --every 1000 --from 5000 --until 900000000000 -f capture -o x --summary") == 0);
	CHECK(o.every == 1000 && o.from == 5000 && o.until == 900000000000ull && o.format == FMT_CAPTURE && o.summary);
	CHECK(!o.resume_paused && parse(&o, "replay -p 1 --resume-paused") == 0 && o.resume_paused);
	static const char *const bad[][2] = {
		{ "replay -p 1 -r 10", "not -r" },
		{ "replay -p 1 -d 3", "not -d" },
		{ "replay -p 1 --max-pause 1", "--max-pause is not for replay" },
		{ "replay -p 1 --every 999", "--every: bad value '999'" },
		{ "replay -p 1 --every 1e6", "--every: bad value '1e6'" },
		{ "replay -p 1 --from -5", "--from: bad value '-5'" },
		{ "replay -p 1 --until 18446744073709551616", "--until: bad value" },
		{ "replay -p 1 --from 10 --until 9", "--until comes before --from" },
		{ "-p 1 --every 5000", "are for replay" },
		{ "top -p 1 --until 5", "are for replay" },
		{ "-p 1 --resume-paused", "are for replay" },
		{ "replai -p 1", "(record, dump, top, replay or count)" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int rc = parse(&o, bad[i][0]);
		CHECK(rc == -1 && o.err == ERR_USAGE && strstr(o.errstr, bad[i][1]));
		if (rc != -1 || !strstr(o.errstr, bad[i][1])) fprintf(stderr, "  %s -> %s\n", bad[i][0], o.errstr);
	}
}

/* count: functions as arguments, --max-hits its own; sampling's flags refused. */
static void test_count(void)
{
	struct opts o;
	CHECK(parse(&o, "count -p 1 -e k split_a 0xffffffff80100000 -d 2") == 0);
	CHECK(o.cmd == CMD_COUNT && o.nfuncs == 2 && !strcmp(o.funcs[0], "split_a") &&
	      !strcmp(o.funcs[1], "0xffffffff80100000") && o.max_hits == 1000 && o.duration == 2);
	CHECK(parse(&o, "count -p 1 f --max-hits 7 --summary-format kv") == 0 && o.max_hits == 7 && o.summary);
	static const char *const bad[][2] = {
		{ "count -p 1", "count: name the functions to count" },
		{ "count -p 1 f --max-hits 0", "--max-hits: bad value '0'" },
		{ "count -p 1 f --max-hits 100001", "--max-hits: bad value" },
		{ "-p 1 --max-hits 5", "--max-hits is for count" },
		{ "count -p 1 f -r 10", "-r is for sampling" },
		{ "count -p 1 f -o out", "-o is for sampling" },
		{ "count -p 1 f -f folded", "-f is for sampling" },
		{ "-p 1 f", "unexpected argument 'f'" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int rc = parse(&o, bad[i][0]);
		CHECK(rc == -1 && o.err == ERR_USAGE && strstr(o.errstr, bad[i][1]));
		if (rc != -1 || !strstr(o.errstr, bad[i][1])) fprintf(stderr, "  %s -> %s\n", bad[i][0], o.errstr);
	}
	char *many[70] = { "gdbsample", "count", "-p", "1" };
	for (int i = 4; i < 69; i++) many[i] = "f";
	CHECK(cli_parse(&o, 69, many) == -1 && strstr(o.errstr, "more than 64 functions"));
}

void test_cli(void)
{
	test_count();
	test_replay();
	test_defaults();
	test_flags();
	test_errors();
}
