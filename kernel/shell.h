/* SPDX-License-Identifier: MIT */
/* shell.h: the command shell; the same parser serves the serial console and (later) UDP. */
#ifndef SHELL_H
#define SHELL_H
#include "lib.h"

#define SHELL_LINE_MAX 127	/* longest accepted command line */

void shell_start(void);				/* starts the serial shell task on cpu0 */
void shell_exec(const char *line, struct out *o);	/* runs one command line */
#endif
