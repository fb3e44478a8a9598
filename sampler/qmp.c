/* SPDX-License-Identifier: MIT */
/* qmp.c: a small QMP client (greeting, qmp_capabilities, commands) and the tiny JSON reader it uses. */
#include "qmp.h"
#include "clock.h"
#include "err.h"
#include <stdlib.h>
#include <time.h>

/*
 * QMP wire format (QEMU docs/interop/qmp-spec): JSON objects over a stream socket, one after the
 * other (QEMU ends each with "\r\n", but a reader must not rely on line breaks). The server
 * speaks first, a greeting {"QMP": {"version": ..., "capabilities": [...]}}; the client sends
 * {"execute": "qmp_capabilities"} and then commands {"execute": NAME, "arguments": {...}}. Each
 * command gets exactly one {"return": ...} or {"error": {"class": ..., "desc": ...}}; events
 * {"event": NAME, "data": ..., "timestamp": ...} may come at any time, in between. A QMP server
 * socket serves one client at a time: a second client is accepted by the kernel but hears nothing.
 *
 * The JSON reader works on a complete text: json_scan finds where a value ends (or says more
 * bytes are needed), the other functions walk a value already scanned. No tree is built.
 */

#define JSON_DEPTH 64

static const char *ws(const char *p, const char *e)
{
	while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
	return p;
}

enum { J_BAD = -1, J_MORE = 0, J_OK = 1 };

