/* SPDX-License-Identifier: MIT */
/* test_output.c: -o FILE replaced whole, keeping its mode; a read-only FILE refused (output.c). */
#include "check.h"
#include "../../sampler/err.h"
#include "../../sampler/output.h"
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* stdout (-o not given) a pipe whose reader has gone (`gdbsample ... | head`): more than a pipe
 * buffer written, commit succeeds quietly and says the reader went; fd 1 is as it was. */
static void test_stdout_reader_gone(void)
{
	int p[2], saved = dup(1);
	void (*old)(int) = signal(SIGPIPE, SIG_IGN);        /* as gdbsample runs (record.c) */
	if (saved < 0 || pipe(p) < 0) {
		CHECK(!"pipe");
		return;
	}
	fflush(stdout);
	close(p[0]);                                          /* nobody will read */
	dup2(p[1], 1);
	close(p[1]);
	struct output o;
	CHECK(output_open(&o, NULL, NULL, 0) == 0);
	for (int i = 0; i < 20000; i++) fprintf(o.f, "root;frame_%05d 1\n", i);  /* ~380 KB */
	int rc = output_commit(&o);
	dup2(saved, 1);
	close(saved);
	signal(SIGPIPE, old);
	CHECK(rc == 0 && o.gone == 1);
	CHECK(write(1, "", 0) == 0);                          /* stdout itself still open */

	/* A reader that stays: everything arrives, gone stays 0. */
	char buf[64] = { 0 };
	saved = dup(1);
	if (saved < 0 || pipe(p) < 0) {
		CHECK(!"pipe");
		return;
	}
	fflush(stdout);
	dup2(p[1], 1);
	close(p[1]);
	CHECK(output_open(&o, NULL, NULL, 0) == 0);
	fputs("a 1\nb 2\n", o.f);
	rc = output_commit(&o);
	dup2(saved, 1);
	close(saved);
	CHECK(rc == 0 && o.gone == 0 && read(p[0], buf, sizeof buf - 1) == 8 && strcmp(buf, "a 1\nb 2\n") == 0);
	close(p[0]);
}

/* Writes text to path through output_open/commit: 0 or -1 (the message into why). */
static int put(const char *path, const char *text, char *why, size_t cap)
{
	struct output o;
	why[0] = 0;
	if (output_open(&o, path, NULL, 0) < 0) {
		snprintf(why, cap, "%s", o.errstr);
		return -1;
	}
	fputs(text, o.f);
	if (output_commit(&o) < 0) {
		snprintf(why, cap, "%s", o.errstr);
		return -1;
	}
	return 0;
}

static mode_t mode_of(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? st.st_mode & 07777 : (mode_t)-1;
}

void test_output(void)
{
	test_stdout_reader_gone();
	char dir[] = "/tmp/gdbsample-output-XXXXXX", path[64], link[80], why[300];
	if (!mkdtemp(dir)) {
		CHECK(!"mkdtemp");
		return;
	}
	snprintf(path, sizeof path, "%s/out", dir);
	mode_t um = umask(022);
	CHECK(put(path, "new\n", why, sizeof why) == 0 && mode_of(path) == 0644); /* as the shell's > */
	umask(002);
	unlink(path);
	CHECK(put(path, "new\n", why, sizeof why) == 0 && mode_of(path) == 0664);
	chmod(path, 0600);                                                    /* issue 22: became 0644 */
	CHECK(put(path, "again\n", why, sizeof why) == 0 && mode_of(path) == 0600);
	chmod(path, 0640);
	snprintf(link, sizeof link, "%s/link", dir);
	CHECK(symlink("out", link) == 0);
	CHECK(put(link, "through the link\n", why, sizeof why) == 0 && mode_of(path) == 0640);
	struct stat ls;
	CHECK(lstat(link, &ls) == 0 && S_ISLNK(ls.st_mode));                 /* the link stays a link */
	if (geteuid() != 0) {                                                 /* root may write anything */
		chmod(path, 0444);
		CHECK(put(path, "clobber\n", why, sizeof why) == -1 && strstr(why, "Permission denied"));
		FILE *f = fopen(path, "r");
		char buf[32] = "";
		CHECK(f && fgets(buf, sizeof buf, f) && !strcmp(buf, "through the link\n"));
		if (f) fclose(f);
	}
	umask(um);
	unlink(link);
	unlink(path);
	rmdir(dir);
}
