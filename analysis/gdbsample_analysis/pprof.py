# SPDX-License-Identifier: MIT
"""pprof.py: `pprof` -- a capture or folded stacks as pprof's profile.proto, gzipped (go tool pprof).

The schema is analysis/proto/profile.proto; protoc compiles it into BUILD/pprof/profile_pb2.py at
build time (the Makefile), installed beside this package (make install, the .deb), and the encoding
is python3-protobuf's. What a profile holds:
  sample_type    samples/count, and from a capture wall/nanoseconds; default_sample_type samples,
                 so `pprof -top` ranks by samples as `report` does (-sample_index=wall for time)
  sample         one per distinct (stack, vCPU, task): values [samples, wall ns]; string labels
                 `cpu`, and with task attribution `comm` ([unknown] without a task record), `pid`
                 and `tgid` -- pprof's -tagroot=comm puts the task at the root as `fold` does,
                 -tagfocus=comm=REGEX picks tasks
  location       one per distinct frame (address, and whether it is a return address): the
                 runtime address, the kernel mapping when inside the capture's kernel range, and
                 one line: the function, and the frame's source line from DWARF (0 without)
  function       one per (name, file, first line): named as `fold --task-format none` and
                 `report` name frames (symbols.py's rule; 0x... without a symbol; a user-mode
                 sample is its pc)
  mapping        the capture header's kernel range, named by -e's file ([kernel] without), the
                 build id when the capture carries one; has_functions: no symbolizing needed;
                 then (v4 captures) one per guest module, its text, named `[module]`, holding
                 the frames in that module (ids 2.. in the capture's module order)
  period_type    wall/nanoseconds, period 1e9 / the requested rate; time_nanos the run's start,
                 duration_nanos the summary's duration (else the last sample's time)
Wall time: a sample stands for the time until the same vCPU's next sample in the capture -- the
interval as it happened, so late or skipped deadlines lengthen it; the last sample of a vCPU,
whose successor is unknown, stands for one period of the requested rate. The filters choose
which samples count, not the intervals: a sample left out (idle, another task, outside
--from/--until) still ends the interval of the one before it.
Off-CPU stacks (a version 6 capture of record --off-cpu, chosen with --state): no `cpu` label but
a `state` one (off-cpu/blocked, off-cpu/uninterruptible, off-cpu/runnable); their samples value is
their weight (the sample periods they stand for) and their wall value that many periods of the
requested rate -- so -sample_index=wall -tagroot=comm,state is the tasks' wall-clock profile, on-
and off-CPU, as `fold --state all` folds it.
From folded stacks: one sample per line, value [count], frames by name only (no address,
no mapping), task roots staying frames.
Same input, same bytes: samples sorted by stack text, then vCPU and task; ids given in that
order; gzip without a timestamp.
"""
import collections
import gzip
import importlib.util
import os

from . import common, filters, output
from .common import EXIT_OK, Failure
from .fold import UNKNOWN_TASK, Namer
from .symbols import is_return

HELP = "convert a capture or folded stacks to pprof's profile.proto (gzip), for go tool pprof"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KERNEL_NAME = "[kernel]"      # the mapping's file name without -e
ID_BUILD = 1                  # capture header id kind: a GNU build-id (capture.ID_KINDS)
INT64_MAX = (1 << 63) - 1     # profile.proto's values and times are int64

_schema = None                # the generated module, loaded once per process


def add_arguments(p):
    p.add_argument("input", metavar="CAPTURE|FOLDED")
    p.add_argument("-e", "--elf", metavar="ELF",
                   help="kernel ELF (names, and lines from DWARF) or System.map/nm map, for a capture")
    common.add_offset_argument(p)
    p.add_argument("-o", "--output", metavar="OUT", help="write to OUT (default stdout, unless a terminal)")
    filters.add_arguments(p, off_cpu=True)