/* A number by the JSON grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int number_ok(const char *p, const char *e)
{
	if (p < e && *p == '-') p++;
	if (p == e || *p < '0' || *p > '9') return 0;
	if (*p == '0') p++;
	else while (p < e && *p >= '0' && *p <= '9') p++;
	if (p < e && *p == '.') {
		const char *d = ++p;
		while (p < e && *p >= '0' && *p <= '9') p++;
		if (p == d) return 0;
	}
	if (p < e && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < e && (*p == '+' || *p == '-')) p++;
		const char *d = p;
		while (p < e && *p >= '0' && *p <= '9') p++;
		if (p == d) return 0;
	}
	return p == e;
}

/* Skip one value at *pp: J_OK (*pp past it), J_MORE (ran out of bytes), J_BAD. */
static int skip(const char **pp, const char *e, int depth)
{
	const char *p = ws(*pp, e);
	if (p == e) return J_MORE;
	if (depth > JSON_DEPTH) return J_BAD;
	if (*p == '{' || *p == '[') {
		int obj = *p == '{';
		char close = obj ? '}' : ']';
		p = ws(p + 1, e);
		if (p == e) return J_MORE;
		if (*p == close) {
			*pp = p + 1;
			return J_OK;
		}
		for (;;) {
			int r;
			if (obj) {
				p = ws(p, e);
				if (p == e) return J_MORE;
				if (*p != '"') return J_BAD;
				if ((r = skip(&p, e, depth + 1)) != J_OK) return r;
				p = ws(p, e);
				if (p == e) return J_MORE;
				if (*p++ != ':') return J_BAD;
			}
			if ((r = skip(&p, e, depth + 1)) != J_OK) return r;
			p = ws(p, e);
			if (p == e) return J_MORE;
			if (*p == close) {
				*pp = p + 1;
				return J_OK;
			}
			if (*p++ != ',') return J_BAD;
		}
	}
	if (*p == '"') {
		for (p++; p < e; p++) {
			if ((unsigned char)*p < 0x20) return J_BAD;
			if (*p == '\\') {
				if (++p == e) return J_MORE;
			} else if (*p == '"') {
				*pp = p + 1;
				return J_OK;
			}
		}
		return J_MORE;
	}
	const char *q = p;
	while (q < e && ((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '-' || *q == '+' ||
			 *q == '.' || *q == 'E'))
		q++;
	if (q == e) return J_MORE; /* a bare number or literal may go on: never the case inside {} */
	size_t n = (size_t)(q - p);
	if (!((n == 4 && !memcmp(p, "true", 4)) || (n == 5 && !memcmp(p, "false", 5)) ||
	      (n == 4 && !memcmp(p, "null", 4)) || number_ok(p, q)))
		return J_BAD;
	*pp = q;
	return J_OK;
}

long json_scan(const char *s, size_t n)
{
	const char *p = s;
	int r = skip(&p, s + n, 0);
	return r == J_OK ? (long)(p - s) : r == J_MORE ? 0 : -1;
}

/* The value starting at p (white space skipped), ending before e. */
static int value_at(const char *p, const char *e, struct jval *out)
{
	p = ws(p, e);
	const char *q = p;
	if (skip(&q, e, 0) != J_OK) return -1;
	out->p = p;
	out->len = (size_t)(q - p);
	return 0;
}

/* Iterate the members (obj) or elements of v: calls fn with each key (NULL for arrays) and value
 * until it returns nonzero; returns that, or 0 at the end, -1 if v is not that kind of value. */
static int each(const struct jval *v, int obj, int (*fn)(void *, const struct jval *, const struct jval *),
		void *arg)
{
	const char *p = ws(v->p, v->p + v->len), *e = v->p + v->len;
	if (p == e || *p != (obj ? '{' : '[')) return -1;
	p = ws(p + 1, e);
	if (p < e && *p == (obj ? '}' : ']')) return 0;
	while (p < e) {
		struct jval k = { 0 }, val;
		if (obj) {
			if (value_at(p, e, &k) < 0) return -1;
			p = ws(k.p + k.len, e);
			if (p == e || *p++ != ':') return -1;
		}
		if (value_at(p, e, &val) < 0) return -1;
		int r = fn(arg, obj ? &k : NULL, &val);
		if (r) return r;
		p = ws(val.p + val.len, e);
		if (p == e || *p != ',') break;
		p++;
	}
	return 0;
}

struct find {
	const char *key;   /* member wanted, or NULL */
	int index;         /* element wanted (counts down) */
	struct jval *out;  /* where to put it */
};

static int find_member(void *arg, const struct jval *k, const struct jval *v)
{
	struct find *f = arg;
	char name[256];
	if (json_str(k, name, sizeof name) < 0 || strcmp(name, f->key)) return 0;
	*f->out = *v;
	return 1;
}

static int find_index(void *arg, const struct jval *k, const struct jval *v)
{
	struct find *f = arg;
	(void)k;
	if (f->index-- > 0) return 0;
	*f->out = *v;
	return 1;
}

int json_member(const struct jval *v, const char *key, struct jval *out)
{
	struct find f = { key, 0, out };
	return each(v, 1, find_member, &f) == 1 ? 0 : -1;
}

int json_index(const struct jval *v, int i, struct jval *out)
{
	struct find f = { NULL, i, out };
	return i >= 0 && each(v, 0, find_index, &f) == 1 ? 0 : -1;
}

int json_path(const struct jval *v, const char *path, struct jval *out)
{
	struct jval cur = *v;
	char seg[128];
	while (*path) {
		size_t n = strcspn(path, ".");
		if (n == 0 || n >= sizeof seg) return -1;
		memcpy(seg, path, n);
		seg[n] = 0;
		path += n + (path[n] == '.');
		char *end;
		long i = strtol(seg, &end, 10);
		struct jval next;
		if (*end ? json_member(&cur, seg, &next) : json_index(&cur, (int)i, &next)) return -1;
		cur = next;
	}
	*out = cur;
	return 0;
}

static int hex4(const char *p, const char *e, unsigned *out)
{
	unsigned v = 0;
	if (e - p < 4) return -1;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		v <<= 4;
		if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
		else return -1;
	}
	*out = v;
	return 0;
}

