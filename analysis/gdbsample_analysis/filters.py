# SPDX-License-Identifier: MIT
"""filters.py: which samples a subcommand uses -- vCPUs, a time window, idle or not, tasks (v3),
a phase's occurrences (v5), on- or off-CPU (v6)."""
import decimal
import re

from .capture import FLAG_IDLE, MAX_CPUS, TIME_MAX
from .common import EXIT_DAMAGED, EXIT_USAGE, Failure, count_type
from .phases import Timeline

_UNITS = {"": 1, "ns": 1, "us": 1000, "ms": 1000000, "s": 1000000000}
PID_MAX = (1 << 31) - 1     # pids and tgids are s32; a negative one is never selected
STATES = ("on-cpu", "blocked", "uninterruptible", "runnable")  # --state's names: a vCPU's sample, or an off-CPU one's state
STATE_SETS = {"all": STATES, "off-cpu": ("blocked", "uninterruptible", "runnable")}
left_out = []               # Filters that left off-CPU samples out unasked: cli.main says so once
MATCHES_KEPT = 1 << 16      # distinct tasks whose --pid/--comm verdict is remembered at once


def parse_time(text, flag):
    """'1500000', '1500us', '1.5ms', '2s' -> ns (since the capture started), exactly (no float
    rounding), at most TIME_MAX."""
    m = re.fullmatch(r"\s*([0-9]{1,30}(?:\.[0-9]{0,30})?)\s*(ns|us|ms|s)?\s*", text)
    if not m:
        raise Failure("%s: bad time %.40r (ns, or a number with ns/us/ms/s)" % (flag, text), EXIT_USAGE)
    ns = decimal.Context(prec=80).multiply(decimal.Decimal(m.group(1)), _UNITS[m.group(2) or ""])
    ns = int(ns.to_integral_value(decimal.ROUND_HALF_EVEN))
    if ns > TIME_MAX:
        raise Failure("%s: time %.40r is too large (at most %d ns)" % (flag, text, TIME_MAX), EXIT_USAGE)
    return ns


def parse_cpus(text):
    """'0,2-3' -> frozenset({0, 2, 3}); indexes below capture.MAX_CPUS."""
    out = set()
    for part in text.split(","):
        m = re.fullmatch(r"\s*([0-9]{1,9})\s*(?:-\s*([0-9]{1,9})\s*)?", part)
        if not m or (m.group(2) and int(m.group(2)) < int(m.group(1))):
            raise Failure("--cpu: bad list %.40r (e.g. 0,2-3)" % text, EXIT_USAGE)
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        if hi >= MAX_CPUS:
            raise Failure("--cpu: %.40r: vCPU indexes are below %d" % (part, MAX_CPUS), EXIT_USAGE)
        out.update(range(lo, hi + 1))
    return frozenset(out)


def parse_pids(text):
    """'1,5-7' -> ((1, 1), (5, 7)): inclusive ranges of pids, 0..PID_MAX."""
    out = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*([0-9]{1,10})\s*(?:-\s*([0-9]{1,10})\s*)?", part)
        lo = int(m.group(1)) if m else 0
        hi = int(m.group(2)) if m and m.group(2) else lo
        if not m or hi < lo:
            raise Failure("--pid: bad list %.40r (e.g. 1,5-7)" % text, EXIT_USAGE)
        if hi > PID_MAX:
            raise Failure("--pid: %.40r: pids are at most %d" % (part, PID_MAX), EXIT_USAGE)
        out.append((lo, hi))
    return tuple(out)


def parse_comm(text):
    """--comm's regular expression, compiled (Python re, searched in the sanitized comm)."""
    try:
        return re.compile(text)
    except (re.error, RecursionError, OverflowError) as e:
        raise Failure("--comm: bad regular expression %.40r: %s" % (text, e), EXIT_USAGE) from None


def no_tasks(cap, what):
    """Failure (usage) for an option that needs tasks, on a capture without task attribution."""
    return Failure("%s: %s has no task attribution (written by gdbsample before version 3 or "
                   "with --os none)" % (what, cap.name), EXIT_USAGE)


def capture_only(args, path, extra=()):
    """Failure (usage) if a capture's options were given for path, a folded file: the filters,
    --task-format and the flags named in extra (attribute, flag) pairs."""
    phase_only(args, path)
    given = (args.cpu or args.t_from or args.t_until or args.idle or args.pid is not None
             or args.comm is not None or getattr(args, "task_format", None)
             or any(getattr(args, a) for a, _ in extra))
    if given:
        raise Failure("%s is folded text: --cpu, --from, --until, --idle, %s--pid and --comm apply to "
                      "captures only" % (path, "".join(f + ", " for _, f in extra)
                                         + ("--task-format, " if hasattr(args, "task_format") else "")),
                      EXIT_USAGE)


