#!/bin/bash
# SPDX-License-Identifier: MIT
#
# make test from a checkout other users cannot enter (/root is 0700, so
# is mktemp -d): the tests that run programs as nobody must still pass.
# The build is bind-mounted under a 0700 folder in a private mount
# namespace and the nobody test runs from there; it used to fail because
# nobody could not execute the programs.  Root only (skipped otherwise).
#
# Usage: test_nobody_0700.sh BUILD_DIR        (exit 0 pass, 1 fail, 77 skip)
set -u
B=${1:-${VIADUCT_BUILD:-}}
SRC=$(cd "$(dirname "$0")/.." && pwd)
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null || ! id nobody >/dev/null 2>&1; then
	echo "SKIP: needs root, unshare and user nobody"
	exit 77
fi
closed=$(mktemp -d /tmp/viaduct-0700.XXXXXX) || exit 1
trap 'rm -rf "$closed"' EXIT
chmod 0700 "$closed"
mkdir "$closed/build" "$closed/src"
# The namespace sees the build and the tests only under the 0700 folder.
unshare -m --propagation private bash -c '
	mount --bind "$1" "$2/build" && mount --bind "$3" "$2/src" || exit 77
	setpriv --reuid=nobody --regid=nogroup --clear-groups test -x "$2/build/tools/vdrun" &&
		{ echo "FAIL: nobody can reach the build; the check would prove nothing"; exit 1; }
	bash "$2/src/tests/test_mpi_regfail.sh" "$2/build"
' _ "$B" "$closed" "$SRC"
rc=$?
[ "$rc" -eq 0 ] && echo "ok: the nobody tests pass from a build behind a 0700 folder"
exit "$rc"
