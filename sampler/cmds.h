/* cmds.h: the subcommands main() dispatches to; each returns the process exit code. */
#ifndef CMDS_H
#define CMDS_H
#include "cli.h"
#include "pace.h"
#include "session.h"
#include "stats.h"

/* `gdbsample dump`: stop once, print every vCPU's stack, detach. */
int cmd_dump(const struct opts *o, struct session *ss);
/* `gdbsample top`: a live view until SIGINT/SIGTERM. */
int cmd_top(const struct opts *o, struct session *ss, struct stats *st, struct pace *p);

#endif
