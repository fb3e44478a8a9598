/* SPDX-License-Identifier: MIT */
/* files.c: whole-file input for the loaders (read to EOF, bounded; /proc files report size 0). */
#include "files.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int file_read(const char *path, uint64_t max, uint8_t **buf, size_t *len, char *err, size_t errcap)
{
	struct stat st;
	int in = !strcmp(path, "-"); /* standard input, as every tool reads it */
	int fd = in ? dup(0) : open(path, O_RDONLY | O_CLOEXEC);
	*buf = NULL;
	*len = 0;
	if (in) path = "standard input";
	if (fd < 0 || fstat(fd, &st) < 0) {
		snprintf(err, errcap, "%s: %s", path, strerror(errno));
		if (fd >= 0) close(fd);
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		snprintf(err, errcap, "%s: is a directory", path);
		close(fd);
		return -1;
	}
	/* Read to EOF whatever st_size says: /proc/kallsyms reports 0 bytes. */
	size_t cap = st.st_size > 0 && (uint64_t)st.st_size < max ? (size_t)st.st_size + 1 : 65536, got = 0;
	uint8_t *b = malloc(cap);
	for (;;) {
		if (!b) {
			snprintf(err, errcap, "%s: out of memory", path);
			break;
		}
		if (got + 1 >= cap) {
			if (cap > max) {
				snprintf(err, errcap, "%s: larger than %llu bytes", path, (unsigned long long)max);
				break;
			}
			uint8_t *nb = realloc(b, cap * 2);
			if (!nb) {
				snprintf(err, errcap, "%s: out of memory", path);
				break;
			}
			b = nb;
			cap *= 2;
		}
		ssize_t n = read(fd, b + got, cap - 1 - got);
		if (n < 0 && errno == EINTR) continue;
		if (n < 0) {
			snprintf(err, errcap, "%s: %s", path, strerror(errno));
			break;
		}
		if (n == 0) {
			close(fd);
			b[got] = 0;
			*buf = b;
			*len = got;
			return 0;
		}
		got += (size_t)n;
	}
	free(b);
	close(fd);
	return -1;
}

const char *file_base(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

int file_cache_dir(char *dir, size_t cap)
{
	const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
	if (x && x[0] == '/') snprintf(dir, cap, "%s/gdbsample", x);
	else if (h && h[0] == '/') snprintf(dir, cap, "%s/.cache/gdbsample", h);
	else return -1;
	return 0;
}