long json_str(const struct jval *v, char *out, size_t cap)
{
	const char *p = v->p, *e = v->p + v->len;
	size_t o = 0;
	if (!cap || p == e || *p != '"' || e[-1] != '"' || v->len < 2) return -1;
	for (p++, e--; p < e; p++) {
		char buf[4];
		size_t n = 1;
		unsigned c = (unsigned char)*p;
		if (c == '\\') {
			if (++p == e) return -1;
			switch (*p) {
			case '"': case '\\': case '/': c = (unsigned char)*p; break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'n': c = '\n'; break;
			case 'r': c = '\r'; break;
			case 't': c = '\t'; break;
			case 'u':
				if (hex4(p + 1, e, &c) < 0) return -1;
				p += 4;
				if (c >= 0xd800 && c < 0xdc00) { /* a surrogate pair: \uD83D\uDE00 */
					unsigned lo;
					if (e - p < 7 || p[1] != '\\' || p[2] != 'u' || hex4(p + 3, e, &lo) < 0 ||
					    lo < 0xdc00 || lo > 0xdfff)
						return -1;
					c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
					p += 6;
				} else if (c >= 0xdc00 && c < 0xe000) {
					return -1;
				}
				break;
			default: return -1;
			}
			if (c >= 0x80) { /* UTF-8 */
				if (c < 0x800) {
					buf[0] = (char)(0xc0 | c >> 6);
					n = 2;
				} else if (c < 0x10000) {
					buf[0] = (char)(0xe0 | c >> 12);
					buf[1] = (char)(0x80 | ((c >> 6) & 0x3f));
					n = 3;
				} else {
					buf[0] = (char)(0xf0 | c >> 18);
					buf[1] = (char)(0x80 | ((c >> 12) & 0x3f));
					buf[2] = (char)(0x80 | ((c >> 6) & 0x3f));
					n = 4;
				}
				buf[n - 1] = (char)(0x80 | (c & 0x3f));
			} else {
				buf[0] = (char)c;
			}
		} else {
			buf[0] = (char)c;
		}
		if (o + n >= cap) return -1;
		memcpy(out + o, buf, n);
		o += n;
	}
	out[o] = 0;
	return (long)o;
}

int json_int(const struct jval *v, long long *out)
{
	char tmp[32], *end;
	if (!v->len || v->len >= sizeof tmp) return -1;
	memcpy(tmp, v->p, v->len);
	tmp[v->len] = 0;
	errno = 0;
	long long x = strtoll(tmp, &end, 10);
	if (*end || errno || end == tmp) return -1;
	*out = x;
	return 0;
}

int json_bool(const struct jval *v)
{
	if (v->len == 4 && !memcmp(v->p, "true", 4)) return 1;
	if (v->len == 5 && !memcmp(v->p, "false", 5)) return 0;
	return -1;
}

/* ---- client ---- */

#define QMP_GREETING_MS 3000  /* QEMU greets at once; silence means not QMP, or another client */
#define QMP_REPLY_MS 10000    /* a command that takes longer than this has hung -- counted from the
			       * command, however many events arrive meanwhile or however slowly */

