#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/mpi/scale_table.py RAW -- the Markdown tables of bench/mpi/scale.sh.

RAW lines (written by scale.sh):
    context WORDS...
    job IMPL MODE N REP STATUS WALL_US LOAD1
    why IMPL MODE N REP STATUS: MESSAGE
    rank IMPL REP MODE RANK SIZE INIT_US FINALIZE_US TOTAL_US MAXRSS_KB
    pmi IMPL MODE N REP RANK PUT GET FENCE
    conn IMPL MODE N REP RANK CONNECTIONS
Every cell is the median over the successful runs of a per-run figure.
"""
import statistics as st
import sys
from collections import defaultdict

IMPLS = ["viaduct", "viaduct-hydra", "openmpi", "mpich"]
PEERS = ["openmpi", "mpich"]


def load(path):
    jobs = defaultdict(dict)        # (impl, mode, n) -> rep -> (status, wall_us, load)
    why = defaultdict(list)         # (impl, mode, n) -> [message]
    ranks = defaultdict(lambda: defaultdict(list))   # key -> rep -> [(init, fin, total, rss)]
    pmi = defaultdict(lambda: defaultdict(list))     # key -> rep -> [(rank, put, get, fence)]
    conn = defaultdict(lambda: defaultdict(list))    # key -> rep -> [connections]
    context = []
    for line in open(path):
        f = line.split()
        if not f:
            continue
        if f[0] == "context":
            context.append(" ".join(f[1:]))
        elif f[0] == "job":
            jobs[(f[1], f[2], int(f[3]))][int(f[4])] = (f[5], int(f[6]), float(f[7]))
        elif f[0] == "why":
            why[(f[1], f[2], int(f[3]))].append(" ".join(f[5:]))
        elif f[0] == "rank":
            key = (f[1], f[3], int(f[5]))
            ranks[key][int(f[2])].append(tuple(float(x) for x in f[6:10]))
        elif f[0] == "pmi":
            pmi[(f[1], f[2], int(f[3]))][int(f[4])].append(tuple(int(x) for x in f[5:9]))
        elif f[0] == "conn":
            conn[(f[1], f[2], int(f[3]))][int(f[4])].append(int(f[6]))
    return context, jobs, why, ranks, pmi, conn


def figures(jobs, ranks, key):
    """The medians over the runs, or None when no run succeeded."""
    ok = [rep for rep, (status, _, _) in jobs[key].items() if status == "ok" and ranks[key][rep]]
    if not ok:
        return None
    per = [ranks[key][rep] for rep in ok]
    return {
        "runs": len(ok),
        "wall": st.median(jobs[key][rep][1] for rep in ok) / 1e3,
        "init": st.median(st.median(r[0] for r in rs) for rs in per) / 1e3,
        "fin": st.median(st.median(r[1] for r in rs) for rs in per) / 1e3,
        "slow": st.median(max(r[2] for r in rs) for rs in per) / 1e3,
        "rss": st.median(st.median(r[3] for r in rs) for rs in per) / 1024,
        "rssmax": st.median(max(r[3] for r in rs) for rs in per) / 1024,
        "load": st.median(jobs[key][rep][2] for rep in ok),
    }


def ratio(mine, peers, field):
    """viaduct's figure over the better (smaller) peer's."""
    vals = [p[field] for p in peers if p]
    if not mine or not vals or min(vals) <= 0:
        return ""
    return f"{mine[field] / min(vals):.2f}"


def main():
    context, jobs, why, ranks, pmi, conn = load(sys.argv[1])
    for c in context:
        print(f"- {c}")
    print()
    print("| ranks | program | library | runs ok | job wall (ms) | MPI_Init, median rank (ms) "
          "| MPI_Finalize, median rank (ms) | slowest rank Init..Finalize (ms) "
          "| peak RSS, median rank (MiB) | peak RSS, largest rank (MiB) | load avg |")
    print("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    cases = sorted({(k[2], k[1]) for k in jobs}, key=lambda c: (c[0], c[1] != "init"))
    fields = ["wall", "init", "fin", "slow", "rss", "rssmax"]
    notes = []
    for n, mode in cases:
        fig = {i: figures(jobs, ranks, (i, mode, n)) for i in IMPLS if (i, mode, n) in jobs}
        for impl, f in fig.items():
            tried = len(jobs[(impl, mode, n)])
            if not f:
                statuses = sorted({s for s, _, _ in jobs[(impl, mode, n)].values()})
                print(f"| {n} | {mode} | {impl} | 0/{tried} | {', '.join(statuses)} "
                      "| | | | | | |")
            else:
                cells = " | ".join(f"{f[x]:.1f}" if x in ("rss", "rssmax") else f"{f[x]:.0f}"
                                   if x == "wall" else f"{f[x]:.1f}" for x in fields)
                print(f"| {n} | {mode} | {impl} | {f['runs']}/{tried} | {cells} | {f['load']:.1f} |")
            for w in why.get((impl, mode, n), []):
                notes.append(f"{n} ranks, {mode}, {impl}: {w}")
        peers = [fig.get(p) for p in PEERS]
        for impl in ("viaduct", "viaduct-hydra"):
            if fig.get(impl) and any(peers):
                cells = " | ".join(ratio(fig[impl], peers, x) for x in fields)
                print(f"| {n} | {mode} | {impl} / better peer | | {cells} | |")
    if notes:
        print()
        print("Runs that failed or were not started:")
        for w in notes:
            print(f"- {w}")

    if not pmi:
        return
    print()
    print("viaduct's PMI requests and connections (VIADUCT_DEBUG=1), per job; "
          "median over the runs:")
    print()
    print("| ranks | program | launcher | puts (all ranks) | gets (all ranks) | gets, rank 0 "
          "| gets, largest other rank | fences a rank | connections (all ranks) "
          "| connections, largest rank | gets / N^2 |")
    print("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for key in sorted(pmi, key=lambda k: (k[2], k[1] != "init", k[0])):
        impl, mode, n = key
        runs = [(rep, p) for rep, p in pmi[key].items() if len(p) == n]
        if not runs:
            continue
        med = lambda xs: st.median(list(xs))
        puts = med(sum(x[1] for x in p) for _, p in runs)
        gets = med(sum(x[2] for x in p) for _, p in runs)
        fence = med(max(x[3] for x in p) for _, p in runs)
        g0 = med(sum(x[2] for x in p if x[0] == 0) for _, p in runs)
        gothers = med(max(x[2] for x in p if x[0] != 0) for _, p in runs)
        cs = [conn[key][rep] for rep, _ in runs if len(conn[key][rep]) == n]
        call = f"{med(sum(c) for c in cs):.0f}" if cs else ""
        cmax = f"{med(max(c) for c in cs):.0f}" if cs else ""
        launcher = "vdrun" if impl == "viaduct" else "hydra"
        print(f"| {n} | {mode} | {launcher} | {puts:.0f} | {gets:.0f} | {g0:.0f} | {gothers:.0f} "
              f"| {fence:.0f} | {call} | {cmax} | {gets / n / n:.3f} |")


if __name__ == "__main__":
    main()
