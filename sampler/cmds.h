/* cmds.h: the subcommands main() dispatches to; each prints its own messages and returns 0 or
 * the ERR_* code of what failed (main turns it into the exit code). */
#ifndef CMDS_H
#define CMDS_H
#include "cli.h"

/* `gdbsample [record]`: sample until -d or a signal, then write the result (cmd_record.c). */
int cmd_record(const struct opts *o);
/* `gdbsample dump`: stop once, print every vCPU's stack, detach (cmd_dump.c). */
int cmd_dump(const struct opts *o);
/* `gdbsample top`: a live view until a signal (cmd_top.c). */
int cmd_top(const struct opts *o);

#endif
