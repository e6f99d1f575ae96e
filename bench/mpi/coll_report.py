#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/mpi/coll_report.py OUT RANKS...: the table of bench/mpi/coll.sh.

Reads OUT/coll-N-R.csv (section,case,x,metric,value rows of bench/mpi
common.c), takes per (ranks, program, library, size) the median over the
rounds R of the "usec" rows, and prints one Markdown table per rank count
and program: us per call for each library and each one's time divided by
viaduct's (above 1: viaduct is faster)."""
import csv
import glob
import os
import statistics
import sys

IMPLS = ["viaduct", "viaduct-p2p", "openmpi", "mpich"]


def load(out, n):
    runs = {}
    for path in glob.glob(os.path.join(out, f"coll-{n}-*.csv")):
        with open(path) as f:
            for row in csv.reader(f):
                if len(row) != 5 or row[3] != "usec":
                    continue
                sec, case, x, _, v = row
                runs.setdefault((sec, int(x)), {}).setdefault(case, []).append(float(v))
    return runs


def table(n, runs):
    for sec in ["barrier", "bcast", "reduce", "allreduce"]:
        sizes = sorted(x for s, x in runs if s == sec)
        if not sizes:
            continue
        print(f"\n{sec}, {n} ranks (us per call, median of rounds; vd/X = viaduct / X)\n")
        print("| bytes | " + " | ".join(IMPLS) + " | vd/p2p | vd/Open MPI | vd/MPICH | rounds |")
        print("|---:|" + "---:|" * (len(IMPLS) + 4))
        for x in sizes:
            cell = runs[(sec, x)]
            med = {i: statistics.median(cell[i]) for i in IMPLS if i in cell}
            vd = med.get("viaduct")
            us = [f"{med[i]:.2f}" if i in med else "-" for i in IMPLS]
            ratio = [f"{vd / med[i]:.2f}" if vd and med.get(i) else "-" for i in IMPLS[1:]]
            k = min(len(v) for v in cell.values())
            print(f"| {x} | " + " | ".join(us) + " | " + " | ".join(ratio) + f" | {k} |")


def main():
    out, ranks = sys.argv[1], sys.argv[2:]
    for n in ranks:
        table(n, load(out, n))


if __name__ == "__main__":
    main()
