#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The black-box VIPL tests the ofi provider passes today, run over it
# (VIADUCT_PROVIDER=ofi, libfabric's tcp provider, this host's address).
# The list grows as the provider does; the others are shm-only by design
# (the sealed TPT, socket names, rings) or not yet passing over ofi.
set -u
B=${1:?build dir}
T="$B/tests"
[ -x "$T/test_vipl_xfer_sg" ] || { echo "SKIP: not built"; exit 77; }
if [ -n "${TSAN_OPTIONS:-}" ]; then
	echo "SKIP: libfabric is not built with ThreadSanitizer (its threads look racy to TSan)"
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
tests="api_vi api_cq api_limits api_post cq_basic prot_handles prot_rdma prot_revoke
       xfer_disc xfer_sg xfer_max fault_rdma_death"
for t in $tests; do
	if VIADUCT_PROVIDER=ofi timeout 120 "$T/test_vipl_$t" >/tmp/ofi_suite.$$.log 2>&1; then
		echo "ok   test_vipl_$t over ofi"
	else
		echo "FAIL test_vipl_$t over ofi:"
		tail -n 20 /tmp/ofi_suite.$$.log
		fails=$((fails + 1))
	fi
done
rm -f /tmp/ofi_suite.$$.log
exit $((fails > 0))
