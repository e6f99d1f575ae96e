#!/bin/bash
# SPDX-License-Identifier: MIT
#
# vdcc and vdcxx, the compiler wrappers: -show prints the command (headers,
# libraries, rpath), the -showme:* / -compile-info / -link-info forms print
# parts of it (also spelled --showme:*, -compile_info, -link_info, and
# anywhere on the line), -c compiles without link flags, VIADUCT_CC overrides the
# compiler and CC=vdcc (./configure CC=vdcc) neither recurses nor is obeyed,
# other arguments pass through.  When libviaduct_mpi is built: a program built
# with vdcc runs without LD_LIBRARY_PATH, alone and under vdrun, and the
# installed vdcc still works after its install prefix moved.
#
# Usage: test_vdrun_vdcc.sh BUILD_DIR         (exit 0 pass, 1 fail, 77 skip)
set -u

B=${1:-${VIADUCT_BUILD:-}}
VDCC=$B/tools/vdcc
VDCXX=$B/tools/vdcxx
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
show_cc=$(VIADUCT_CC="ccache-like gcc" "$VDCC" -show x.c)
[[ $show_cc == "ccache-like gcc "* ]] || fail "VIADUCT_CC override: $show_cc"
show_cc=$(CC="ccache-like gcc" "$VDCC" -show x.c)
[[ $show_cc == "ccache-like gcc "* ]] && fail "CC is obeyed: $show_cc"

# ./configure CC=vdcc and make CC=vdcc export CC=vdcc: the wrapper must not
# call itself (it used to, forever).  Bounded, so a regression fails.
cat >"$TMP/conftest.c" <<'EOC'
int main(void) { return 0; }
EOC
if CC="$VDCC" timeout 20 "$VDCC" -c "$TMP/conftest.c" -o "$TMP/conftest.o" 2>"$TMP/err"; then
	echo "ok: CC=vdcc vdcc -c conftest.c"
else
	fail "CC=vdcc vdcc -c conftest.c (exit $?): $(cat "$TMP/err")"
fi
if VIADUCT_CC="$VDCC" timeout 20 "$VDCC" -c "$TMP/conftest.c" -o "$TMP/conftest.o" 2>"$TMP/err"; then
	fail "VIADUCT_CC=vdcc was accepted"
else
	has "VIADUCT_CC=vdcc refused" "$(cat "$TMP/err")" "VIADUCT_CC" "viaduct wrapper"
fi

# The Open MPI and MPICH wrappers' query options.
info() { "$VDCC" "$@" 2>&1 || fail "vdcc $*: exit $?"; }
has "-showme:compile" "$(info -showme:compile)" "-I$SRC/include"
has "-showme:link" "$(info -showme:link)" "-lviaduct_mpi" "-lviaduct" "-Wl,-rpath,"
[[ $(info -showme:compile) == *-l* ]] && fail "-showme:compile has libraries"
[[ $(info -showme:link) == *-I* ]] && fail "-showme:link has include flags"
has "-compile-info" "$(info -compile-info)" "cc" "-I$SRC/include"
has "-link-info" "$(info -link-info)" "cc" "-lviaduct_mpi"
has "-showme:incdirs" "$(info -showme:incdirs)" "$SRC/include"
has "-showme:libdirs" "$(info -showme:libdirs)" "$B/src"
[ "$(info -showme:libs)" = "viaduct_mpi viaduct pthread m" ] ||
	fail "-showme:libs: $(info -showme:libs)"
has "--version" "$(info --version)" "viaduct" "MPI compiler wrapper"
has "--help" "$(info --help)" "-showme:link" "VIADUCT_CC"
"$VDCC" -showme:bogus >/dev/null 2>&1 && fail "vdcc -showme:bogus succeeded"
# Refused by the wrapper itself, not by the compiler.
for bogus in --showme:bogus "x.c -showme:bogus" "-O2 --showme:bogus"; do
	# shellcheck disable=SC2086 # several arguments
	err=$("$VDCC" $bogus 2>&1) && fail "vdcc $bogus succeeded"
	has "vdcc $bogus" "$err" "unknown option '${bogus##* }'"
done
[ "$(VIADUCT_CC="ccache-like gcc" "$VDCC" -showme:command 2>&1)" = "ccache-like gcc" ] ||
	fail "-showme:command: $(VIADUCT_CC="ccache-like gcc" "$VDCC" -showme:command 2>&1)"
