"""info.py: `info CAPTURE` -- header, vCPUs, duration, sample counts, pauses and chunk integrity."""
import datetime

from . import common
from .capture import FLAG_IDLE, FLAG_IRQOFF, FLAG_PARTIAL, FLAG_USER, ID_KINDS

HELP = "what a capture holds: header, vCPUs, duration, counts, pauses, chunk integrity"

# summary keys printed in their own lines above; the rest are listed under "summary"
SHOWN = {"duration_ns", "rate_achieved_hz", "samples", "idle", "dropped", "pause_p50_us",
         "pause_p99_us", "pause_max_us", "stopped_fraction", "vcpus", "rate_requested_hz"}


def add_arguments(p):
    p.add_argument("capture", metavar="CAPTURE")
    p.add_argument("-o", "--output", metavar="OUT", help="write to OUT (default stdout)")


def count(cap):
    """One pass: per-vCPU [samples, idle, irqoff, user, partial], frame total, first/last time."""
    per, frames, first = {}, 0, None
    for s in cap.samples():
        c = per.get(s.cpu)
        if c is None:
            c = per[s.cpu] = [0, 0, 0, 0, 0]
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
        frames += len(s.frames)
        if first is None:
            first = s.time_ns
    return per, frames, first


def start_text(ns):
    t = datetime.datetime.fromtimestamp(ns // 1000000000, datetime.timezone.utc)
    return "%s.%09dZ" % (t.strftime("%Y-%m-%dT%H:%M:%S"), ns % 1000000000)


def describe(cap, per, frames, first):
    """The info text."""
    sm = cap.summary
    total = sum(c[0] for c in per.values())
    idle = sum(c[1] for c in per.values())
    kid = cap.kernel_id.hex() if cap.kernel_id else "-"
    L = ["capture     %s (%d bytes)" % (cap.path, cap.size),
         "format      version %d, %s" % (cap.version, cap.arch_name()),
         "started     %s" % start_text(cap.start_ns),
         "vcpus       %d" % cap.ncpus,
         "rate        %d Hz requested%s" % (cap.rate_hz, ", %.2f Hz achieved" % sm["rate_achieved_hz"]
                                            if "rate_achieved_hz" in sm else ""),
         "max frames  %d" % cap.max_frames,
         "kernel      0x%x-0x%x, id %s %s" % (cap.kernel_lo, cap.kernel_hi,
                                              ID_KINDS.get(cap.kernel_id_kind, "?"), kid),
         "idle kept   %s" % ("yes" if cap.flags & 1 else "no")]
    if "duration_ns" in sm:
        dur = "%.1f ms" % (sm["duration_ns"] / 1e6)
    else:
        dur = "unknown (no summary)"
    if first is not None:
        dur += ", samples from %.1f to %.1f ms" % (first / 1e6, cap.last_time_ns / 1e6)
    L.append("duration    " + dur)
    L.append("samples     %d in the file: %d not idle, %d idle, %.1f frames each"
             % (total, total - idle, idle, frames / total if total else 0))
    for cpu in sorted(per):
        c = per[cpu]
        L.append("  cpu%-7d %d samples: %d idle, %d interrupts off, %d user, %d partial walks"
                 % (cpu, c[0], c[1], c[2], c[3], c[4]))
    if sm:
        L.append("dropped     %s (vCPU samples whose registers could not be read)" % sm.get("dropped", "?"))
        if "pause_p50_us" in sm:
            stopped = sm.get("stopped_fraction")
            L.append("pauses      p50 %s us, p99 %s us, max %s us%s"
                     % (sm["pause_p50_us"], sm.get("pause_p99_us", "?"), sm.get("pause_max_us", "?"),
                        "; guest stopped %.2f%% of wall time" % (100 * stopped)
                        if isinstance(stopped, (int, float)) else ""))
        if sm.get("samples") not in (None, total - idle):
            L.append("note        the summary says %s samples not idle, the file holds %d"
                     % (sm["samples"], total - idle))
    if cap.intact:
        L.append("chunks      %d good, file intact" % cap.chunks_ok)
    else:
        L.append("chunks      %d good, DAMAGED: %s" % (cap.chunks_ok, cap.problem))
    rest = sorted(k for k in sm if k not in SHOWN)
    if rest:
        L.append("summary")
        L.extend("  %-26s %s" % (k, sm[k]) for k in rest)
    return "\n".join(L) + "\n"


def run(args):
    cap = common.open_capture(args.capture)
    out = common.Output(args.output)
    per, frames, first = count(cap)                     # one streaming pass
    out.write(describe(cap, per, frames, first))
    out.close()
    return common.EXIT_OK if cap.intact else common.EXIT_DAMAGED
