#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Plot the CSV written by bench/mpi/run.sh into one PNG.

    /usr/bin/python3 bench/mpi/plot.py mpi.csv mpi.png

The CSV is long format: section,case,x,metric,value (docs/bench-mpi.md).
Panels: ping-pong latency; windowed bandwidth; bidirectional bandwidth;
MPI_Allreduce latency (viaduct, Open MPI and MPICH, plus viaduct with each
protocol forced where measured); viaduct / others with the issue-4 targets;
seed 004 figure 5 (process_vm_readv against memcpy).
"""
import argparse
import csv
import math
import statistics
import sys
from collections import defaultdict

try:
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on build machines
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter
except ImportError:
    sys.exit(
        "plot.py: matplotlib is not available to %s.\n"
        "Install Debian's package (apt-get install python3-matplotlib) and run "
        "this script with /usr/bin/python3 (a pyenv/venv python3 earlier on "
        "PATH may not see it)." % sys.executable
    )

IMPLS = (
    ("viaduct", "viaduct", "tab:green", "o-"),
    ("openmpi", "Open MPI", "tab:blue", "s-"),
    ("mpich", "MPICH", "tab:orange", "^-"),
)
PROTOS = (
    ("viaduct_eager", "viaduct, eager forced", "tab:olive", ":"),
    ("viaduct_get", "viaduct, get forced", "tab:purple", "--"),
    ("viaduct_rndv", "viaduct, rendezvous forced", "tab:red", "-."),
)
MIB = 1 << 20


def load(path):
    data = defaultdict(dict)
    rounds = defaultdict(dict)
    context = {}
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = {"section", "case", "x", "metric", "value"} - set(reader.fieldnames or [])
        if missing:
            sys.exit("plot.py: %s is not a bench/mpi CSV (missing %s)" % (path, ", ".join(sorted(missing))))
        for row in reader:
            if row["section"] == "context":
                context[(row["case"], row["metric"])] = row["value"]
                continue
            try:
                value = float(row["value"])
                x = int(row["x"])
            except ValueError:
                continue
            if not math.isnan(value):
                rounds[(row["section"], row["case"], row["metric"])].setdefault(x, []).append(value)
    # run.sh --rounds N writes each size N times: the median of them.
    for key, pts in rounds.items():
        data[key] = {x: statistics.median(vs) for x, vs in pts.items()}
    return data, context


def series(data, section, case, metric, positive_x=True):
    pts = sorted(data.get((section, case, metric), {}).items())
    if positive_x:
        pts = [p for p in pts if p[0] > 0]
    return [p[0] for p in pts], [p[1] for p in pts]


def size_label(v, _pos=None):
    if v >= MIB:
        return "%gM" % (v / MIB)
    if v >= 1024:
        return "%gK" % (v / 1024)
    return "%g" % v


def size_axis(ax):
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(size_label))
    ax.set_xlabel("message size (bytes)")
    ax.grid(True, which="major", alpha=0.3)


def curves(ax, data, section, metric, with_protos):
    drawn = False
    cases = IMPLS + (PROTOS if with_protos else ())
    for case, name, color, style in cases:
        x, y = series(data, section, case, metric)
        if x:
            ax.plot(x, y, style, color=color, label=name, markersize=3,
                    linewidth=1 if case in dict((p[0], 1) for p in PROTOS) else 1.6)
            drawn = True
    if drawn:
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    else:
        ax.text(0.5, 0.5, "not measured", ha="center", transform=ax.transAxes)
    size_axis(ax)


def ratio_panel(ax, data):
    lat_vd = dict(zip(*series(data, "latency", "viaduct", "half_rtt_us")))
    bw_vd = dict(zip(*series(data, "bw", "viaduct", "mb_per_s")))
    drawn = False
    for case, name, color, _ in IMPLS[1:]:
        lat = dict(zip(*series(data, "latency", case, "half_rtt_us")))
        xs = sorted(s for s in lat if s in lat_vd and lat[s] > 0)
        if xs:
            ax.plot(xs, [lat_vd[s] / lat[s] for s in xs], "--", color=color,
                    label="latency vd/%s%s" % (name, " (target at 8 B: <= 0.8)" if case == "openmpi" else ""),
                    linewidth=1)
            drawn = True
        bw = dict(zip(*series(data, "bw", case, "mb_per_s")))
        xs = sorted(s for s in bw if s in bw_vd and bw[s] > 0)
        if xs:
            ax.plot(xs, [bw_vd[s] / bw[s] for s in xs], "-", color=color,
                    label="windowed bandwidth vd/%s" % name, linewidth=1.5)
            drawn = True
    if not drawn:
        ax.text(0.5, 0.5, "viaduct and another library needed", ha="center", transform=ax.transAxes)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhline(0.8, color="tab:blue", linestyle=":", linewidth=0.8)
    ax.axhline(1.3, color="grey", linestyle=":", linewidth=0.8)
    ax.axvspan(MIB * 0.8, 4 * MIB * 1.25, color="grey", alpha=0.12,
               label="1-4 MiB: bandwidth >= 1.0 x the better other, stretch 1.3 x at 4 MiB")
    ax.plot([8], [0.8], "v", color="black", markersize=6)
    size_axis(ax)
    ax.set_ylabel("viaduct / other")
    ax.set_title("Ratios to viaduct and the targets", fontsize=10)
    ax.legend(fontsize=6)


def figure5_panel(ax, data):
    drawn = False
    for case, name, color, style in (("process_vm_readv", "process_vm_readv (one copy, other process)",
                                      "tab:purple", "o-"),
                                     ("memcpy", "memcpy (same process)", "grey", "s--")):
        x, y = series(data, "pvread", case, "mb_per_s")
        if x:
            ax.plot(x, y, style, color=color, label=name, markersize=3)
            drawn = True
    if drawn:
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    else:
        ax.text(0.5, 0.5, "not measured", ha="center", transform=ax.transAxes)
    size_axis(ax)
    ax.set_ylabel("MB/s (10^6 B/s)")
    ax.set_title("Seed 004 figure 5: the one-copy primitive vs memcpy", fontsize=10)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("png")
    a = ap.parse_args()
    data, context = load(a.csv)
    fig, axes = plt.subplots(3, 2, figsize=(13, 14))
    (lat, bw), (bibw, coll), (rat, fig5) = axes
    curves(lat, data, "latency", "half_rtt_us", True)
    lat.set_ylabel("half round trip (us)")
    lat.set_title("Ping-pong latency (MPI_Send/MPI_Recv, 2 ranks)", fontsize=10)
    curves(bw, data, "bw", "mb_per_s", True)
    bw.set_ylabel("MB/s (10^6 B/s)")
    bw.set_title("Windowed bandwidth (64 MPI_Isend in flight)", fontsize=10)
    curves(bibw, data, "bibw", "mb_per_s", False)
    bibw.set_ylabel("MB/s, both directions")
    bibw.set_title("Bidirectional bandwidth", fontsize=10)
    curves(coll, data, "allreduce", "usec", False)
    coll.set_ylabel("us per call")
    coll.set_title("MPI_Allreduce (MPI_SUM, MPI_FLOAT), 2 ranks", fontsize=10)
    ratio_panel(rat, data)
    figure5_panel(fig5, data)
    fig.suptitle("bench/mpi: %s, %s, %s (load before: %s)" % (
        context.get(("run", "cpu_model"), "?"), context.get(("run", "cpus"), "?"),
        context.get(("run", "date"), "?"), context.get(("run", "load_before"), "?")), fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(a.png, dpi=110)
    print("plot.py: wrote %s" % a.png)


if __name__ == "__main__":
    main()
