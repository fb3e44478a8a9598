/* SPDX-License-Identifier: MIT */
/* imgcache.c: a kernel image's decompressed payload cached by content (imgcache.h): the header on bytes, the files at the edge. */
#include "imgcache.h"
#include "bytes.h"
#include "files.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "gdbsimg"  /* with its NUL: 8 bytes */
#define VERSION 1

static const char *const codecs[] = { "gzip", "xz", "zstd", "lz4" };

void imgcache_sha256(const uint8_t *p, size_t n, uint8_t out[IMGCACHE_SHA])
{
	SHA256(p, n, out);
}

void imgcache_encode(uint8_t out[IMGCACHE_HDR], const uint8_t key[IMGCACHE_SHA], const char *codec,
		     const uint8_t *payload, size_t len)
{
	memset(out, 0, IMGCACHE_HDR);
	memcpy(out, MAGIC, 8);
	put_le32(out + 8, VERSION);
	put_le32(out + 12, IMGCACHE_HDR);
	memcpy(out + 16, key, IMGCACHE_SHA);
	put_le64(out + 48, len);
	imgcache_sha256(payload, len, out + 56);
	strncpy((char *)out + 88, codec ? codec : "", 8);
}

int imgcache_parse(const uint8_t *b, size_t n, const uint8_t key[IMGCACHE_SHA], uint64_t file_size,
		   struct imgcache_hdr *h, char *why, size_t cap)
{
	memset(h, 0, sizeof *h);
	if (n < IMGCACHE_HDR || file_size < IMGCACHE_HDR || memcmp(b, MAGIC, 8)) {
		snprintf(why, cap, "not a gdbsample image cache entry");
		return -1;
	}
	if (le32(b + 8) != VERSION || le32(b + 12) != IMGCACHE_HDR) {
		snprintf(why, cap, "an entry of another version (%u)", le32(b + 8));
		return -1;
	}
	if (memcmp(b + 16, key, IMGCACHE_SHA)) {
		snprintf(why, cap, "the entry is another image's (its SHA-256 differs)");
		return -1;
	}
	h->len = le64(b + 48);
	if (h->len != file_size - IMGCACHE_HDR) {
		snprintf(why, cap, "the entry holds %llu payload bytes where its header says %llu (truncated?)",
			 (unsigned long long)(file_size - IMGCACHE_HDR), (unsigned long long)h->len);
		return -1;
	}
	for (size_t i = 0; i < sizeof codecs / sizeof codecs[0]; i++)
		if (!strncmp((const char *)b + 88, codecs[i], 8) && strlen(codecs[i]) < 8) h->codec = codecs[i];
	if (!h->codec) {
		snprintf(why, cap, "the entry names no codec gdbsample reads");
		return -1;
	}
	memcpy(h->key, key, IMGCACHE_SHA);
	memcpy(h->sum, b + 56, IMGCACHE_SHA);
	return 0;
}

int imgcache_verify(const struct imgcache_hdr *h, const uint8_t *payload, size_t len, char *why, size_t cap)
{
	uint8_t sum[IMGCACHE_SHA];
	if (len != h->len) {
		snprintf(why, cap, "the payload is %zu bytes, not %llu", len, (unsigned long long)h->len);
		return -1;
	}
	imgcache_sha256(payload, len, sum);
	if (memcmp(sum, h->sum, IMGCACHE_SHA)) {
		snprintf(why, cap, "the payload's SHA-256 differs from its header's (damaged)");
		return -1;
	}
	if (len < 4 || memcmp(payload, "\177ELF", 4)) {
		snprintf(why, cap, "the payload is not an ELF");
		return -1;
	}
	return 0;
}

static void entry_path(char *out, size_t cap, const char *dir, const uint8_t key[IMGCACHE_SHA])
{
	int o = snprintf(out, cap, "%s/image-", dir);
	for (int i = 0; i < 16 && o > 0 && (size_t)o + 3 < cap; i++) o += snprintf(out + o, cap - (size_t)o, "%02x", key[i]);
	if (o > 0 && (size_t)o < cap) snprintf(out + o, cap - (size_t)o, ".img");
}

