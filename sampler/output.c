/* SPDX-License-Identifier: MIT */
/* output.c: -o FILE written to a temporary file beside it and renamed into place only once the
 * result is complete -- a failed or refused run never touches an existing FILE. */
#include "output.h"
#include "err.h"
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* The write function of the stream on stdout (or a FIFO or device -o names). SIGPIPE is ignored
 * (record.c: dying would leave the VM stopped), so a reader that has gone away (`| head` read what
 * it wanted) shows as EPIPE: that is the end of the output, not an error -- the rest is dropped and
 * the run ends as usual. */
static ssize_t direct_write(void *cookie, const char *buf, size_t n)
{
	struct output *o = cookie;
	size_t done = 0;
	while (!o->gone && done < n) {
		ssize_t k = write(o->fd, buf + done, n - done);
		if (k < 0 && errno == EINTR) continue;
		if (k < 0 && errno == EPIPE) o->gone = 1;
		else if (k < 0) return done ? (ssize_t)done : -1;
		else done += (size_t)k;
	}
	return (ssize_t)n;
}

int output_fd_gone(int fd)
{
	struct stat st;
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	if (fstat(fd, &st) < 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) return 0;
	/* A pipe without readers polls POLLERR; a socket shut down both ways, POLLHUP. */
	return poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP));
}

int output_gone(struct output *o)
{
	if (!o->gone && o->stream && output_fd_gone(o->fd)) o->gone = 1;
	return o->gone;
}

/* fd (stdout, or a FIFO or device) written through the cookie stream. */
static int direct_open(struct output *o, int fd)
{
	o->fd = fd;
	o->f = fopencookie(o, "w", (cookie_io_functions_t){ .write = direct_write });
	if (!o->f) return -1;
	o->stream = 1;
	return 0;
}

int output_open(struct output *o, const char *path, const char *const *inputs, int ninputs)
{
	struct stat so, si;
	memset(o, 0, sizeof *o);
	o->path = path;
	o->fd = -1;
	if (path && !strcmp(path, "-")) o->path = path = NULL; /* -o -: stdout, as every tool reads it */
	if (!path) {
		fflush(stdout);                 /* anything printed before goes first */
		if (direct_open(o, 1) < 0) {
			ERR_SET(o, ERR_SYS, "stdout: %s", strerror(errno));
			o->fd = -1;
			return -1;
		}
		if (isatty(1)) setvbuf(o->f, NULL, _IOLBF, 0);   /* as stdout on a terminal */
		return 0;
	}
	int exists = stat(path, &so) == 0;
	for (int i = 0; exists && i < ninputs; i++)
		if (inputs[i] && stat(inputs[i], &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
			ERR_SET(o, ERR_USAGE, "-o %s is the input %s: refusing to overwrite it", path, inputs[i]);
			return -1;
		}
	if (exists && access(path, W_OK) < 0) { /* a read-only FILE stays protected, as open() would */
		ERR_SET(o, ERR_SYS, "-o %s: %s", path, strerror(errno));
		return -1;
	}
	if (exists && !S_ISREG(so.st_mode)) { /* a device or a FIFO: nothing to replace, write to it */
		int fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || direct_open(o, fd) < 0) {
			ERR_SET(o, ERR_SYS, "-o %s: %s", path, strerror(errno));
			if (fd >= 0) close(fd);
			o->fd = -1;
			return -1;
		}
		return 0;
	} else {
		/* Beside the file a symlink names, so the rename replaces the file, not the link. */
		if (!exists || !realpath(path, o->final)) snprintf(o->final, sizeof o->final, "%s", path);
		snprintf(o->tmp, sizeof o->tmp, "%s.partial-XXXXXX", o->final);
		o->fd = mkostemp(o->tmp, O_CLOEXEC);
		if (o->fd >= 0) { /* mkostemp makes it 0600: FILE keeps its mode (a 0600 capture stays
				   * private), a new one gets what the shell's > gives (0666 less umask),
				   * as gdbsample-analyze does */
			mode_t um = umask(0);
			umask(um);
			if (fchmod(o->fd, exists ? so.st_mode & 07777 : 0666 & ~um) < 0) {
				ERR_SET(o, ERR_SYS, "-o %s: %s", path, strerror(errno));
				close(o->fd);
				unlink(o->tmp);
				o->tmp[0] = 0;
				return -1;
			}
		}
	}
	if (o->fd < 0 || !(o->f = fdopen(o->fd, "w"))) {
		ERR_SET(o, ERR_SYS, "-o %s: %s", path, strerror(errno));
		if (o->fd >= 0) close(o->fd);
		if (o->tmp[0]) unlink(o->tmp);
		o->tmp[0] = 0;
		return -1;
	}
	return 0;
}

int output_commit(struct output *o)
{
	if (o->stream) {
		int bad = fflush(o->f) || ferror(o->f);
		int saved = errno;
		fclose(o->f);                   /* the stream only: fd 1 stays open ... */
		o->f = NULL;
		if (o->path) close(o->fd);      /* ... the FIFO or device -o opened is closed */
		if (bad) {
			ERR_SET(o, ERR_SYS, "%s%s: %s", o->path ? "-o " : "stdout", o->path ? o->path : "", strerror(saved));
			return -1;
		}
		return 0;
	}
	int bad = fflush(o->f) || ferror(o->f);
	if (!bad && o->tmp[0] && fsync(o->fd) < 0) bad = 1;
	if (fclose(o->f)) bad = 1;
	o->f = NULL;
	if (bad) {
		ERR_SET(o, ERR_SYS, "-o %s: %s", o->path, strerror(errno));
		if (o->tmp[0]) unlink(o->tmp);
		o->tmp[0] = 0;
		return -1;
	}
	if (o->tmp[0] && rename(o->tmp, o->final) < 0) {
		ERR_SET(o, ERR_SYS, "-o %s: %s", o->path, strerror(errno));
		unlink(o->tmp);
		o->tmp[0] = 0;
		return -1;
	}
	o->tmp[0] = 0;
	return 0;
}

void output_abort(struct output *o)
{
	if (o->f) fclose(o->f);         /* stdout's stream: fd 1 stays open */
	if (o->stream && o->path && o->fd >= 0) close(o->fd);
	o->f = NULL;
	if (o->tmp[0]) unlink(o->tmp);
	o->tmp[0] = 0;
}
