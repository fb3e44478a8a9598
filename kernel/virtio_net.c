/* SPDX-License-Identifier: MIT */
/* virtio_net.c: virtio-net over legacy virtio-pci (virtio 0.9.5 / 1.x "legacy interface"):
 * one receive and one transmit virtqueue, INTx through the IOAPIC, frames handed to the
 * stack by the net task, never in the interrupt handler. */
#include "virtio_net.h"
#include "apic.h"
#include "cpu.h"
#include "layout.h"
#include "lib.h"
#include "mem.h"
#include "pci.h"
#include "sched.h"
#include "spinlock.h"
#include "trap.h"
#include "x86.h"

/* Legacy virtio-pci I/O registers (virtio spec 1.1, 4.1.4.8), offsets from BAR0. */
#define VIO_HOST_FEATURES 0x00
#define VIO_GUEST_FEATURES 0x04
#define VIO_QUEUE_PFN 0x08
#define VIO_QUEUE_SIZE 0x0c
#define VIO_QUEUE_SELECT 0x0e
#define VIO_QUEUE_NOTIFY 0x10
#define VIO_STATUS 0x12
#define VIO_ISR 0x13			/* reading it acks the interrupt and lowers INTx */
#define VIO_NET_MAC 0x14		/* device config without MSI-X */
#define STATUS_ACK 1
#define STATUS_DRIVER 2
#define STATUS_DRIVER_OK 4
#define VIRTIO_NET_F_MAC (1u << 5)
#define VIRTIO_PCI_VENDOR 0x1af4
#define VIRTIO_NET_LEGACY_ID 0x1000	/* transitional virtio-net: legacy interface on BAR0 */
#define VRING_DESC_F_NEXT 1
#define VRING_DESC_F_WRITE 2
#define VRING_AVAIL_F_NO_INTERRUPT 1
#define VRING_ALIGN 4096		/* legacy: the used ring starts on the next 4 KiB */
#define NET_HDR_LEN 10			/* struct virtio_net_hdr without MRG_RXBUF */
#define BUF_SIZE 2048
#define RXQ 0
#define TXQ 1
#define TX_BUFS 128

struct vring_desc { uint64_t addr; uint32_t len; uint16_t flags, next; };
struct vring_avail { uint16_t flags, idx, ring[]; };
struct vring_used_elem { uint32_t id, len; };
struct vring_used { uint16_t flags, idx; struct vring_used_elem ring[]; };

struct vq {
	uint16_t size;			/* entries, set by the device */
	struct vring_desc *desc;
	struct vring_avail *avail;
	volatile struct vring_used *used;
	uint16_t last_used;		/* next used entry to look at */
	uint8_t *bufs;			/* size buffers of BUF_SIZE, buffer i <-> descriptor i */
};

uint8_t virtio_net_mac[6];
uint16_t virtio_net_iobase;
uint8_t virtio_net_irq_line;
uint64_t virtio_net_bad_frames;
static struct vq rxq, txq;
static struct spinlock tx_lock = SPINLOCK_INIT("virtio-tx");
static uint16_t tx_free[TX_BUFS], tx_nfree;	/* free transmit descriptors */
static struct task *volatile waiter;		/* the net task, while it waits */
static volatile int pending;			/* an interrupt came since the last wait */

static size_t vring_bytes(uint16_t n)
{
	size_t first = 16u * n + 6 + 2u * n;			/* descriptors + avail ring */
	first = (first + VRING_ALIGN - 1) & ~(size_t)(VRING_ALIGN - 1);
	return first + 6 + 8u * n;					/* + used ring */
}

static int vq_setup(struct vq *q, uint16_t index, int nbufs)
{
	outw(virtio_net_iobase + VIO_QUEUE_SELECT, index);
	q->size = inw(virtio_net_iobase + VIO_QUEUE_SIZE);
	if (!q->size)
		return -1;
	size_t bytes = vring_bytes(q->size);
	uint8_t *mem = kzalloc(bytes);
	q->bufs = kzalloc((size_t)nbufs * BUF_SIZE);
	if (!mem || !q->bufs)
		return -1;
	q->desc = (struct vring_desc *)mem;
	q->avail = (struct vring_avail *)(mem + 16u * q->size);
	size_t used_off = (16u * q->size + 6 + 2u * q->size + VRING_ALIGN - 1) & ~(size_t)(VRING_ALIGN - 1);
	q->used = (volatile struct vring_used *)(mem + used_off);
	for (int i = 0; i < nbufs && i < q->size; i++) {
		q->desc[i].addr = V2P(q->bufs + (size_t)i * BUF_SIZE);
		q->desc[i].len = BUF_SIZE;
	}
	outl(virtio_net_iobase + VIO_QUEUE_PFN, (uint32_t)(V2P(mem) >> 12));
	return 0;
}

static void rx_give(uint16_t id)
{
	rxq.desc[id].len = BUF_SIZE;
	rxq.desc[id].flags = VRING_DESC_F_WRITE;	/* the device writes header + frame */
	rxq.avail->ring[rxq.avail->idx % rxq.size] = id;
	__atomic_thread_fence(__ATOMIC_RELEASE);	/* entry before index (virtio 2.6.13) */
	rxq.avail->idx++;
}