def phase_only(args, path):
    """Failure (usage) if --phase or --phase-occurrence was given for path, which is not a capture
    (folded text or a report holds no sample times to place in a phase)."""
    if args.phase is not None or args.phase_occurrence is not None:
        raise Failure("%s is not a capture: --phase and --phase-occurrence select a capture's samples"
                      % path, EXIT_USAGE)


def parse_states(text):
    """--state 'blocked,runnable' / 'off-cpu' / 'all' -> frozenset of STATES."""
    out = set()
    for part in text.split(","):
        part = part.strip()
        if part in STATE_SETS:
            out.update(STATE_SETS[part])
        elif part in STATES:
            out.add(part)
        else:
            raise Failure("--state: bad state %.40r (on-cpu, off-cpu, blocked, uninterruptible, runnable or all, "
                          "comma-separated)"
                          % part, EXIT_USAGE)
    return frozenset(out)


def add_arguments(p, off_cpu=False):
    """The selection's flags; off_cpu: the command shows off-CPU samples too (--state)."""
    if off_cpu:
        p.add_argument("--state", metavar="LIST", default="on-cpu",
                       help="which samples: on-cpu (the vCPUs', default), and the off-CPU stacks of "
                            "gdbsample record --off-cpu by their task's state -- blocked, uninterruptible "
                            "(Linux's D), runnable, off-cpu (the three) -- or all; comma-separated")
    p.add_argument("--cpu", metavar="LIST", help="only these vCPUs, e.g. 0,2-3 (default all)")
    p.add_argument("--from", dest="t_from", metavar="T",
                   help="only samples at or after T since the capture started (ns, or with ns/us/ms/s; "
                        "in a replay's capture an instruction count)")
    p.add_argument("--until", dest="t_until", metavar="T", help="only samples before T (same units)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--idle", dest="idle", action="store_true", default=False,
                   help="keep idle samples (vCPU halted in hlt)")
    g.add_argument("--no-idle", dest="idle", action="store_false", help="leave idle samples out (default)")
    p.add_argument("--pid", metavar="LIST",
                   help="only samples of these tasks, e.g. 1,5-7: a sample matches if its pid (thread) "
                        "or its tgid (process) is listed (captures with task attribution)")
    p.add_argument("--comm", metavar="REGEX",
                   help="only samples whose task name matches REGEX (Python re.search, on the name as "
                        "printed: non-printable bytes as \\xNN)")
    p.add_argument("--phase", metavar="NAME",
                   help="only samples inside an occurrence of phase NAME (captures of gdbsample record "
                        "--phase; `info` lists them)")
    p.add_argument("--phase-occurrence", type=count_type(1, TIME_MAX), metavar="N",
                   help="with --phase: only samples inside its Nth occurrence (from 1)")


