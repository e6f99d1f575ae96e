#!/bin/bash
# SPDX-License-Identifier: MIT
# The MPICH-PM/CLUMP paper's Table 4 as bench/mpi/report.py (one host) and
# bench/mpi/hosts_table.py (within a node and between two) print it, fed
# made-up figures whose minimum latency, maximum bandwidth and
# half-bandwidth point are known; and hosts.sh's usage errors.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BENCH=$HERE/../bench/mpi
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "SKIP: no $PY"; exit 77; }
T=$(mktemp -d /tmp/bench-tables.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

# rows CASE BASE_US: a ping-pong whose half round trip is BASE_US + s/1000
# us at every power of two s from 1 B to 1 MiB (ping-pong bandwidth s /
# that), a 0-byte row that must not count as the minimum, and a windowed
# bandwidth of s/64 MB/s capped at 4000.
rows() {
	awk -v c="$1" -v b="$2" 'BEGIN {
		printf "latency,%s,0,half_rtt_us,0.01\n", c
		for (s = 1; s <= 1048576; s *= 2) {
			printf "latency,%s,%d,half_rtt_us,%.6f\n", c, s, b + s / 1000
			w = s / 64; if (w > 4000) w = 4000
			printf "bw,%s,%d,mb_per_s,%.6f\n", c, s, w
		}
	}'
}
# The half-bandwidth point of size / (b + size/1000): the maximum is at
# 1 MiB; interpolated on log2(size) between the powers of two around half
# of it, as report.py's half_point does.
half_kib() {
	"$PY" - "$1" <<'EOF'
import math, sys
b = float(sys.argv[1])
pts = [(s, s / (b + s / 1000)) for s in (2 ** i for i in range(21))]
top = max(v for _, v in pts)
prev = None
for s, v in pts:
    if v >= top / 2:
        f = (top / 2 - prev[1]) / (v - prev[1])
        half = 2 ** (math.log2(prev[0]) + f * (math.log2(s) - math.log2(prev[0]))) / 1024
        print("%.2f %s" % (half, "%.0f" % top if top >= 1000 else "%.1f" % top))
        break
    prev = (s, v)
EOF
}

# report SCRIPT CSV: the script's tables of CSV into $T/out, ok or FAIL.
report() {
	if "$PY" "$BENCH/$1" "$2" >"$T/out" 2>&1; then ok "$1 on made-up figures"
	else bad "$1 failed:"; sed 's/^/     | /' "$T/out"; fi
}

# --- hosts_table.py: both placements
csv=$T/hosts.csv
{
	echo "section,case,x,metric,value"
	echo 'context,run,0,date,"test"'
	rows viaduct_node_eager 0.5
	rows viaduct_node_get 3
	rows viaduct_net_eager 10
	rows viaduct_net_rndv 40
} >"$csv"
report hosts_table.py "$csv"
node=$(sed -n '/^Table 4.*within a node/,/^$/p' "$T/out")
net=$(sed -n '/^Table 4.*between the two hosts/,/^$/p' "$T/out")
line() { echo "$1" | grep -- "$2" | head -1 | tr -s ' ' | sed 's/ *$//'; }
expect() {      # label text pattern
	if echo "$2" | grep -Eq -- "$3"; then ok "$1"
	else bad "$1: '$2' does not match '$3'"; fi
}
expect "node: minimum latency from 1 B, not 0 B" "$(line "$node" 'minimum latency')" \
	'minimum latency, >= 1 B \(us\) 0\.501 3\.001 8\.62 / 9\.98$'
expect "node: taken at 1 B" "$(line "$node" 'at size')" 'at size 1 B 1 B$'
read -r h_node top_node < <(half_kib 0.5)
read -r h_net top_net < <(half_kib 40)
expect "node: half-bandwidth point $h_node KiB" "$(line "$node" 'half-bandwidth point (KiB)')" \
	"half-bandwidth point \(KiB\) $h_node [0-9.]+ 0\.3 / 2\.5$"
expect "node: maximum ping-pong bandwidth $top_node" "$(line "$node" 'maximum bandwidth, ping-pong')" \
	"ping-pong \(MB/s\) $top_node "
