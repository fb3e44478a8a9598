/* SPDX-License-Identifier: MIT */
/* output.h: -o FILE written to a temporary file beside it and renamed into place only once the
 * result is complete -- a failed or refused run never touches an existing FILE. */
#ifndef OUTPUT_H
#define OUTPUT_H
#include <limits.h>
#include <stdio.h>

struct output {
	const char *path;          /* -o FILE, or NULL for stdout */
	char tmp[PATH_MAX];        /* the temporary file beside it ("" when writing directly) */
	char final[PATH_MAX];      /* where it is renamed to (FILE, or the file a symlink names) */
	FILE *f;                   /* the stream to write */
	int fd;                    /* its descriptor */
	int stream;                /* 1: fd (stdout, a FIFO, a device) written directly through f */
	int gone;                  /* its reader went away (EPIPE, `| head`): the rest dropped */
	int err;                   /* sticky error code */
	char errstr[PATH_MAX + 96];/* what went wrong */
};

/* Open -o path (NULL or "-": stdout). Refused with ERR_USAGE if path is one of the inputs (the
 * same file, whatever its name). FILE not a regular file (/dev/null, a FIFO) is written directly.
 * Those and stdout are written through f: a reader that goes away (`gdbsample ... | head`) is no
 * error -- the rest is dropped, gone is set and commit succeeds. (fd is theirs for raw writes.) */
int output_open(struct output *o, const char *path, const char *const *inputs, int ninputs);
/* 1 if the reader of a directly written output has gone: a write met EPIPE, or the pipe (or
 * socket) has no reader left -- found without writing, so a run whose output comes at the end
 * learns of it while sampling. Sets gone. */
int output_gone(struct output *o);
/* 1 if fd is a pipe or socket whose reader has gone (poll, nothing written). */
int output_fd_gone(int fd);
/* Flush and move the temporary file into place; -1 if anything failed (the temporary file is
 * then removed and FILE is as it was). */
int output_commit(struct output *o);
/* Give up: remove the temporary file; FILE is as it was. */
void output_abort(struct output *o);

#endif