/* Next complete message into q->msg, by the monotonic deadline: 0, or -1 (err set). */
static int next_msg(struct qmp *q, long long deadline, int timeout_ms)
{
	for (;;) {
		long n = json_scan(q->rbuf, q->rlen);
		if (n < 0) {
			ERR_SET(q, ERR_PROTO, "%s is not a QMP socket (it sent something that is not JSON)", q->conn.where);
			return -1;
		}
		if (n > 0) {
			const char *s = ws(q->rbuf, q->rbuf + n);
			q->mlen = (size_t)(q->rbuf + n - s);
			memcpy(q->msg, s, q->mlen);
			q->msg[q->mlen] = 0;
			memmove(q->rbuf, q->rbuf + n, q->rlen - (size_t)n);
			q->rlen -= (size_t)n;
			if (q->msg[0] != '{') {
				ERR_SET(q, ERR_PROTO, "%s is not a QMP socket (a message is not a JSON object)", q->conn.where);
				return -1;
			}
			return 0;
		}
		if (q->rlen == sizeof q->rbuf - 1) {
			ERR_SET(q, ERR_PROTO, "a QMP message from %s is larger than %d bytes", q->conn.where, QMP_BUF);
			return -1;
		}
		long long left = deadline - now_ms();
		ssize_t got = left <= 0 ? 0 : conn_read(&q->conn, q->rbuf + q->rlen, sizeof q->rbuf - 1 - q->rlen,
							 left > timeout_ms ? timeout_ms : (int)left);
		if (got < 0) {
			ERR_SET(q, q->conn.err, "QMP: %s", q->conn.errstr);
			return -1;
		}
		if (got == 0) {
			ERR_SET(q, ERR_TIMEOUT, "%s: no QMP answer within %d ms", q->conn.where, timeout_ms);
			return -1;
		}
		q->rlen += (size_t)got;
	}
}

int qmp_peer_kind(const char *b, size_t n)
{
	const char *e = b + n, *p = ws(b, e);
	static const char qmp[] = "{\"QMP\"", hmp[] = "QEMU ";
	size_t left = (size_t)(e - p);
	if (left >= sizeof qmp - 1 && !memcmp(p, qmp, sizeof qmp - 1)) return QMP_PEER_QMP;
	if (left >= sizeof hmp - 1 && !memcmp(p, hmp, sizeof hmp - 1) && memmem(p, left, " monitor", 8))
		return QMP_PEER_HMP;
	return 0;
}

int qmp_open(struct qmp *q, const char *path)
{
	struct jval m, g;
	q->rlen = q->mlen = 0;
	q->err = 0;
	q->errstr[0] = 0;
	if (conn_open(&q->conn, NULL, 0, path) < 0) {
		ERR_SET(q, q->conn.err, "QMP: %s", q->conn.errstr);
		return -1;
	}
	if (next_msg(q, now_ms() + QMP_GREETING_MS, QMP_GREETING_MS) < 0) {
		if (q->err == ERR_TIMEOUT) {
			q->err = 0;
			ERR_SET(q, ERR_PROTO, "no QMP greeting from %s within %d s (not a QMP socket, or another "
				"client holds it)", path, QMP_GREETING_MS / 1000);
		}
		return -1;
	}
	m.p = q->msg;
	m.len = q->mlen;
	if (json_member(&m, "QMP", &g) < 0) {
		ERR_SET(q, ERR_PROTO, "%s is not a QMP socket (its first message is no QMP greeting)", path);
		return -1;
	}
	return qmp_exec(q, "{\"execute\":\"qmp_capabilities\"}");
}

int qmp_exec(struct qmp *q, const char *cmd)
{
	struct jval m, x;
	if (conn_write(&q->conn, cmd, strlen(cmd)) < 0 || conn_write(&q->conn, "\n", 1) < 0) {
		ERR_SET(q, q->conn.err, "QMP: %s", q->conn.errstr);
		return -1;
	}
	int wait = q->reply_ms > 0 ? q->reply_ms : QMP_REPLY_MS;
	for (long long deadline = now_ms() + wait;;) {
		if (next_msg(q, deadline, wait) < 0) return -1;
		m.p = q->msg;
		m.len = q->mlen;
		if (json_member(&m, "return", &x) == 0) return 0;
		if (json_member(&m, "error", &x) == 0) {
			char desc[ERR_MAX];
			struct jval d;
			if (json_member(&x, "desc", &d) < 0 || json_str(&d, desc, sizeof desc) < 0)
				snprintf(desc, sizeof desc, "(no description)");
			ERR_SET(q, ERR_PROTO, "QMP error: %s", desc);
			return -1;
		}
		q->events++; /* an event (STOP, RESUME, ...): not our reply */
	}
}

void qmp_close(struct qmp *q)
{
	conn_close(&q->conn);
}
