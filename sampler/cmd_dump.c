/* SPDX-License-Identifier: MIT */
/* cmd_dump.c: `gdbsample dump` -- stop once and print every vCPU's symbolized stack (like py-spy dump). */
#include "cli.h"
#include "cmds.h"
#include "err.h"
#include "output.h"
#include "record.h"
#include "session.h"


static void print_stack(FILE *f, const struct session *ss, const struct sample *s)
{
	const struct symtab *t = session_syms(ss);
	char buf[256], task[TASK_COMM_LEN * 4 + 48] = "";
	if (s->has_task) { /* as py-spy dump names the thread: who this stack belongs to */
		char c[TASK_COMM_LEN * 4 + 1];
		task_comm_format(s->task.comm, c);
		snprintf(task, sizeof task, " %s pid %d tgid %d", c, s->task.pid, s->task.tgid);
	}
	fprintf(f, "cpu%d%s%s%s%s%s%s%s\n", s->cpu, task, s->flags & SF_IDLE ? " idle" : "",
	       s->flags & SF_IRQOFF ? " irqs-off" : "", s->flags & SF_USER ? " user" : "",
	       s->flags & SF_FIRMWARE ? " firmware" : "",
	       s->flags & SF_PARTIAL ? " (stack truncated)" : "", s->flags & SF_UNRELIABLE ? " unreliable" : "");
	for (int i = 0; i < s->n; i++) {
		uint64_t a = s->frames[i];
		int ret = i && !unwind_is_exact(s->exact, i);
		const struct sym *sym = t ? syms_frame(t, a, ret) : NULL;
		char line[512];
		if (sym) syms_name_off(sym, a - sym->addr, buf, sizeof buf); /* "f+0x10 [module]" */
		else snprintf(buf, sizeof buf, "??");
		/* a module frame with its .ko's DWARF: the source line (of the call, for a return address) */
		if (ko_srcline((struct koset *)&ss->img.kos, ret ? a - 1 : a, line, sizeof line) == 0)
			fprintf(f, "  #%-2d 0x%016llx %s at %s\n", i, (unsigned long long)a, buf, line);
		else
			fprintf(f, "  #%-2d 0x%016llx %s\n", i, (unsigned long long)a, buf);
	}
}

#define DUMP_TRIES 5 /* stops a dump tries when the pause watchdog ends them first */

int cmd_dump(const struct opts *o)
{
	static struct session ss;
	static struct sample out[GDB_MAX_CPUS];
	static struct output so;
	int n = 0, err = 0;
	struct pause pz;
	record_signals();                                 /* a signal waits for the clean way out */
	if (output_open(&so, NULL, NULL, 0) < 0) {        /* stdout: `| head` leaving is no error */
		fprintf(stderr, "gdbsample: %s\n", so.errstr);
		return so.err;
	}
	if (session_open(&ss, o) < 0) {                   /* connecting stops the VM */
		fprintf(stderr, "gdbsample: %s\n", ss.errstr);
		session_close(&ss);
		output_abort(&so);
		return ss.err;
	}
	ss.read_held = 1;                                 /* a VM paused by someone else: read as is */
	/* Registers and stacks of every vCPU. A stop the pause watchdog ended before they were read
	 * (gdbsample held up past --max-pause) is tried again, a few times; a round skipped for a
	 * migration under way is not a dump either. Neither is ever an empty success. */
	int rc = 1;
	for (int tries = 0; tries < DUMP_TRIES && rc == 1; tries++) rc = session_sample(&ss, out, &n, &pz);
	if (rc == 0)
		for (int i = 0; i < n; i++) print_stack(so.f, &ss, &out[i]);
	else if (rc < 0)
		fprintf(stderr, "gdbsample: %s\n", ss.errstr);
	else if (rc == 1)
		fprintf(stderr, "gdbsample: the pause watchdog resumed the guest while gdbsample was held up "
			"(%d tries; a longer --max-pause lets a stop last until the stacks are read)\n", DUMP_TRIES);
	else
		fprintf(stderr, "gdbsample: a migration is under way: the VM was not read\n");
	if (rc < 0) err = ss.err;
	else if (rc == 1) err = ERR_RESCUED;
	else if (rc == 2) err = ERR_SYS;
	if (output_commit(&so) < 0) {                     /* EPIPE is the end of the output, not this */
		fprintf(stderr, "gdbsample: %s\n", so.errstr);
		err = ERR_SYS;
	}
	if (session_close(&ss) < 0) {                     /* D;1 */
		fprintf(stderr, "gdbsample: %s\n", ss.errstr);
		if (!err) err = ss.err;
	}
	if (n < ss.ncpu && rc == 0)
		fprintf(stderr, "gdbsample: %d of %d vCPUs unreadable\n", ss.ncpu - n, ss.ncpu);
	return err;
}
