# SPDX-License-Identifier: MIT
# Sourced by the test scripts that use libfabric: suppress, under the
# sanitizers, libfabric's own doings (it is not built with them).  Only
# these tests get them, since some other tests run as another user, who
# may not read the source tree.
vd_ofi_suppressions() {
	local dir
	dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	[ -z "${TSAN_OPTIONS:-}" ] ||
		export TSAN_OPTIONS="$TSAN_OPTIONS:suppressions=$dir/tsan.supp"
	[ -z "${ASAN_OPTIONS:-}" ] ||
		export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$dir/lsan.supp"
}

# What a failed test's log LOG says: a sanitizer's report from its start;
# for a leak report, which says only that the test left early, what it
# printed before; anything else, the last N lines.
vd_ofi_show_failure() {
	local log=$1 n=$2
	if grep -q "ERROR: LeakSanitizer" "$log"; then
		sed -n '/ERROR: LeakSanitizer/q;p' "$log" | tail -n "$n"
		grep -m1 "SUMMARY: AddressSanitizer" "$log"
	else
		grep -m1 -A40 "WARNING: ThreadSanitizer\|ERROR: AddressSanitizer" "$log" ||
			tail -n "$n" "$log"
	fi
}
