#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Plot the CSV written by bench/mpi/run.sh into one PNG.

    /usr/bin/python3 bench/mpi/plot.py mpi.csv mpi.png

The CSV is long format: section,case,x,metric,value (docs/bench-mpi.md).
Panels: ping-pong latency; windowed bandwidth; bidirectional bandwidth;
MPI_Allreduce latency (viaduct, Open MPI and MPICH, plus viaduct with each
protocol forced where measured); viaduct / others with the project's targets;
the MPICH-PM/CLUMP paper's figure 5 (process_vm_readv against memcpy).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from plotlib import MIB, context_text, csv_png_args, load, pyplot, save, size_axis  # noqa: E402
from plotlib import series as series_of  # noqa: E402

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


def series(data, section, case, metric):
    return series_of(data, section, case, metric, positive_x=True)


def mpi_axis(ax):
    size_axis(ax, grid="major")


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
    mpi_axis(ax)


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
    mpi_axis(ax)
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
    mpi_axis(ax)
    ax.set_ylabel("MB/s (10^6 B/s)")
    ax.set_title("The MPICH-PM/CLUMP paper's figure 5: the one-copy primitive vs memcpy", fontsize=10)


def main():
    a = csv_png_args("bench/mpi/run.sh")
    data, context = load(a.csv, "plot.py")
    plt = pyplot("plot.py")
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
    fig.suptitle("bench/mpi: %s, %s, %s (load before: %s)" % tuple(
        context_text(context, "run", m) for m in ("cpu_model", "cpus", "date", "load_before")),
        fontsize=11)
    save(fig, a.png, "plot.py", rect=(0, 0, 1, 0.97))


if __name__ == "__main__":
    main()
