/* SPDX-License-Identifier: MIT */
/* replay.c: runs a fuzz harness's LLVMFuzzerTestOneInput over files and directories without
 * libFuzzer, so the committed corpus and every fixed crash are replayed by `make test`. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	size_t cap = 1 << 16, n = 0, k;
	uint8_t *buf = malloc(cap);
	while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0) {
		n += k;
		if (n == cap) {
			uint8_t *b = realloc(buf, cap *= 2);
			if (!b) free(buf);
			buf = b;
		}
	}
	fclose(f);
	if (!buf) return -1;
	uint8_t *exact = malloc(n ? n : 1); /* exact size, as libFuzzer passes it */
	if (!exact) return -1;
	memcpy(exact, buf, n);
	free(buf);
	LLVMFuzzerTestOneInput(exact, n);
	free(exact);
	return 0;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file under path (sorted, so runs are repeatable); the number run, -1 on error. */
static int run_path(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0) return 0; /* a harness with no crashes has no directory */
	if (!S_ISDIR(st.st_mode)) return run_file(path) < 0 ? -1 : 1;
	DIR *d = opendir(path);
	struct dirent *e;
	char **names = NULL;
	size_t nn = 0;
	int total = 0;
	if (!d) return -1;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.') continue;
		char **m = realloc(names, (nn + 1) * sizeof *names);
		if (!m) break;
		names = m;
		size_t l = strlen(path) + strlen(e->d_name) + 2;
		names[nn] = malloc(l);
		snprintf(names[nn++], l, "%s/%s", path, e->d_name);
	}
	closedir(d);
	qsort(names, nn, sizeof *names, cmp);
	for (size_t i = 0; i < nn; i++) {
		int r = run_path(names[i]);
		if (r < 0) total = -1;
		else if (total >= 0) total += r;
		free(names[i]);
	}
	free(names);
	return total;
}

int main(int argc, char **argv)
{
	int total = 0;
	for (int i = 1; i < argc; i++) {
		int r = run_path(argv[i]);
		if (r < 0) return 1;
		total += r;
	}
	printf("%s: %d inputs replayed, none crashed\n", argv[0], total);
	return 0;
}
