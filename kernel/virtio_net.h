/* SPDX-License-Identifier: MIT */
/* virtio_net.h: the virtio-net NIC (legacy virtio-pci): receive into a ring, send frames. */
#ifndef VIRTIO_NET_H
#define VIRTIO_NET_H
#include <stddef.h>
#include <stdint.h>

#define ETH_FRAME_MAX 1514

int virtio_net_init(void);		/* finds and starts the NIC; 0, or -1 if there is none */
void virtio_net_irq(void);		/* INTx: ack and wake the net task */
int virtio_net_poll(void (*deliver)(const uint8_t *frame, size_t len));	/* frames handled */
int virtio_net_send(const uint8_t *frame, size_t len);	/* 0, or -1 if the ring is full */
void virtio_net_wait(void);		/* net task: block until the next interrupt (or a tick) */
extern uint8_t virtio_net_mac[6];
extern uint16_t virtio_net_iobase;
extern uint8_t virtio_net_irq_line;
extern uint64_t virtio_net_bad_frames;	/* used entries too short or too long: skipped */
#endif
