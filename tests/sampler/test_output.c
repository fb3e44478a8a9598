/* test_output.c: -o FILE replaced whole, keeping its mode; a read-only FILE refused (output.c). */
#include "check.h"
#include "../../sampler/err.h"
#include "../../sampler/output.h"
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

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
