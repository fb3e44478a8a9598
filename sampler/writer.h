/* SPDX-License-Identifier: MIT */
/* writer.h: the one interface every output shares -- add a sample, then write the result. */
#ifndef WRITER_H
#define WRITER_H
#include "err.h"
#include <stdint.h>
#include <stdio.h>
#include "sample.h"
#include "symbols.h"

/* Facts about the whole run, given to writers at the end. */
struct run_info {
	int ncpu;                  /* vCPUs sampled */
	int rate_hz;               /* requested rate */
	int64_t duration_ns;       /* wall time sampled */
	uint64_t samples;          /* vCPU samples given to the writer */
	uint64_t dropped;          /* vCPU samples lost (unreadable registers, failed trips) */
	uint64_t idle;             /* idle vCPU samples (not given to text writers without --idle) */
	const char *summary;       /* the summary text (key value lines) for the capture trailer */
	const char *attach;        /* how the VM was reached, for the report header, or NULL (-p/-H/-u) */
	const char *kernel;        /* the kernel image, unwinders and KASLR offset, or NULL (no -e) */
	const char *modules;       /* the guest's modules for the capture ("m"/"s" lines,
				    * docs/capture-format.md), or NULL */
	const char *phases;        /* record --phase: the phases chunk's lines ("p"/"o", v5), or NULL */
};

struct writer {
	/* Take one sample; 0 or -1 (err set). */
	int (*add)(struct writer *w, const struct sample *s);
	/* Write the result (text writers) or the trailer and final flush (capture). */
	int (*finish)(struct writer *w, const struct run_info *ri);
	/* Release everything. */
	void (*free)(struct writer *w);
	int err;                   /* sticky error code */
	char errstr[ERR_MAX];          /* what went wrong */
};

/* The text report shared with the in-guest `profile` (docs/report-format.md); offcpu: record
 * --off-cpu's (sample periods, the off-CPU line). */
struct writer *report_writer_new(FILE *out, const struct symtab *syms, int chains, int offcpu);
/* Folded stacks "ROOT;frame;...;leaf count", sorted: ROOT is cpuN (tf TF_CPU) or the task. */
struct writer *fold_writer_new(FILE *out, const struct symtab *syms, int tf);

/* writer_ext.c: -f svg (folded stacks, as fold_writer_new writes them, drawn by
 * `gdbsample-analyze flamegraph`) and -f speedscope (a capture with header h, converted by
 * `gdbsample-analyze speedscope -e elf`): kept in a temporary file, then the tool's output goes
 * to out_fd at finish. elf: the -e file the tool names frames with (an ELF or a symbol map);
 * name: the output's (-o, or NULL), which speedscope shows as the profile's name. */
enum { EXT_SVG, EXT_SPEEDSCOPE };
struct capture_header;
struct writer *ext_writer_new(int kind, int out_fd, const char *tool, const struct symtab *syms, int tf,
			      const struct capture_header *h, const char *elf, const char *name);
/* gdbsample-analyze for the gdbsample at exe: beside it (installed), in ../analysis (the build
 * tree), else on PATH. 0 with its path in out, or -1. */
int ext_find_analyze(const char *exe, char *out, size_t cap);

#endif
