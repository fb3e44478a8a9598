# SPDX-License-Identifier: MIT
"""report.py: `report` -- the text report shared with gdbsample -f report and the in-guest profile.

Format (docs/report-format.md; the C writer is sampler/report.c):
  profiled 2000 ms
  3990 samples on 2 cpus, 0 dropped, source gdbstub 100 Hz
  50.1% 1999 split_a+0x1a..0x3e
          <- run_split+0x2c
Samples fold by their whole chain: the leaf by symbol (keeping the span of offsets seen), the
callers by exact return address (and which of them are interrupted pcs). A caller is named by
symbols.py's rule (a return address by address - 1, an exact frame by itself), its offset is that
of the address itself. Chains print by count, most first; ties by the leaf text, then by the
caller addresses.

With task attribution (capture version 3), as gdbsample -f report: one line per task before the
chains, `task P% COUNT NAME pid P tgid T, user U%` (its share, its samples, the share of them in
user mode), most samples first, ties by pid (samples without a task record, `task P% COUNT
[unknown], user U%`, after the others), at most TASKS_SHOWN, then `task (N more not shown)`. A task
is its (pid, tgid, comm): a task renamed by exec is two. Readers of the report skip these lines.
--by-task then adds, after the chains, the chains of each of the top --tasks tasks (shares of its
samples), where a user-mode sample is the leaf `[user]`, as under its task in `fold`.

With --state naming off-CPU states (gdbsample record --off-cpu, capture version 6) the report
counts sample periods of wall time: a vCPU's sample is one, an off-CPU stack its weight. A line
after the second says how much of it was off-CPU and in which state (`off-cpu W periods, P% of
the report, over N tasks: blocked B%, ...`, the states' shares of W); an off-CPU chain's leaf
line ends with its state (`[off-cpu/blocked]`), and a task line with the share of its periods
off-CPU (`, off-cpu O%`).
"""
from . import common, filters, output
from .capture import FLAG_USER
from .fold import UNKNOWN_TASK, USER_FRAME
from .symbols import is_return

HELP = "the text report of gdbsample -f report / the in-guest profile"


def add_arguments(p):
    p.add_argument("capture", metavar="CAPTURE")
    p.add_argument("-e", "--elf", metavar="ELF", help="kernel ELF or System.map/nm map (without it, hex)")
    common.add_offset_argument(p)
    p.add_argument("-o", "--output", metavar="OUT", help="write to OUT (default stdout)")
    p.add_argument("--chains", type=common.count_type(1, 1000000), default=8, metavar="N",
                   help="chains to print (default 8)")
    p.add_argument("--by-task", action="store_true",
                   help="after the chains, the chains of each of the top tasks (--tasks)")
    p.add_argument("--tasks", type=common.count_type(0, 1000000), default=5, metavar="N",
                   help="with --by-task: tasks whose chains are shown (default 5)")
    filters.add_arguments(p, off_cpu=True)