expect "node: windowed maximum 4000" "$(line "$node" 'maximum bandwidth, windowed')" \
	'windowed \(MB/s\) 4000 4000$'
expect "net: the paper's eager and rendezvous between nodes" "$(line "$net" 'minimum latency')" \
	'minimum latency, >= 1 B \(us\) 10\.001 40\.001 11\.08 / 12\.75$'
expect "net: half-bandwidth point $h_net KiB" "$(line "$net" 'half-bandwidth point (KiB)')" \
	"half-bandwidth point \(KiB\) [0-9.]+ $h_net 0\.2 / 21$"
expect "net: no get column (not measured)" "$(echo "$net" | head -3 | tail -1 | tr -s ' ')" \
	'^ ?eager rendezvous the paper: eager / rendezvous$'

# --markdown: Table 4 as a Markdown table too, the same figures.
if "$PY" "$BENCH/hosts_table.py" --markdown "$csv" >"$T/out" 2>&1; then
	expect "markdown: Table 4 between the hosts as a Markdown table" \
		"$(sed -n '/^\*\*Table 4.*between the two hosts/,$p' "$T/out" | grep -m1 'minimum latency')" \
		'^\| minimum latency, >= 1 B \(us\) \| 10\.001 \| 40\.001 \| 11\.08 / 12\.75 \|$'
else bad "hosts_table.py --markdown failed:"; sed 's/^/     | /' "$T/out"; fi

# A CSV without Table 4's cases prints no Table 4 and still succeeds.
printf 'section,case,x,metric,value\nlatency,viaduct,8,half_rtt_us,7\nlatency,mpich,8,half_rtt_us,6\n' >"$T/plain.csv"
if "$PY" "$BENCH/hosts_table.py" "$T/plain.csv" >"$T/out" 2>&1 && ! grep -q 'Table 4' "$T/out"; then
	ok "hosts_table.py without Table 4's runs"
else bad "hosts_table.py without Table 4's runs:"; sed 's/^/     | /' "$T/out"; fi

# The floors beside the libraries: raw TCP where it measured the size,
# libfabric's fi_pingpong at every size, each with viaduct's ratio to it.
printf 'section,case,x,metric,value\nlatency,viaduct,8,half_rtt_us,12\nlatency,openmpi,8,half_rtt_us,10\nlatency,viaduct,1024,half_rtt_us,15\nlatency,openmpi,1024,half_rtt_us,16\nlatency,tcp,1024,half_rtt_us,10\nlatency,fabric,8,half_rtt_us,8\nlatency,fabric,1024,half_rtt_us,12\n' >"$T/floors.csv"
if "$PY" "$BENCH/hosts_table.py" "$T/floors.csv" >"$T/out" 2>&1; then
	expect "hosts_table.py: the floors' columns" "$(grep -m1 'size ' "$T/out")" \
		'raw TCP +fi_pp +vd/best +vd/TCP +vd/fi_pp$'
	expect "hosts_table.py: fi_pp alone where TCP did not measure" "$(grep -m1 ' 8 B ' "$T/out")" \
		'12\.00 +10\.00 +- +8\.00 +1\.20 +MISS +- +1\.50$'
	expect "hosts_table.py: both floors' ratios" "$(grep -m1 ' 1 KiB ' "$T/out")" \
		'15\.00 +16\.00 +10\.00 +12\.00 +0\.94 +1\.50 +1\.25$'
else bad "hosts_table.py with the floors:"; sed 's/^/     | /' "$T/out"; fi