def schema_path():
    """Where protoc's profile_pb2.py is: installed (make install, the .deb), beside this package;
    in the source tree, BUILD/pprof (GDBSAMPLE_BUILD, else build/)."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "profile_pb2.py")
    if os.path.exists(here):
        return here
    build = os.environ.get("GDBSAMPLE_BUILD") or os.path.join(ROOT, "build")
    return os.path.join(build, "pprof", "profile_pb2.py")


def schema():
    """profile_pb2 as protoc generated it (schema_path), loaded once."""
    global _schema
    if _schema is None:
        path = schema_path()
        if not os.path.exists(path):
            raise Failure("%s is missing: `make` generates it from analysis/proto/profile.proto "
                          "(needs protoc: protobuf-compiler)" % path)
        try:
            spec = importlib.util.spec_from_file_location("gdbsample_profile_pb2", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        except ImportError as e:
            raise Failure("pprof needs Python's protobuf module (Debian's python3-protobuf; make deps "
                          "installs it): %s" % e) from None
        _schema = module
    return _schema


class Builder:
    """A Profile message made deterministically: strings, functions and locations get their
    index or id on first use."""

    def __init__(self, pb):
        self.pb = pb
        self.prof = pb.Profile()
        self.strings = {"": 0}           # string -> index (string_table[0] is "")
        self.prof.string_table.append("")
        self.functions = {}              # (name, file, start line) -> id
        self.locations = {}              # key -> id

    def s(self, text):
        i = self.strings.get(text)
        if i is None:
            i = self.strings[text] = len(self.prof.string_table)
            self.prof.string_table.append(text)
        return i

    def value_type(self, msg, kind, unit):
        msg.type = self.s(kind)
        msg.unit = self.s(unit)

    def function(self, name, file=None, start_line=0):
        key = (name, file or "", start_line or 0)
        fid = self.functions.get(key)
        if fid is None:
            fid = self.functions[key] = len(self.functions) + 1
            f = self.prof.function.add()
            f.id = fid
            f.name = f.system_name = self.s(name)
            f.filename = self.s(key[1])
            f.start_line = key[2]
        return fid

    def location(self, key, fid, line=0, address=0, mapping=0):
        """The id of the location for key (made with this function, line, address and mapping)."""
        lid = self.locations.get(key)
        if lid is None:
            lid = self.locations[key] = len(self.locations) + 1
            loc = self.prof.location.add()
            loc.id = lid
            loc.mapping_id = mapping
            loc.address = address
            ln = loc.line.add()
            ln.function_id = fid
            ln.line = line or 0
        return lid

    def sample(self, location_ids, values, labels=()):
        """labels: (key, text) pairs, string labels (pprof drops a numeric label of 0 without a
        unit: vCPU 0, pid 0 would vanish)."""
        smp = self.prof.sample.add()
        smp.location_id.extend(location_ids)
        smp.value.extend(values)
        for key, v in labels:
            lab = smp.label.add()
            lab.key = self.s(key)
            lab.str = self.s(v)

    def encode(self):
        """The gzipped profile (no timestamp in the gzip header: same input, same bytes)."""
        return gzip.compress(self.prof.SerializeToString(deterministic=True), mtime=0)


# A sample with the wall time it stands for (Filter.apply reads the fields it needs by name).
WallSample = collections.namedtuple("WallSample", "time_ns cpu flags frames exact task offcpu weight wall")


def with_wall(samples, period_ns):
    """Samples (in time order) -> WallSamples, each with the time to its vCPU's next sample
    (never negative); the last of each vCPU gets period_ns. A sample comes out when its vCPU's
    next one arrives, so the order is per vCPU, not global."""
    pending = {}
    for s in samples:
        if s.offcpu is not None:  # record --off-cpu's: on no vCPU, the periods it stands for
            yield WallSample(*s, s.weight * (period_ns if not callable(period_ns) else 0))
            continue
        prev = pending.get(s.cpu)
        if prev is not None:
            yield WallSample(*prev, max(0, s.time_ns - prev.time_ns))
        pending[s.cpu] = s
    if callable(period_ns):  # known only once the samples are read (a replay's --every, in the summary)
        period_ns = period_ns()
    for cpu in sorted(pending):
        yield WallSample(*pending[cpu], period_ns)


class Frames:
    """Capture frames -> location ids: names by fold's Namer, lines from DWARF, the kernel mapping."""

    def __init__(self, builder, syms, lo, hi, mod_ids=None):
        self.b = builder
        self.mod_ids = mod_ids or {}             # module name -> its mapping id
        self.syms = syms                         # Symbolizer rebased for the capture, or None
        self.namer = Namer(syms)
        self.lines = bool(syms is not None and syms.is_elf and syms.path)
        self.lo, self.hi = lo, hi                # the mapping's range, inclusive

    def function(self, addr, is_ret):
        name = self.namer.frames(addr, is_ret)[0]
        sym = self.syms.frame(addr, is_ret) if self.syms else None
        if sym is None or not self.lines:
            return self.b.function(name), 0
        start = self.syms.line(sym[1])
        here = self.syms.line(self.syms.frame_addr(addr, is_ret))
        fid = self.b.function(name, *(start if start and start[0] and start[1] else (None, 0)))
        return fid, (here[1] if here and here[1] else 0)

    def location(self, addr, is_ret):
        lid = self.b.locations.get((addr, is_ret))
        if lid is not None:
            return lid
        fid, line = self.function(addr, is_ret)
        mod = self.syms.module_of(addr) if hasattr(self.syms, "module_of") else None
        mapping = self.mod_ids.get(mod.name, 1) if mod else 1 if self.lo <= addr <= self.hi else 0
        return self.b.location((addr, is_ret), fid, line, addr, mapping)