class Chains:
    """Folds samples by chain: key (leaf symbol start or raw pc, known, callers, exact frames)."""

    def __init__(self, syms):
        self.syms = syms     # Symbolizer (rebased for the capture) or None
        self.c = {}          # key -> [count, lo, hi]
        self.total = 0       # samples added

    def add(self, frames, exact=frozenset(), n=1, state=None):
        """One sample's frames (pc first) and exact frame indexes (Sample.exact), n times;
        frames None: a user-mode sample under its task (USER_FRAME, --by-task); state: an
        off-CPU stack's (Sample.offcpu), None for a vCPU's."""
        if frames is None:
            key = (None, None, (), frozenset(), None)
            e = self.c.get(key)
            if e is None:
                self.c[key] = [n, 0, 0]
            else:
                e[0] += n
            self.total += n
            return
        sym = self.syms.lookup(frames[0]) if self.syms else None
        pc = frames[0]
        key = (sym[1] if sym else pc, sym is not None, frames[1:], exact, state)
        off = pc - sym[1] if sym else 0
        e = self.c.get(key)
        if e is None:
            self.c[key] = [n, off, off]
        else:
            e[0] += n
            if off < e[1]:
                e[1] = off
            if off > e[2]:
                e[2] = off
        self.total += n

    def leaf_text(self, key, lo, hi):
        leaf, known, _, _, state = key
        tail = " [off-cpu/%s]" % state if state else ""
        if known is None:
            return USER_FRAME
        if not known:
            return "0x%x%s" % (leaf, tail)
        name = self.syms.lookup(leaf)[0]
        return ("%s+0x%x" % (name, lo) if lo == hi else "%s+0x%x..0x%x" % (name, lo, hi)) + tail

    def caller_text(self, addr, is_ret=True):
        """A caller frame: its function (symbols.py's naming rule) + the offset of addr itself."""
        s = self.syms.frame(addr, is_ret) if self.syms else None
        return "%s+0x%x" % (s[0], addr - s[1]) if s else "0x%x" % addr

    def callers_text(self, callers, exact):
        """Texts of a chain's callers (frames 1.. of its samples), innermost first."""
        return [self.caller_text(a, is_return(i, exact)) for i, a in enumerate(callers, 1)]

    def ranked(self):
        """[(count, leaf text, callers, exact)] most first; ties by leaf text (bytes), then
        callers, then exact frames."""
        rows = [(e[0], self.leaf_text(k, e[1], e[2]), k[2], k[3]) for k, e in self.c.items()]
        rows.sort(key=lambda r: (-r[0], r[1].encode("utf-8", "surrogateescape"), r[2], sorted(r[3])))
        return rows


def chain_lines(chains, shown):
    """The chain blocks of a report, most samples first, at most shown."""
    lines = []
    rows = chains.ranked()
    for count, leaf, callers, exact in rows[:shown]:
        lines.append("%.1f%% %d %s" % (100.0 * count / chains.total, count, leaf))
        lines.extend("        <- " + t for t in chains.callers_text(callers, exact))
    if len(rows) > shown:
        lines.append("(%d more chains not shown)" % (len(rows) - shown))
    return lines


def off_cpu_line(off, total):
    """`off-cpu W periods, P% of the report, over N tasks: blocked B%, ...` from off (an OffCpu)."""
    w = sum(off.by_state.values())
    shares = ", ".join("%s %.1f%%" % (st, 100.0 * off.by_state[st] / w) for st in filters.STATES
                       if off.by_state.get(st))
    return "off-cpu %d periods, %.1f%% of the report, over %d tasks%s" % (
        w, 100.0 * w / total if total else 0.0, len(off.tasks), ": " + shares if shares else "")


class OffCpu:
    """The off-CPU stacks' periods by state, and the tasks they came from."""

    def __init__(self):
        self.by_state = {}
        self.tasks = set()

    def add(self, state, task, n):
        self.by_state[state] = self.by_state.get(state, 0) + n
        self.tasks.add(None if task is None else (task.pid, task.tgid, task.comm))


