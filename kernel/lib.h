/* SPDX-License-Identifier: MIT */
/* lib.h: freestanding C library subset (strings, memory, formatting) and common macros. */
#ifndef LIB_H
#define LIB_H
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define NOINLINE __attribute__((noinline, noclone))
#define NORETURN __attribute__((noreturn))
#define PRINTF(f, a) __attribute__((format(printf, f, a)))
#define READ_ONCE(x) (*(volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v) (*(volatile __typeof__(x) *)&(x) = (v))
#define barrier() __asm__ volatile("" ::: "memory")

void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
char *strncpy0(char *dst, const char *src, size_t n);	/* always NUL-terminates */

/* A sink for formatted text: the serial console, a buffer, later a UDP reply. */
struct out {
	void (*write)(struct out *o, const char *s, size_t n);
	void *ctx;
};
int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int snprintf(char *buf, size_t size, const char *fmt, ...) PRINTF(3, 4);
void out_printf(struct out *o, const char *fmt, ...) PRINTF(2, 3);
void out_vprintf(struct out *o, const char *fmt, va_list ap);
void out_puts(struct out *o, const char *s);

/* Parses an unsigned decimal number that must fill the whole string; -1 if not one. */
int parse_u64(const char *s, uint64_t *v);
#endif
