#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Tables of the MPI benchmark across two hosts (bench/mpi/hosts.sh).

    /usr/bin/python3 bench/mpi/hosts_table.py [--markdown] [--sizes LIST] [--best] mpi-hosts.csv

One table per test: viaduct, Open MPI, MPICH and the floors where they
measured the same thing -- raw TCP (latency at 0 B (1 B for TCP), 4 B and
1 KiB; one-way bandwidth at 64 KiB, 1 MiB and 4 MiB) and libfabric's own
fi_pingpong over the provider viaduct runs on (latency at every size,
1 B for 0 B) -- then viaduct / the better
of Open MPI and MPICH (latency: > 1 is slower; bandwidth: < 1 is slower)
and a mark where viaduct misses, i.e. is more than 10 % worse than the
better peer.  Where a size was measured in several rounds, the median
(--best: the best round, which other work on the machine can only have
slowed down).  Then the MPICH-PM/CLUMP paper's Table 4: viaduct with each
protocol forced, within one node and between the two, beside the paper's
figures.
Standard library only.
"""
import argparse
import csv
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from plotlib import context_text, fmt, load, print_table, ratio, size_name  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import SEED_NODE, SEED_NET, print_table4  # noqa: E402

PEERS = (("openmpi", "Open MPI"), ("mpich", "MPICH"))
MISS = 1.10   # viaduct misses: worse than the better peer by more than 10 %

TESTS = (
    # section, case suffix, metric, title, unit, lower is better, raw TCP
    # and libfabric columns
    ("latency", "", "half_rtt_us", "Latency, half round trip (2 ranks, one per host)", "us", True, True),
    ("bw", "", "mb_per_s", "Windowed bandwidth rank 0 -> 1 (64 x MPI_Isend)", "MB/s", False, True),
    ("bibw", "", "mb_per_s", "Bidirectional bandwidth (64 x MPI_Isend each way)", "MB/s", False, False),
    ("allreduce", "", "usec", "MPI_Allreduce, 2 ranks (one per host)", "us", True, False),
    ("allreduce", "_n4", "usec", "MPI_Allreduce, 4 ranks (two per host, not pinned)", "us", True, False),
    ("bcast", "", "usec", "MPI_Bcast, 2 ranks (one per host)", "us", True, False),
    ("bcast", "_n4", "usec", "MPI_Bcast, 4 ranks (two per host, not pinned)", "us", True, False),
)
# The floors measured beside the libraries: case in the CSV, column title,
# ratio column title.
FLOORS = (("tcp", "raw TCP", "vd/TCP"), ("fabric", "fi_pp", "vd/fi_pp"))


def table(data, test, markdown, only=None):
    section, suffix, metric, title, unit, lower, with_floors = test
    vd = data.get((section, "viaduct" + suffix, metric), {})
    peers = [(k, n, data.get((section, k + suffix, metric), {})) for k, n in PEERS]
    peers = [p for p in peers if p[2]]
    floors = [(data.get((section, k, metric), {}), n, rn) for k, n, rn in FLOORS] \
        if with_floors else []
    floors = [f for f in floors if f[0]]
    sizes = sorted(set(vd).union(*[p[2].keys() for p in peers]))
    if only:
        sizes = [s for s in sizes if s in only]
    if not sizes:
        return
    cols = [("size", 8)]
    if vd:
        cols.append(("viaduct", 9))
    cols += [(n, 9) for _, n, _ in peers]
    cols += [(n, 9) for _, n, _ in floors]
    if vd and peers:
        cols += [("vd/best", 8), ("", 5)]
    if vd:
        cols += [(rn, 8) for _, _, rn in floors]
    rows = []
    for s in sizes:
        r = [size_name(s)]
        v = vd.get(s)
        if vd:
            r.append(fmt(v))
        pv = [p[2].get(s) for p in peers]
        r += [fmt(x) for x in pv]
        r += [fmt(f.get(s)) for f, _, _ in floors]
        if vd and peers:
            got = [x for x in pv if x]
            best = (min(got) if lower else max(got)) if got else None
            q = ratio(v, best)
            r.append(fmt(q))
            miss = q is not None and (q > MISS if lower else q < 1 / MISS)
            r.append("MISS" if miss else "")
        if vd:
            r += [fmt(ratio(v, f.get(s))) for f, _, _ in floors]
        rows.append(r)
    how = "lower is better" if lower else "higher is better"
    title = "%s, %s (%s)" % (title, unit, how)
    print_table(title, [(h or "miss", w) for h, w in cols] if markdown else cols, rows, markdown)


T4_PROTOS = (("eager", "eager"), ("get", "get"), ("rndv", "rendezvous"))


def table4(data, markdown):
    """The paper's Table 4 from hosts.sh's cases viaduct_node_PROTO (both
    ranks on one host) and viaduct_net_PROTO (one on each)."""
    for place, where, seed in (("node", "within a node (shm)", SEED_NODE),
                               ("net", "between the two hosts (ofi)", SEED_NET)):
        print_table4("Table 4 (the MPICH-PM/CLUMP paper), %s: viaduct, protocol forced with "
                     "VIADUCT_MPI_PROTOCOL\n(ping-pong bandwidth = size / half round trip, "
                     "as the paper; '-': a protocol the paper did not measure there)" % where,
                     data, [("viaduct_%s_%s" % (place, p), n) for p, n in T4_PROTOS], seed,
                     markdown)


def load_best(path):
    """As plotlib.load's data, but the best round per size: the lowest
    figure for times, the highest for rates (bandwidth)."""
    best = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["section"] == "context":
                continue
            try:
                x, v = int(row["x"]), float(row["value"])
            except ValueError:
                continue
            if math.isnan(v):
                continue
            key = (row["section"], row["case"], row["metric"])
            old = best.setdefault(key, {}).get(x)
            higher = row["metric"].startswith("mb_per_s")
            if old is None or (v > old if higher else v < old):
                best[key][x] = v
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", help="written by bench/mpi/hosts.sh")
    ap.add_argument("--markdown", action="store_true", help="Markdown tables")
    ap.add_argument("--sizes", help="comma-separated sizes in bytes to show (default: all)")
    ap.add_argument("--best", action="store_true",
                    help="the best round per size instead of the median")
    args = ap.parse_args()
    data, context = load(args.csv, "hosts_table.py")
    if args.best:
        data = load_best(args.csv)
    print("MPI across two hosts: %s; %s; %s; %s" % (
        context_text(context, "run", "hosts"), context_text(context, "run", "date"),
        context_text(context, "run", "mode"),
        "best round per size" if args.best else "median of the rounds per size"))
    if not args.markdown:
        print("(vd/best = viaduct / the better of Open MPI and MPICH; MISS: viaduct more "
              "than 10 % worse; raw TCP: tcp_floor, 1 B for 0 B; fi_pp: libfabric's own\n"
              " send/receive ping-pong (fi_pingpong) over the provider viaduct uses, 1 B for 0 B)\n")
    else:
        print()
    for test in TESTS:
        table(data, test, args.markdown,
              {int(x) for x in args.sizes.split(",")} if args.sizes else None)
    if not args.sizes:
        table4(data, args.markdown)
    failed = [(case, v) for (case, m), vals in context.items() if m == "failed" for v in vals]
    for case, v in failed:
        print("FAILED: %s: %s" % (case, v))
    return 0


if __name__ == "__main__":
    sys.exit(main())
