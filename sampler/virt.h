/* SPDX-License-Identifier: MIT */
/* virt.h: reach a libvirt domain's QEMU monitor (virDomainQemuMonitorCommand); optional at build time. */
#ifndef VIRT_H
#define VIRT_H
#include "err.h"
#include <stddef.h>

struct virt {
	void *conn;        /* virConnectPtr, NULL when closed */
	void *dom;         /* virDomainPtr */
	int err;           /* sticky error code (err.h) */
	char errstr[ERR_MAX];  /* what went wrong */
};

/* 1 if gdbsample was built with libvirt (sampler.mk found `pkg-config libvirt-qemu`). */
int virt_built(void);
/* Connect to uri (NULL: libvirt's default) and look up domain name. */
int virt_open(struct virt *v, const char *uri, const char *name);
/* Run one QMP command (JSON text) on the domain's monitor; the whole reply goes to out. */
int virt_exec(struct virt *v, const char *cmd, char *out, size_t cap);
void virt_close(struct virt *v);

#endif
