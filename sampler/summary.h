/* SPDX-License-Identifier: MIT */
/* summary.h: the run's counters as one table of {key, label, value}, rendered for people, as
 * "key value" lines (the capture's trailer, --summary-format kv) and as JSON (docs/json.md). */
#ifndef SUMMARY_H
#define SUMMARY_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SUMMARY_MAX 400          /* rows at most (a run has ~120) */
#define SUMMARY_POOL 32768       /* bytes for the rows' keys, labels and text values */
#define SUMMARY_JSON_VERSION 7   /* docs/json.md, section summary: its schema_version */

enum { SV_U64, SV_I64, SV_REAL, SV_STR, SV_TEXT, SV_NULL }; /* SV_TEXT: label only, no value;
							  * SV_NULL: absent from this run (JSON null) */

/* One row. The human text is every row's label in table order, "%v" in it replaced by the
 * value and "%s" by "s" unless the value is 1 (plurals); a row without a label is not shown to
 * people, one without a key is shown to people only; an SV_TEXT label is taken literally. */
struct counter {
	const char *key;     /* "stops": the key=value and JSON name, or NULL */
	const char *label;   /* "gdbsample: %v samples", or NULL */
	int type;            /* SV_* */
	int prec;            /* SV_REAL: digits after the point in key=value and JSON */
	int hprec;           /* digits after the point for people (SV_REAL, or a scaled integer) */
	double hdiv;         /* people see value / hdiv (1: as it is; an integer divided is real) */
	int json_only;       /* left out of the key value form (a zero it omits, an absent key) */
	union {
		uint64_t u;  /* SV_U64 */
		int64_t i;   /* SV_I64 */
		double f;    /* SV_REAL */
		const char *s; /* SV_STR (in the pool) */
	} v;
};

struct summary {
	struct counter c[SUMMARY_MAX]; /* the rows, in the order people read them */
	int n;                         /* how many */
	char pool[SUMMARY_POOL];       /* their strings */
	size_t used;                   /* bytes of pool used */
	int lost;                      /* rows that did not fit (never silently: summary_kv says) */
};

void summary_init(struct summary *t);
/* Add a row; key and label (either may be NULL) and a string value are copied. */
void summary_u64(struct summary *t, const char *key, const char *label, uint64_t v);
void summary_i64(struct summary *t, const char *key, const char *label, int64_t v);
void summary_real(struct summary *t, const char *key, const char *label, int prec, double v);
void summary_str(struct summary *t, const char *key, const char *label, const char *v);
/* A key this run has no value for: null in JSON, nowhere else (JSON always has every key). */
void summary_null(struct summary *t, const char *key);
/* The last row added goes to JSON only (the key value form leaves it out, as it always did). */
void summary_json_only(struct summary *t);
/* Text for people only ("\n" ends a line). */
void summary_text(struct summary *t, const char *text);
/* The last row added is shown to people as value / div with prec digits ("%.1f ms" of ns: 1e6). */
void summary_scale(struct summary *t, double div, int prec);
/* The last row added is not shown to people (its label dropped): a condition on the text. */
void summary_hide(struct summary *t);
/* The row for key, or NULL. */
const struct counter *summary_find(const struct summary *t, const char *key);

/* Renderings: the human text, "key value" lines, one JSON object (keys sorted, ASCII, with a
 * newline; docs/json.md). Appended at out + strlen(out); text that does not fit is cut where it
 * ends (cap is generous). */
void summary_human(const struct summary *t, char *out, size_t cap);
void summary_kv(const struct summary *t, char *out, size_t cap);
void summary_json(const struct summary *t, char *out, size_t cap);

#endif
