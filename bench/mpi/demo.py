#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""make demo: viaduct's MPI between 2 ranks, one protocol at a time, next to
the machine's limits, in one table (docs/bench-mpi.md, "The demo").

    /usr/bin/python3 bench/mpi/demo.py [--build DIR] [--out DIR] [--timeout SEC]

Builds mpi_latency (ping-pong) and mpi_bw (64 messages in flight) from
bench/mpi with the build tree's tools/vdcc and runs each with
`tools/vdrun -n 2 --bind-to core`, --quick, with each
VIADUCT_MPI_PROTOCOL=eager|get|rndv|auto in turn, three rounds (the
table takes the median per size).  The limits come from programs of
the same build tree: bench_vipl --only limits (two processes handing one
cache line back and forth) and mpi_pvread (one process_vm_readv, and
memcpy).  Prints one table, writes OUT/demo.csv and OUT/demo.png; logs and
binaries go to OUT/demo/.

Exit status: 0 when every run succeeded; 1 when one crashed, found wrong
data, timed out (--timeout, default MPI_BENCH_TIMEOUT or 60 s per run) or
the plot could not be drawn; 2 on a usage error.  The numbers never decide.
"""
import argparse
import csv
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
from plotlib import (MIB, context_text, fmt, load, print_table, pyplot, ratio,  # noqa: E402
                     save, series, size_axis, size_name)

WHO = "demo.py"
PROTOS = (
    ("eager", "eager", "tab:olive", "o-"),
    ("get", "get", "tab:purple", "s-"),
    ("rndv", "rendezvous", "tab:red", "^-"),
    ("auto", "auto", "tab:green", "D-"),
)
# The engine's eager switch point and the largest it accepts (run.sh does
# the same for its Table 4).
EAGER_SMALL = int(os.environ.get("VIADUCT_MPI_EAGER_MAX", "32728"))
# One ring message at most (VIADUCT_RING_MAX_MSG - the 32-byte header).
EAGER_BIG = int(os.environ.get("VIADUCT_MPI_EAGER_TABLE_MAX", "32728"))
MAX_SIZE = 4 * MIB
# Seconds per timed run: longer than --quick's own, so that a
# neighbour's burst is less likely to fill a whole run.
RUN_TIME = {"latency": 0.04, "bw": 0.08}
# One timed run per size and program, the protocols taking turns, this many
# times: this VM's speed changes from minute to minute (the same program
# may run at half speed for a while), and three runs in a row of one
# protocol made such a spell look like that protocol's doing.
ROUNDS = 3


class Demo:
    def __init__(self, build, out, timeout):
        self.build, self.out, self.timeout = build, out, timeout
        self.work = os.path.join(out, "demo")
        self.csv = os.path.join(out, "demo.csv")
        self.png = os.path.join(out, "demo.png")
        self.failed = []
        self.step = 0
        for d in ("bin", "logs"):
            os.makedirs(os.path.join(self.work, d), exist_ok=True)

    def tool(self, *parts):
        return os.path.join(self.build, *parts)

    def run(self, name, cmd, env=None):
        """One program under `timeout`, output to its log; False if it failed."""
        self.step += 1
        log = os.path.join(self.work, "logs", name.replace(" ", "_").replace(",", "") + ".log")
        full_env = dict(os.environ, **(env or {}))
        shown = " ".join("%s=%s" % kv for kv in (env or {}).items())
        print("demo: [%2d] %-34s" % (self.step, name), end=" ", flush=True)
        t0 = time.monotonic()
        with open(log, "w") as f:
            f.write("# %s %s\n" % (shown, " ".join(cmd)))
            f.flush()
            rc = subprocess.run(["timeout", "-k", "5", str(self.timeout)] + cmd, env=full_env,
                                stdout=f, stderr=subprocess.STDOUT).returncode
        took = time.monotonic() - t0
        if rc == 0:
            print("%5.1f s" % took)
            return True
        why = "killed after %d s (timeout)" % self.timeout if rc == 124 else "exit %d" % rc
        print("FAILED: %s; log %s" % (why, log))
        with open(log) as f:
            tail = f.readlines()[-5:]
        sys.stdout.write("".join("      | " + line for line in tail))
        self.failed.append("%s: %s" % (name, why))
        self.context("failed", "%s %s: %s" % (name, shown, why))
        return False

    def append(self, rows):
        with open(self.csv, "a", newline="") as f:
            csv.writer(f).writerows(rows)

    def context(self, metric, text):
        self.append([["context", "run", 0, metric, text.replace("\n", " ")]])


def build_programs(d):
    vdcc = d.tool("tools", "vdcc")
    for prog in ("latency", "bw"):
        out = os.path.join(d.work, "bin", "mpi_" + prog)
        cmd = [vdcc, "-O2", "-o", out, os.path.join(HERE, prog + ".c"), os.path.join(HERE, "common.c")]
        if not d.run("build mpi_%s with vdcc" % prog, cmd):
            sys.exit(1)


def machine_context(d):
    with open("/proc/cpuinfo") as f:
        model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "?")
    with open("/proc/loadavg") as f:
        load_before = " ".join(f.read().split()[:3])
    d.context("cpu_model", model)
    d.context("cpus", "%d online" % os.cpu_count())
    d.context("kernel", " ".join(os.uname()[i] for i in (0, 2)))
    d.context("load_before", load_before)
    d.context("date", time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))


def measure_limits(d):
    """The busy-poll floor (from bench_vipl's own CSV) and pvread's rows."""
    vipl_csv = os.path.join(d.work, "limits-vipl.csv")
    if d.run("limits: cache-line ping-pong", [d.tool("bench", "bench_vipl"), "--quick", "--only",
                                              "limits", "--csv", vipl_csv]):
        data, _ = load(vipl_csv, WHO)
        floor_ns = data.get(("limits", "busy_poll", "half_rtt_ns"), {}).get(0)
        if floor_ns is None:
            d.failed.append("bench_vipl measured no busy-poll floor (see its log)")
        else:
            d.append([["limits", "busy_poll", 0, "half_rtt_us", "%.9g" % (floor_ns / 1e3)]])
    d.run("limits: process_vm_readv, memcpy", [d.tool("bench", "mpi_pvread"), "--max-size",
                                               str(MAX_SIZE), "--runs", "3", "--time", "0.01",
                                               "--csv", d.csv])


def mpi_run(d, rnd, prog, proto, env=None, lo=1, hi=MAX_SIZE):
    cmd = [d.tool("tools", "vdrun"), "-n", "2", "--bind-to", "core",
           os.path.join(d.work, "bin", "mpi_" + prog), "--quick", "--label", proto,
           "--csv", d.csv, "--min-size", str(lo), "--max-size", str(hi), "--time", str(RUN_TIME[prog]),
           "--runs", "1"]
    return d.run("%s, %s %s-%s, round %d" % (prog, proto, size_name(lo), size_name(hi), rnd), cmd,
                 dict(env or {}, VIADUCT_MPI_PROTOCOL=proto))


def measure_protocols(d):
    """Each program with each protocol forced.  Eager exists only up to the
    switch point: above it, a second run with the switch point raised (not
    used for the small sizes, which larger eager buffers slow down)."""
    for rnd in range(1, ROUNDS + 1):
        for prog in ("latency", "bw"):
            for proto, _, _, _ in PROTOS:
                if proto != "eager":
                    mpi_run(d, rnd, prog, proto)
                    continue
                mpi_run(d, rnd, prog, proto, hi=EAGER_SMALL)
                if EAGER_BIG > EAGER_SMALL:
                    mpi_run(d, rnd, prog, proto, {"VIADUCT_MPI_EAGER_MAX": str(EAGER_BIG)},
                            lo=EAGER_SMALL * 2, hi=EAGER_BIG)


def latency_limit(data, size):
    """Floor + one memcpy of the size: two processes must at least hand
    over a cache line and copy the bytes once.  Below pvread's smallest
    size the floor alone (the line itself can carry a few bytes)."""
    floor = data.get(("limits", "busy_poll", "half_rtt_us"), {}).get(0)
    copy = data.get(("pvread", "memcpy", "usec_per_call"), {})
    if floor is None:
        return None
    return floor + copy.get(size, 0.0)


def table(d, data):
    lat = {p: data.get(("latency", p, "half_rtt_us"), {}) for p, _, _, _ in PROTOS}
    bw = {p: data.get(("bw", p, "mb_per_s"), {}) for p, _, _, _ in PROTOS}
    pv = data.get(("pvread", "process_vm_readv", "mb_per_s"), {})
    mc = data.get(("pvread", "memcpy", "mb_per_s"), {})
    sizes = sorted(s for s in set().union(*lat.values(), *bw.values()) if 0 < s <= MAX_SIZE)
    names = [p for p, _, _, _ in PROTOS]
    cols = ([("size", 7)] + [(n, 6) for n in names] + [("limit", 6), ("auto/l", 6)] +
            [(n, 6) for n in names] + [("pvread", 6), ("memcpy", 6), ("auto/pv", 7)])
    rows, extra = [], []
    for s in sizes:
        limit = latency_limit(data, s)
        lat_r = ratio(lat["auto"].get(s), limit)
        # One copy per message is the get protocol's work, so the ratio
        # speaks only where auto leaves eager.
        bw_r = ratio(bw["auto"].get(s), pv.get(s)) if s > EAGER_SMALL else None
        rows.append([size_name(s)] + [fmt(lat[p].get(s)) for p, _, _, _ in PROTOS] +
                    [fmt(limit), fmt(lat_r)] + [fmt(bw[p].get(s), 1) for p, _, _, _ in PROTOS] +
                    [fmt(pv.get(s), 1), fmt(mc.get(s), 1), fmt(bw_r)])
        extra += [["demo", "limit", s, "half_rtt_us", "%.9g" % v] for v in (limit,) if v is not None]
        extra += [["demo", "auto", s, m, "%.6g" % v] for m, v in
                  (("half_rtt_over_limit", lat_r), ("mb_per_s_over_pvread", bw_r)) if v is not None]
    d.append(extra)
    print_table("%-7s  %-46s  %s" % ("", "latency, half round trip (us)",
                                     "bandwidth, 64 messages in flight (MB/s = 10^6 B/s)"), cols, rows)


def print_header(d, data, context):
    floor = data.get(("limits", "busy_poll", "half_rtt_us"), {}).get(0)
    print("\n" + "=" * 108)
    print("viaduct MPI, 2 ranks (vdrun -n 2 --bind-to core), each protocol forced with "
          "VIADUCT_MPI_PROTOCOL")
    print("%s, %s, load before %s, %s" % tuple(
        context_text(context, "run", m) for m in ("cpu_model", "cpus", "load_before", "date")))
    print("library: %s; ranks: %s" % (context_text(context, "auto", "latency_library"),
                                      context_text(context, "auto", "latency_placement")))
    if EAGER_BIG > EAGER_SMALL:
        print("eager: up to %s as configured, %s to %s with VIADUCT_MPI_EAGER_MAX=%d; never above"
              % (size_name(EAGER_SMALL), size_name(EAGER_SMALL * 2), size_name(EAGER_BIG),
                 EAGER_BIG))
    else:
        print("eager: up to %s (one ring message); never above" % size_name(EAGER_SMALL))
    print("limit = cache-line ping-pong between the two cores (%s us) + one memcpy of the size;"
          % fmt(floor, 3))
    print("pvread = one process_vm_readv (what get does), memcpy = in one process; medians of "
          "%d rounds, the protocols taking turns; noisy" % ROUNDS)
    print("auto/l = auto latency / limit (>= 1); auto/pv = auto bandwidth / pvread above the "
          "eager switch point")
    print("=" * 108 + "\n")


def plot(d, data, context):
    plt = pyplot(WHO)
    fig, (lat, bw) = plt.subplots(1, 2, figsize=(14, 5.5))
    for case, name, color, style in PROTOS:
        lat.plot(*series(data, "latency", case, "half_rtt_us", positive_x=True), style,
                 color=color, label=name, markersize=3)
        bw.plot(*series(data, "bw", case, "mb_per_s", positive_x=True), style,
                color=color, label=name, markersize=3)
    lat.plot(*series(data, "demo", "limit", "half_rtt_us"), "k--", label="limit: cache line + memcpy")
    for case, name, style in (("process_vm_readv", "process_vm_readv (one copy)", "k--"),
                              ("memcpy", "memcpy (one process)", "k:")):
        bw.plot(*series(data, "pvread", case, "mb_per_s"), style, label=name)
    for ax, ylabel, title in ((lat, "half round trip (us)", "Ping-pong latency"),
                              (bw, "MB/s (10^6 B/s)", "Bandwidth, 64 messages in flight")):
        size_axis(ax, grid="major")
        ax.set_yscale("log")
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=10)
        ax.axvline(EAGER_SMALL, color="grey", linewidth=0.8, linestyle=":",
                   label="eager switch point (%s)" % size_name(EAGER_SMALL))
        ax.legend(fontsize=7)
    fig.suptitle("viaduct MPI, 2 ranks, each protocol forced: %s, %s (load before %s)" % tuple(
        context_text(context, "run", m) for m in ("cpu_model", "date", "load_before")), fontsize=10)
    save(fig, d.png, WHO, rect=(0, 0, 1, 0.95))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"),
                    help="viaduct build tree (tools/vdcc, tools/vdrun, bench/)")
    ap.add_argument("--out", help="results (default BUILD/bench-results)")
    ap.add_argument("--timeout", type=int, default=int(os.environ.get("MPI_BENCH_TIMEOUT", "60")),
                    help="seconds one program may run before it is killed")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    needed = [os.path.join(build, p) for p in ("tools/vdcc", "tools/vdrun", "bench/bench_vipl",
                                               "bench/mpi_pvread")]
    missing = [p for p in needed if not os.access(p, os.X_OK)]
    if missing:
        print("%s: not built: %s (make build)" % (WHO, ", ".join(missing)), file=sys.stderr)
        return 2
    d = Demo(build, os.path.abspath(a.out or os.path.join(build, "bench-results")), a.timeout)
    with open(d.csv, "w") as f:
        f.write("section,case,x,metric,value\n")
    machine_context(d)
    build_programs(d)
    measure_limits(d)
    measure_protocols(d)
    data, context = load(d.csv, WHO)
    print_header(d, data, context)
    table(d, data)
    data, context = load(d.csv, WHO)
    plot(d, data, context)
    print("%s: table in %s, plot in %s, logs in %s" % (WHO, d.csv, d.png, os.path.join(d.work, "logs")))
    if d.failed:
        print("%s: FAILED runs (their sizes show as '-'):\n  %s" % (WHO, "\n  ".join(d.failed)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
