/* SPDX-License-Identifier: MIT */
/* net.c: Ethernet/ARP/IPv4/UDP input and output; frames arrive in the net task. */
#include "net.h"
#include "boot.h"
#include "console.h"
#include "sched.h"
#include "spinlock.h"
#include "udpsh.h"
#include "virtio_net.h"

#define ETH_HLEN 14
#define ETH_P_IP 0x0800
#define ETH_P_ARP 0x0806
#define IP_HLEN 20
#define IP_PROTO_UDP 17
#define IP_FLAG_MF 0x2000
#define IP_FRAG_OFFSET 0x1fff
#define UDP_HLEN 8
#define ARP_LEN 28
#define ARP_REQUEST 1
#define ARP_REPLY 2
#define ARP_CACHE 16
#define MAX_LISTENERS 4
#define DEFAULT_IP NET_IP(10, 0, 2, 15)	/* QEMU user networking's guest address */

struct net_stats net_stats;
uint32_t net_ip = DEFAULT_IP;
int net_up;

static struct { uint16_t port; udp_handler h; } listeners[MAX_LISTENERS];
static struct { uint32_t ip; uint8_t mac[6]; } arp_cache[ARP_CACHE];
static unsigned arp_next;			/* round-robin replacement */
static struct spinlock arp_lock = SPINLOCK_INIT("arp");
static const uint8_t broadcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static void put16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v) { p[0] = v >> 24; p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v; }