[[ $(info -compile-info) == "$(info -showme:command) -"* ]] ||
	fail "-showme:command is not -compile-info's compiler: $(info -showme:command)"

# The other spellings: Open MPI's manual writes --showme and --showme:*,
# MPICH takes -compile_info and -link_info.  Each answers as its form above
# does, and so does every query after other arguments (Open MPI's and
# MPICH's wrappers answer a query wherever it is; build systems put their
# own flags first) -- none of them reaches the compiler.
same() {
	local what=$1 want=$2
	shift 2
	local got
	got=$("$VDCC" "$@" 2>&1) || { fail "vdcc $*: exit $?: $got"; return; }
	[ "$got" = "$want" ] || fail "vdcc $* ($what): '$got', want '$want'"
}
for q in -showme:compile -showme:link -showme:command -showme:incdirs \
	-showme:libdirs -showme:libs -showme:version -showme:help \
	-compile-info -link-info; do
	want=$(info "$q")
	[ -n "$want" ] || fail "vdcc $q printed nothing"
	same "later" "$want" -O2 x.c "$q"
	same "later" "$want" x.c -o x -Wall "$q" -c
	case $q in
	-showme:*)
		same "Open MPI's spelling" "$want" "-$q"
		same "Open MPI's spelling, later" "$want" x.c -o x "-$q" ;;
	-*-info)
		same "MPICH's spelling" "$want" "${q/-info/_info}"
		same "MPICH's spelling, later" "$want" x.c -O2 "${q/-info/_info}" ;;
	esac
done
same "like --version" "$(info --version)" -showme:version
same "like --help" "$(info --help)" -showme:help
same "like -show" "$show" --showme prog.c -o prog -O2
same "like -show" "$show" prog.c -o prog --showme -O2
same "the first query answers" "$(info -showme:libs)" x.c -showme:libs -showme:compile
same "a query beats -show" "$(info -showme:libdirs)" -show x.c -showme:libdirs
# First only: later on the line, --version and --help are the compiler's.
has "x.c --version" "$("$VDCC" -show x.c --version)" "x.c --version" "-lviaduct_mpi"
has "x.c --help" "$("$VDCC" -show x.c --help)" "x.c --help" "-lviaduct_mpi"
has "vdcxx -show" "$("$VDCXX" -show x.cc)" "c++ " "x.cc" "-lviaduct_mpi"
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

# C++: mpi.h compiles as C++ and a C++ program links and runs.
cat >"$TMP/hello.cc" <<'EOC'
#include <mpi.h>
#include <iostream>

int main(int argc, char **argv)
{
	int rank, size, sum = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	std::cout << "hello++ " << rank << "/" << size << " sum " << sum << std::endl;
	MPI_Finalize();
	return 0;
}
EOC
if ! command -v c++ >/dev/null; then
	echo "note: no C++ compiler; vdcxx was not tested"
elif "$VDCXX" -Wall -Werror "$TMP/hello.cc" -o "$TMP/hellocc" 2>"$TMP/err"; then
	out=$(env -u LD_LIBRARY_PATH timeout 30 "$VDRUN" -n 2 "$TMP/hellocc" 2>&1 | sort)
	[ "$out" = "$(printf 'hello++ 0/2 sum 1\nhello++ 1/2 sum 1')" ] &&
		echo "ok: vdcxx builds a C++ MPI program that runs on 2 ranks" ||
		fail "vdcxx program on 2 ranks: $out"
else
	fail "vdcxx hello.cc: $(cat "$TMP/err")"
fi

# Installed, then moved: the installed vdcc finds everything from where it is.
if cmake --install "$B" --prefix "$TMP/prefix1" >"$TMP/install.log" 2>&1; then
	mv "$TMP/prefix1" "$TMP/prefix2"
	show=$("$TMP/prefix2/bin/vdcc" -show hello.c)
	has "installed -show" "$show" "$TMP/prefix2/bin/../include/viaduct-mpi" &&
		[[ $show != *"$SRC"* ]] || fail "installed vdcc points into the source tree: $show"
	# mpi.h apart: -I$PREFIX/include (VIA programs) never finds it.
	[ -e "$TMP/prefix2/include/mpi.h" ] && fail "mpi.h installed in PREFIX/include"
	[ -e "$TMP/prefix2/include/viaduct-mpi/mpi.h" ] || fail "no PREFIX/include/viaduct-mpi/mpi.h"
	[ -x "$TMP/prefix2/bin/vdcxx" ] || fail "vdcxx not installed"
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
