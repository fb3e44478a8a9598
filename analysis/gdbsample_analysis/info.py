# SPDX-License-Identifier: MIT
"""info.py: `info CAPTURE` -- header, vCPUs, duration, sample counts, tasks, phases, pauses, unwinding
and chunk integrity."""
import datetime
import json
import math

from . import common, output
from .capture import FLAG_IDLE, FLAG_IRQOFF, FLAG_PARTIAL, FLAG_USER, ID_KINDS
from .phases import Timeline

HELP = ("what a capture holds: header, KASLR, vCPUs, duration, counts, tasks, phases, pauses, unwinding, "
        "chunk integrity")

# summary keys printed in their own lines above; the rest are listed under "summary"
SHOWN = {"duration_ns", "rate_achieved_hz", "samples", "idle", "dropped", "pause_p50_us",
         "pause_p99_us", "pause_max_us", "stopped_fraction", "vcpus", "rate_requested_hz",
         "image", "unwind", "orc", "kaslr_offset", "kaslr_how", "kaslr_names_offset", "kaslr_names_how",
         "task_verified", "task_hits", "task_misses", "task_renamed", "task_lost", "task_reads",
         "task_bytes", "task_os", "task_layout", "task_off", "filtered",
         "phase", "phase_begin", "phase_end", "phase_occurrences", "phase_complete", "phase_sampled_ns",
         "phase_incomplete", "phase_on_bound", "phase_rescues", "phase_hits"}
# the sampler's task attribution counters (summary, v3) and how the tasks line reads them
TASK_COUNTERS = [("task_verified", "verified in the batch"), ("task_hits", "cache hits"),
                 ("task_misses", "misses (extra round trip)"), ("task_renamed", "renamed"),
                 ("task_lost", "lost")]
STOP = "unwind_stop_"    # unwind_stop_<reason> and unwind_stop_<method>_<reason> (reasons have no _)
FRAMES = "frames_"       # frames_<method>: frames each unwinding method produced
# sampler/unwind.c's orders: stop reasons, and methods as gdbsample prints them (preferred first)
STOP_ORDER = ["end", "user", "max-frames", "out-of-range", "unread", "misaligned", "loop",
              "out-of-stack", "no-info", "bad-rule"]
METHOD_ORDER = ["orc", "cfi", "fp", "none"]


def add_arguments(p):
    p.add_argument("capture", metavar="CAPTURE")
    p.add_argument("-o", "--output", metavar="OUT", help="write to OUT (default stdout)")
    p.add_argument("--json", action="store_true",
                   help="one JSON object instead of the text (schema: docs/json.md, \"info\")")


SCHEMA = "gdbsample-analyze info"   # docs/json.md: the object's "schema" and its version
SCHEMA_VERSION = 3                  # 2: "phases" (capture version 5); 3: "offcpu" (version 6)


class PhaseCounts:
    """Samples inside each occurrence of each phase (v5), and outside every occurrence of each;
    the phases are read ahead of the samples (Capture.load_phases)."""

    def __init__(self, cap):
        self.lines = [Timeline(p.occurrences) for p in cap.load_phases()[0]]   # per phase, in order
        self.inside = [{} for _ in self.lines]    # [phase index] {occurrence n: samples}
        self.outside = [0 for _ in self.lines]    # [phase index] samples in none of its occurrences

    def add(self, t):
        for i, line in enumerate(self.lines):
            hits = line.at(t)
            if not hits:
                self.outside[i] += 1
            for k in hits:
                n = line.occ[k].n
                self.inside[i][n] = self.inside[i].get(n, 0) + 1

    def samples(self, i, n):
        """Samples inside occurrence n of phase i (0 for a phase the read-ahead did not see)."""
        return self.inside[i].get(n, 0) if i < len(self.inside) else 0

    def samples_outside(self, i):
        return self.outside[i] if i < len(self.outside) else None


