#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# VIA between two hosts -- network namespaces joined by veth on this
# machine (as root) -- over the ofi provider (libfabric tcp), next to the
# floors measured the same way in the same run: a raw TCP socket
# (bench/net/tcp_floor) and libfabric's own fi_pingpong.
#   bench/vipl/hosts.sh BUILD_DIR [--quick]
set -u
B=${1:?build dir}
QUICK=${2:-}
HERE=$(cd "$(dirname "$0")" && pwd)
[ -x "$B/bench/bench_vipl" ] && [ -x "$B/bench/tcp_floor" ] || { echo "hosts.sh: build first"; exit 1; }
# shellcheck source=tests/netns.sh
. "$HERE/../../tests/netns.sh"
vd_netns_up
export VIADUCT_JOB_KEY=${VIADUCT_JOB_KEY:-$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')}
out=$(mktemp -d)
trap 'rm -rf "$out"; vd_netns_cleanup' EXIT

echo "== VIA across hosts: $VD_NS_A ($VD_IP_A) <-> $VD_NS_B ($VD_IP_B), veth, ofi over libfabric ${VIADUCT_OFI_PROVIDER:-net (or tcp;ofi_rxm where net is missing)}"

# 1. raw TCP
vd_in A taskset -c 0 "$B/bench/tcp_floor" server 47999 & sp=$!
sleep 0.3
vd_in B taskset -c 1 "$B/bench/tcp_floor" client "$VD_IP_A" 47999 > "$out/tcp"
wait $sp

# 2. fi_pingpong, rdm over libfabric's tcp (tcp;ofi_rxm) and net (viaduct's
#    default where libfabric has it): fi_lat PROVIDER SIZE
fi_lat() {
	local prov=$1 size=$2
	vd_in A taskset -c 0 timeout 60 fi_pingpong -p "$prov" -e rdm -S "$size" -I 5000 >/dev/null 2>&1 & local p=$!
	sleep 0.5
	vd_in B taskset -c 1 timeout 60 fi_pingpong -p "$prov" -e rdm -S "$size" -I 5000 "$VD_IP_A" 2>/dev/null |
		awk -v s="$size" '$1 == s { print $7 * 1000 }'
	wait $p 2>/dev/null
}

# 3. bench_vipl across the two hosts
vd_in A env BENCH_NETNS_CLIENT="/run/netns/$VD_NS_B" BENCH_SERVER_HOST="$VD_IP_A" \
	"$B/bench/bench_vipl" ${QUICK:+--quick} --only latency,bandwidth,cq,reg --device ofi \
	--csv "$out/vipl.csv" > "$out/vipl.txt" 2>&1

tcp_lat() { awk -v s="$1" '$1 == "latency" && $2 == s { print $3 }' "$out/tcp"; }
tcp_bw() { awk -v s="$1" '$1 == "bandwidth" && $2 == s { print $3 }' "$out/tcp"; }
via_lat() { awk -F, -v s="$1" '$1 == "latency" && $2 == "auto" && $3 == s && $4 == "half_rtt_ns" { printf "%.0f\n", $5 }' "$out/vipl.csv" | head -1; }
via_bw() { awk -F, -v s="$1" '$1 == "bandwidth" && $2 == "auto" && $3 == s && $4 == "mb_per_s" { printf "%.0f\n", $5 }' "$out/vipl.csv" | head -1; }

x() { awk -v a="${1:-0}" -v b="${2:-0}" 'BEGIN { if (a && b) printf "%.2f", a / b; else print "n/a" }'; }
printf '\n%-22s %12s %12s %12s %12s %8s %8s %8s\n' "half round trip (ns)" "viaduct ofi" "raw TCP" \
	"fi_pp net" "fi_pp tcp" "x TCP" "x fi net" "x fi tcp"
for s in 0 4 40; do
	v=$(via_lat $s); t=$(tcp_lat $s)
	fn=$(fi_lat net $((s > 0 ? s : 1))); ft=$(fi_lat tcp $((s > 0 ? s : 1)))
	printf '%-22s %12s %12s %12s %12s %8s %8s %8s\n' "$s bytes" "${v:-n/a}" "${t:-n/a}" \
		"${fn:-n/a}" "${ft:-n/a}" "$(x "$v" "$t")" "$(x "$v" "$fn")" "$(x "$v" "$ft")"
done
printf '\n%-34s %12s %12s %10s\n' "bandwidth (MB/s)" "viaduct ofi" "raw TCP" "x TCP"
for s in 65536 1048576 4194304; do
	v=$(via_bw $s); t=$(tcp_bw $s)
	printf '%-34s %12s %12s %10s\n' "$s bytes" "${v:-n/a}" "${t:-n/a}" \
		"$(awk -v a="${v:-0}" -v b="${t:-0}" 'BEGIN { if (a && b) printf "%.2f", a / b; else print "n/a" }')"
done
cq() { awk -F, -v c="$1" -v n="$2" '$1 == "cq" && $2 == c && $3 == n && $4 == "req_per_s" { printf "%.0f\n", $5 }' "$out/vipl.csv" | head -1; }
printf '\n%-34s %12s %12s\n' "CQ server (requests/s)" "VipCQDone" "VipCQWait"
for n in 1 16 256; do
	printf '%-34s %12s %12s\n' "$n connections" "$(cq poll $n)" "$(cq wait $n)"
done
echo
echo "(fi_pp: fi_pingpong -e rdm, its own 'usec/xfer', over libfabric's net and tcp;ofi_rxm;"
echo " viaduct ofi uses ${VIADUCT_OFI_PROVIDER:-net where libfabric offers it}; bench_vipl's full tables follow)"
cat "$out/vipl.txt"
