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