def count(cap):
    """One pass: per-vCPU [samples, idle, irqoff, user, partial, with exact frames, with a task],
    frame total, first time, the distinct tasks (pid, tgid, comm), PhaseCounts, and the off-CPU
    stacks (v6) {state: [stacks, periods]} -- no vCPU's, so in no vCPU's counts."""
    per, frames, first, tasks = {}, 0, None, set()
    offcpu = {"blocked": [0, 0], "uninterruptible": [0, 0], "runnable": [0, 0]}
    phases = PhaseCounts(cap)
    add_phase = phases.add if phases.lines else None
    for s in cap.samples():
        if s.offcpu is not None:
            o = offcpu[s.offcpu]
            o[0] += 1
            o[1] += s.weight
            if s.task is not None:
                tasks.add(s.task)
            continue
        c = per.get(s.cpu)
        if c is None:
            c = per[s.cpu] = [0, 0, 0, 0, 0, 0, 0]
        c[0] += 1
        f = s.flags
        if f & FLAG_IDLE:
            c[1] += 1
        if f & FLAG_IRQOFF:
            c[2] += 1
        if f & FLAG_USER:
            c[3] += 1
        if f & FLAG_PARTIAL:
            c[4] += 1
        if s.exact:
            c[5] += 1
        if s.task is not None:
            c[6] += 1
            tasks.add(s.task)
        frames += len(s.frames)
        if first is None:
            first = s.time_ns
        if add_phase is not None:
            add_phase(s.time_ns)
    return per, frames, first, {(t.pid, t.tgid, t.comm) for t in tasks}, phases, offcpu


def hex_addr(value):
    """An address as JSON text "0x..." (JSON numbers are doubles to most readers: 64 bits do not fit)."""
    return None if value is None else ("-0x%x" % -value if value < 0 else "0x%x" % value)


def json_value(v):
    """A summary value for JSON: numbers as numbers, but one too large to be finite (1e400) as
    its text, as JSON has no infinity."""
    return repr(v) if isinstance(v, float) and not math.isfinite(v) else v


def phases_json(cap, counts):
    """Version 5: the phases and their occurrences, each with the samples inside it; None before."""
    if cap.version < 5:
        return None
    return [{"name": p.name, "begin": hex_addr(p.begin_addr), "end": hex_addr(p.end_addr),
             "samples_outside": counts.samples_outside(i),
             "occurrences": [{"n": o.n, "begin_ns": o.begin_ns, "end_ns": o.end_ns,
                              "duration_ns": o.end_ns - o.begin_ns, "begin_cpu": o.begin_cpu,
                              "end_cpu": o.end_cpu, "state": "done" if o.done else "open",
                              "sampled": o.sampled, "samples": counts.samples(i, o.n)}
                             for o in p.occurrences]}
            for i, p in enumerate(cap.phases)]


def describe_json(cap, per, frames, first, tasks=(), phases=None, offcpu=None):
    """The info facts as one JSON object (docs/json.md, "info"), keys sorted, ending in a newline."""
    sm = cap.summary
    total = sum(c[0] for c in per.values())
    idle = sum(c[1] for c in per.values())
    v2 = cap.version >= 2
    doc = {
        "schema": SCHEMA, "schema_version": SCHEMA_VERSION,
        "capture": {"name": cap.name, "bytes": cap.size, "version": cap.version, "arch": cap.arch_name()},
        "start_ns": cap.start_ns, "start": start_text(cap.start_ns),
        "vcpus": cap.ncpus, "rate_hz": cap.rate_hz, "max_frames": cap.max_frames,
        "kernel": {"lo": hex_addr(cap.kernel_lo), "hi": hex_addr(cap.kernel_hi),
                   "id_kind": ID_KINDS.get(cap.kernel_id_kind, "unknown(%d)" % cap.kernel_id_kind),
                   "id": cap.kernel_id.hex() if cap.kernel_id else None},
        "kaslr": None if not v2 else {"offset": hex_addr(cap.kaslr_offset), "how": sm.get("kaslr_how")},
        "stext": hex_addr(cap.stext) if v2 and cap.stext else None,
        "methods": cap.method_names() if v2 else None,
        "idle_kept": bool(cap.flags & 1),
        "samples": {"total": total, "idle": idle, "not_idle": total - idle, "frames": frames,
                    "exact": sum(c[5] for c in per.values()) if v2 else None,
                    "first_ns": first, "last_ns": cap.last_time_ns if first is not None else None},
        "cpus": [{"cpu": cpu, "samples": c[0], "idle": c[1], "irqoff": c[2], "user": c[3], "partial": c[4],
                  "exact": c[5], "with_task": c[6]} for cpu, c in sorted(per.items())],
        "tasks": None if cap.version < 3 else {
            "os": cap.task_os, "with_task": sum(c[6] for c in per.values()),
            "list": [{"pid": p, "tgid": g, "comm": n} for p, g, n in sorted(tasks)]},
        "modules": None if cap.version < 4 else [
            {"name": m.name, "ranges": [[hex_addr(lo), hex_addr(hi)] for lo, hi in m.ranges],
             "symbols": len(m.syms)} for m in cap.modules],
        "phases": phases_json(cap, phases),
        "offcpu": None if cap.version < 6 or offcpu is None else {
            k: {"stacks": v[0], "periods": v[1]} for k, v in sorted(offcpu.items())},
        "summary": {k: json_value(v) for k, v in sm.items()} if sm else None,
        "summary_invalid": [k for k, _ in cap.summary_bad],
        "integrity": {"intact": bool(cap.intact), "chunks_good": cap.chunks_ok, "problem": cap.problem,
                      "bytes_lost": cap.bytes_lost},
    }
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=True, allow_nan=False) + "\n"