# Bcast across the hosts, 2 and 4 ranks, each with its own table.
printf 'section,case,x,metric,value\nbcast,viaduct,4,usec,3\nbcast,openmpi,4,usec,2\nbcast,mpich,4,usec,4\nbcast,viaduct_n4,4,usec,5\nbcast,openmpi_n4,4,usec,10\n' >"$T/bcast.csv"
if "$PY" "$BENCH/hosts_table.py" "$T/bcast.csv" >"$T/out" 2>&1; then
	expect "hosts_table.py: Bcast, 2 ranks" "$(grep -A2 'MPI_Bcast, 2 ranks' "$T/out" | grep -m1 ' 4 B ')" \
		'3\.00 +2\.00 +4\.00 +1\.50 +MISS$'
	expect "hosts_table.py: Bcast, 4 ranks" "$(grep -A2 'MPI_Bcast, 4 ranks' "$T/out" | grep -m1 ' 4 B ')" \
		'5\.00 +10\.00 +0\.50 *$'
else bad "hosts_table.py with Bcast:"; sed 's/^/     | /' "$T/out"; fi

# --- report.py: one host, the cases run.sh writes
csv=$T/mpi.csv
{
	echo "section,case,x,metric,value"
	rows viaduct_eager 0.5
	rows viaduct_get 3
	rows viaduct_rndv 4
} >"$csv"
report report.py "$csv"
t4=$(sed -n '/^Table 4/,/^$/p' "$T/out")
expect "report.py: minimum latencies and the paper's, rendezvous '-' in a node" \
	"$(line "$t4" 'minimum latency')" \
	'minimum latency, >= 1 B \(us\) 0\.501 3\.001 4\.001 8\.62 / 9\.98 / -$'

# --- report.py: line_probe's rows around each run (ns before and after):
# four runs, one of which moved from 55 to 240 ns while it ran.
{
	echo "section,case,x,metric,value"
	echo "latency,viaduct,8,half_rtt_us,0.3"
	printf 'probe,viaduct,1,line_half_rtt_ns_before,55\nprobe,viaduct,1,line_half_rtt_ns_after,60\n'
	printf 'probe,openmpi,2,line_half_rtt_ns_before,55\nprobe,openmpi,2,line_half_rtt_ns_after,240\n'
	printf 'probe,mpich,3,line_half_rtt_ns_before,240\nprobe,mpich,3,line_half_rtt_ns_after,250\n'
	printf 'probe,viaduct,4,line_half_rtt_ns_before,50\nprobe,viaduct,4,line_half_rtt_ns_after,58\n'
} >"$T/probe.csv"
report report.py "$T/probe.csv"
expect "probes: min, median, max over 8" "$(grep 'before and after every program' "$T/out")" \
	'min 50, median 59, max 250 over 8 probes'
expect "probes: each library's median" "$(grep 'each library' "$T/out")" \
	"viaduct 56, Open MPI 148, MPICH 245"
expect "probes: one run moved" "$(grep 'moved by more' "$T/out")" '1 of 4'

# --- hosts.sh: usage errors end with status 2 before anything is set up
for args in "" "build --bogus" "build --rounds 0"; do
	# shellcheck disable=SC2086
	bash "$BENCH/hosts.sh" $args >"$T/out" 2>&1
	rc=$?
	if [ $rc = 2 ] && grep -q 'Usage: ' "$T/out"; then ok "hosts.sh ${args:-(no arguments)}: usage, status 2"
	else bad "hosts.sh ${args:-(no arguments)}: status $rc, want 2 and the usage"; fi
done

# --- hosts.sh: forced eager stops at the lower of the two eager limits
# MPI_HOSTS_ENV gives (sizes as the library takes them), else 32728.
eval "$(sed -n '/^eager_max() {/,/^table4_runs() {/p' "$BENCH/hosts.sh" | sed '$d')"
for want in "32728:" "16384:VIADUCT_MPI_NET_EAGER_MAX=16k VIADUCT_MPI_EAGER_MAX=20000" \
	"1024:X=1 VIADUCT_MPI_EAGER_MAX=1K" "32728:VIADUCT_MPI_EAGER_MAX=junk"; do
	read -r -a EXTRA_ENV <<<"${want#*:}"
	got=$(eager_max)
	if [ "$got" = "${want%%:*}" ]; then ok "hosts.sh eager_max '${want#*:}': $got"
	else bad "hosts.sh eager_max '${want#*:}': $got, want ${want%%:*}"; fi
done

echo "$fails failed"
[ $fails = 0 ]
