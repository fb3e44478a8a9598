/* SPDX-License-Identifier: MIT */
/* virt.c: reach a libvirt domain's QEMU monitor (virDomainQemuMonitorCommand); optional at build time. */
#include "virt.h"
#include "err.h"
#include <stdlib.h>

#ifdef HAVE_LIBVIRT
#include <libvirt/libvirt-qemu.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

/* libvirt prints every error on stderr by default; we report the one that matters ourselves. */
static void quiet(void *arg, virErrorPtr e)
{
	(void)arg;
	(void)e;
}

static const char *last_error(void)
{
	virErrorPtr e = virGetLastError();
	return e && e->message ? e->message : "unknown libvirt error";
}

int virt_built(void)
{
	return 1;
}

int virt_open(struct virt *v, const char *uri, const char *name)
{
	memset(v, 0, sizeof *v);
	virSetErrorFunc(NULL, quiet);
	v->conn = virConnectOpen(uri);
	if (!v->conn) {
		ERR_SET(v, ERR_SYS, "libvirt: cannot connect to %s: %s", uri ? uri : "the default URI", last_error());
		return -1;
	}
	v->dom = virDomainLookupByName(v->conn, name);
	if (!v->dom) {
		ERR_SET(v, ERR_USAGE, "libvirt: no domain '%s': %s", name, last_error());
		return -1;
	}
	return 0;
}

int virt_exec(struct virt *v, const char *cmd, char *out, size_t cap)
{
	char *reply = NULL;
	/* Monitor passthrough: libvirt marks the domain tainted (custom-monitor) the first time. */
	if (virDomainQemuMonitorCommand(v->dom, cmd, &reply, 0) < 0) {
		ERR_SET(v, ERR_SYS, "libvirt: %s", last_error());
		return -1;
	}
	snprintf(out, cap, "%s", reply);
	free(reply);
	return 0;
}

void virt_close(struct virt *v)
{
	if (v->dom) virDomainFree(v->dom);
	if (v->conn) virConnectClose(v->conn);
	v->dom = v->conn = NULL;
}

#else /* built without libvirt-dev: --domain is refused by cli_parse before any of this runs */

int virt_built(void)
{
	return 0;
}

int virt_open(struct virt *v, const char *uri, const char *name)
{
	(void)uri;
	(void)name;
	memset(v, 0, sizeof *v);
	ERR_SET(v, ERR_USAGE, "gdbsample was built without libvirt");
	return -1;
}

int virt_exec(struct virt *v, const char *cmd, char *out, size_t cap)
{
	(void)cmd;
	(void)out;
	(void)cap;
	ERR_SET(v, ERR_USAGE, "gdbsample was built without libvirt");
	return -1;
}

void virt_close(struct virt *v)
{
	(void)v;
}
#endif