def start_text(ns):
    t = datetime.datetime.fromtimestamp(ns // 1000000000, datetime.timezone.utc)
    return "%s.%09dZ" % (t.strftime("%Y-%m-%dT%H:%M:%S"), ns % 1000000000)


def in_order(keys, order):
    """keys sorted by their place in order, unknown ones after it by name."""
    return sorted(keys, key=lambda k: (order.index(k) if k in order else len(order), k))


def kaslr_lines(cap, sm):
    """Version 2 header facts: the KASLR offset (and how gdbsample found it), _stext, methods."""
    if cap.version < 2:
        return []
    how = " (%s)" % sm["kaslr_how"] if "kaslr_how" in sm else ""
    if cap.kaslr_offset is None:
        text = "unknown (header flag clear)"
    else:
        text = "%s0x%x, known%s" % ("-" if cap.kaslr_offset < 0 else "", abs(cap.kaslr_offset), how)
    if "kaslr_names_offset" in sm:
        text += "; names %s (%s)" % (sm["kaslr_names_offset"], sm.get("kaslr_names_how", "?"))
    return ["kaslr       offset " + text,
            "stext       " + ("0x%x (the guest's runtime _stext)" % cap.stext if cap.stext else "unknown"),
            "methods     " + (", ".join(cap.method_names()) or "none recorded")]


def unwind_lines(sm):
    """The summary's unwinding facts and counters: image, methods, frames and stops by method."""
    L = []
    if "image" in sm:
        L.append("image       %s" % sm["image"])
    if "unwind" in sm:
        L.append("unwinding   %s%s" % (sm["unwind"], "; orc %s" % sm["orc"] if "orc" in sm else ""))
    frames = {k[len(FRAMES):]: v for k, v in sm.items() if k.startswith(FRAMES)}
    if frames:
        L.append("frames      " + ", ".join("%s %s" % (m, frames[m]) for m in in_order(frames, METHOD_ORDER))
                 + " (by unwinding method)")
    stops, by = {}, {}
    for k, v in sm.items():
        if not k.startswith(STOP):
            continue
        method, _, reason = k[len(STOP):].rpartition("_")
        if method:
            by.setdefault(method, {})[reason] = v
        else:
            stops[reason] = v
    if stops:
        shown = [r for r in in_order(stops, STOP_ORDER) if stops[r] != 0]
        L.append("walks ended " + (", ".join("%s %s" % (r, stops[r]) for r in shown) or "none counted"))
    if by:
        L.append("  by method " + "; ".join(
            "%s: %s" % (m, ", ".join("%s %s" % (r, by[m][r]) for r in in_order(by[m], STOP_ORDER)))
            for m in in_order(by, METHOD_ORDER)))
    return L


def task_line(cap, sm, per, tasks):
    """Version 3: whose tasks (and the layout gdbsample found), how many samples name one, the
    sampler's task counters, what --pid/--comm left out; or why attribution was off."""
    if cap.version < 3:
        return []
    if not cap.task_os:
        return ["tasks       none (%s)" % sm.get("task_off", "gdbsample ran with --os none, or found no "
                                                               "task layout in the image")]
    total = sum(c[0] for c in per.values())
    text = "%s%s; %d of %d samples name a task (%d task%s)" % (
        cap.task_os, " (%s)" % sm["task_layout"] if "task_layout" in sm else "",
        sum(c[6] for c in per.values()), total, len(tasks), "" if len(tasks) == 1 else "s")
    if any(k in sm for k, _ in TASK_COUNTERS):
        text += "; " + ", ".join("%s %s" % (sm.get(k, "?"), what) for k, what in TASK_COUNTERS)
    if "task_reads" in sm:
        text += "; %s reads, %s bytes" % (sm["task_reads"], sm.get("task_bytes", "?"))
    if "filtered" in sm:
        text += "; %s samples left out by --pid/--comm" % sm["filtered"]
    return ["tasks       " + text]


def when(cap, ns):
    """A phase's time as info prints it: seconds since the run started (ns exact), or a replay's
    instruction count."""
    return "instruction %d" % ns if cap.icount else "%d.%09d s" % divmod(ns, 1000000000)


def phase_lines(cap, sm, counts):
    """Version 5: per phase its breakpoints and a count of its occurrences, then a line per
    occurrence (times, vCPUs, state, samples inside it); the sampler's phase counters."""
    if cap.version < 5:
        return []
    L = [] if cap.phases else ["phases      none listed"]
    for i, p in enumerate(cap.phases):
        occ = p.occurrences
        symbols = (" = %s:%s" % (sm["phase_begin"], sm.get("phase_end", "?"))
                   if sm.get("phase") == p.name and "phase_begin" in sm else "")
        outside = counts.samples_outside(i)
        L.append("phase       %s%s, begin 0x%x, end 0x%x: %d occurrence%s, %d done, %d open, %d sampled%s"
                 % (p.name, symbols, p.begin_addr, p.end_addr, len(occ), "" if len(occ) == 1 else "s",
                    sum(o.done for o in occ), sum(not o.done for o in occ), sum(o.sampled for o in occ),
                    "" if outside is None else "; %d sample%s outside them" % (outside, "" if outside == 1 else "s")))
        for o in occ:
            n = counts.samples(i, o.n)
            span = ("%d instructions" % (o.end_ns - o.begin_ns) if cap.icount
                    else "%.3f ms" % ((o.end_ns - o.begin_ns) / 1e6))
            L.append("  #%-8d %s to %s (%s), vCPU %d to %s, %s, %s, %d sample%s"
                     % (o.n, when(cap, o.begin_ns), when(cap, o.end_ns), span, o.begin_cpu,
                        "-" if o.end_cpu is None else o.end_cpu, "done" if o.done else "open",
                        "sampled" if o.sampled else "skipped", n, "" if n == 1 else "s"))
    if "phase_hits" in sm:
        L.append("  breakpoints %s hits, %s samples on a bound (left out), %s watchdog rescues; "
                 "%s of %s occurrences closed by END; sampled %s"
                 % (sm["phase_hits"], sm.get("phase_on_bound", "?"), sm.get("phase_rescues", "?"),
                    sm.get("phase_complete", "?"), sm.get("phase_occurrences", "?"),
                    "%.3f ms" % (sm["phase_sampled_ns"] / 1e6) if "phase_sampled_ns" in sm else "?"))
    return L


def describe(cap, per, frames, first, tasks=(), phases=None, offcpu=None):
    """The info text."""
    sm = cap.summary
    total = sum(c[0] for c in per.values())
    idle = sum(c[1] for c in per.values())
    kid = cap.kernel_id.hex() if cap.kernel_id else "-"
    L = ["capture     %s (%d bytes)" % (cap.name, cap.size),
         "format      version %d, %s" % (cap.version, cap.arch_name()),
         "started     %s" % start_text(cap.start_ns),
         "vcpus       %d" % cap.ncpus,
         "rate        %d Hz requested%s" % (cap.rate_hz, ", %.2f Hz achieved" % sm["rate_achieved_hz"]
                                            if "rate_achieved_hz" in sm else "")
         if not cap.icount else "times       instruction counts (a replay: one sample every %s)"
         % sm.get("replay_every", "?"),
         "max frames  %d" % cap.max_frames,
         "kernel      0x%x-0x%x, id %s %s" % (cap.kernel_lo, cap.kernel_hi,
                                              ID_KINDS.get(cap.kernel_id_kind, "?"), kid),
         *kaslr_lines(cap, sm),
         "idle kept   %s" % ("yes" if cap.flags & 1 else "no")]
    if "duration_ns" in sm:
        dur = "%.1f ms" % (sm["duration_ns"] / 1e6)
    else:
        dur = "unknown (%s)" % ("not in the summary" if sm else "no summary")
    if first is not None and cap.icount:
        dur += " of the host's, samples from instruction %d to %d" % (first, cap.last_time_ns)
    elif first is not None:
        dur += ", samples from %.1f to %.1f ms" % (first / 1e6, cap.last_time_ns / 1e6)
    L.append("duration    " + dur)
    L.append("samples     %d in the file: %d not idle, %d idle, %.1f frames each%s"
             % (total, total - idle, idle, frames / total if total else 0,
                ", %d through an interrupt (exact frames)" % sum(c[5] for c in per.values())
                if cap.version >= 2 else ""))
    for cpu in sorted(per):
        c = per[cpu]
        L.append("  cpu%-7d %d samples: %d idle, %d interrupts off, %d user, %d partial walks"
                 % (cpu, c[0], c[1], c[2], c[3], c[4]))
    L.extend(task_line(cap, sm, per, tasks))
    if cap.version >= 6 and offcpu is not None:
        L.append("off-CPU     %d stacks of tasks not running (record --off-cpu): blocked %d standing for %d "
                 "periods, uninterruptible %d for %d, runnable %d for %d"
                 % (sum(v[0] for v in offcpu.values()), offcpu["blocked"][0], offcpu["blocked"][1],
                    offcpu["uninterruptible"][0], offcpu["uninterruptible"][1], offcpu["runnable"][0],
                    offcpu["runnable"][1]))
    L.extend(phase_lines(cap, sm, phases))
    if sm:
        L.append("dropped     %s (vCPU samples whose registers could not be read)" % sm.get("dropped", "?"))
        if "pause_p50_us" in sm:
            stopped, paused = sm.get("stopped_fraction"), sm.get("paused_fraction")
            L.append("pauses      p50 %s us, p99 %s us, max %s us%s%s"
                     % (sm["pause_p50_us"], sm.get("pause_p99_us", "?"), sm.get("pause_max_us", "?"),
                        "; guest stopped %.2f%% of wall time" % (100 * stopped)
                        if isinstance(stopped, (int, float)) else "",
                        " (at most %.2f%%, counting from the stop byte)" % (100 * paused)
                        if isinstance(stopped, (int, float)) and isinstance(paused, (int, float)) else ""))
        L.extend(unwind_lines(sm))
        if sm.get("samples") not in (None, total - idle):
            L.append("note        the summary says %s samples not idle, the file holds %d"
                     % (sm["samples"], total - idle))
    if cap.intact:
        L.append("chunks      %d good, file intact" % cap.chunks_ok)
    else:
        L.append("chunks      %d good, DAMAGED: %s" % (cap.chunks_ok, cap.problem))
    rest = sorted(k for k in sm if k not in SHOWN and not k.startswith((STOP, FRAMES)))
    if rest:
        L.append("summary")
        L.extend("  %-26s %s" % (k, sm[k]) for k in rest)
    return "\n".join(L) + "\n"


def run(args):
    out = output.Output(args.output, [args.capture])    # not the capture; a bad path fails early
    cap = common.open_capture(args.capture)
    per, frames, first, tasks, phases, offcpu = count(cap)  # one streaming pass
    common.summary_notes(cap)                           # invalid summary numbers: a warning each
    out.write((describe_json if args.json else describe)(cap, per, frames, first, tasks, phases, offcpu))
    out.commit()
    return common.EXIT_OK if cap.intact else common.EXIT_DAMAGED
