/* SPDX-License-Identifier: MIT */
/* wirelog.c: the wire log -- each read and write on a connection, one line, for finding what a stub did. */
#include "wirelog.h"
#include "clock.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

size_t wirelog_format(char *out, size_t cap, int64_t t_ns, int pid, const char *where, char dir,
		      const void *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = buf;
	if (cap == 0) return 0;
	int h = snprintf(out, cap, "%lld.%06lld %d %s %c ", (long long)(t_ns / 1000000000),
			 (long long)(t_ns % 1000000000 / 1000), pid, where, dir);
	size_t o = h < 0 ? 0 : (size_t)h < cap ? (size_t)h : cap - 1;
	const size_t tail = 32; /* room kept for "...(N more)\n" */
	size_t i = 0;
	for (; i < len; i++) {
		unsigned c = p[i];
		size_t need = c == '\\' ? 2 : c >= 0x20 && c < 0x7f ? 1 : 4;
		if (o + need + tail >= cap) break;
		if (c == '\\') {
			out[o++] = '\\';
			out[o++] = '\\';
		} else if (need == 1) {
			out[o++] = (char)c;
		} else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	if (i < len && o + tail < cap) o += (size_t)snprintf(out + o, cap - o, "...(%zu more)", len - i);
	if (o + 1 < cap) out[o++] = '\n';
	out[o] = 0;
	return o;
}

static int log_fd = -2; /* -2: not opened yet in this process; -1: no log */

static void reopen_in_child(void)
{
	if (log_fd >= 0) close(log_fd);
	log_fd = -2; /* the guard, forked: its own open, its own pid in the lines */
}

void wirelog(const char *where, char dir, const void *buf, size_t len)
{
	static const char *path; /* looked up once: a read or write is no place for getenv */
	static int looked, pid;
	if (!looked) {
		looked = 1;
		path = getenv("GDBSAMPLE_WIRE_LOG");
		if (path && !*path) path = NULL;
		if (path) pthread_atfork(NULL, NULL, reopen_in_child);
	}
	if (!path) return;
	if (log_fd == -2) {
		pid = getpid();
		log_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (log_fd < 0) fprintf(stderr, "gdbsample: GDBSAMPLE_WIRE_LOG %s: %s: not logging\n", path, strerror(errno));
	}
	if (log_fd < 0) return;
	static char line[16384];
	size_t n = wirelog_format(line, sizeof line, now_ns(), pid, where, dir, buf, len);
	ssize_t w = write(log_fd, line, n); /* O_APPEND: one write, so two processes' lines do not mix */
	(void)w;
}
