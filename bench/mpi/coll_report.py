#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The tables of bench/mpi/coll.sh (docs/bench-mpi.md, "Collectives on one node").

    /usr/bin/python3 bench/mpi/coll_report.py [--csv OUT.csv] RAW.csv...

RAW files are named coll-N-R.csv (N ranks, round R) and hold the rows
section,case,x,metric,value of bench/mpi/common.c: section = collective,
case = library.  Per collective, rank count, library and size the report
takes the median over rounds of each run's median ("usec"), and prints one
table per collective and rank count: us per call of each library, viaduct's
time divided by the better (lower) of Open MPI and MPICH, and MISS where
that ratio is above the target 1.0; then a summary line (misses k of n,
the worst ratio).  --csv writes the same figures, one row per size.
Standard library only.
"""
import argparse
import csv
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from plotlib import fmt, print_table, size_name  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import probe_summary  # noqa: E402

OPS = ("barrier", "bcast", "reduce", "allreduce", "allgather", "alltoall",
       "reduce_scatter_block")
LIBS = (("viaduct", "viaduct"), ("viaduct-p2p", "viaduct p2p"),
        ("openmpi", "Open MPI"), ("mpich", "MPICH"))
PEERS = ("openmpi", "mpich")
TARGET = 1.0          # viaduct's time <= 1.0 x the better peer's, every size
CSV_COLUMNS = ("collective", "ranks", "bytes", "viaduct_us", "viaduct_p2p_us",
               "openmpi_us", "mpich_us", "better_peer", "ratio", "miss", "rounds")


def load(paths, probes):
    """({(op, ranks, lib, size): [us per round]}, [failed runs]); the
    line_probe rows go into probes ({(section, case, metric): {run: ns}},
    as report.probe_summary reads them)."""
    runs, failed = {}, []
    for path in paths:
        m = re.match(r"coll-(\d+)-(\d+)\.csv$", os.path.basename(path))
        if not m:
            sys.exit("coll_report.py: %s is not named coll-RANKS-ROUND.csv" % path)
        ranks = int(m.group(1))
        try:
            with open(path, newline="") as f:
                for row in csv.reader(f):
                    if len(row) != 5:
                        continue
                    sec, case, x, metric, value = row
                    if sec == "context" and metric == "failed":
                        failed.append(value)
                    if sec == "context" and metric.startswith("probe_"):
                        probes.setdefault(("context", "run", metric), []).append(value)
                        continue
                    if sec == "probe":
                        try:
                            probes.setdefault((sec, case, metric), {})[int(x)] = float(value)
                        except ValueError:
                            pass
                        continue
                    if sec not in OPS or metric != "usec":
                        continue
                    try:
                        runs.setdefault((sec, ranks, case, int(x)), []).append(float(value))
                    except ValueError:
                        continue
        except OSError as err:
            sys.exit("coll_report.py: cannot read %s: %s" % (path, err))
    return runs, failed


def rows_of(runs, op, ranks):
    """One dict per size: the medians, the better peer, the ratio."""
    sizes = sorted({x for (o, n, _, x) in runs if o == op and n == ranks})
    out = []
    for x in sizes:
        med = {lib: statistics.median(runs[(op, ranks, lib, x)])
               for lib, _ in LIBS if (op, ranks, lib, x) in runs}
        peers = [(med[p], p) for p in PEERS if p in med]
        best = min(peers) if peers else None
        vd = med.get("viaduct")
        r = vd / best[0] if vd is not None and best and best[0] > 0 else None
        k = min(len(runs[(op, ranks, lib, x)]) for lib in med)
        out.append({"bytes": x, "us": med, "better": best[1] if best else None,
                    "ratio": r, "miss": r is not None and r > TARGET, "rounds": k})
    return out


def summary(op, ranks, rows):
    judged = [r for r in rows if r["ratio"] is not None]
    if not judged:
        return "%s, %d ranks: no ratio (viaduct or both peers missing)" % (op, ranks)
    worst = max(judged, key=lambda r: r["ratio"])
    misses = sum(r["miss"] for r in judged)
    return ("%s, %d ranks: misses %d of %d sizes, worst ratio %.2f at %s (target <= %.1f)"
            % (op, ranks, misses, len(judged), worst["ratio"], size_name(worst["bytes"]),
               TARGET))


def print_op(op, ranks, rows):
    present = [(k, name) for k, name in LIBS if any(k in r["us"] for r in rows)]
    cols = [("bytes", 9)] + [(name, 12) for _, name in present] + \
        [("best", 9), ("vd/best", 8), ("", 4)]
    names = dict(LIBS)
    table = []
    for r in rows:
        table.append([size_name(r["bytes"])] + [fmt(r["us"].get(k), 3) for k, _ in present] +
                     [names.get(r["better"], "-"), fmt(r["ratio"]), "MISS" if r["miss"] else ""])
    k = min((r["rounds"] for r in rows), default=0)
    print_table("%s, %d ranks (us per call, median of %d round%s; vd/best = viaduct / the "
                "better of Open MPI and MPICH, MISS above %.1f)"
                % (op, ranks, k, "" if k == 1 else "s", TARGET), cols, table)
    print("  summary: " + summary(op, ranks, rows) + "\n")


def write_csv(path, tables):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(CSV_COLUMNS)
        for op, ranks, rows in tables:
            for r in rows:
                us = [r["us"].get(k) for k, _ in LIBS]
                w.writerow([op, ranks, r["bytes"]] +
                           ["" if v is None else "%.6g" % v for v in us] +
                           [r["better"] or "", "" if r["ratio"] is None else "%.4f" % r["ratio"],
                            int(r["miss"]), r["rounds"]])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("raw", nargs="+", help="coll-RANKS-ROUND.csv files of coll.sh")
    ap.add_argument("--csv", help="write the tables' figures to this CSV")
    a = ap.parse_args()
    probes = {}
    runs, failed = load(a.raw, probes)
    ranks = sorted({n for (_, n, _, _) in runs})
    tables = []
    for op in OPS:
        for n in ranks:
            rows = rows_of(runs, op, n)
            if rows:
                print_op(op, n, rows)
                tables.append((op, n, rows))
    if not tables:
        sys.exit("coll_report.py: no figures in %s" % " ".join(a.raw))
    print("Summary (target: viaduct <= %.1f x the better peer at every size)" % TARGET)
    for op, n, rows in tables:
        print("  " + summary(op, n, rows))
    judged = [r for _, _, rows in tables for r in rows if r["ratio"] is not None]
    print("  all: misses %d of %d sizes\n" % (sum(r["miss"] for r in judged), len(judged)))
    waits = {k[2]: v for k, v in probes.items() if k[0] == "context"}
    measured = {k: v for k, v in probes.items() if k[0] != "context"}
    repeated = sum(int(v) for v in waits.get("probe_repeated", []) if v.isdigit())
    for line in probe_summary(measured, LIBS, waits.get("probe_reference_ns", [None])[-1],
                              waits.get("probe_wait_s", ["?"])[-1], repeated):
        print(line)
    if measured:
        print()
    if failed:
        print("FAILED runs (their sizes are missing or short of rounds):")
        for f in failed:
            print("  " + f)
        print()
    if a.csv:
        try:
            write_csv(a.csv, tables)
        except OSError as err:
            sys.exit("coll_report.py: cannot write %s: %s" % (a.csv, err))
        print("coll_report.py: wrote %s" % a.csv)


if __name__ == "__main__":
    main()
