/* SPDX-License-Identifier: MIT */
/* net.h: a minimal network stack: Ethernet, ARP (reply + cache), IPv4 (no fragments), UDP. */
#ifndef NET_H
#define NET_H
#include <stddef.h>
#include <stdint.h>
#include "lib.h"

#define NET_IP(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))
#define UDP_PAYLOAD_MAX 1472		/* 1500 - IP 20 - UDP 8 */

/* Who sent a datagram: enough to answer it. */
struct udp_peer {
	uint32_t ip;			/* host byte order */
	uint16_t port;
	uint8_t mac[6];			/* the frame's source: replies go straight back to it */
};

/* A UDP listener: called by the net task for each datagram to its port. */
typedef void (*udp_handler)(const struct udp_peer *from, uint16_t to_port, const uint8_t *data, size_t len);

/* Every frame the stack saw and why any was dropped. */
struct net_stats {
	uint64_t rx_frames, rx_bytes, tx_frames, tx_bytes;
	uint64_t drop_short;		/* shorter than an Ethernet header */
	uint64_t drop_not_for_us;	/* another MAC, or another IP */
	uint64_t drop_ethertype;	/* neither IPv4 nor ARP */
	uint64_t drop_arp;		/* malformed ARP */
	uint64_t drop_ip_header;	/* truncated, wrong version/length */
	uint64_t drop_ip_checksum;
	uint64_t drop_fragment;		/* fragments are not reassembled */
	uint64_t drop_protocol;		/* not UDP */
	uint64_t drop_udp_header;	/* truncated or inconsistent UDP length */
	uint64_t drop_udp_checksum;
	uint64_t drop_no_port;		/* nobody listens there */
	uint64_t drop_tx_full;		/* the transmit ring was full */
	uint64_t drop_no_arp;		/* destination MAC unknown (an ARP request was sent) */
	uint64_t arp_in;		/* well-formed ARP frames (requests and replies) */
	uint64_t arp_replies;		/* ARP requests for us that we answered */
};

extern struct net_stats net_stats;
extern uint32_t net_ip;			/* our address */
extern int net_up;			/* a NIC was found and the net task runs */

void net_init(void);			/* NIC, address from the command line, net task, listeners */
int net_listen(uint16_t port, udp_handler h);	/* 0, or -1 if the port is taken or full */
void net_unlisten(uint16_t port);
/* Sends one datagram; 0, or -1 if it could not go out (counted). */
int udp_send(uint16_t src_port, const struct udp_peer *to, const void *data, size_t len);
void net_print(struct out *o);		/* the `net` shell command */
#endif
