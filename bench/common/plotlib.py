# SPDX-License-Identifier: MIT
"""What the bench scripts share: reading the long-format CSV
(section,case,x,metric,value) that every benchmark writes, number and size
formatting for tables, and the matplotlib set-up for plots.

A script finds this module through its own location:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
    import plotlib

Standard library only, until pyplot() is called.
"""
import argparse
import csv
import math
import statistics
import sys
from collections import defaultdict

MIB = 1 << 20
COLUMNS = {"section", "case", "x", "metric", "value"}


def load(path, who, skip_sections=()):
    """(data, context) from a bench CSV.

    data: {(section, case, metric): {x: value}}, numeric rows only, NaN
    left out; where a size repeats (bench/mpi/run.sh --rounds N) the median.
    context: {(case, metric): [text, ...]} from the rows of section
    "context", in file order (context_text() takes the last).
    """
    rounds = defaultdict(dict)
    context = defaultdict(list)
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = COLUMNS - set(reader.fieldnames or [])
            if missing:
                sys.exit("%s: %s is not a bench CSV (missing %s)"
                         % (who, path, ", ".join(sorted(missing))))
            for row in reader:
                if row["section"] == "context":
                    context[(row["case"], row["metric"])].append(row["value"])
                    continue
                if row["section"] in skip_sections:
                    continue
                try:
                    x, value = int(row["x"]), float(row["value"])
                except ValueError:
                    continue
                if not math.isnan(value):
                    rounds[(row["section"], row["case"], row["metric"])].setdefault(x, []).append(value)
    except OSError as err:
        sys.exit("%s: cannot read %s: %s" % (who, path, err))
    data = defaultdict(dict)
    for key, pts in rounds.items():
        data[key] = {x: statistics.median(vs) for x, vs in pts.items()}
    return data, context


def context_text(context, case, metric, default="?"):
    texts = context.get((case, metric))
    return texts[-1] if texts else default


def series(data, section, case, metric, scale=1.0, positive_x=False):
    """([x...], [value / scale...]) sorted by x; positive_x drops x = 0
    (a log axis has no 0)."""
    pts = sorted(data.get((section, case, metric), {}).items())
    if positive_x:
        pts = [p for p in pts if p[0] > 0]
    return [p[0] for p in pts], [p[1] / scale for p in pts]


def size_label(v, _pos=None):
    """Axis ticks: 512, 4K, 1M."""
    if v >= MIB:
        return "%gM" % (v / MIB)
    if v >= 1024:
        return "%gK" % (v / 1024)
    return "%g" % v


def size_name(n):
    """Tables: 512 B, 4 KiB, 1 MiB."""
    if n >= MIB and n % MIB == 0:
        return "%d MiB" % (n // MIB)
    if n >= 1024 and n % 1024 == 0:
        return "%d KiB" % (n // 1024)
    return "%d B" % n


def fmt(v, digits=2):
    """A table cell: '-' for a missing figure, fewer decimals for big ones."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if abs(v) >= 1000:
        return "%.0f" % v
    if abs(v) >= 100:
        return "%.1f" % v
    return "%.*f" % (digits, v)


def ratio(a, b):
    return a / b if a is not None and b else None


def print_table(title, cols, rows, markdown=False):
    """cols: [(header, width)], rows: [[text...]]; right-aligned, or a
    Markdown table (an empty header shown as "-") under a bold title."""
    if markdown:
        print("**%s**\n" % " ".join(title.split("\n")))
        print("| " + " | ".join(h or "-" for h, _ in cols) + " |")
        print("|" + "|".join("---:" for _ in cols) + "|")
        for r in rows:
            print("| " + " | ".join(str(c) for c in r) + " |")
        print()
        return
    print(title)
    print("  ".join(h.rjust(w) for h, w in cols))
    for r in rows:
        print("  ".join(str(c).rjust(w) for c, (_, w) in zip(r, cols)))
    print()


def csv_png_args(writer):
    """The command line of a plot script: CSV (written by `writer`) PNG."""
    parser = argparse.ArgumentParser(description="Plot %s's CSV into a PNG." % writer)
    parser.add_argument("csv", help="CSV written by %s" % writer)
    parser.add_argument("png", help="PNG to write")
    return parser.parse_args()


def pyplot(who):
    """matplotlib.pyplot drawing into files, or exit saying how to get it."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: no display on build machines
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit(
            "%s: matplotlib is not available to %s.\n"
            "Install Debian's package (apt-get install python3-matplotlib) and run "
            "this script with /usr/bin/python3 (a pyenv/venv python3 earlier on "
            "PATH may not see it)." % (who, sys.executable)
        )
    return plt


def size_axis(ax, xlabel="message size (bytes)", grid="both"):
    """Log2 x axis labelled 512, 4K, 1M."""
    from matplotlib.ticker import FuncFormatter

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(size_label))
    ax.set_xlabel(xlabel)
    ax.grid(True, which=grid, alpha=0.3)


def no_data(ax, title=None, text="not measured in this run"):
    if title:
        ax.set_title(title)
    ax.text(0.5, 0.5, text, ha="center", transform=ax.transAxes)


def save(fig, png, who, rect=None):
    """Lay out, write the PNG (exit on failure) and say so."""
    if rect:
        fig.tight_layout(rect=rect)
    else:
        fig.tight_layout()
    try:
        fig.savefig(png, dpi=110)
    except OSError as err:
        sys.exit("%s: cannot write %s: %s" % (who, png, err))
    print("%s: wrote %s" % (who, png))
