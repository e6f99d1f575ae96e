# SPDX-License-Identifier: MIT
# Sourced by tests/test_mpi_*.sh (bash).  $1 of the runner is the build
# directory.  Provides: mt_need PROG..., mt_need_ofi, mt_run NAME N [ENV=V...] -- PROG ARGS,
# mt_nobody_copy PROG..., mt_done.  Ranks counts used by the runners: MT_RANKS (default 1 2 3 4 7).
set -u
B=${1:-${VIADUCT_BUILD:-}}
VDRUN=$B/tools/vdrun
MT_RANKS=${MT_RANKS:-"1 2 3 4 7"}
MT_TIMEOUT=${MT_TIMEOUT:-60}
mt_pass=0
mt_fail=0
mt_log=$(mktemp /tmp/mpitest.XXXXXX)
mt_nobody_dir=
trap 'rm -f "$mt_log"; [ -z "$mt_nobody_dir" ] || rm -rf "$mt_nobody_dir"' EXIT

# Skip (77) until vdrun and the programs exist in this build.
mt_need() {
	if [ -z "$B" ] || [ ! -x "$VDRUN" ]; then
		echo "SKIP: $VDRUN not built"
		exit 77
	fi
	for p in "$@"; do
		if [ ! -x "$B/tests/mpi/mpitest_$p" ]; then
			echo "SKIP: $B/tests/mpi/mpitest_$p not built"
			exit 77
		fi
	done
}

# shellcheck source=tests/ofi/supp.sh
. "$(dirname "${BASH_SOURCE[0]}")/../ofi/supp.sh"
# shellcheck source=tests/stacks.sh
. "$(dirname "${BASH_SOURCE[0]}")/../stacks.sh"

# Skip (77) unless the ofi provider opens here (libfabric's tcp); under
# the sanitizers, suppress libfabric's own doings.
mt_need_ofi() {
	if ! VIADUCT_PROVIDER=ofi:tcp "$B/tests/test_vipl_api_vi" >/dev/null 2>&1; then
		echo "SKIP: the ofi provider cannot open here (built without libfabric?)"
		exit 77
	fi
	vd_ofi_suppressions
}

mt_prog() { echo "$B/tests/mpi/mpitest_$1"; }

# mt_run LABEL N [VAR=VALUE...] -- PROG [ARGS...]: run, expect exit 0.
mt_run() {
	local label=$1 n=$2 rc t0 t1
	shift 2
	local envs=()
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	local prog
	prog=$(mt_prog "$1")
	shift
	t0=$(date +%s.%N)
	# A little under the ranks' own watchdog (mt_init's, mostly
	# MT_TIMEOUT), so that a hang shows their stacks.
	vd_run_watched "$((MT_TIMEOUT - 5))" "$mt_log" env "${envs[@]}" "$VDRUN" -n "$n" "$prog" "$@"
	rc=$?
	t1=$(date +%s.%N)
	if [ $rc -eq 0 ]; then
		mt_pass=$((mt_pass + 1))
		printf 'ok   %-40s n=%s %.2fs\n' "$label" "$n" "$(echo "$t1 - $t0" | bc)"
	else
		mt_fail=$((mt_fail + 1))
		printf 'FAIL %-40s n=%s rc=%s %.2fs  (%s vdrun -n %s %s %s)\n' "$label" "$n" "$rc" \
			"$(echo "$t1 - $t0" | bc)" "${envs[*]}" "$n" "$prog" "$*"
		[ $rc -eq 124 ] && echo "     (timed out after $((MT_TIMEOUT - 5))s)"
		sed -n '/^=== hung after/q;1,40p' "$mt_log" | sed 's/^/     | /'
		sed -n '/^=== hung after/,$p' "$mt_log" | head -300 | sed 's/^/     | /'
	fi
}

# Tests that run as another user (nobody) cannot reach a build inside a
# home or mktemp directory (0700): copy vdrun, the named test programs
# and the libraries into a folder that user can read, and run from
# there.  Sets MT_NB_VDRUN, MT_NB_DIR and MT_NB_ENV (the LD_LIBRARY_PATH
# that finds the copied libraries before the programs' RUNPATH).
mt_nobody_copy() {
	local p lib
	mt_nobody_dir=$(mktemp -d /tmp/viaduct-nobody.XXXXXX) || return 1
	chmod 0755 "$mt_nobody_dir"
	cp "$VDRUN" "$mt_nobody_dir/" || return 1
	for p in "$@"; do
		cp "$(mt_prog "$p")" "$mt_nobody_dir/" || return 1
	done
	for lib in "$B"/src/libviaduct.so* "$B"/src/mpi/libviaduct_mpi.so*; do
		[ -e "$lib" ] && cp -P "$lib" "$mt_nobody_dir/"
	done
	chmod -R a+rX "$mt_nobody_dir"
	MT_NB_DIR=$mt_nobody_dir
	MT_NB_VDRUN=$mt_nobody_dir/vdrun
	MT_NB_ENV="LD_LIBRARY_PATH=$mt_nobody_dir"
}

# Skip (77) unless root with setpriv and user nobody; then mt_nobody_copy
# PROG... (a failure to copy fails the test).
mt_as_nobody_setup() {
	if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! id nobody >/dev/null 2>&1; then
		echo "SKIP: needs root, setpriv and user nobody"
		exit 77
	fi
	mt_nobody_copy "$@" || { echo "FAIL: cannot copy the programs for nobody"; exit 1; }
}

mt_ok()   { mt_pass=$((mt_pass + 1)); echo "ok   $*"; }
mt_bad()  { mt_fail=$((mt_fail + 1)); echo "FAIL $*"; }

mt_done() {
	echo "$mt_pass passed, $mt_fail failed"
	[ "$mt_fail" -eq 0 ]
}
