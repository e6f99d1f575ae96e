#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""One plot per collective from bench/mpi/coll.sh's coll.csv.

    /usr/bin/python3 bench/mpi/coll_plot.py coll.csv DIR

Writes DIR/coll-NAME.png for each collective in the CSV (written by
coll_report.py): a column per rank count; above, us per call of every
library against size; below, viaduct / the better peer with the target
1.0 and the misses marked.  MPI_Barrier has no size: bars instead.
Needs Debian's python3-matplotlib.
"""
import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from plotlib import pyplot, save, size_axis  # noqa: E402

LIBS = (("viaduct", "viaduct", "tab:green", "o-"),
        ("viaduct_p2p", "viaduct p2p", "tab:olive", "x:"),
        ("openmpi", "Open MPI", "tab:blue", "s-"),
        ("mpich", "MPICH", "tab:orange", "^-"))
TARGET = 1.0


def num(text):
    try:
        return float(text)
    except ValueError:
        return None


def load(path):
    """{op: {ranks: [row dicts sorted by size]}}."""
    tables = {}
    try:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                r = {"bytes": int(row["bytes"]), "ratio": num(row["ratio"]),
                     "miss": row["miss"] == "1"}
                for k, _, _, _ in LIBS:
                    r[k] = num(row[k + "_us"])
                tables.setdefault(row["collective"], {}).setdefault(int(row["ranks"]), []).append(r)
    except (OSError, KeyError, ValueError) as err:
        sys.exit("coll_plot.py: cannot read %s as coll_report.py's CSV: %s" % (path, err))
    for per_ranks in tables.values():
        for rows in per_ranks.values():
            rows.sort(key=lambda r: r["bytes"])
    return tables


def sized(top, bottom, rows):
    for k, name, color, style in LIBS:
        pts = [(r["bytes"], r[k]) for r in rows if r[k] is not None]
        if pts:
            top.plot(*zip(*pts), style, color=color, label=name, markersize=3)
    top.set_yscale("log")
    top.set_ylabel("us per call")
    size_axis(top, grid="major")
    pts = [(r["bytes"], r["ratio"]) for r in rows if r["ratio"] is not None]
    if pts:
        bottom.plot(*zip(*pts), "o-", color="tab:green", markersize=3,
                    label="viaduct / better peer")
    miss = [(r["bytes"], r["ratio"]) for r in rows if r["miss"]]
    if miss:
        bottom.plot(*zip(*miss), "x", color="tab:red", markersize=8, label="MISS")
    size_axis(bottom, grid="major")


def unsized(top, bottom, rows):
    r = rows[0]
    libs = [(name, r[k], color) for k, name, color, _ in LIBS if r[k] is not None]
    top.bar([n for n, _, _ in libs], [v for _, v, _ in libs], color=[c for _, _, c in libs])
    top.set_ylabel("us per call")
    if r["ratio"] is not None:
        bottom.bar(["viaduct / better peer"], [r["ratio"]],
                   color="tab:red" if r["miss"] else "tab:green")


def plot_op(plt, op, per_ranks, png):
    ranks = sorted(per_ranks)
    fig, axes = plt.subplots(2, len(ranks), figsize=(6.5 * len(ranks), 8), squeeze=False,
                             gridspec_kw={"height_ratios": [3, 2]})
    for col, n in enumerate(ranks):
        top, bottom = axes[0][col], axes[1][col]
        rows = per_ranks[n]
        (unsized if all(r["bytes"] == 0 for r in rows) else sized)(top, bottom, rows)
        top.set_title("%s, %d ranks%s" % (op, n, " (bound, one per core)" if n <= 2
                                          else " (unbound, more ranks than cores)"), fontsize=10)
        if top.get_legend_handles_labels()[0]:
            top.legend(fontsize=7)
        bottom.axhline(TARGET, color="black", linewidth=0.8)
        bottom.set_ylabel("viaduct / better peer (target <= %.1f)" % TARGET)
        if bottom.get_legend_handles_labels()[0]:
            bottom.legend(fontsize=7)
    fig.suptitle("bench/mpi/coll.sh: MPI_%s, median over rounds" % op.capitalize(), fontsize=11)
    save(fig, png, "coll_plot.py", rect=(0, 0, 1, 0.96))
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", help="coll.csv written by coll_report.py")
    ap.add_argument("dir", help="where coll-NAME.png go")
    a = ap.parse_args()
    tables = load(a.csv)
    if not tables:
        sys.exit("coll_plot.py: no rows in %s" % a.csv)
    plt = pyplot("coll_plot.py")
    for op, per_ranks in tables.items():
        plot_op(plt, op, per_ranks, os.path.join(a.dir, "coll-%s.png" % op))


if __name__ == "__main__":
    main()
