/* SPDX-License-Identifier: MIT */
/* test_progress.c: the live status line's text -- literals in, the exact line out, cut to the terminal. */
#include "check.h"
#include "../../sampler/progress.h"

void test_progress(void)
{
	char out[256];
	size_t n = progress_format(out, sizeof out, 3200000000LL, 640, 320, 166.4, 2, 0);
	CHECK_STR(out, "gdbsample: recording 3.2 s: 640 samples, 100.0 Hz, pause p50 166 us, 2 dropped");
	CHECK(n == strlen(out));
	/* nothing sampled yet: no rate from a zero (or negative) elapsed time */
	progress_format(out, sizeof out, 0, 0, 0, 0, 0, 0);
	CHECK_STR(out, "gdbsample: recording 0.0 s: 0 samples, 0.0 Hz, pause p50 0 us, 0 dropped");
	progress_format(out, sizeof out, -5, 0, 3, 0, 0, 0);
	CHECK_STR(out, "gdbsample: recording 0.0 s: 0 samples, 0.0 Hz, pause p50 0 us, 0 dropped");
	/* an 80-column terminal: 79 characters, the last column left free so the line never wraps */
	n = progress_format(out, sizeof out, 12345600000000LL, 18446744073709551615ull, 1234560, 99999,
			    18446744073709551615ull, 80);
	CHECK(n == 79 && strlen(out) == 79);
	CHECK_STR(out, "gdbsample: recording 12345.6 s: 18446744073709551615 samples, 100.0 Hz, pause p");
	n = progress_format(out, sizeof out, 1000000000LL, 100, 100, 150, 0, 20);
	CHECK_STR(out, "gdbsample: recordin");
	CHECK(n == 19);
	n = progress_format(out, sizeof out, 1000000000LL, 100, 100, 150, 0, 1); /* one column: nothing fits */
	CHECK_STR(out, "");
	CHECK(n == 0);
	/* a small buffer: cut, NUL-terminated */
	char small[12];
	n = progress_format(small, sizeof small, 1000000000LL, 100, 100, 150, 0, 0);
	CHECK_STR(small, "gdbsample: ");
	CHECK(n == 11);
	CHECK(progress_format(small, 0, 1, 1, 1, 1, 1, 0) == 0);
}
