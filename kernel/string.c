/* SPDX-License-Identifier: MIT */
/* string.c: memory and string routines the compiler and the kernel expect. */
#include "lib.h"

void *memcpy(void *dst, const void *src, size_t n)
{
#if defined(__x86_64__)
	void *d = dst;
	__asm__ volatile("rep movsb" : "+D"(d), "+S"(src), "+c"(n) :: "memory");
#else
	unsigned char *d = dst;
	const unsigned char *s = src;
	while (n >= 8) {		/* GCC builds this loop with -fno-builtin: no call to itself */
		uint64_t w;
		__builtin_memcpy(&w, s, 8);
		__builtin_memcpy(d, &w, 8);
		d += 8, s += 8, n -= 8;
	}
	while (n--)
		*d++ = *s++;
#endif
	return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	if (d == s || n == 0)
		return dst;
	if (d < s || d >= s + n)
		return memcpy(dst, src, n);
	while (n--)
		d[n] = s[n];
	return dst;
}

void *memset(void *dst, int c, size_t n)
{
#if defined(__x86_64__)
	void *d = dst;
	__asm__ volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
#else
	unsigned char *d = dst;
	while (n--)
		*d++ = (unsigned char)c;
#endif
	return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	for (size_t i = 0; i < n; i++)
		if (x[i] != y[i])
			return x[i] - y[i];
	return 0;
}

size_t strlen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

int strcmp(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return (unsigned char)*a - (unsigned char)*b;
}

int strncmp(const char *a, const char *b, size_t n)
{
	for (; n; n--, a++, b++) {
		if (*a != *b)
			return (unsigned char)*a - (unsigned char)*b;
		if (!*a)
			return 0;
	}
	return 0;
}

char *strncpy0(char *dst, const char *src, size_t n)
{
	size_t i = 0;
	if (n == 0)
		return dst;
	for (; i + 1 < n && src[i]; i++)
		dst[i] = src[i];
	dst[i] = 0;
	return dst;
}

int parse_u64(const char *s, uint64_t *v)
{
	uint64_t x = 0;
	if (!s || !*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		if (x > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -1;	/* overflow */
		x = x * 10 + (uint64_t)(*s - '0');
	}
	*v = x;
	return 0;
}
