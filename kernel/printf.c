/* SPDX-License-Identifier: MIT */
/* printf.c: a small printf (%d %u %x %p %s %c, width, 0 and - flags, l/ll/z) for every sink. */
#include "lib.h"

struct fmtsink {
	void (*put)(struct fmtsink *k, const char *s, size_t n);
	char *buf;		/* snprintf: destination */
	size_t size, len;	/* snprintf: capacity, characters produced */
	struct out *out;	/* out_printf: the sink */
};

static void pad(struct fmtsink *k, char c, int n)
{
	char chunk[16];
	memset(chunk, c, sizeof(chunk));
	while (n > 0) {
		int m = n > 16 ? 16 : n;
		k->put(k, chunk, (size_t)m);
		n -= m;
	}
}

static void emit(struct fmtsink *k, const char *s, size_t n, int width, int left, char padc)
{
	int p = width - (int)n;
	if (!left)
		pad(k, padc, p);
	k->put(k, s, n);
	if (left)
		pad(k, ' ', p);
}

static void format(struct fmtsink *k, const char *fmt, va_list ap)
{
	char num[24];
	while (*fmt) {
		const char *start = fmt;
		while (*fmt && *fmt != '%')
			fmt++;
		if (fmt > start)
			k->put(k, start, (size_t)(fmt - start));
		if (!*fmt)
			break;
		fmt++;
		int left = 0, width = 0, lng = 0;
		char padc = ' ';
		for (;; fmt++) {
			if (*fmt == '-') left = 1;
			else if (*fmt == '0') padc = '0';
			else break;
		}
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (*fmt++ - '0');
		while (*fmt == 'l' || *fmt == 'z')
			lng++, fmt++;
		char c = *fmt ? *fmt++ : 0;
		uint64_t u;
		int neg = 0, base = 10;
		switch (c) {
		case 'd': case 'i': {
			int64_t v = lng ? va_arg(ap, int64_t) : va_arg(ap, int);
			neg = v < 0;
			u = neg ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
			goto number;
		}
		case 'u':
			u = lng ? va_arg(ap, uint64_t) : va_arg(ap, unsigned);
			goto number;
		case 'x':
			u = lng ? va_arg(ap, uint64_t) : va_arg(ap, unsigned);
			base = 16;
			goto number;
		case 'p':
			u = (uint64_t)va_arg(ap, void *);
			base = 16;
			k->put(k, "0x", 2);
			goto number;
		number: {
			int i = sizeof(num);
			do {
				num[--i] = "0123456789abcdef"[u % (uint64_t)base];
				u /= (uint64_t)base;
			} while (u);
			if (neg) {
				if (padc == '0') {
					k->put(k, "-", 1);
					width--;
				} else {
					num[--i] = '-';
				}
			}
			emit(k, num + i, sizeof(num) - (size_t)i, width, left, left ? ' ' : padc);
			break;
		}
		case 's': {
			const char *s = va_arg(ap, const char *);
			if (!s)
				s = "(null)";
			emit(k, s, strlen(s), width, left, ' ');
			break;
		}
		case 'c': {
			char ch = (char)va_arg(ap, int);
			emit(k, &ch, 1, width, left, ' ');
			break;
		}
		case '%':
			k->put(k, "%", 1);
			break;
		default:	/* unknown conversion: print it as is */
			k->put(k, "%", 1);
			if (c)
				k->put(k, &c, 1);
			break;
		}
	}
}

static void buf_put(struct fmtsink *k, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++, k->len++)
		if (k->len + 1 < k->size)
			k->buf[k->len] = s[i];
}

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct fmtsink k = { .put = buf_put, .buf = buf, .size = size };
	format(&k, fmt, ap);
	if (size)
		buf[k.len < size ? k.len : size - 1] = 0;
	return (int)k.len;
}

int snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

static void out_put(struct fmtsink *k, const char *s, size_t n)
{
	k->out->write(k->out, s, n);
}

void out_vprintf(struct out *o, const char *fmt, va_list ap)
{
	struct fmtsink k = { .put = out_put, .out = o };
	format(&k, fmt, ap);
}

void out_printf(struct out *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	out_vprintf(o, fmt, ap);
	va_end(ap);
}

void out_puts(struct out *o, const char *s)
{
	o->write(o, s, strlen(s));
}