def format_report(chains, shown, duration_ns, ncpus, dropped, rate_hz, idle, tasks=None, top_tasks=0, off=None):
    """The report text; tasks (a Tasks) adds the task lines, and its chains if it kept them; off
    (an OffCpu, --state with off-CPU states) the off-CPU line."""
    lines = ["profiled %d ms" % (duration_ns // 1000000),
             "%d samples on %d cpus, %d dropped, source gdbstub %d Hz" % (chains.total, ncpus, dropped, rate_hz)]
    if off is not None:
        lines.append(off_cpu_line(off, chains.total))
    if tasks is not None:
        lines.extend(tasks.task_lines(chains.total))
    if not chains.total:
        lines.append("no samples: all %d were idle (--idle keeps them)" % idle if idle else "no samples")
    lines.extend(chain_lines(chains, shown))
    if tasks is not None and tasks.keep_chains:
        lines.extend(tasks.sections(top_tasks, shown))
    return "\n".join(lines) + "\n"


TASKS_SHOWN = 16   # task lines at most (sampler/report.c's REPORT_TASKS_SHOWN)


class Tasks:
    """Samples and user-mode samples per task (pid, tgid, comm); with keep_chains (--by-task)
    each task's chains too."""

    def __init__(self, syms, keep_chains):
        self.syms = syms                 # Symbolizer for each task's Chains
        self.keep_chains = keep_chains   # --by-task
        self.t = {}                      # (pid, tgid, comm) or None (no task record) -> [samples, user, Chains, off]
        self.off_cpu = False             # some sample was off-CPU (the task lines say each one's share)

    def add(self, task, frames, exact, user, n=1, state=None):
        """One sample: its Task or None, frames (None for user mode: USER_FRAME), user 0 or 1;
        an off-CPU one (state) n periods."""
        key = None if task is None else (task.pid, task.tgid, task.comm)
        e = self.t.get(key)
        if e is None:
            e = self.t[key] = [0, 0, Chains(self.syms) if self.keep_chains else None, 0]
        e[0] += n
        e[1] += user
        if state is not None:
            e[3] += n
            self.off_cpu = True
        if self.keep_chains:
            e[2].add(frames, exact, n, state)

    def ranked(self):
        """[(key, samples, user, chains)]: most samples first, then pid (no task after the
        others), name, tgid."""
        rows = [(k, e[0], e[1], e[2], e[3]) for k, e in self.t.items()]
        rows.sort(key=lambda r: (-r[1], 1, 0, "", 0) if r[0] is None else (-r[1], 0, r[0][0], r[0][2], r[0][1]))
        return rows

    def task_lines(self, total):
        """`task P% COUNT NAME pid P tgid T, user U%` lines, when some sample had a task."""
        if all(k is None for k in self.t):
            return []
        rows = self.ranked()
        lines = []
        for k, n, user, _, off in rows[:TASKS_SHOWN]:
            who = UNKNOWN_TASK if k is None else "%s pid %d tgid %d" % (k[2], k[0], k[1])
            tail = ", off-cpu %.1f%%" % (100.0 * off / n) if self.off_cpu else ""
            lines.append("task %.1f%% %d %s, user %.1f%%%s" % (100.0 * n / total, n, who, 100.0 * user / n, tail))
        if len(rows) > TASKS_SHOWN:
            lines.append("task (%d more not shown)" % (len(rows) - TASKS_SHOWN))
        return lines

    def sections(self, top, shown):
        """--by-task: the chains of each of the top tasks, after a title line (shares of its samples)."""
        lines = []
        rows = self.ranked()
        for k, n, user, chains, _ in rows[:top]:
            who = UNKNOWN_TASK if k is None else "%s pid %d tgid %d" % (k[2], k[0], k[1])
            lines.append("")
            lines.append("chains of %s: %d samples, user %.1f%%" % (who, n, 100.0 * user / n))
            lines.extend(chain_lines(chains, shown))
        if len(rows) > top:
            lines.append("")
            lines.append("(chains of %d more tasks not shown)" % (len(rows) - top))
        return lines


def run(args):
    flt = filters.Filter(args)
    out = output.Output(args.output, (args.capture, args.elf))  # not an input; a bad path fails early
    cap = common.open_capture(args.capture)
    flt.check(cap)
    if args.by_task and not cap.task_os:
        raise filters.no_tasks(cap, "--by-task")
    syms = common.load_symbols(args.elf) if args.elf else None
    syms = common.symbols_for(syms, cap, args.kaslr_offset)  # the capture's KASLR offset
    chains = Chains(syms)
    tasks = Tasks(syms, args.by_task) if cap.version >= 3 else None  # task lines if a sample has one
    off = OffCpu() if flt.states - {"on-cpu"} else None  # --state with off-CPU states: periods
    for s in flt.apply(cap.samples()):                    # one streaming pass
        n = 1 if s.offcpu is None else s.weight
        chains.add(s.frames, s.exact, n, s.offcpu)
        if s.offcpu is not None:
            off.add(s.offcpu, s.task, n)
        if tasks is not None:                             # under its task, user mode is [user]
            user = s.flags & FLAG_USER and 1
            tasks.add(s.task, None if user else s.frames, s.exact, user, n, s.offcpu)
    duration = cap.summary.get("duration_ns", cap.last_time_ns or 0)
    if flt.t_from is not None or flt.t_until is not None or flt.timeline is not None:
        duration = flt.covered_ns(duration)               # the window (and phase) actually covered
    dropped = cap.summary.get("dropped", 0)
    out.write(format_report(chains, args.chains, int(duration), cap.ncpus, int(dropped), cap.rate_hz,
                            flt.idle_seen, tasks, args.tasks, off))
    out.commit()
    return common.loss_status(cap)
