/* SPDX-License-Identifier: MIT */
/* main.c: gdbsample's command line -- parse, dispatch to record (default), dump, top or count, and turn
 * a command's failure into the exit code (0 ok, 1 failure, 2 bad usage or input). */
#include "cli.h"
#include "demangle.h"
#include "cmds.h"
#include "err.h"

/* The one place failures become exit codes: bad flags and unreadable or malformed input files
 * are the user's to fix (2); everything else could not be done (1). */
static int exit_code(int err)
{
	if (!err) return 0;
	return err == ERR_USAGE || err == ERR_FORMAT ? 2 : 1;
}

int main(int argc, char **argv)
{
	static struct opts o;
	if (cli_parse(&o, argc, argv) < 0) {                                   /* bad flag: one line */
		fprintf(stderr, "gdbsample: %s\n", o.errstr);
		return exit_code(ERR_USAGE);
	}
	if (o.help) {
		fputs(cli_usage, stdout);
		return 0;
	}
	if (o.version) {                                                       /* VERSION, via the Makefile */
		printf("gdbsample %s\n", GDBSAMPLE_VERSION);
		return 0;
	}
	demangle_enable(o.demangle);                                            /* before any name is read */
	switch (o.cmd) {
	case CMD_DUMP: return exit_code(cmd_dump(&o));                         /* stop once, print stacks */
	case CMD_TOP: return exit_code(cmd_top(&o));                           /* live view */
	case CMD_COUNT: return exit_code(cmd_count(&o));                       /* calls at breakpoints */
	default: return exit_code(cmd_record(&o));                             /* sample (or replay), then write */
	}
}
