/* SPDX-License-Identifier: MIT */
/* files.c: whole-file input for the loaders (read to EOF, bounded; /proc files report size 0), and the cache directory's files. */
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

int file_cache_dir_ok(const char *dir, int create, char *why, size_t cap)
{
	struct stat st;
	if (lstat(dir, &st) < 0) {
		if (errno != ENOENT || !create) {
			if (errno == ENOENT) return 0;
			snprintf(why, cap, "%s: %s", dir, strerror(errno));
			return -1;
		}
		char parent[512];
		snprintf(parent, sizeof parent, "%s", dir);
		char *slash = strrchr(parent, '/');
		if (slash && slash != parent) {
			*slash = 0;
			mkdir(parent, 0700); /* ~/.cache: made as XDG says, else it is there already */
		}
		if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
			snprintf(why, cap, "cannot make %s: %s", dir, strerror(errno));
			return -1;
		}
		if (lstat(dir, &st) < 0) {
			snprintf(why, cap, "%s: %s", dir, strerror(errno));
			return -1;
		}
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		snprintf(why, cap, "%s: not a directory of this user's that only it may write to", dir);
		return -1;
	}
	return 1;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR) continue;
		if (w <= 0) return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int file_write_atomic(const char *path, const uint8_t *const *part, const size_t *len, int n, char *why, size_t cap)
{
	char tmp[1100];
	snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(why, cap, "%s: %s", tmp, strerror(errno));
		return -1;
	}
	int ok = 1, e = 0;
	for (int i = 0; ok && i < n; i++)
		if (write_all(fd, part[i], len[i]) < 0) ok = 0, e = errno;
	if (close(fd) < 0 && ok) ok = 0, e = errno;
	if (ok && rename(tmp, path) < 0) ok = 0, e = errno;
	if (!ok) {
		unlink(tmp);
		snprintf(why, cap, "%s: %s", path, strerror(e ? e : EIO));
		return -1;
	}
	return 0;
}