int virtio_net_init(void)
{
	struct pci_dev d;
	if (!pci_find(VIRTIO_PCI_VENDOR, VIRTIO_NET_LEGACY_ID, &d) || !(d.bar[0] & 1))
		return -1;
	pci_enable(&d);
	virtio_net_iobase = d.bar[0] & ~3u;
	virtio_net_irq_line = d.irq_line;
	uint16_t io = virtio_net_iobase;
	outb(io + VIO_STATUS, 0);				/* reset */
	outb(io + VIO_STATUS, STATUS_ACK | STATUS_DRIVER);
	uint32_t features = inl(io + VIO_HOST_FEATURES) & VIRTIO_NET_F_MAC;
	outl(io + VIO_GUEST_FEATURES, features);
	int rx_bufs = 256, tx_bufs = TX_BUFS;
	if (vq_setup(&rxq, RXQ, rx_bufs) || vq_setup(&txq, TXQ, tx_bufs))
		return -1;
	if (rx_bufs > rxq.size)
		rx_bufs = rxq.size;
	for (uint16_t i = 0; i < rx_bufs; i++)
		rx_give(i);
	txq.avail->flags = VRING_AVAIL_F_NO_INTERRUPT;	/* completions are reaped on send */
	for (uint16_t i = 0; i < tx_bufs && i < txq.size; i++)
		tx_free[tx_nfree++] = i;
	for (int i = 0; i < 6; i++)
		virtio_net_mac[i] = features & VIRTIO_NET_F_MAC ? inb(io + VIO_NET_MAC + i) : (uint8_t)(0x52 + i);
	/* PCI INTx is level-triggered: the line stays up until the ISR register is read. */
	ioapic_route(virtio_net_irq_line, T_NET, cpus[0].apic_id, 1);
	outb(io + VIO_STATUS, STATUS_ACK | STATUS_DRIVER | STATUS_DRIVER_OK);
	outw(io + VIO_QUEUE_NOTIFY, RXQ);
	return 0;
}

void virtio_net_irq(void)
{
	uint8_t isr = inb(virtio_net_iobase + VIO_ISR);	/* ack: lowers the line */
	if (!(isr & 1))
		return;
	pending = 1;
	struct task *t = waiter;
	if (t)
		task_wake(t);
}

void virtio_net_wait(void)
{
	uint64_t f = read_rflags();
	cli();	/* check and sleep with interrupts off, or the wake-up can be lost */
	waiter = current_task();
	if (!pending && rxq.used->idx == rxq.last_used)
		task_block_timeout(10);	/* the timeout also covers a lost interrupt */
	pending = 0;
	waiter = 0;
	if (f & RFLAGS_IF)
		sti();
}

int virtio_net_poll(void (*deliver)(const uint8_t *frame, size_t len))
{
	int n = 0;
	for (;;) {
		rxq.avail->flags = VRING_AVAIL_F_NO_INTERRUPT;	/* we are looking anyway */
		while (rxq.last_used != rxq.used->idx) {
			__atomic_thread_fence(__ATOMIC_ACQUIRE);	/* index before entry */
			volatile struct vring_used_elem *e = &rxq.used->ring[rxq.last_used % rxq.size];
			uint16_t id = (uint16_t)e->id;
			uint32_t len = e->len;
			if (id < rxq.size && len > NET_HDR_LEN && len <= BUF_SIZE)
				deliver(rxq.bufs + (size_t)id * BUF_SIZE + NET_HDR_LEN, len - NET_HDR_LEN);
			else
				virtio_net_bad_frames++;
			rxq.last_used++;
			if (id < rxq.size)
				rx_give(id);
			n++;
		}
		rxq.avail->flags = 0;
		__atomic_thread_fence(__ATOMIC_SEQ_CST);	/* flags before the last look */
		if (rxq.last_used == rxq.used->idx)
			break;
	}
	if (n)
		outw(virtio_net_iobase + VIO_QUEUE_NOTIFY, RXQ);
	return n;
}

static void tx_reap(void)
{
	while (txq.last_used != txq.used->idx) {
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		uint16_t id = (uint16_t)txq.used->ring[txq.last_used % txq.size].id;
		txq.last_used++;
		if (id < TX_BUFS && tx_nfree < TX_BUFS)
			tx_free[tx_nfree++] = id;
	}
}

int virtio_net_send(const uint8_t *frame, size_t len)
{
	if (len > BUF_SIZE - NET_HDR_LEN)
		return -1;
	uint64_t f = spin_lock_irqsave(&tx_lock);
	tx_reap();
	if (!tx_nfree) {
		spin_unlock_irqrestore(&tx_lock, f);
		return -1;
	}
	uint16_t id = tx_free[--tx_nfree];
	uint8_t *buf = txq.bufs + (size_t)id * BUF_SIZE;
	memset(buf, 0, NET_HDR_LEN);				/* no offloads */
	memcpy(buf + NET_HDR_LEN, frame, len);
	txq.desc[id].len = (uint32_t)(NET_HDR_LEN + len);
	txq.desc[id].flags = 0;
	txq.avail->ring[txq.avail->idx % txq.size] = id;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	txq.avail->idx++;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);		/* index before the notify */
	outw(virtio_net_iobase + VIO_QUEUE_NOTIFY, TXQ);
	spin_unlock_irqrestore(&tx_lock, f);
	return 0;
}
