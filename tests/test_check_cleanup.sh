#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/check.sh (make test) removes its temporary install prefix and
# consumer folders on every exit: after a failed step and after an
# interrupt, not only after success.  The install step runs with a MAKE
# that fails, or that hangs until the run is interrupted.
#
# Usage: test_check_cleanup.sh BUILD_DIR      (exit 0 pass, 1 fail)
set -u

SRC=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT
fails=0

# The temporary folders a run announced ("make install PREFIX=..." names
# the prefix; the consumer folder is made next to it).
left_behind() {
	local log=$1 prefix
	prefix=$(sed -nE 's/.*make install PREFIX=(\/tmp\/viaduct-prefix\.[A-Za-z0-9]+).*/\1/p' "$log" | head -n 1)
	if [ -z "$prefix" ]; then
		echo "FAIL: the run did not announce its prefix:"; cat "$log"
		return 0
	fi
	[ -e "$prefix" ]
}

printf '#!/bin/sh\nexit 2\n' >"$TMP/failing-make"
printf '#!/bin/sh\nexec sleep 60\n' >"$TMP/hanging-make"
chmod +x "$TMP/failing-make" "$TMP/hanging-make"

MAKE="$TMP/failing-make" timeout 60 bash "$SRC/tools/check.sh" --install-only >"$TMP/fail.log" 2>&1
rc=$?
[ "$rc" -ne 0 ] || { echo "FAIL: a failed install step exited 0"; fails=$((fails + 1)); }
if left_behind "$TMP/fail.log"; then
	echo "FAIL: a failed run left its temporary folders behind"
	fails=$((fails + 1))
else
	echo "ok: a failed run removed its temporary folders"
fi

# Ctrl-C or a kill of the job signals the whole process group: check.sh and the
# step it waits for.
MAKE="$TMP/hanging-make" setsid bash "$SRC/tools/check.sh" --install-only >"$TMP/int.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
	grep -q 'make install PREFIX=' "$TMP/int.log" && break
	sleep 0.1
done
kill -TERM -- -"$pid"  # (SIGINT is ignored in background jobs)
wait "$pid"
if left_behind "$TMP/int.log"; then
	echo "FAIL: an interrupted run left its temporary folders behind"
	fails=$((fails + 1))
else
	echo "ok: an interrupted run removed its temporary folders"
fi
[ "$fails" -eq 0 ]