def from_capture(pb, cap, syms, flt, elf):
    """The profile of a capture's samples that flt keeps; syms rebased for cap, or None."""
    b = Builder(pb)
    prof = b.prof
    period = 1000000000 // cap.rate_hz if cap.rate_hz else 0
    b.value_type(prof.sample_type.add(), "samples", "count")
    if getattr(cap, "icount", False):  # a replay's capture: times are instruction counts
        b.value_type(prof.sample_type.add(), "instructions", "count")
        b.value_type(prof.period_type, "instructions", "count")

        def period():
            every = cap.summary.get("replay_every", 0)
            return every if isinstance(every, int) and every > 0 else 0
    else:
        b.value_type(prof.sample_type.add(), "wall", "nanoseconds")
        b.value_type(prof.period_type, "wall", "nanoseconds")
        prof.period = period
    prof.default_sample_type = b.s("samples")
    prof.comment.append(b.s("gdbsample capture %s: %d vCPUs, %d Hz requested"
                            % (os.path.basename(cap.name), cap.ncpus, cap.rate_hz)))
    m = prof.mapping.add()
    m.id = 1
    m.memory_start = cap.kernel_lo
    m.memory_limit = min(cap.kernel_hi + 1, (1 << 64) - 1)
    m.filename = b.s(os.path.basename(elf) if elf else KERNEL_NAME)
    if cap.kernel_id_kind == ID_BUILD and cap.kernel_id:
        m.build_id = b.s(cap.kernel_id.hex())
    m.has_functions = syms is not None
    m.has_filenames = m.has_line_numbers = bool(syms is not None and syms.is_elf)
    mod_ids = {}
    for mod in getattr(syms, "modules", ()):    # v4: a mapping per module of the guest
        if mod.name in mod_ids or not mod.ranges:
            continue
        mm = prof.mapping.add()
        mm.id = mod_ids[mod.name] = len(prof.mapping)
        mm.memory_start = min(r[0] for r in mod.ranges)
        mm.memory_limit = max(r[1] for r in mod.ranges)
        mm.filename = b.s("[%s]" % mod.name)
        mm.has_functions = True
    tasks = cap.task_os is not None
    agg = {}                                     # (frames, exact, cpu, task, state) -> [count, wall]
    for s in flt.apply(with_wall(cap.samples(), period)):
        off = s.offcpu is not None
        key = (s.frames, s.exact, None if off else s.cpu, s.task if tasks else None, s.offcpu)
        e = agg.get(key)
        if e is None:
            agg[key] = [s.weight if off else 1, s.wall]
        else:
            e[0] += s.weight if off else 1
            e[1] += s.wall
    if callable(period):
        prof.period = period()
    prof.time_nanos = cap.start_ns if cap.start_ns <= INT64_MAX else 0     # a hostile header: unknown
    prof.duration_nanos = int(cap.summary.get("duration_ns", cap.last_time_ns or 0))
    frames = Frames(b, syms, cap.kernel_lo, cap.kernel_hi, mod_ids)
    rows = []
    for (stack, exact, cpu, task, state), (n, wall) in agg.items():
        names = tuple(frames.namer.frames(stack[i], is_return(i, exact))[0] for i in range(len(stack) - 1, -1, -1))
        order = (";".join(names).encode("utf-8", "surrogateescape"), stack, sorted(exact),
                 (0, cpu) if state is None else (1, state),
                 (0,) if task is None else (1, task.pid, task.tgid, task.comm, task.ptr))
        rows.append((order, stack, exact, cpu, task, state, n, wall))
    rows.sort(key=lambda r: r[0])
    for _, stack, exact, cpu, task, state, n, wall in rows:
        ids = [frames.location(a, is_return(i, exact)) for i, a in enumerate(stack)]   # leaf first
        labels = [("cpu", "%d" % cpu)] if state is None else [("state", "off-cpu/" + state)]
        if tasks and task is not None:
            labels += [("comm", task.comm), ("pid", "%d" % task.pid), ("tgid", "%d" % task.tgid)]
        elif tasks:
            labels.append(("comm", UNKNOWN_TASK))
        b.sample(ids, [n, min(wall, INT64_MAX)], labels)          # int64, even summed from hostile times
    return b


def from_folded(pb, stacks, name):
    """The profile of folded stacks: one sample per stack, frames by name."""
    b = Builder(pb)
    b.value_type(b.prof.sample_type.add(), "samples", "count")
    b.prof.comment.append(b.s("folded stacks %s" % name))
    for stack, n in sorted(stacks.items(), key=lambda kv: kv[0].encode("utf-8", "surrogateescape")):
        if n <= 0:
            continue
        names = stack.split(";")
        ids = [b.location(f, b.function(f)) for f in reversed(names)]
        b.sample(ids, [n])
    return b


def run(args):
    out = output.Output(args.output, (args.input, args.elf), binary=True)   # not an input; not a terminal
    pb = schema()                                                          # the generated module
    if not common.is_capture(args.input):
        filters.capture_only(args, args.input)
        b = from_folded(pb, common.load_folded(args.input), os.path.basename(args.input))
        status = EXIT_OK
    else:
        flt = filters.Filter(args)
        cap = common.open_capture(args.input)
        flt.check(cap)
        syms = common.load_symbols(args.elf) if args.elf else None
        syms = common.symbols_for(syms, cap, args.kaslr_offset)           # the capture's KASLR offset
        b = from_capture(pb, cap, syms, flt, args.elf)                     # one streaming pass
        status = common.loss_status(cap)
    out.write(b.encode())
    out.commit()
    return status
