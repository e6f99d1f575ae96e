#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Plot the CSV written by `bench_vipl --csv FILE` into one PNG.

    /usr/bin/python3 bench/vipl/plot.py vipl.csv vipl.png

The CSV is long format: section,case,x,metric,value (see docs/bench-vipl.md).
Panels: Table 1 as bars (half round trip per case and size, with the
busy-poll floor and the 4x target); figure 6 (bandwidth against message
size, next to raw process_vm_writev and memcpy); AUTO / raw
process_vm_writev with the 0.95 target; figure 7 (CQ server requests/s
against the number of connections); the SCI user-memory paper's figure 7
(effective RDMA write bandwidth with registration and connection per
transfer).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from plotlib import context_text, csv_png_args, load, no_data, pyplot, save, series, size_axis  # noqa: E402

LAT_CASES = (
    ("pio", "PIO forced", "tab:blue"),
    ("dma", "DMA forced", "tab:orange"),
    ("auto", "AUTO", "tab:green"),
    ("auto_wait", "AUTO, VipRecvWait", "tab:red"),
)
BW_CASES = (
    ("pio", "PIO forced", "tab:blue", "o-"),
    ("dma", "DMA forced", "tab:orange", "s-"),
    ("auto", "AUTO (credits)", "tab:green", "^-"),
    ("auto_fc", "AUTO, flow-control ext.", "tab:purple", "v-"),
)
CQ_CASES = (("poll", "VipCQDone (poll)", "tab:blue"), ("wait", "VipCQWait", "tab:red"))
REG_CASES = (
    ("cached", "registered + connected once", "tab:green", "o-"),
    ("reg_xfer", "register + transfer", "tab:orange", "s-"),
    ("reg_conn_xfer", "register + connect + transfer", "tab:red", "^-"),
)
LAT_TARGET = 4.0
BW_TARGET = 0.95
CQ_TARGET = 0.90
MB = 1e6


def plot_latency(ax, data):
    title = "Table 1: half round trip (median)"
    present = [c for c in LAT_CASES if data.get(("latency", c[0], "half_rtt_ns"))]
    if not present:
        return no_data(ax, title)
    sizes = sorted({x for c in present for x in data[("latency", c[0], "half_rtt_ns")]})
    width = 0.8 / len(present)
    for i, (case, label, color) in enumerate(present):
        vals = [data[("latency", case, "half_rtt_ns")].get(s, float("nan")) for s in sizes]
        bars = ax.bar([j + i * width for j in range(len(sizes))], vals, width, label=label, color=color)
        ratios = data.get(("latency", case, "ratio_floor"), {})
        for bar, s in zip(bars, sizes):
            if s in ratios:
                ax.annotate("%.1fx" % ratios[s], (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                            ha="center", va="bottom", fontsize=6)
    floors = [v for c in present for v in data.get(("latency", c[0], "floor_ns"), {}).values()]
    floor = sorted(floors)[len(floors) // 2] if floors else data.get(("limits", "busy_poll", "half_rtt_ns"), {}).get(0)
    if floor:
        ax.axhline(floor, color="black", linewidth=0.8, label="busy-poll floor %.0f ns" % floor)
        ax.axhline(LAT_TARGET * floor, color="black", linestyle=":", label="target: 4x floor")
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(sizes))])
    ax.set_xticklabels(["%d bytes" % s for s in sizes])
    ax.set_ylabel("half round trip (ns); labels: x floor")
    ax.set_title(title)
    ax.legend(fontsize=7)
    ax.grid(True, axis="y", alpha=0.3)


def plot_bandwidth(ax, data):
    title = "Figure 6: bandwidth vs message size"
    if not any(data.get(("bandwidth", c[0], "mb_per_s")) for c in BW_CASES):
        return no_data(ax, title)
    for case, label, color, style in BW_CASES:
        xs, ys = series(data, "bandwidth", case, "mb_per_s")
        if xs:
            ax.plot(xs, ys, style, color=color, label=label, markersize=4)
    xs, ys = series(data, "bandwidth", "raw_pvw", "mb_per_s")
    if xs:
        ax.plot(xs, ys, "k--", label="raw process_vm_writev (same buffers)")
    top = max(ax.get_xlim()[1], 1)
    for case, label, style in (("pvw", "process_vm_writev alone", "x:"), ("memcpy", "memcpy", "+:")):
        xs, ys = series(data, "limits", case, "mb_per_s")
        pts = [(x, y) for x, y in zip(xs, ys) if x <= top]
        if pts:
            ax.plot(*zip(*pts), style, color="grey", label=label)
    size_axis(ax)
    ax.set_yscale("log")
    ax.set_ylabel("MB/s (10^6 bytes/s)")
    ax.set_title(title)
    ax.legend(fontsize=7)


