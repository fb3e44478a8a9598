/* SPDX-License-Identifier: MIT */
/* rsp.h: GDB remote serial protocol packet codec -- pure bytes in, packets out; no I/O. */
#ifndef RSP_H
#define RSP_H
#include <stddef.h>
#include <stdint.h>

#define RSP_PKT_MAX 16384 /* largest decoded payload we accept (QEMU <= 10.1 sends < 4096) */

/* Events returned by rsp_feed. */
enum rsp_event {
	RSP_NONE = 0, /* input exhausted, no complete event */
	RSP_ACK,      /* a '+' outside a packet */
	RSP_NAK,      /* a '-' outside a packet: the peer wants the last packet again */
	RSP_PACKET,   /* a complete packet with a good checksum: see dec->pkt/dec->len */
	RSP_BADSUM,   /* a complete packet whose checksum did not match (dropped) */
	RSP_OVERFLOW, /* a packet longer than RSP_PKT_MAX (dropped) */
};

/* Incremental decoder: feed it any slice of the byte stream, it keeps state between calls. */
struct rsp_dec {
	int state;                      /* where we are inside a packet (private) */
	uint8_t sum;                    /* running checksum of the raw bytes after '$' */
	uint8_t rxsum;                  /* checksum digits received after '#' */
	int esc;                        /* previous raw byte was '}' */
	int rle;                        /* previous raw byte was '*' */
	int over;                       /* bit 0: packet overflowed; bit 1: bad checksum digit */
	size_t len;                     /* decoded payload length so far */
	char pkt[RSP_PKT_MAX + 1];      /* decoded payload, NUL-terminated when complete */
	unsigned long stray;            /* bytes outside packets that were not +, - or 0x03 */
};

void rsp_dec_init(struct rsp_dec *d);
/* Consume bytes from in[0..n) until one event completes; *used gets the bytes consumed. */
enum rsp_event rsp_feed(struct rsp_dec *d, const uint8_t *in, size_t n, size_t *used);

/* Frame payload as $payload#cs, escaping $ # } * ; returns bytes written or -1 if cap too small. */
int rsp_encode(char *out, size_t cap, const char *payload, size_t len);
/* Like rsp_encode for a NUL-terminated payload, appended at out+*off; -1 on overflow. */
int rsp_append(char *out, size_t cap, size_t *off, const char *payload);

/* Reply classification. */
int rsp_is_error(const char *pkt, size_t len);   /* "Enn" */
int rsp_is_console(const char *pkt, size_t len); /* "O<hex>" console output (not "OK") */
int rsp_is_stop(const char *pkt, size_t len);    /* "Tnn..." / "Snn" / "Wnn" / "Xnn" */

/* Hex helpers: decode 2*n hex chars into n bytes (-1 on a bad digit, out then unspecified);
 * encode n bytes. */
int rsp_unhex(uint8_t *out, const char *hex, size_t n);
void rsp_hex(char *out, const uint8_t *in, size_t n);
int rsp_hexval(int c);
/* Little-endian integer of `size` bytes from a register dump. */
uint64_t rsp_le(const uint8_t *p, int size);

#endif
