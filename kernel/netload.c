/* SPDX-License-Identifier: MIT */
/* netload.c: `netload sink PORT` counts datagrams (loss from sequence gaps), `netload send`
 * paces datagrams back to the UDP shell's client, so `profile` has network work to find. */
#include "netload.h"
#include "apic.h"
#include "net.h"
#include "sched.h"
#include "udpsh.h"
#include "x86.h"

#define MAGIC "GSL1"
#define HDR 24				/* magic, stream id, sequence, timestamp */
#define SEEN_BITS (1u << 20)		/* sequence numbers tracked for loss and duplicates */
#define MAX_PPS 100000
#define MAX_SECONDS 60

static struct {
	volatile int on;
	uint16_t port;
	uint32_t stream;		/* the first datagram's stream id */
	int have_stream;
	uint64_t packets, bytes, dups, malformed, beyond;	/* beyond: sequence past SEEN_BITS */
	uint64_t max_seq;		/* highest sequence seen + 1 */
	uint64_t first_tsc, last_tsc;
} sink;
static uint8_t seen[SEEN_BITS / 8];

static uint64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

/* Net task: one datagram to the sink's port. */
static void sink_input(const struct udp_peer *from, uint16_t port, const uint8_t *d, size_t len)
{
	(void)from, (void)port;
	if (len < HDR || memcmp(d, MAGIC, 4) != 0) {
		sink.malformed++;
		return;
	}
	uint32_t stream = (uint32_t)le(d + 4, 4);
	uint64_t seq = le(d + 8, 8);
	if (!sink.have_stream) {
		sink.stream = stream;
		sink.have_stream = 1;
		sink.first_tsc = rdtsc();
	} else if (stream != sink.stream) {
		sink.malformed++;	/* another run's stragglers */
		return;
	}
	if (seq >= SEEN_BITS) {
		sink.beyond++;
		return;
	}
	if (seen[seq / 8] & (1u << (seq % 8))) {
		sink.dups++;
		return;
	}
	seen[seq / 8] |= (uint8_t)(1u << (seq % 8));
	sink.packets++;
	sink.bytes += len;
	if (seq + 1 > sink.max_seq)
		sink.max_seq = seq + 1;
	sink.last_tsc = rdtsc();
}

static void sink_report(struct out *o)
{
	uint64_t lost = sink.max_seq > sink.packets ? sink.max_seq - sink.packets : 0;
	uint64_t ms = sink.last_tsc > sink.first_tsc ? (sink.last_tsc - sink.first_tsc) / (tsc_hz() / 1000) : 0;
	uint64_t pps = ms ? sink.packets * 1000 / ms : 0;
	uint64_t pct10 = sink.max_seq ? lost * 1000 / sink.max_seq : 0;
	out_printf(o, "netload: sink udp/%u: %lu packets, %lu bytes, %lu lost (%lu.%lu%%), %lu duplicates, "
		   "%lu malformed, %lu pkt/s over %lu ms\n", sink.port, sink.packets, sink.bytes, lost,
		   pct10 / 10, pct10 % 10, sink.dups, sink.malformed + sink.beyond, pps, ms);
}

static void send_load(uint64_t size, uint64_t pps, uint64_t seconds, struct out *o)
{
	struct udp_peer to;
	uint16_t port;
	if (!udpsh_peer(&to, &port)) {
		out_puts(o, "netload: send works from the UDP shell only (it sends back to the client)\n");
		return;
	}
	uint8_t pkt[UDP_PAYLOAD_MAX];
	memset(pkt, 0, sizeof(pkt));
	memcpy(pkt, MAGIC, 4);
	uint32_t stream = (uint32_t)rdtsc();
	put_le(pkt + 4, stream, 4);
	uint64_t hz = tsc_hz(), start = rdtsc(), end = start + seconds * hz, sent = 0, failed = 0, late = 0;
	for (uint64_t seq = 0;; seq++) {
		uint64_t due = start + seq * hz / pps;	/* absolute deadlines: no drift */
		if (due >= end)
			break;
		if (rdtsc() >= end) {			/* fell behind: the time is up all the same */
			late = (end - start) * pps / hz - seq;
			break;
		}
		while (rdtsc() < due)
			cpu_relax();
		put_le(pkt + 8, seq, 8);
		put_le(pkt + 16, rdtsc() * 1000 / (hz / 1000000), 8);
		if (udp_send(port, &to, pkt, size) == 0)
			sent++;
		else
			failed++;
		if (current_task()->killed)
			break;
	}
	uint64_t ms = (rdtsc() - start) / (hz / 1000);
	out_printf(o, "netload: sent %lu packets, %lu bytes in %lu ms (%lu pkt/s), %lu not sent (ring full)%s",
		   sent, sent * size, ms, ms ? sent * 1000 / ms : 0, failed, late ? "" : "\n");
	if (late)
		out_printf(o, ", %lu not sent (out of time)\n", late);
}

static int arg(const char *s, uint64_t lo, uint64_t hi, uint64_t *v)
{
	return parse_u64(s, v) == 0 && *v >= lo && *v <= hi;
}

void netload_command(int argc, char **argv, struct out *o)
{
	uint64_t a, b, c;
	const char *sub = argc > 1 ? argv[1] : "";
	if (!net_up) {
		out_puts(o, "netload: no network device\n");
	} else if (strcmp(sub, "sink") == 0) {
		if (argc != 3 || !arg(argv[2], 1, 65535, &a)) {
			out_puts(o, "netload: sink needs a UDP port (1-65535)\n");
			return;
		}
		if (sink.on) {
			out_printf(o, "netload: a sink is already on udp/%u (netload stop first)\n", sink.port);
			return;
		}
		memset(seen, 0, sizeof(seen));
		memset(&sink, 0, sizeof(sink));
		sink.port = (uint16_t)a;
		if (net_listen(sink.port, sink_input) != 0) {
			out_printf(o, "netload: udp/%lu is in use\n", a);
			return;
		}
		sink.on = 1;
		out_printf(o, "netload: sink on udp/%lu\n", a);
	} else if (strcmp(sub, "stats") == 0 || strcmp(sub, "stop") == 0) {
		if (argc != 2 || !sink.on) {
			out_puts(o, argc != 2 ? "netload: stats and stop take no arguments\n" : "netload: no sink running\n");
			return;
		}
		if (strcmp(sub, "stop") == 0) {
			net_unlisten(sink.port);
			sink.on = 0;
		}
		sink_report(o);
	} else if (strcmp(sub, "send") == 0) {
		if (argc != 5 || !arg(argv[2], HDR, UDP_PAYLOAD_MAX, &a) || !arg(argv[3], 1, MAX_PPS, &b) ||
		    !arg(argv[4], 1, MAX_SECONDS, &c)) {
			out_printf(o, "netload: send needs SIZE (%d-%d) PPS (1-%d) SECONDS (1-%d)\n", HDR,
				   UDP_PAYLOAD_MAX, MAX_PPS, MAX_SECONDS);
			return;
		}
		send_load(a, b, c, o);
	} else {
		out_puts(o, "netload: usage: netload sink PORT | stats | stop | send SIZE PPS SECONDS\n");
	}
}