def plot_ratio(ax, data):
    title = "AUTO / raw process_vm_writev into the same buffers"
    xs, ys = series(data, "bandwidth", "auto", "ratio_raw")
    if not xs:
        return no_data(ax, title)
    ax.plot(xs, ys, "^-", color="tab:green", label="AUTO / raw")
    ax.axhline(BW_TARGET, color="black", linestyle=":", label="target %.2f (>= 1 MiB)" % BW_TARGET)
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.axvspan(1 << 20, max(xs) * 1.2, color="tab:green", alpha=0.08)
    share_x, share_y = series(data, "bandwidth", "auto", "dma_share_pct")
    if share_x:
        ax2 = ax.twinx()
        ax2.plot(share_x, share_y, ":", color="tab:orange", label="AUTO sends by DMA (%)")
        ax2.set_ylabel("sends moved by DMA (%)", color="tab:orange")
        ax2.set_ylim(-5, 105)
        ax2.legend(fontsize=7, loc="center right")
    size_axis(ax)
    ax.set_ylabel("bandwidth ratio")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper left")


def plot_cq(ax, data):
    title = "Figure 7: CQ server throughput"
    if not any(data.get(("cq", c[0], "req_per_s")) for c in CQ_CASES):
        return no_data(ax, title)
    for case, label, color in CQ_CASES:
        xs, ys = series(data, "cq", case, "req_per_s")
        if not xs:
            continue
        ax.plot(xs, [y / 1e3 for y in ys], "o-", color=color, label=label)
        ax.axhline(CQ_TARGET * ys[0] / 1e3, color=color, linestyle=":", linewidth=0.8,
                   label="0.9 x N=1 (%s)" % case)
    ax.set_xscale("log", base=2)
    ns = sorted({n for c in CQ_CASES for n in data.get(("cq", c[0], "req_per_s"), {})})
    ax.set_xticks(ns)
    ax.xaxis.set_major_formatter(lambda v, _p: "%d" % v)
    ax.set_xlabel("connections (VIs on one CQ)")
    ax.set_ylabel("thousand requests/s")
    ax.set_ylim(bottom=0)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(title)
    ax.legend(fontsize=7)


def plot_reg(ax, data):
    title = "SCI paper fig. 7: RDMA write from a user buffer, effective bandwidth"
    if not any(data.get(("reg", c[0], "mb_per_s")) for c in REG_CASES):
        return no_data(ax, title)
    for case, label, color, style in REG_CASES:
        xs, ys = series(data, "reg", case, "mb_per_s")
        if xs:
            ax.plot(xs, ys, style, color=color, label=label)
    size_axis(ax)
    ax.set_ylabel("MB/s")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(title)
    ax.legend(fontsize=7)


def main():
    args = csv_png_args("bench_vipl")

    data, context = load(args.csv, "plot.py")
    if not data:
        sys.exit("plot.py: %s holds no measurements" % args.csv)

    plt = pyplot("plot.py")
    fig, axes = plt.subplots(3, 2, figsize=(15, 15.5))
    plot_latency(axes[0][0], data)
    plot_bandwidth(axes[0][1], data)
    plot_ratio(axes[1][0], data)
    plot_cq(axes[1][1], data)
    plot_reg(axes[2][0], data)
    axes[2][1].axis("off")
    fig.suptitle("viaduct VIPL (bench_vipl, %s; %s)"
                 % (context_text(context, "machine", "mode").split(":")[0],
                    context_text(context, "machine", "cpu_model", "unknown CPU")))
    save(fig, args.png, "plot.py")


if __name__ == "__main__":
    main()
