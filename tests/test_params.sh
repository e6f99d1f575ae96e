#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The parameter registry: a wrong VIADUCT_* value is refused with a message
# that names the variable and what is allowed (MPI_Init and VipOpenNic
# fail; they used to ignore it), a misspelt VIADUCT_* name is warned about
# with the closest real one, vdinfo --params lists every variable, and
# README's environment table lists exactly the registry's variables.
#
# Usage: test_params.sh BUILD_DIR             (exit 0 pass, 1 fail, 77 skip)
set -u
B=${1:-${VIADUCT_BUILD:-}}
SRC=$(cd "$(dirname "$0")/.." && pwd)
MPI=$B/examples/mpi_hello
VIPL=$B/examples/vipl_pingpong
[ -x "$MPI" ] && [ -x "$VIPL" ] && [ -x "$B/tools/vdinfo" ] || { echo "SKIP: not built"; exit 77; }
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# refused PROG WORD VAR=VALUE: exits non-zero, saying VAR and WORD.
refused() {
	local prog=$1 word=$2 assign=$3 out
	out=$(env "$assign" timeout 30 "$prog" 2>&1) &&
		{ fail "$assign: $(basename "$prog") ran: $out"; return; }
	[[ $out == *"${assign%%=*}"* && $out == *"$word"* ]] ||
		{ fail "$assign: unclear message: $out"; return; }
	echo "ok: $assign refused by $(basename "$prog")"
}
refused "$MPI" "one of auto|eager|get|rndv" VIADUCT_MPI_PROTOCOL=fast
refused "$MPI" "from 64 to 32728" VIADUCT_MPI_EAGER_MAX=64k
refused "$MPI" "size from" VIADUCT_MPI_SPLIT_MIN=lots
refused "$MPI" "0 or 1" VIADUCT_MPI_PIN=2
refused "$MPI" "one of lazy|eager" VIADUCT_MPI_CONNECT=sometimes
refused "$VIPL" "an integer from 0" VIADUCT_SPIN_US=-5
refused "$VIPL" "names no provider" VIADUCT_PROVIDER=tcp   # VIP_ERROR_NOT_SUPPORTED
refused "$VIPL" "0 or 1" VIADUCT_DEBUG=verbose

out=$(VIADUCT_MPI_EGER_MAX=1024 timeout 30 "$MPI" 2>&1)
if [ $? -eq 0 ] && [[ $out == *"VIADUCT_MPI_EGER_MAX"*"did you mean VIADUCT_MPI_EAGER_MAX"* ]]; then
	echo "ok: a misspelt name is warned about, with the real one"
else
	fail "misspelt name: $out"
fi
out=$(VIADUCT_MPI_EAGER_MAX=16k VIADUCT_SPIN_US=0 timeout 30 "$MPI" 2>&1) ||
	fail "valid values refused: $out"

params=$("$B/tools/vdinfo" --params) || fail "vdinfo --params exit $?"
registry=$(grep -E '^VIADUCT_' <<<"$params" | sort)
[ "$(wc -l <<<"$registry")" -ge 15 ] || fail "vdinfo --params lists too little: $registry"
readme=$(grep -E '^\| `VIADUCT_' "$SRC/README.md" | cut -d'|' -f2 |
	grep -oE 'VIADUCT_[A-Z_]+' | sort -u)
if [ "$registry" != "$readme" ]; then
	fail "README's environment table and the registry differ:"
	diff <(echo "$registry") <(echo "$readme")
else
	echo "ok: README lists the $(wc -l <<<"$registry") variables of the registry"
fi
VIADUCT_LMM_FORK=sometimes "$B/tools/vdinfo" --params >/dev/null 2>&1 &&
	fail "vdinfo --params accepts a bad value"
[ "$fails" -eq 0 ]
