#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The black-box VIPL tests over the ofi provider (VIADUCT_PROVIDER=ofi,
# libfabric's tcp provider, this host's address): tests/ofi/blackbox.sh
# lists them and says why the others are not.
set -u
B=${1:?build dir}
T="$B/tests"
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/ofi/blackbox.sh
. "$HERE/ofi/blackbox.sh"
[ -x "$T/test_vipl_xfer_sg" ] || { echo "SKIP: not built"; exit 77; }
# shellcheck source=tests/ofi/supp.sh
. "$HERE/ofi/supp.sh"
vd_ofi_suppressions
# Under TSan this suite once reported a race at a connection's teardown
# (prot_local with zero copy, CI only, not reproduced in 50 local runs):
# open, so it skips there; test_vipl_ofi_netns runs the same tests across
# two hosts under TSan.
if [ -n "${TSAN_OPTIONS:-}" ]; then
	echo "SKIP: under TSan: a teardown race reported once (open); see test_vipl_ofi_netns"
	exit 77
fi
if ! VIADUCT_PROVIDER=ofi:tcp "$T/test_vipl_api_vi" >/dev/null 2>&1; then
	out=$(VIADUCT_PROVIDER=ofi:tcp "$T/test_vipl_api_vi" 2>&1 | tail -3)
	case $out in
	*"not available"*) echo "SKIP: built without libfabric"; exit 77 ;;
	esac
fi
export VIADUCT_OFI_PROVIDER=tcp
fails=0
# run TEST HOW [VAR=value...]
run() {
	local t=$1 how=$2
	shift 2
	if env VIADUCT_PROVIDER=ofi "$@" timeout 120 "$T/test_vipl_$t" >"$log" 2>&1; then
		echo "ok   test_vipl_$t over ofi$how"
	else
		echo "FAIL test_vipl_$t over ofi$how:"
		vd_ofi_show_failure "$log" 20
		fails=$((fails + 1))
	fi
}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for t in $VD_OFI_TESTS; do
	run "$t" ""
done
# Connection management's own checks (accept after an attribute
# mismatch, timeouts, a peer nobody answers), but for peer-to-peer with
# both sides in one thread: over ofi the accepting side accepts only in
# its own PeerDone/PeerWait.
run api_conn "" VT_SKIP_ONE_THREAD_PEER=1
run api_conn " (net)" VT_SKIP_ONE_THREAD_PEER=1 VIADUCT_OFI_PROVIDER=net
for t in $VD_OFI_ZC_TESTS; do
	run "$t" ", zero copy from 1 byte" VIADUCT_OFI_ZC_MIN=1
done
for t in $VD_OFI_MR_LOCAL_TESTS; do
	run "$t" ", local buffers registered" VIADUCT_OFI_MR_LOCAL=1
	run "$t" ", local buffers registered, zero copy" VIADUCT_OFI_MR_LOCAL=1 VIADUCT_OFI_ZC_MIN=1
done
for t in $VD_OFI_NET_TESTS; do
	run "$t" " (net)" VIADUCT_OFI_PROVIDER=net
	run "$t" " (net), zero copy from 1 byte" VIADUCT_OFI_PROVIDER=net VIADUCT_OFI_ZC_MIN=1
done
# A discriminator's listener binds a port of its own, which must lie
# below the kernel's ephemeral ports: there, any outgoing connection on
# the host could hold it and fail the bind (a test in CI failed that way
# when listeners started at 47000).
if command -v ss >/dev/null && [ -r /proc/sys/net/ipv4/ip_local_port_range ] &&
	[ -x "$B/examples/vipl_pingpong" ]; then
	read -r eph_lo _ </proc/sys/net/ipv4/ip_local_port_range
	VIADUCT_PROVIDER=ofi "$B/examples/vipl_pingpong" server "ports.$$" >/dev/null 2>&1 &
	srv=$!
	ports=
	for _ in $(seq 50); do
		ports=$(ss -ltnpH 2>/dev/null | grep "pid=$srv," | awk '{n = split($4, a, ":"); print a[n]}' | sort -n | tr '\n' ' ')
		[ "$(echo "$ports" | wc -w)" -ge 2 ] && break
		sleep 0.1
	done
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
	low=$(echo "$ports" | awk '{print $1}')
	if [ -n "$low" ] && [ "$low" -lt "$eph_lo" ]; then
		echo "ok   the listener's port $low lies below the ephemeral ports ($eph_lo-)"
	else
		echo "FAIL the server's listening ports '$ports': none below the ephemeral ports ($eph_lo-)"
		fails=$((fails + 1))
	fi
fi
exit $((fails > 0))
