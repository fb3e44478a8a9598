/* SPDX-License-Identifier: MIT */
/* files.h: whole-file input for the loaders (read to EOF, bounded; /proc files report size 0), and the cache directory's files. */
#ifndef FILES_H
#define FILES_H
#include <stddef.h>
#include <stdint.h>

#define FILE_MAX_IMAGE (1ull << 31) /* the largest kernel image or map we read (2 GiB) */

/* Read path ("-": standard input) whole into a malloc'd, NUL-terminated buffer; -1 with a one-line message in err
 * (missing, a directory, unreadable, larger than max). */
int file_read(const char *path, uint64_t max, uint8_t **buf, size_t *len, char *err, size_t errcap);
/* gdbsample's cache directory into dir: $XDG_CACHE_HOME/gdbsample, else ~/.cache/gdbsample (XDG's
 * default); -1 when neither variable holds an absolute path. */
int file_cache_dir(char *dir, size_t cap);
/* The cache directory dir is this user's and nobody else may write to it (made 0700, with its
 * parent as XDG says, when create and missing): 1 yes, 0 missing, -1 no (why). */
int file_cache_dir_ok(const char *dir, int create, char *why, size_t cap);
/* path written whole, or not at all: the n parts into a new temporary file beside it (0600,
 * O_EXCL, never through a symlink), then renamed over path. 0, or -1 with why (nothing left). */
int file_write_atomic(const char *path, const uint8_t *const *part, const size_t *len, int n, char *why, size_t cap);
/* path's last component (after its last '/'), as the loaders' messages name a file. */
const char *file_base(const char *path);

#endif