/* RFC 1071 one's complement sum, folded; `sum` carries a pseudo-header's partial sum. */
static uint16_t checksum(const uint8_t *p, size_t len, uint32_t sum)
{
	for (; len > 1; p += 2, len -= 2)
		sum += get16(p);
	if (len)
		sum += (uint32_t)p[0] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static uint32_t udp_pseudo_sum(uint32_t src, uint32_t dst, uint16_t udp_len)
{
	return (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff) + IP_PROTO_UDP + udp_len;
}

static void arp_learn(uint32_t ip, const uint8_t *mac)
{
	uint64_t f = spin_lock_irqsave(&arp_lock);
	int slot = -1;
	for (int i = 0; i < ARP_CACHE; i++)
		if (arp_cache[i].ip == ip)
			slot = i;
	if (slot < 0)
		slot = (int)(arp_next++ % ARP_CACHE);
	arp_cache[slot].ip = ip;
	memcpy(arp_cache[slot].mac, mac, 6);
	spin_unlock_irqrestore(&arp_lock, f);
}

static int arp_lookup(uint32_t ip, uint8_t *mac)
{
	int found = 0;
	uint64_t f = spin_lock_irqsave(&arp_lock);
	for (int i = 0; i < ARP_CACHE && !found; i++)
		if (arp_cache[i].ip == ip && ip) {
			memcpy(mac, arp_cache[i].mac, 6);
			found = 1;
		}
	spin_unlock_irqrestore(&arp_lock, f);
	return found;
}

static int send_frame(const uint8_t *frame, size_t len)
{
	if (virtio_net_send(frame, len) != 0) {
		__atomic_add_fetch(&net_stats.drop_tx_full, 1, __ATOMIC_RELAXED);
		return -1;
	}
	__atomic_add_fetch(&net_stats.tx_frames, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&net_stats.tx_bytes, len, __ATOMIC_RELAXED);
	return 0;
}

static void eth_header(uint8_t *f, const uint8_t *dst, uint16_t type)
{
	memcpy(f, dst, 6);
	memcpy(f + 6, virtio_net_mac, 6);
	put16(f + 12, type);
}

static void arp_send(uint16_t op, const uint8_t *dst_mac, uint32_t dst_ip)
{
	uint8_t f[ETH_HLEN + ARP_LEN];
	eth_header(f, op == ARP_REQUEST ? broadcast : dst_mac, ETH_P_ARP);
	uint8_t *a = f + ETH_HLEN;
	put16(a, 1);				/* Ethernet */
	put16(a + 2, ETH_P_IP);
	a[4] = 6, a[5] = 4;
	put16(a + 6, op);
	memcpy(a + 8, virtio_net_mac, 6);
	put32(a + 14, net_ip);
	memcpy(a + 18, op == ARP_REQUEST ? (const uint8_t[6]){ 0 } : dst_mac, 6);
	put32(a + 24, dst_ip);
	send_frame(f, sizeof(f));
}

static void arp_input(const uint8_t *a, size_t len)
{
	if (len < ARP_LEN || get16(a) != 1 || get16(a + 2) != ETH_P_IP || a[4] != 6 || a[5] != 4) {
		net_stats.drop_arp++;
		return;
	}
	uint16_t op = get16(a + 6);
	uint32_t sender = get32(a + 14), target = get32(a + 24);
	if (op != ARP_REPLY && op != ARP_REQUEST) {
		net_stats.drop_arp++;
		return;
	}
	net_stats.arp_in++;
	if (sender)
		arp_learn(sender, a + 8);
	if (op == ARP_REQUEST && target == net_ip) {
		arp_send(ARP_REPLY, a + 8, sender);
		net_stats.arp_replies++;
	}
}

static void udp_input(const uint8_t *eth, const uint8_t *ip, size_t ip_len, size_t ihl)
{
	const uint8_t *u = ip + ihl;
	size_t avail = ip_len - ihl;
	if (avail < UDP_HLEN || get16(u + 4) < UDP_HLEN || get16(u + 4) > avail) {
		net_stats.drop_udp_header++;
		return;
	}
	uint16_t ulen = get16(u + 4);
	if (get16(u + 6) != 0 &&	/* 0: the sender did not compute one (allowed on IPv4) */
	    checksum(u, ulen, udp_pseudo_sum(get32(ip + 12), get32(ip + 16), ulen)) != 0) {
		net_stats.drop_udp_checksum++;
		return;
	}
	uint16_t dport = get16(u + 2);
	for (int i = 0; i < MAX_LISTENERS; i++)
		if (listeners[i].h && listeners[i].port == dport) {
			struct udp_peer from = { get32(ip + 12), get16(u), { 0 } };
			memcpy(from.mac, eth + 6, 6);
			listeners[i].h(&from, dport, u + UDP_HLEN, ulen - UDP_HLEN);
			return;
		}
	net_stats.drop_no_port++;
}

static void ip_input(const uint8_t *eth, const uint8_t *ip, size_t len)
{
	if (len < IP_HLEN || ip[0] >> 4 != 4 || (ip[0] & 0xf) < 5 || (size_t)(ip[0] & 0xf) * 4 > len ||
	    get16(ip + 2) < (ip[0] & 0xf) * 4 || get16(ip + 2) > len) {
		net_stats.drop_ip_header++;
		return;
	}
	size_t ihl = (size_t)(ip[0] & 0xf) * 4, total = get16(ip + 2);
	if (checksum(ip, ihl, 0) != 0) {
		net_stats.drop_ip_checksum++;
		return;
	}
	if (get16(ip + 6) & (IP_FLAG_MF | IP_FRAG_OFFSET)) {
		net_stats.drop_fragment++;
		return;
	}
	uint32_t dst = get32(ip + 16);
	if (dst != net_ip && dst != 0xffffffff) {
		net_stats.drop_not_for_us++;
		return;
	}
	arp_learn(get32(ip + 12), eth + 6);
	if (ip[9] != IP_PROTO_UDP) {
		net_stats.drop_protocol++;
		return;
	}
	udp_input(eth, ip, total, ihl);
}

static void net_input(const uint8_t *f, size_t len)
{
	net_stats.rx_frames++;
	net_stats.rx_bytes += len;
	if (len < ETH_HLEN) {
		net_stats.drop_short++;
		return;
	}
	if (memcmp(f, virtio_net_mac, 6) != 0 && memcmp(f, broadcast, 6) != 0) {
		net_stats.drop_not_for_us++;
		return;
	}
	switch (get16(f + 12)) {
	case ETH_P_IP: ip_input(f, f + ETH_HLEN, len - ETH_HLEN); break;
	case ETH_P_ARP: arp_input(f + ETH_HLEN, len - ETH_HLEN); break;
	default: net_stats.drop_ethertype++; break;
	}
}

int udp_send(uint16_t src_port, const struct udp_peer *to, const void *data, size_t len)
{
	uint8_t f[ETH_HLEN + IP_HLEN + UDP_HLEN + UDP_PAYLOAD_MAX];
	uint8_t mac[6];
	if (len > UDP_PAYLOAD_MAX)
		return -1;
	if (!arp_lookup(to->ip, mac)) {
		if (memcmp(to->mac, (const uint8_t[6]){ 0 }, 6) == 0) {
			arp_send(ARP_REQUEST, 0, to->ip);
			__atomic_add_fetch(&net_stats.drop_no_arp, 1, __ATOMIC_RELAXED);
			return -1;
		}
		memcpy(mac, to->mac, 6);	/* answer the frame's sender directly */
	}
	eth_header(f, mac, ETH_P_IP);
	uint8_t *ip = f + ETH_HLEN, *u = ip + IP_HLEN;
	uint16_t ulen = (uint16_t)(UDP_HLEN + len);
	memset(ip, 0, IP_HLEN);
	ip[0] = 0x45;				/* version 4, 5-word header */
	put16(ip + 2, (uint16_t)(IP_HLEN + ulen));
	put16(ip + 6, 0x4000);			/* don't fragment */
	ip[8] = 64;				/* TTL */
	ip[9] = IP_PROTO_UDP;
	put32(ip + 12, net_ip);
	put32(ip + 16, to->ip);
	put16(ip + 10, checksum(ip, IP_HLEN, 0));
	put16(u, src_port);
	put16(u + 2, to->port);
	put16(u + 4, ulen);
	put16(u + 6, 0);
	memcpy(u + UDP_HLEN, data, len);
	uint16_t c = checksum(u, ulen, udp_pseudo_sum(net_ip, to->ip, ulen));
	put16(u + 6, c ? c : 0xffff);		/* 0 would mean "no checksum" */
	return send_frame(f, ETH_HLEN + IP_HLEN + ulen);
}

int net_listen(uint16_t port, udp_handler h)
{
	for (int i = 0; i < MAX_LISTENERS; i++)
		if (listeners[i].h && listeners[i].port == port)
			return -1;
	for (int i = 0; i < MAX_LISTENERS; i++)
		if (!listeners[i].h) {
			listeners[i].port = port;
			__atomic_store_n(&listeners[i].h, h, __ATOMIC_RELEASE);
			return 0;
		}
	return -1;
}

void net_unlisten(uint16_t port)
{
	for (int i = 0; i < MAX_LISTENERS; i++)
		if (listeners[i].h && listeners[i].port == port)
			__atomic_store_n(&listeners[i].h, (udp_handler)0, __ATOMIC_RELEASE);
}

/* Kernel command line: "ip=A.B.C.D" sets the address; returns the value of key=, or NULL. */
static const char *cmdline_value(const char *key, char *buf, size_t size)
{
	size_t klen = strlen(key);
	for (const char *p = boot_info.cmdline; *p;) {
		while (*p == ' ')
			p++;
		if (strncmp(p, key, klen) == 0 && p[klen] == '=') {
			size_t n = 0;
			for (p += klen + 1; *p && *p != ' ' && n + 1 < size; p++)
				buf[n++] = *p;
			buf[n] = 0;
			return buf;
		}
		while (*p && *p != ' ')
			p++;
	}
	return 0;
}

static int parse_ip(const char *s, uint32_t *ip)
{
	uint32_t v = 0;
	for (int part = 0; part < 4; part++) {
		uint32_t x = 0;
		int digits = 0;
		for (; *s >= '0' && *s <= '9' && digits < 4; s++, digits++)
			x = x * 10 + (uint32_t)(*s - '0');
		if (!digits || x > 255 || (part < 3 && *s++ != '.'))
			return -1;
		v = v << 8 | x;
	}
	if (*s)
		return -1;
	*ip = v;
	return 0;
}

static void net_task(void *arg)
{
	(void)arg;
	for (;;) {
		virtio_net_poll(net_input);
		virtio_net_wait();
	}
}

void net_init(void)
{
	char buf[32];
	uint64_t port = UDPSH_PORT;
	if (virtio_net_init() != 0) {
		kprintf("net: no virtio-net device\n");
		return;
	}
	const char *v = cmdline_value("ip", buf, sizeof(buf));
	if (v && parse_ip(v, &net_ip) != 0) {
		kprintf("net: bad ip=%s on the command line; using 10.0.2.15\n", v);
		net_ip = DEFAULT_IP;
	}
	v = cmdline_value("udpsh", buf, sizeof(buf));
	if (v && (parse_u64(v, &port) != 0 || port == 0 || port > 65535)) {
		kprintf("net: bad udpsh=%s on the command line; using %d\n", v, UDPSH_PORT);
		port = UDPSH_PORT;
	}
	if (!task_create("net", KIND_SYSTEM, net_task, 0, 0, sched_pick_cpu()))
		return;
	net_up = 1;
	udpsh_start((uint16_t)port);
	const uint8_t *m = virtio_net_mac;
	kprintf("net: virtio-net io 0x%x irq %u mac %02x:%02x:%02x:%02x:%02x:%02x ip %u.%u.%u.%u, udp shell on port %lu\n",
		virtio_net_iobase, virtio_net_irq_line, m[0], m[1], m[2], m[3], m[4], m[5],
		net_ip >> 24, (net_ip >> 16) & 0xff, (net_ip >> 8) & 0xff, net_ip & 0xff, port);
}

void net_print(struct out *o)
{
	if (!net_up) {
		out_puts(o, "net: no network device\n");
		return;
	}
	const struct net_stats *s = &net_stats;
	out_printf(o, "ip %u.%u.%u.%u  rx %lu frames %lu bytes  tx %lu frames %lu bytes\n",
		   net_ip >> 24, (net_ip >> 16) & 0xff, (net_ip >> 8) & 0xff, net_ip & 0xff,
		   s->rx_frames, s->rx_bytes, s->tx_frames, s->tx_bytes);
	out_printf(o, "arp: %lu frames in, %lu replies sent; %lu frames with a bad length from the device\n",
		   s->arp_in, s->arp_replies, virtio_net_bad_frames);
	out_printf(o, "drops: short %lu, not-for-us %lu, ethertype %lu, arp %lu, ip-header %lu, ip-checksum %lu, "
		   "fragment %lu, protocol %lu, udp-header %lu, udp-checksum %lu, no-port %lu, tx-full %lu, no-arp %lu\n",
		   s->drop_short, s->drop_not_for_us, s->drop_ethertype, s->drop_arp, s->drop_ip_header,
		   s->drop_ip_checksum, s->drop_fragment, s->drop_protocol, s->drop_udp_header,
		   s->drop_udp_checksum, s->drop_no_port, s->drop_tx_full, s->drop_no_arp);
	udpsh_print(o);
}
