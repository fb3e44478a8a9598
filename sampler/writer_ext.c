/* SPDX-License-Identifier: MIT */
/* writer_ext.c: `-f svg` and `-f speedscope` -- the folded stacks (svg) or a capture (speedscope)
 * kept in an unlinked temporary file, then handed to gdbsample-analyze's flamegraph or speedscope
 * writer (the same code `gdbsample-analyze flamegraph|speedscope` runs), whose output goes to
 * record's output: -o FILE is written beside it and renamed into place as for every format. */
#include "writer.h"
#include "capture.h"
#include "err.h"
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

struct ext {
	struct writer w;            /* interface, first */
	struct writer *inner;       /* the fold or capture writer filling tmp */
	FILE *tmp;                  /* the unlinked temporary file (tmpfile) */
	int kind;                   /* EXT_SVG or EXT_SPEEDSCOPE */
	int out_fd;                 /* where the converter's output goes (record's output) */
	const char *elf;            /* speedscope: the -e file gdbsample-analyze names frames with */
	char tool[PATH_MAX];        /* gdbsample-analyze's path */
	char dir[64];               /* speedscope: a private directory holding the capture ... */
	char path[PATH_MAX];        /* ... named as the output (speedscope shows its name), or "" */
};

int ext_find_analyze(const char *exe, char *out, size_t cap)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", exe);
	char *slash = strrchr(dir, '/');
	if (slash) {
		*slash = 0;
		snprintf(out, cap, "%s/gdbsample-analyze", dir);             /* installed: PREFIX/bin */
		if (access(out, X_OK) == 0) return 0;
		snprintf(out, cap, "%s/../analysis/gdbsample-analyze", dir); /* the build tree: build/ */
		if (access(out, X_OK) == 0) return 0;
	}
	const char *path = getenv("PATH");
	while (path && *path) { /* else the first on PATH */
		size_t n = strcspn(path, ":");
		snprintf(out, cap, "%.*s/gdbsample-analyze", (int)n, path);
		if (n && access(out, X_OK) == 0) return 0;
		path += n + (path[n] == ':');
	}
	out[0] = 0;
	return -1;
}

static int ext_add(struct writer *w, const struct sample *s)
{
	struct ext *e = (struct ext *)w;
	if (e->inner->add(e->inner, s) < 0) {
		ERR_SET(w, e->inner->err, "%s", e->inner->errstr);
		return -1;
	}
	return 0;
}

static int ext_finish(struct writer *w, const struct run_info *ri)
{
	struct ext *e = (struct ext *)w;
	const char *verb = e->kind == EXT_SVG ? "flamegraph" : "speedscope";
	if (e->inner->finish(e->inner, ri) < 0) {
		ERR_SET(w, e->inner->err, "%s", e->inner->errstr);
		return -1;
	}
	if (fflush(e->tmp) || ferror(e->tmp)) {
		ERR_SET(w, ERR_SYS, "the temporary file for %s: %s", verb, strerror(errno));
		return -1;
	}
	char in[PATH_MAX];
	if (e->path[0]) snprintf(in, sizeof in, "%s", e->path);
	else snprintf(in, sizeof in, "/dev/fd/%d", fileno(e->tmp)); /* the unlinked file, reopened */
	const char *argv[8];
	int n = 0;
	argv[n++] = e->tool;
	argv[n++] = verb;
	argv[n++] = in;
	if (e->elf) {
		argv[n++] = "-e";
		argv[n++] = e->elf;
	}
	argv[n] = NULL;
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		ERR_SET(w, ERR_SYS, "-f %s: fork: %s", e->kind == EXT_SVG ? "svg" : "speedscope", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		if (dup2(e->out_fd, 1) < 0 || fcntl(fileno(e->tmp), F_SETFD, 0) < 0) _exit(126);
		execv(e->tool, (char *const *)argv);
		fprintf(stderr, "gdbsample: cannot run %s: %s\n", e->tool, strerror(errno));
		_exit(127);
	}
	int st = 0;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			ERR_SET(w, ERR_SYS, "waiting for %s %s: %s", e->tool, verb, strerror(errno));
			return -1;
		}
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		ERR_SET(w, ERR_SYS, "%s %s %s (its message above); nothing written", e->tool, verb,
			WIFEXITED(st) ? "failed" : "was killed");
		return -1;
	}
	return 0;
}

static void ext_free(struct writer *w)
{
	struct ext *e = (struct ext *)w;
	if (e->inner) e->inner->free(e->inner);
	if (e->tmp) fclose(e->tmp);
	if (e->path[0]) unlink(e->path);
	if (e->dir[0]) rmdir(e->dir);
	free(e);
}

struct writer *ext_writer_new(int kind, int out_fd, const char *tool, const struct symtab *syms, int tf,
			      const struct capture_header *h, const char *elf, const char *name)
{
	struct ext *e = calloc(1, sizeof *e);
	if (!e) return NULL;
	e->w.add = ext_add;
	e->w.finish = ext_finish;
	e->w.free = ext_free;
	e->kind = kind;
	e->out_fd = out_fd;
	e->elf = elf;
	snprintf(e->tool, sizeof e->tool, "%s", tool);
	if (kind == EXT_SPEEDSCOPE) { /* a file with a name: the profile is called after it */
		const char *t = getenv("TMPDIR"), *base = name ? strrchr(name, '/') : NULL;
		base = base ? base + 1 : name && *name ? name : "gdbsample";
		snprintf(e->dir, sizeof e->dir, "%.40s/gdbsample-XXXXXX", t && *t && strlen(t) < 40 ? t : "/tmp");
		if (!mkdtemp(e->dir)) e->dir[0] = 0;
		else snprintf(e->path, sizeof e->path, "%s/%s", e->dir, base);
		int fd = e->path[0] ? open(e->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600) : -1;
		e->tmp = fd >= 0 ? fdopen(fd, "w+") : NULL;
		if (fd >= 0 && !e->tmp) close(fd);
	} else {
		e->tmp = tmpfile();
	}
	if (!e->tmp) {
		ERR_SET(&e->w, ERR_SYS, "a temporary file for -f %s: %s", kind == EXT_SVG ? "svg" : "speedscope",
			strerror(errno));
		return &e->w;
	}
	e->inner = kind == EXT_SVG ? fold_writer_new(e->tmp, syms, tf) : capture_writer_new(fileno(e->tmp), h);
	if (!e->inner) ERR_SET(&e->w, ERR_SYS, "out of memory");
	else if (e->inner->err) ERR_SET(&e->w, e->inner->err, "%s", e->inner->errstr);
	return &e->w;
}