static int read_at(int fd, uint8_t *p, size_t n, off_t off)
{
	while (n) {
		ssize_t r = pread(fd, p, n, off);
		if (r < 0 && errno == EINTR) continue;
		if (r <= 0) return -1;
		p += r;
		n -= (size_t)r;
		off += r;
	}
	return 0;
}

int imgcache_get(const char *dir, const uint8_t key[IMGCACHE_SHA], uint8_t **payload, size_t *len,
		 const char **codec, void **map, size_t *maplen, char *why, size_t cap)
{
	char path[700];
	uint8_t hdr[IMGCACHE_HDR];
	struct stat st;
	struct imgcache_hdr h;
	*payload = NULL;
	*len = 0;
	*map = NULL;
	*maplen = 0;
	int d = file_cache_dir_ok(dir, 0, why, cap);
	if (d <= 0) return d;
	entry_path(path, sizeof path, dir, key);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT) return 0;
		snprintf(why, cap, "%s: %s", path, errno == ELOOP ? "a symbolic link" : strerror(errno));
		return -1;
	}
	int rc = -1;
	void *m = MAP_FAILED;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		snprintf(why, cap, "not a file of this user's that only it may write to");
	} else if (read_at(fd, hdr, sizeof hdr, 0) < 0) {
		snprintf(why, cap, "shorter than its header");
	} else if (imgcache_parse(hdr, sizeof hdr, key, (uint64_t)st.st_size, &h, why, cap) == 0) {
		/* mapped, not read: the payload's pages come from the page cache as they are touched */
		if ((uint64_t)st.st_size > SIZE_MAX ||
		    (m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0)) == MAP_FAILED) {
			snprintf(why, cap, "mmap: %s", strerror(errno));
		} else if (imgcache_verify(&h, (uint8_t *)m + IMGCACHE_HDR, h.len, why, cap) == 0) {
			*payload = (uint8_t *)m + IMGCACHE_HDR;
			*len = h.len;
			*codec = h.codec;
			*map = m;
			*maplen = (size_t)st.st_size;
			rc = 1;
		}
	}
	if (rc < 0) { /* say which file */
		char w[300];
		snprintf(w, sizeof w, "%s", why);
		snprintf(why, cap, "%s: %s", path, w);
		if (m != MAP_FAILED) munmap(m, (size_t)st.st_size);
	}
	close(fd);
	return rc;
}

void imgcache_release(void *map, size_t maplen)
{
	if (map) munmap(map, maplen);
}

/* Remove the image entries past the newest IMGCACHE_MAX_ENTRIES (by modification time). */
static void evict(const char *dir)
{
	struct ent { char name[64]; struct timespec t; } e[64];
	int n = 0;
	DIR *d = opendir(dir);
	struct dirent *de;
	if (!d) return;
	while (n < 64 && (de = readdir(d))) {
		size_t l = strlen(de->d_name);
		struct stat st;
		char path[700];
		if (strncmp(de->d_name, "image-", 6) || l < 10 || l >= sizeof e[0].name || strcmp(de->d_name + l - 4, ".img"))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode)) continue;
		snprintf(e[n].name, sizeof e[n].name, "%s", de->d_name);
		e[n++].t = st.st_mtim;
	}
	closedir(d);
	while (n > IMGCACHE_MAX_ENTRIES) {
		int old = 0;
		for (int i = 1; i < n; i++)
			if (e[i].t.tv_sec < e[old].t.tv_sec || (e[i].t.tv_sec == e[old].t.tv_sec && e[i].t.tv_nsec < e[old].t.tv_nsec))
				old = i;
		char path[700];
		snprintf(path, sizeof path, "%s/%s", dir, e[old].name);
		unlink(path);
		e[old] = e[--n];
	}
}

int imgcache_put(const char *dir, const uint8_t key[IMGCACHE_SHA], const char *codec, const uint8_t *payload,
		 size_t len, char *why, size_t cap)
{
	char path[700];
	uint8_t hdr[IMGCACHE_HDR];
	if (file_cache_dir_ok(dir, 1, why, cap) <= 0) return -1;
	entry_path(path, sizeof path, dir, key);
	imgcache_encode(hdr, key, codec, payload, len);
	const uint8_t *part[] = { hdr, payload };
	size_t plen[] = { sizeof hdr, len };
	if (file_write_atomic(path, part, plen, 2, why, cap) < 0) return -1;
	evict(dir);
	return 0;
}
