#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Plot the CSV written by `bench_lmm --csv FILE` into one PNG.

    /usr/bin/python3 bench/lmm/plot.py lmm.csv lmm.png

The CSV is long format: section,case,x,metric,value (see docs/bench-lmm.md).
Panels: register+deregister time vs size next to raw mlock+munlock (log-log);
the ratio lmm/raw with the 1.2x target; this machine vs the paper's Tables 1
and 2; pagemap translation; the pin-down cache; unlock+relock vs N.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from plotlib import csv_png_args, load, pyplot, save, series, size_axis, size_label  # noqa: E402

CASE_STYLE = {
    "private": ("private anon", "tab:blue"),
    "shm_first": ("SysV shm, first", "tab:orange"),
    "shm_registered": ("SysV shm, held by other proc", "tab:green"),
    "memfd": ("memfd shared", "tab:red"),
    "private_monitored": ("private, cache monitor on", "tab:purple"),
}
RATIO_TARGET = 1.2
NS_PER_US = 1e3


def cases_in(data, section):
    seen = {case for (sec, case, _metric) in data if sec == section}
    return [c for c in CASE_STYLE if c in seen]


def kib_axis(ax):
    size_axis(ax, xlabel="size (bytes)")


def plot_times(ax, data):
    for case in cases_in(data, "register"):
        label, color = CASE_STYLE[case]
        ax.plot(*series(data, "register", case, "lmm_total_ns", NS_PER_US),
                "o-", color=color, label="lmm: " + label)
        ax.plot(*series(data, "register", case, "raw_total_ns", NS_PER_US),
                "x--", color=color, alpha=0.6, label="raw mlock+munlock")
    kib_axis(ax)
    ax.set_yscale("log")
    ax.set_ylabel("register + deregister (us)")
    ax.set_title("Register+deregister vs raw mlock+munlock")
    ax.legend(fontsize=7, ncol=2)


def plot_ratio(ax, data):
    for case in cases_in(data, "register"):
        label, color = CASE_STYLE[case]
        ax.plot(*series(data, "register", case, "ratio_lmm_raw"), "o-",
                color=color, label=label)
    ax.axhline(RATIO_TARGET, color="black", linestyle=":",
               label="target %.1fx (sizes >= 64 KiB)" % RATIO_TARGET)
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.axvline(64 * 1024, color="grey", linestyle=":", linewidth=0.8)
    kib_axis(ax)
    ax.set_ylabel("lmm / raw (median of per-run ratios)")
    ax.set_title("Overhead ratio lmm / raw")
    ax.legend(fontsize=7)


def plot_paper(ax, data):
    """The LMM paper's Tables 1 and 2 (PIII 450 MHz, Linux 2.4) against this run."""
    for case in ("shm_first", "shm_registered"):
        label, color = CASE_STYLE[case]
        for section, style, who in (("paper", "s--", "paper"), ("register", "o-", "here")):
            xs, reg = series(data, section, case, "lmm_register_ns", NS_PER_US)
            _, dereg = series(data, section, case, "lmm_deregister_ns", NS_PER_US)
            if xs and len(reg) == len(dereg):
                ax.plot(xs, [a + b for a, b in zip(reg, dereg)], style,
                        color=color, label="%s: %s" % (who, label))
    kib_axis(ax)
    ax.set_yscale("log")
    ax.set_ylabel("register + deregister (us)")
    ax.set_title("The LMM paper's Tables 1/2 vs this machine")
    ax.legend(fontsize=7)


def plot_translation(ax, data):
    for case in cases_in(data, "register"):
        label, color = CASE_STYLE[case]
        ax.plot(*series(data, "register", case, "lmm_get_pages_ns", NS_PER_US),
                "o-", color=color, label="lmm_get_pages: " + label)
        ax.plot(*series(data, "register", case, "pagemap_pread_ns", NS_PER_US),
                "x--", color=color, alpha=0.6, label="pread pagemap")
    kib_axis(ax)
    ax.set_yscale("log")
    ax.set_ylabel("time for the whole range (us)")
    ax.set_title("Page address translation")
    ax.legend(fontsize=6, ncol=2)


def plot_cache(ax, data):
    metrics = (
        ("hit", "get_put_pair_ns", "hit: get+put"),
        ("hit", "get_ns", "hit: get"),
        ("miss", "first_get_ns", "miss: first get"),
    )
    sizes = sorted(data.get(("cache", "hit", "get_put_pair_ns"), {}))
    if not sizes:
        ax.text(0.5, 0.5, "no cache data", ha="center", transform=ax.transAxes)
        return
    width = 0.8 / (len(metrics) + 1)
    for i, (case, metric, label) in enumerate(metrics):
        values = [data.get(("cache", case, metric), {}).get(s, float("nan")) for s in sizes]
        ax.bar([j + i * width for j in range(len(sizes))], values, width, label=label)
    # Uncached registration measured while the monitor ran, as bench_lmm's table does.
    reference = data.get(("register", "private_monitored", "lmm_total_ns")) or \
        data.get(("register", "private", "lmm_total_ns"), {})
    uncached = [reference.get(s, float("nan")) for s in sizes]
    ax.bar([j + len(metrics) * width for j in range(len(sizes))], uncached, width,
           label="uncached lock+unlock")
    ax.axhline(100, color="black", linestyle=":", label="target 100 ns")
    ax.set_xticks([j + 1.5 * width for j in range(len(sizes))])
    ax.set_xticklabels([size_label(s) for s in sizes])
    ax.set_yscale("log")
    ax.set_ylabel("ns")
    ax.set_title("Pin-down cache")
    ax.legend(fontsize=7)
    ax.grid(True, axis="y", which="both", alpha=0.3)


def plot_overlap(ax, data):
    for case, color in (("nested", "tab:blue"), ("identical", "tab:orange")):
        xs, ys = series(data, "overlap", case, "unlock_relock_pair_ns")
        if not xs:
            continue
        ax.plot(xs, ys, "o-", color=color, label="unlock+relock, %s" % case)
        # O(N) through the first point, for scale.
        ax.plot(xs, [ys[0] * x / xs[0] for x in xs], ":", color=color, alpha=0.5,
                label="O(N) from N=%d" % xs[0])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("N overlapping registrations")
    ax.set_ylabel("ns per unlock+relock")
    ax.set_title("Unlock one of N overlapping registrations")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def main():
    args = csv_png_args("bench_lmm")

    data, _context = load(args.csv, "plot.py")
    if not any(sec == "register" for (sec, _c, _m) in data):
        sys.exit("plot.py: %s holds no register measurements" % args.csv)

    plt = pyplot("plot.py")
    fig, axes = plt.subplots(2, 3, figsize=(19, 10.5))
    plot_times(axes[0][0], data)
    plot_ratio(axes[0][1], data)
    plot_paper(axes[0][2], data)
    plot_translation(axes[1][0], data)
    plot_cache(axes[1][1], data)
    plot_overlap(axes[1][2], data)
    fig.suptitle("viaduct Locked Memory Manager (bench_lmm, medians)")
    save(fig, args.png, "plot.py")


if __name__ == "__main__":
    main()
