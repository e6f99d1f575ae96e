#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Tables of the MPI benchmark from its CSV (docs/bench-mpi.md).

    /usr/bin/python3 bench/mpi/report.py [--targets-to-csv] mpi.csv

Prints viaduct, Open MPI and MPICH side by side with ratios to viaduct,
the MPICH-PM/CLUMP paper's Table 4 (viaduct with each protocol forced), figure 5
(process_vm_readv against memcpy) and the project's targets.  With
--targets-to-csv the targets are appended to the CSV as rows of section
"targets" (the plot draws them).  Standard library only.
"""
import argparse
import csv
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from plotlib import MIB, context_text, fmt, load, print_table, ratio, size_name  # noqa: E402

IMPLS = (("viaduct", "viaduct"), ("openmpi", "Open MPI"), ("mpich", "MPICH"))
PROTOS = (("viaduct_eager", "eager"), ("viaduct_get", "get"), ("viaduct_rndv", "rendezvous"))
# The MPICH-PM/CLUMP paper's Table 4 (LBP cluster, 1999): minimum latency
# (us), maximum bandwidth (MB/s), half-bandwidth point (KB), within an SMP
# node (eager, get) and between SMP nodes (eager, rendezvous).
SEED_NODE = {"eager": (8.62, 48.03, 0.3), "get": (9.98, 100.02, 2.5)}
SEED_NET = {"eager": (11.08, 54.92, 0.2), "rendezvous": (12.75, 97.73, 21.0)}
LAT_TARGET = 0.8      # viaduct 8-byte latency <= 0.8 x Open MPI's
BW_TARGET = 1.0       # viaduct bandwidth >= 1.0 x max(Open MPI, MPICH)
BW_STRETCH = 1.3      # at 4 MiB
# Every size: viaduct's time <= 1.0 x the better other's, its bandwidth
# >= 1.0 x the better other's (the tables' MISS marks).
PER_SIZE_TARGET = 1.0


def side_by_side(data, section, metric, title, unit, lower_better):
    """One row per size: the three libraries, viaduct / each other, and
    viaduct / the better other with MISS where the per-size target (1.0:
    no slower, no less bandwidth) is missed; then a summary line."""
    series = {k: data.get((section, k, metric), {}) for k, _ in IMPLS}
    sizes = sorted(set().union(*[s.keys() for s in series.values()]))
    if not sizes:
        return
    present = [(k, n) for k, n in IMPLS if series[k]]
    cols = [("size", 8)] + [(n + " " + unit, 14) for _, n in present]
    others = [(k, n) for k, n in present if k != "viaduct"]
    judge = bool(series["viaduct"] and others)
    if series["viaduct"]:
        cols += [("vd/" + n, 12) for _, n in others]
    if judge:
        cols += [("vd/best", 8), ("", 4)]
    rows, ratios = [], []
    for s in sizes:
        vals = {k: series[k].get(s) for k, _ in present}
        r = [size_name(s)] + [fmt(vals[k]) for k, _ in present]
        if series["viaduct"]:
            r += [fmt(ratio(vals["viaduct"], vals[k])) for k, _ in others]
        if judge:
            got = [vals[k] for k, _ in others if vals[k]]
            best = (min(got) if lower_better else max(got)) if got else None
            rb = ratio(vals["viaduct"], best)
            miss = rb is not None and (rb > PER_SIZE_TARGET if lower_better
                                       else rb < PER_SIZE_TARGET)
            r += [fmt(rb), "MISS" if miss else ""]
            if rb is not None:
                ratios.append((s, rb, miss))
        rows.append(r)
    how = "lower is better" if lower_better else "higher is better"
    print_table("%s (%s; vd/X = viaduct / X; vd/best: viaduct / the better other, "
                "MISS %s %.1f)" % (title, how, "above" if lower_better else "below",
                                   PER_SIZE_TARGET), cols, rows)
    if ratios:
        worst = (max if lower_better else min)(ratios, key=lambda t: t[1])
        print("  summary: %s: misses %d of %d sizes, worst ratio %.2f at %s (target %s %.1f)\n"
              % (section, sum(m for _, _, m in ratios), len(ratios), worst[1],
                 size_name(worst[0]), "<=" if lower_better else ">=", PER_SIZE_TARGET))


def half_point(bw):
    """Smallest size reaching half the maximum bandwidth, interpolated
    between the measured sizes on a log2 scale; (bytes, max)."""
    pts = sorted((s, v) for s, v in bw.items() if s > 0)
    if not pts:
        return None, None
    top = max(v for _, v in pts)
    prev = None
    for s, v in pts:
        if v >= top / 2:
            if prev is None or prev[1] >= v:
                return s, top
            f = (top / 2 - prev[1]) / (v - prev[1])
            return 2 ** (math.log2(prev[0]) + f * (math.log2(s) - math.log2(prev[0]))), top
        prev = (s, v)
    return None, top


def seed_text(seed, names, i):
    """The paper's figure i (0 latency, 1 bandwidth, 2 half point) of each
    protocol in names, as printed there, '-' where it has none."""
    return " / ".join("%g" % seed[n][i] if n in seed else "-" for n in names)


def table4_rows(data, cols, seed, seed_names):
    """Table 4's rows for the columns [(case, name)] of data, the paper's
    figures (seed, for the protocols seed_names) in the last column."""
    rows = []
    lat = {k: data[("latency", k, "half_rtt_us")] for k, _ in cols}
    pp = {k: {s: s / v for s, v in lat[k].items() if s > 0 and v > 0} for k, _ in cols}
    win = {k: data.get(("bw", k, "mb_per_s"), {}) for k, _ in cols}
    # Sizes >= 1 B: a 0-byte message always goes eager (src/mpi/proto.c).
    minlat = {k: min(((s, v) for s, v in lat[k].items() if s > 0), key=lambda kv: kv[1],
                     default=(0, None)) for k, _ in cols}
    rows.append(["minimum latency, >= 1 B (us)"] + [fmt(minlat[k][1], 3) for k, _ in cols] +
                [seed_text(seed, seed_names, 0)])
    rows.append(["  at size"] + [size_name(minlat[k][0]) for k, _ in cols] + [""])
    hp = {k: half_point(pp[k]) for k, _ in cols}
    rows.append(["maximum bandwidth, ping-pong (MB/s)"] + [fmt(hp[k][1]) for k, _ in cols] +
                [seed_text(seed, seed_names, 1)])
    rows.append(["half-bandwidth point (KiB)"] +
                [fmt(hp[k][0] / 1024 if hp[k][0] else None, 2) for k, _ in cols] +
                [seed_text(seed, seed_names, 2)])
    hw = {k: half_point(win[k]) for k, _ in cols}
    rows.append(["maximum bandwidth, windowed (MB/s)"] + [fmt(hw[k][1]) for k, _ in cols] + [""])
    rows.append(["half-bandwidth point, windowed (KiB)"] +
                [fmt(hw[k][0] / 1024 if hw[k][0] else None, 2) for k, _ in cols] + [""])
    rows.append(["largest size, ping-pong / windowed"] +
                ["%s / %s" % (size_name(max(lat[k])), size_name(max(win[k])) if win[k] else "-")
                 for k, _ in cols] + ["(a failed run stops early)"])
    return rows


def print_table4(title, data, cols, seed, markdown=False):
    """Table 4 of the columns [(case, protocol)] present in data, the
    paper's figures of those protocols (seed) beside them (a Markdown
    table with markdown); nothing when none is present."""
    cols = [c for c in cols if data.get(("latency", c[0], "half_rtt_us"))]
    if not cols:
        return
    names = [n for _, n in cols]
    head = [("", 36)] + [(n, 13) for n in names] + [("the paper: " + " / ".join(names), 30)]
    print_table(title, head, table4_rows(data, cols, seed, names), markdown)


def table4(data):
    print_table4("Table 4 (the MPICH-PM/CLUMP paper) on this machine: viaduct, protocol forced "
                 "with VIADUCT_MPI_PROTOCOL\n(ping-pong bandwidth = size / half round trip, as "
                 "the seed; '-': a protocol the paper did not measure there; between\n"
                 "nodes it gives eager 11.08 us, 54.92 MB/s, 0.2 KB and rendezvous 12.75 us, "
                 "97.73 MB/s, 21 KB: bench/mpi/hosts.sh)", data, PROTOS, SEED_NODE)


def figure5(data):
    pv = data.get(("pvread", "process_vm_readv", "mb_per_s"), {})
    mc = data.get(("pvread", "memcpy", "mb_per_s"), {})
    us = data.get(("pvread", "process_vm_readv", "usec_per_call"), {})
    both = data.get(("pvread", "process_vm_readv_both_ways", "mb_per_s"), {})
    if not pv:
        return
    rows = []
    for s in sorted(pv):
        rows.append([size_name(s), fmt(pv[s]), fmt(us.get(s), 3), fmt(mc.get(s)),
                     fmt(ratio(pv[s], mc.get(s))), fmt(both.get(s))])
    print_table("Figure 5 (the MPICH-PM/CLUMP paper): one-copy primitive process_vm_readv vs memcpy;\n"
                "both ways: two processes reading from each other at once (what mpi_bibw can reach)",
                [("size", 8), ("pvreadv MB/s", 13), ("us/call", 9), ("memcpy MB/s", 12),
                 ("ratio", 6), ("both ways MB/s", 15)], rows)
    small = [us[s] for s in sorted(us) if s <= 512]
    half, top = half_point(pv)
    big = [pv[s] / mc[s] for s in sorted(pv) if s >= MIB and mc.get(s)]
    reach = [s for s in sorted(pv) if mc.get(s) and pv[s] >= 0.5 * mc[s]]
    print("  cost of one call (median over sizes <= 512 B): %s us (the MPICH-PM/CLUMP paper: _pmVmRead's "
          "ioctl, 5 us)" % (fmt(sorted(small)[len(small) // 2], 3) if small else "-"))
    print("  process_vm_readv reaches half its maximum (%s MB/s) at %s" %
          (fmt(top), size_name(int(half)) if half else "-"))
    print("  first size at >= 0.5 x memcpy: %s; from 1 MiB up: %s x memcpy "
          "(the MPICH-PM/CLUMP paper: same as memcpy above 3 KB)\n" %
          (size_name(reach[0]) if reach else "none",
           "%s-%s" % (fmt(min(big)), fmt(max(big))) if big else "-"))


def probe_summary(data, names=IMPLS, ref=None, wait_s="?", repeated="?"):
    """What bench/net/line_probe found around the runs: how far apart the
    two CPUs were (a cache line's half round trip, ns), and with ref (the
    reference placement, probelib.sh) how long each program could wait for
    it and how many runs were repeated.  Returns the lines to print (none
    without probes)."""
    rows = {}
    for (section, case, metric), pts in data.items():
        if section == "probe" and metric.startswith("line_half_rtt_ns_"):
            for run, v in pts.items():
                rows.setdefault(case, {}).setdefault(run, {})[metric.rsplit("_", 1)[1]] = v
    every = sorted(v for runs in rows.values() for r in runs.values() for v in r.values())
    if not every:
        return []
    out = ["CPU distance around the runs (bench/net/line_probe: one cache line's half round trip "
           "between the two CPUs, ns,",
           "  before and after every program): min %s, median %s, max %s over %d probes" %
           ("%.0f" % every[0], "%.0f" % statistics.median(every), "%.0f" % every[-1], len(every))]
    per = []
    for case, name in names:
        got = sorted(v for r in rows.get(case, {}).values() for v in r.values())
        if got:
            per.append("%s %.0f" % (name, statistics.median(got)))
    if per:
        out.append("  median before/after each library's runs: " + ", ".join(per))
    runs = [r for runs in rows.values() for r in runs.values() if "before" in r and "after" in r]
    moved = [r for r in runs if max(r.values()) > 1.5 * min(r.values())]
    out.append("  runs during which it moved by more than 1.5x: %d of %d (a figure then mixes "
               "two machines)" % (len(moved), len(runs)))
    if ref and ref.replace(".", "", 1).isdigit():
        out.append("  each program waited (up to %s s) for the placement of the start, %s ns; "
                   "%s run(s) repeated because it moved" % (wait_s, ref, repeated))
    return out


def verdict(v, ok):
    if v is None:
        return "n/a"
    return "met" if ok else "NOT met"


def targets(data):
    """[(name, x, metric, value, bound, verdict, text)]."""
    lat = {k: data.get(("latency", k, "half_rtt_us"), {}) for k, _ in IMPLS}
    bw = {k: data.get(("bw", k, "mb_per_s"), {}) for k, _ in IMPLS}
    out = []
    r = ratio(lat["viaduct"].get(8), lat["openmpi"].get(8))
    out.append(("latency_8b", 8, "vd_over_openmpi", r, LAT_TARGET,
                verdict(r, r is not None and r <= LAT_TARGET),
                "8-byte latency: viaduct %s us, Open MPI %s us" %
                (fmt(lat["viaduct"].get(8), 3), fmt(lat["openmpi"].get(8), 3))))
    for size, bound, name in ((MIB, BW_TARGET, "bw_1m"), (4 * MIB, BW_TARGET, "bw_4m"),
                              (4 * MIB, BW_STRETCH, "bw_4m_stretch")):
        others = [bw[k].get(size) for k in ("openmpi", "mpich") if bw[k].get(size)]
        best = max(others) if others else None
        r = ratio(bw["viaduct"].get(size), best)
        out.append((name, size, "vd_over_best", r, bound,
                    verdict(r, r is not None and r >= bound),
                    "bandwidth at %s: viaduct %s MB/s, better of Open MPI/MPICH %s MB/s" %
                    (size_name(size), fmt(bw["viaduct"].get(size)), fmt(best))))
    return out


def print_targets(rows):
    print("Targets (the same run)")
    print("  %-16s %-8s %-8s %-8s %s" % ("target", "ratio", "bound", "verdict", "figures"))
    for name, _, _, r, bound, v, text in rows:
        rel = "<=" if name == "latency_8b" else ">="
        print("  %-16s %-8s %-8s %-8s %s" % (name, fmt(r, 3), rel + "%.1f" % bound, v, text))
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--targets-to-csv", action="store_true",
                    help="append the targets to the CSV (section targets)")
    a = ap.parse_args()
    data, context = load(a.csv, "report.py", skip_sections=("targets",))
    print("=" * 78)
    print("bench/mpi summary: %s, %s, load before %s, %s" % tuple(
        context_text(context, "run", m) for m in ("cpu_model", "cpus", "load_before", "mode")))
    for k, name in IMPLS:
        lib = context_text(context, k, "latency_library", None)
        where = context_text(context, k, "latency_placement", None)
        if lib:
            print("  %-8s %s [%s]" % (name, lib[:70], where or "?"))
    for line in probe_summary(data, IMPLS, *(context_text(context, "run", m, None) for m in
                                             ("probe_reference_ns", "probe_wait_s",
                                              "probe_repeated"))):
        print(line)
    print("=" * 78 + "\n")
    side_by_side(data, "latency", "half_rtt_us", "Ping-pong latency, half round trip", "us", True)
    side_by_side(data, "bw", "mb_per_s", "Windowed bandwidth (64 in flight)", "MB/s", False)
    side_by_side(data, "bibw", "mb_per_s", "Bidirectional bandwidth", "MB/s", False)
    side_by_side(data, "allreduce", "usec", "MPI_Allreduce (SUM, float), 2 ranks", "us", True)
    table4(data)
    figure5(data)
    rows = targets(data)
    print_targets(rows)
    failed = context.get(("run", "failed"), [])
    if failed:
        print("FAILED runs (their missing sizes show as '-'):")
        for f in failed:
            print("  " + f)
        print()
    if a.targets_to_csv:
        with open(a.csv, "a", newline="") as f:
            w = csv.writer(f)
            for name, x, metric, r, bound, v, _ in rows:
                w.writerow(["targets", name, x, metric, "nan" if r is None else "%.6g" % r])
                w.writerow(["targets", name, x, "bound", bound])


if __name__ == "__main__":
    main()
