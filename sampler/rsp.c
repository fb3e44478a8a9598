/* SPDX-License-Identifier: MIT */
/* rsp.c: GDB remote serial protocol packet codec -- framing, checksums, escapes, run lengths. */
#include "rsp.h"
#include "bytes.h"
#include <string.h>

/*
 * Wire format (GDB manual, "Overview" of the remote protocol):
 *   $<payload>#<two hex digits: modulo-256 sum of the raw payload bytes>
 *   '}' escapes the next byte, which is XORed with 0x20 ($ # } * are always escaped).
 *   '*' run-length: "X*n" repeats X (n - 29) more times; n is a printable byte.
 *   Outside packets: '+' ack, '-' nak (retransmit), 0x03 interrupt (client to stub only).
 * The checksum covers the raw (escaped, RLE-compressed) bytes, not the decoded payload.
 */

enum { S_IDLE, S_DATA, S_CS1, S_CS2 };

void rsp_dec_init(struct rsp_dec *d)
{
	memset(d, 0, sizeof *d);
	d->state = S_IDLE;
}

int rsp_hexval(int c)
{
	if (c >= '0' && c <= '9') return c - '0';
	if (c >= 'a' && c <= 'f') return c - 'a' + 10;
	if (c >= 'A' && c <= 'F') return c - 'A' + 10;
	return -1;
}

static void put(struct rsp_dec *d, char c)
{
	if (d->len < RSP_PKT_MAX) d->pkt[d->len++] = c;
	else d->over |= 1;
}

/* Bytes with a meaning inside a packet: the end, a restart, an escape, a run length. */
static int special(uint8_t c)
{
	return c == '#' || c == '$' || c == '}' || c == '*';
}

static void start(struct rsp_dec *d)
{
	d->state = S_DATA;
	d->sum = 0;
	d->len = 0;
	d->esc = d->rle = d->over = 0;
}

enum rsp_event rsp_feed(struct rsp_dec *d, const uint8_t *in, size_t n, size_t *used)
{
	size_t i;
	for (i = 0; i < n; i++) {
		uint8_t c = in[i];
		int v;
		switch (d->state) {
		case S_IDLE:
			if (c == '$') { start(d); continue; }
			if (c == '+') { *used = i + 1; return RSP_ACK; }
			if (c == '-') { *used = i + 1; return RSP_NAK; }
			if (c != 0x03) d->stray++;
			continue;
		case S_DATA:
			if (!d->esc && !d->rle && !special(c)) {
				/* Fast path: a run of plain payload bytes (hex, mostly) in one loop. */
				size_t j = i;
				uint8_t sum = d->sum;
				while (j < n && !special(in[j])) sum += in[j++];
				size_t k = j - i, room = RSP_PKT_MAX - d->len;
				if (k > room) { k = room; d->over |= 1; }
				memcpy(d->pkt + d->len, in + i, k);
				d->len += k;
				d->sum = sum;
				i = j - 1;
				continue;
			}
			if (c == '#' && !d->esc) { d->state = S_CS1; continue; }
			if (c == '$' && !d->esc) { start(d); d->stray++; continue; } /* resync on a new start */
			d->sum += c;
			if (d->esc) { put(d, (char)(c ^ 0x20)); d->esc = 0; continue; }
			if (d->rle) {
				d->rle = 0;
				if (d->len > 0 && c >= 29) {
					char prev = d->pkt[d->len - 1];
					for (int k = 0; k < c - 29; k++) put(d, prev);
				}
				continue;
			}
			if (c == '}') { d->esc = 1; continue; }
			if (c == '*') { d->rle = 1; continue; }
			put(d, (char)c);
			continue;
		case S_CS1:
			v = rsp_hexval(c);
			if (v < 0) { /* a bad digit is a bad checksum (and -1 must not be shifted: UB) */
				d->over |= 2;
				v = 0;
			}
			d->rxsum = (uint8_t)(v << 4);
			d->state = S_CS2;
			continue;
		case S_CS2:
			v = rsp_hexval(c);
			d->state = S_IDLE;
			*used = i + 1;
			if (d->over & 1) return RSP_OVERFLOW;
			if (v < 0 || (d->over & 2) || (uint8_t)(d->rxsum | v) != d->sum) return RSP_BADSUM;
			d->pkt[d->len] = 0;
			return RSP_PACKET;
		}
	}
	*used = n;
	return RSP_NONE;
}

int rsp_encode(char *out, size_t cap, const char *payload, size_t len)
{
	size_t o = 0;
	uint8_t sum = 0;
	static const char hx[] = "0123456789abcdef";
	if (cap < 4) return -1;
	out[o++] = '$';
	for (size_t i = 0; i < len; i++) {
		uint8_t c = (uint8_t)payload[i];
		if (c == '$' || c == '#' || c == '}' || c == '*') {
			if (o + 2 > cap - 3) return -1;
			out[o++] = '}';
			sum += '}';
			c ^= 0x20;
		}
		if (o + 1 > cap - 3) return -1;
		out[o++] = (char)c;
		sum += c;
	}
	out[o++] = '#';
	out[o++] = hx[sum >> 4];
	out[o++] = hx[sum & 15];
	return (int)o;
}

int rsp_append(char *out, size_t cap, size_t *off, const char *payload)
{
	if (*off > cap) return -1;
	int n = rsp_encode(out + *off, cap - *off, payload, strlen(payload));
	if (n < 0) return -1;
	*off += (size_t)n;
	return 0;
}

int rsp_is_error(const char *pkt, size_t len)
{
	return len == 3 && pkt[0] == 'E' && rsp_hexval(pkt[1]) >= 0 && rsp_hexval(pkt[2]) >= 0;
}

int rsp_is_console(const char *pkt, size_t len)
{
	if (len < 3 || pkt[0] != 'O' || (len - 1) % 2) return 0;
	for (size_t i = 1; i < len; i++)
		if (rsp_hexval(pkt[i]) < 0) return 0;
	return 1; /* "OK" has odd hex length and 'K' is not hex: never console */
}

int rsp_is_stop(const char *pkt, size_t len)
{
	if (len < 3) return 0;
	if (pkt[0] != 'T' && pkt[0] != 'S' && pkt[0] != 'W' && pkt[0] != 'X') return 0;
	return rsp_hexval(pkt[1]) >= 0 && rsp_hexval(pkt[2]) >= 0;
}

/* Each hex digit's value plus one; 0 for every other byte. */
static const uint8_t hexv1[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8,
	['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15,
	['f'] = 16, ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

int rsp_unhex(uint8_t *out, const char *hex, size_t n)
{
	const uint8_t *h = (const uint8_t *)hex;
	unsigned bad = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned hi = hexv1[h[2 * i]], lo = hexv1[h[2 * i + 1]];
		bad |= (hi == 0) | (lo == 0);
		out[i] = (uint8_t)((hi - 1) << 4 | (lo - 1));
	}
	return bad ? -1 : 0;
}

void rsp_hex(char *out, const uint8_t *in, size_t n)
{
	static const char hx[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hx[in[i] >> 4];
		out[2 * i + 1] = hx[in[i] & 15];
	}
	out[2 * n] = 0;
}

uint64_t rsp_le(const uint8_t *p, int size)
{
	return le_n(p, size);
}