class Filter:
    """The selection from parsed arguments; counts what it leaves out."""

    def __init__(self, args):
        self.cpus = parse_cpus(args.cpu) if args.cpu else None  # None = every vCPU
        self.t_from = parse_time(args.t_from, "--from") if args.t_from else None
        self.t_until = parse_time(args.t_until, "--until") if args.t_until else None
        self.t_units = [f for f, v in (("--from", args.t_from), ("--until", args.t_until))
                        if v and re.search(r"[a-z]", v)]  # a unit given: times, not instruction counts
        if self.t_from is not None and self.t_until is not None and self.t_until <= self.t_from:
            raise Failure("--until must be later than --from", EXIT_USAGE)
        self.idle = args.idle         # keep idle samples
        self.pids = parse_pids(args.pid) if args.pid is not None else None  # None = any task (or none)
        self.comm = parse_comm(args.comm) if args.comm is not None else None  # None = any name
        self.phase = args.phase                   # None = any time, in a phase or not
        self.phase_n = args.phase_occurrence      # None = every occurrence of the phase
        if self.phase_n is not None and self.phase is None:
            raise Failure("--phase-occurrence needs --phase NAME (the phase whose occurrence it counts)",
                          EXIT_USAGE)
        self.timeline = None                      # after check(): the chosen occurrences (a Timeline)
        self.states = parse_states(getattr(args, "state", None) or "on-cpu")
        self.state_given = getattr(args, "state", "on-cpu") != "on-cpu"
        self.offcpu_left = 0          # off-CPU samples --state left out
        self.matches = {}             # Task -> kept by --pid/--comm (a cache)
        self.idle_seen = 0            # idle samples inside the cpu/time selection
        self.kept = 0                 # samples delivered

    def check(self, cap):
        """Refuse vCPUs the capture does not have, and --pid/--comm on a capture without tasks."""
        if self.state_given and self.states != {"on-cpu"} and cap.version < 6:
            raise Failure("--state: %s holds no off-CPU samples (capture version %d: they come in version 6, "
                          "from gdbsample record --off-cpu)" % (cap.name, cap.version), EXIT_USAGE)
        if self.cpus is not None and cap.ncpus and max(self.cpus) >= cap.ncpus:
            raise Failure("--cpu: the capture has vCPUs 0-%d only" % (cap.ncpus - 1), EXIT_USAGE)
        if self.t_units and getattr(cap, "icount", False):
            raise Failure("%s: %s is a replay's capture, whose times are instruction counts: give a plain "
                          "count (no ns/us/ms/s)" % (self.t_units[0], cap.name), EXIT_USAGE)
        if self.by_task and not cap.task_os:
            raise no_tasks(cap, "--pid" if self.pids is not None else "--comm")
        self.timeline = None
        if self.phase is not None:
            self.timeline = Timeline(self.occurrences(cap))

    def occurrences(self, cap):
        """--phase (and --phase-occurrence): the Occurrences of cap they choose, or Failure (usage:
        a capture without phases, an unknown name, N past the last; damaged: phases unreadable)."""
        phases, damage = cap.load_phases() if hasattr(cap, "load_phases") else ([], None)
        damaged = "; its phases could not all be read (%s)" % damage if damage else ""
        code = EXIT_DAMAGED if damage else EXIT_USAGE
        if not phases:
            raise Failure("--phase: %s lists no phases (%s)" % (
                cap.name, "capture version %d: phases come in version 5, from gdbsample record --phase"
                % cap.version if cap.version < 5 else "gdbsample record ran without --phase") + damaged, code)
        phase = next((p for p in phases if p.name == self.phase), None)
        if phase is None:
            raise Failure("--phase: %s has no phase %.70r; its phases: %s" % (
                cap.name, self.phase, ", ".join(p.name for p in phases)) + damaged, code)
        if self.phase_n is None:
            return phase.occurrences
        count = len(phase.occurrences)
        if self.phase_n > count:
            raise Failure("--phase-occurrence: phase %s of %s has %s" % (
                phase.name, cap.name, "no occurrences" if not count else
                "%d occurrence%s (1-%d)" % (count, "" if count == 1 else "s", count)) + damaged, code)
        return [phase.occurrences[self.phase_n - 1]]

    def covered_ns(self, duration):
        """The time of [0, duration) the time filters keep: the --from/--until window, inside the
        chosen phase occurrences with --phase (for a report's `profiled N ms`)."""
        lo = self.t_from or 0
        hi = duration if self.t_until is None else min(self.t_until, duration)
        if self.timeline is not None:
            return self.timeline.covered_ns(lo, hi)
        return max(0, hi - lo)

    @property
    def by_task(self):
        """True if --pid or --comm selects samples by their task."""
        return self.pids is not None or self.comm is not None

    def task_matches(self, task):
        """True if --pid and --comm keep a sample of this task (None: no task record: never)."""
        if task is None:
            return False
        got = self.matches.get(task)
        if got is None:
            pid, tgid = task.pid, task.tgid
            got = ((self.pids is None or any(lo <= pid <= hi or lo <= tgid <= hi for lo, hi in self.pids))
                   and (self.comm is None or self.comm.search(task.comm) is not None))
            if len(self.matches) >= MATCHES_KEPT:
                self.matches.clear()
            self.matches[task] = got
        return got

    def apply(self, samples):
        """Yields the samples the selection keeps (samples are in time order)."""
        cpus, lo, hi, idle = self.cpus, self.t_from, self.t_until, self.idle
        task_ok = self.task_matches if self.by_task else None
        in_phase = self.timeline.holds if self.timeline is not None else None
        on_cpu, states = "on-cpu" in self.states, self.states
        if not self.state_given and self not in left_out:
            left_out.append(self)
        for s in samples:
            if s.offcpu is not None:  # a task that was not running: no vCPU (cpu 0 means nothing)
                if s.offcpu not in states:
                    self.offcpu_left += 1
                    continue
            elif not on_cpu:
                continue
            elif cpus is not None and s.cpu not in cpus:
                continue
            if lo is not None and s.time_ns < lo:
                continue
            if hi is not None and s.time_ns >= hi:
                continue  # read on: damage later in the file must still be noticed
            if in_phase is not None and not in_phase(s.time_ns):
                continue
            if task_ok is not None and not task_ok(s.task):
                continue
            if s.flags & FLAG_IDLE:
                self.idle_seen += 1
                if not idle:
                    continue
            self.kept += 1
            yield s


def left_out_note():
    """One line for the off-CPU samples the commands' filters left out unasked (they show only
    the vCPUs' samples unless --state says otherwise), or None; forgets them."""
    n = sum(f.offcpu_left for f in left_out)
    left_out.clear()
    if not n:
        return None
    return ("%d off-CPU sample%s (gdbsample record --off-cpu) left out: fold, flamegraph, report, pprof and "
            "speedscope show them with --state all" % (n, "" if n == 1 else "s"))
