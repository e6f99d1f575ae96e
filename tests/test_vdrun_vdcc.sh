#!/bin/bash
# SPDX-License-Identifier: MIT
#
# vdcc, the compiler wrapper: -show prints the command (headers, libraries,
# rpath), -c compiles without link flags, CC overrides the compiler, other
# arguments pass through.  When libviaduct_mpi is built: a program built
# with vdcc runs without LD_LIBRARY_PATH, alone and under vdrun, and the
# installed vdcc still works after its install prefix moved.
#
# Usage: test_vdrun_vdcc.sh BUILD_DIR         (exit 0 pass, 1 fail, 77 skip)
set -u

B=${1:-${VIADUCT_BUILD:-}}
VDCC=$B/tools/vdcc
VDRUN=$B/tools/vdrun
SRC=$(cd "$(dirname "$0")/.." && pwd)
fails=0

if [ ! -x "$VDCC" ]; then
	echo "FAIL: $VDCC was not generated"
	exit 1
fi
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# has WHAT STRING WORD...: every WORD occurs in STRING.
has() {
	local what=$1 s=$2
	shift 2
	for w in "$@"; do
		[[ $s == *"$w"* ]] || { fail "$what: '$w' missing in: $s"; return 1; }
	done
	return 0
}

# ---- the command ------------------------------------------------------------
show=$("$VDCC" -show prog.c -o prog -O2)
has "-show" "$show" "prog.c -o prog -O2" "-I$SRC/include" "-lviaduct_mpi" "-lviaduct" \
	"-lpthread" "-lm" "-Wl,-rpath," "-L" && echo "ok: vdcc -show: $show"
show_c=$("$VDCC" -show -c prog.c)
has "-show -c" "$show_c" "-c prog.c" "-I$SRC/include"
[[ $show_c == *-l* || $show_c == *-L* || $show_c == *rpath* ]] &&
	fail "-show -c has link flags: $show_c"
show_cc=$(CC="ccache-like gcc" "$VDCC" -show x.c)
[[ $show_cc == "ccache-like gcc "* ]] || fail "CC override: $show_cc"
show_q=$("$VDCC" -show 'a b.c' -DX='"y z"')
has "quoting" "$show_q" "'a b.c'" "'-DX=\"y z\"'"
"$VDCC" >/dev/null 2>&1 && fail "vdcc without arguments succeeded"

# ---- compile only -----------------------------------------------------------
cat >"$TMP/uses_mpi.c" <<'EOC'
#include <mpi.h>
int main(void) { return MPI_SUCCESS + (MPI_COMM_WORLD == MPI_COMM_NULL); }
EOC
if "$VDCC" -c "$TMP/uses_mpi.c" -o "$TMP/uses_mpi.o" -Wall -Werror 2>"$TMP/err" &&
	[ -s "$TMP/uses_mpi.o" ]; then
	echo "ok: vdcc -c compiles against mpi.h"
else
	fail "vdcc -c: $(cat "$TMP/err")"
fi

# ---- link and run (needs libviaduct_mpi) -----------------------------------
if ! ls "$B"/src/mpi/libviaduct_mpi.so >/dev/null 2>&1; then
	echo "note: libviaduct_mpi is not built; linking was not tested"
	[ "$fails" -eq 0 ] && exit 0
	exit 1
fi
cat >"$TMP/hello.c" <<'EOC'
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	int rank, size, sum = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	printf("hello %d/%d sum %d\n", rank, size, sum);
	MPI_Finalize();
	return 0;
}
EOC
# run_hello VDCC WHAT: build hello with VDCC, run it alone and on 2 ranks.
run_hello() {
	local cc=$1 what=$2 out
	if ! "$cc" "$TMP/hello.c" -o "$TMP/hello" 2>"$TMP/err"; then
		fail "$what: vdcc hello.c: $(cat "$TMP/err")"
		return
	fi
	out=$(env -u LD_LIBRARY_PATH timeout 30 "$TMP/hello" 2>&1)
	[ "$out" = "hello 0/1 sum 0" ] || fail "$what: hello alone: $out"
	out=$(env -u LD_LIBRARY_PATH timeout 30 "$VDRUN" -n 2 "$TMP/hello" 2>&1 | sort)
	[ "$out" = "$(printf 'hello 0/2 sum 1\nhello 1/2 sum 1')" ] ||
		fail "$what: hello on 2 ranks: $out"
	echo "ok: $what: a program built with vdcc runs alone and under vdrun"
}
run_hello "$VDCC" "build tree"

# Installed, then moved: the installed vdcc finds everything from where it is.
if cmake --install "$B" --prefix "$TMP/prefix1" >"$TMP/install.log" 2>&1; then
	mv "$TMP/prefix1" "$TMP/prefix2"
	show=$("$TMP/prefix2/bin/vdcc" -show hello.c)
	has "installed -show" "$show" "$TMP/prefix2/bin/../include" && [[ $show != *"$SRC"* ]] ||
		fail "installed vdcc points into the source tree: $show"
	if [ -z "$(find "$TMP/prefix2" -name 'libviaduct_mpi.so*' -print -quit)" ]; then
		fail "cmake --install does not install libviaduct_mpi (the installed vdcc links with it)"
	else
		run_hello "$TMP/prefix2/bin/vdcc" "installed and moved"
	fi
else
	fail "cmake --install: $(tail -5 "$TMP/install.log")"
fi

if [ "$fails" -ne 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
echo "all vdcc checks passed"
exit 0
