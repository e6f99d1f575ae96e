#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# tools/check.sh: what `make test` runs once `make deps` is done.
#
#   release  build/       -O2 -g, every test
#   asan     build-asan/  ASan + UBSan, every test
#   tsan     build-tsan/  TSan, every test, run without ASLR (see below)
#   install  `make install` into a temporary prefix, then a pkg-config
#            consumer (shared and static) and a CMake consumer
#
# Every step runs even when an earlier one failed; the summary at the end
# lists each step, and the exit status is 1 if any step failed.  A test
# configuration fails when ctest fails, reports no test, or every test
# skipped.
#
# Environment: JOBS (default 2), CMAKE, CTEST, MAKE, KEEP_TMP=1 (keep the
# install prefix and consumer builds; otherwise they are removed on every
# exit, also after a failure or Ctrl-C).
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1

JOBS=${JOBS:-2}
CMAKE=${CMAKE:-cmake}
CTEST=${CTEST:-ctest}
MAKE=${MAKE:-make}

summary=()
failures=0
total_passed=0
total_failed=0
total_skipped=0

say() {
	printf '\n==> %s\n' "$*"
}

# record PASS|FAIL TEXT
record() {
	summary+=("$(printf '%-4s %s' "$1" "$2")")
	if [ "$1" = FAIL ]; then
		failures=$((failures + 1))
		printf '*** FAILED: %s\n' "$2" >&2
	fi
}

# ---- test configurations ------------------------------------------------

# configure_and_build DIR CMAKE-ARGS...
configure_and_build() {
	local dir=$1
	shift
	"$CMAKE" -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DCMAKE_INSTALL_LIBDIR=lib "$@" &&
		"$CMAKE" --build "$dir" -j "$JOBS"
}

# TSan (gcc 12) maps its shadow at fixed addresses and aborts with
# "unexpected memory mapping" when the kernel randomises mmap with more
# than 28 bits (vm.mmap_rnd_bits = 32 on many 6.x kernels).  Running the
# tests with ASLR off (personality inherited by every child) avoids it.
tsan_prefix() {
	if setarch "$(uname -m)" -R true 2>/dev/null; then
		echo setarch "$(uname -m)" -R
	else
		echo "check: setarch -R unavailable; TSan may fail if vm.mmap_rnd_bits > 28" >&2
	fi
}

# Count passed/failed/skipped from a ctest log into the globals
# c_total, c_failed, c_skipped.
ctest_counts() {
	local log=$1 line
	line=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1)
	c_total=$(sed -nE 's/.* out of ([0-9]+).*/\1/p' <<<"$line")
	c_failed=$(sed -nE 's/.*, ([0-9]+) tests? failed.*/\1/p' <<<"$line")
	c_skipped=$(grep -cE '^[[:space:]]*[0-9]+ - .* \(Skipped\)$' "$log")
	c_total=${c_total:-0}
	c_failed=${c_failed:-0}
}

# test_config NAME DIR PREFIX-COMMAND CMAKE-ARGS...
test_config() {
	local name=$1 dir=$2 prefix=$3 rc passed
	shift 3
	say "$name: configure and build in $dir/"
	if ! configure_and_build "$dir" "$@"; then
		record FAIL "$name: build"
		return
	fi
	say "$name: ctest${prefix:+ (under $prefix)}"
	# shellcheck disable=SC2086 # prefix is a command line, split on purpose
	$prefix "$CTEST" --test-dir "$dir" -j "$JOBS" --output-on-failure \
		--no-tests=error 2>&1 | tee "$dir/ctest.log"
	rc=${PIPESTATUS[0]}
	ctest_counts "$dir/ctest.log"
	passed=$((c_total - c_failed - c_skipped))
	total_passed=$((total_passed + passed))
	total_failed=$((total_failed + c_failed))
	total_skipped=$((total_skipped + c_skipped))
	local counts="$passed passed, $c_failed failed, $c_skipped skipped"
	if [ "$c_total" -eq 0 ]; then
		record FAIL "$name: no test ran (ctest exit $rc)"
	elif [ "$rc" -ne 0 ]; then
		record FAIL "$name: ctest exit $rc ($counts)"
		failure_digest "$dir/ctest.log"
	elif [ "$passed" -eq 0 ]; then
		record FAIL "$name: every test skipped ($counts)"
	else
		record PASS "$name: $counts"
	fi
}

# The telling lines of each failed test's output (ctest prints it after
# the test's ***Failed line), into the summary: the summary is what a
# reader of a long CI log sees first.
failure_digest() {
	local line
	while IFS= read -r line; do
		summary+=("     | $line")
	done < <(awk '
		/Test +#[0-9]+: .*\*\*\*(Failed|Timeout|Exception)/ { name = $4; grab = 1; n = 0; print "failed: " name; next }
		/^ *Start +[0-9]+: / || /Test +#[0-9]+: .*Passed/ { grab = 0 }
		grab && n < 8 && /FAIL|[Ff]ailed|ThreadSanitizer|AddressSanitizer|LeakSanitizer|runtime error|SUMMARY|[Tt]imeout|not seen|check failed/ { print "  " substr($0, 1, 160); n++ }
	' "$1" | head -n 40)
}

# ---- install smoke test -------------------------------------------------

# The Fortran bindings' files, where a Fortran compiler built them.
fortran_install_files() {
	command -v gfortran >/dev/null 2>&1 || return 0
	echo lib/libviaduct_mpifort.so include/viaduct-mpi/mpif.h \
		include/viaduct-mpi/mpi.mod bin/vdfort bin/vdf77 bin/vdf90
}

# The files `make install` promises (docs/build.md).
check_install_tree() {
	local prefix=$1 f missing=0
	for f in bin/vdinfo include/viaduct/viaduct.h include/viaduct/lmm.h \
		include/vipl.h lib/libvipl.so lib/libvipl.a \
		include/viaduct-mpi/mpi.h lib/libviaduct_mpi.so lib/libviaduct_mpi.a \
		lib/pkgconfig/viaduct-mpi.pc bin/vdrun bin/vdcc bin/vdcxx \
		share/man/man1/vdrun.1 share/man/man1/vdcc.1 share/man/man1/vdcxx.1 \
		share/man/man1/vdinfo.1 share/man/man3/vipl.3 share/man/man3/viaduct-lmm.3 \
		share/man/man3/VipOpenNic.3 share/man/man3/VipCQWait.3 \
		lib/libviaduct.so lib/libviaduct.so.0 lib/libviaduct.a \
		lib/pkgconfig/viaduct.pc lib/cmake/viaduct/viaduct-config.cmake \
		lib/cmake/viaduct/viaduct-config-version.cmake $(fortran_install_files); do
		if [ ! -e "$prefix/$f" ]; then
			echo "missing from the install: $f" >&2
			missing=1
		fi
	done
	# The pages render, also through the per-call links.
	if ! MANPATH="$prefix/share/man" man -w VipPostSend >/dev/null 2>&1; then
		echo "man VipPostSend does not find its page under $prefix/share/man" >&2
		missing=1
	fi
	# mpi.h apart, so -I$PREFIX/include never hides another MPI's mpi.h.
	if [ -e "$prefix/include/mpi.h" ]; then
		echo "mpi.h must not be installed in $prefix/include" >&2
		missing=1
	fi
	return $missing
}

# An MPI program built three ways against the install -- installed vdcc,
# pkg-config viaduct-mpi, and the CMake consumer (cmake_consumer) -- runs
# on 2 ranks under the installed vdrun.
mpi_run2() {
	local prefix=$1 prog=$2 out
	out=$(LD_LIBRARY_PATH="$prefix/lib" timeout 60 "$prefix/bin/vdrun" -n 2 "$prog" 2>&1) &&
		grep -q "rank 1 of 2" <<<"$out" || { echo "$out" >&2; return 1; }
}

mpi_consumers() {
	local prefix=$1 tmp=$2 flags
	env -u LD_LIBRARY_PATH "$prefix/bin/vdcc" -Wall -Werror examples/mpi_hello.c \
		-o "$tmp/mpi_hello_vdcc" && mpi_run2 "$prefix" "$tmp/mpi_hello_vdcc" || return 1
	if [ -n "$(fortran_install_files)" ]; then
		env -u LD_LIBRARY_PATH "$prefix/bin/vdfort" examples/mpi_hello.f90 \
			-o "$tmp/mpi_hello_vdfort" && mpi_run2 "$prefix" "$tmp/mpi_hello_vdfort" ||
			return 1
	fi
	flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs viaduct-mpi) || return 1
	echo "pkg-config --cflags --libs viaduct-mpi: $flags"
	# shellcheck disable=SC2086 # flags are a list of options
	cc -std=c11 -Wall -Wextra -Werror examples/mpi_hello.c $flags -o "$tmp/mpi_hello_pc" &&
		mpi_run2 "$prefix" "$tmp/mpi_hello_pc" &&
		mpi_run2 "$prefix" "$tmp/cmake/mpi_hello" &&
		mpi_run2 "$prefix" "$tmp/cmake/mpi_hello_static"
}

# Build examples/lmm_hello.c with the flags pkg-config gives, as a user
# would (strict C11: the public headers must not need GNU extensions).
pkgconfig_consumer() {
	local prefix=$1 tmp=$2 flags
	flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs viaduct) || return 1
	echo "pkg-config --cflags --libs viaduct: $flags"
	# shellcheck disable=SC2086 # flags are a list of options
	cc -std=c11 -Wall -Wextra -Werror examples/lmm_hello.c $flags \
		-o "$tmp/lmm_hello" &&
		LD_LIBRARY_PATH="$prefix/lib" "$tmp/lmm_hello"
}

static_consumer() {
	local prefix=$1 tmp=$2 cflags
	cflags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags viaduct) || return 1
	# shellcheck disable=SC2086
	cc -std=c11 -Wall -Wextra -Werror examples/lmm_hello.c $cflags \
		"$prefix/lib/libviaduct.a" -pthread -o "$tmp/lmm_hello_static" &&
		"$tmp/lmm_hello_static"
}

# A classic VIA program (examples/vipl_pingpong.c: server and client in
# two processes) built the two ways VIA programs are built: with the flags
# pkg-config gives, and with plain -I/-L/-lvipl as M-VIA and cLAN programs
# did.  Each run is bounded, so a hung connection fails the step.
vipl_consumer() {
	local prefix=$1 tmp=$2 how=$3 flags
	if [ "$how" = pkg-config ]; then
		flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs viaduct) || return 1
	else
		flags="-I$prefix/include -L$prefix/lib -lvipl"
	fi
	echo "cc examples/vipl_pingpong.c $flags"
	# shellcheck disable=SC2086 # flags are a list of options
	cc -std=c11 -Wall -Wextra -Werror examples/vipl_pingpong.c $flags \
		-o "$tmp/vipl_pingpong_$how" &&
		LD_LIBRARY_PATH="$prefix/lib" timeout 120 "$tmp/vipl_pingpong_$how"
}

# examples/CMakeLists.txt doubles as a find_package(viaduct) consumer.
cmake_consumer() {
	local prefix=$1 tmp=$2
	"$CMAKE" -S examples -B "$tmp/cmake" -G Ninja \
		-DCMAKE_PREFIX_PATH="$prefix" &&
		"$CMAKE" --build "$tmp/cmake" &&
		LD_LIBRARY_PATH="$prefix/lib" "$tmp/cmake/lmm_hello"
}

# Temporary folders of this run, removed on every exit (KEEP_TMP=1 keeps
# them), also after a failure or an interrupt.
tmp_dirs=()
cleanup() {
	[ ${#tmp_dirs[@]} -gt 0 ] || return 0
	if [ "${KEEP_TMP:-0}" = 1 ]; then
		echo "kept (KEEP_TMP=1): ${tmp_dirs[*]}"
	else
		rm -rf "${tmp_dirs[@]}"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

install_smoke() {
	local prefix tmp
	prefix=$(mktemp -d /tmp/viaduct-prefix.XXXXXX)
	tmp=$(mktemp -d /tmp/viaduct-consumer.XXXXXX)
	tmp_dirs+=("$prefix" "$tmp")
	say "install: make install PREFIX=$prefix"
	if "$MAKE" --no-print-directory install PREFIX="$prefix" &&
		check_install_tree "$prefix"; then
		record PASS "install: make install PREFIX=... (all files present)"
	else
		record FAIL "install: make install PREFIX=$prefix"
		return
	fi
	say "install: pkg-config consumer (shared)"
	if pkgconfig_consumer "$prefix" "$tmp"; then
		record PASS "install: pkg-config consumer (shared)"
	else
		record FAIL "install: pkg-config consumer (shared)"
	fi
	say "install: pkg-config consumer (static)"
	if static_consumer "$prefix" "$tmp"; then
		record PASS "install: pkg-config consumer (static)"
	else
		record FAIL "install: pkg-config consumer (static)"
	fi
	local how
	for how in pkg-config lvipl; do
		say "install: VIPL consumer examples/vipl_pingpong.c ($how)"
		if vipl_consumer "$prefix" "$tmp" "$how"; then
			record PASS "install: VIPL consumer ($how)"
		else
			record FAIL "install: VIPL consumer ($how)"
		fi
	done
	say "install: CMake consumer (find_package(viaduct), viaduct::viaduct)"
	if cmake_consumer "$prefix" "$tmp"; then
		record PASS "install: CMake consumer"
	else
		record FAIL "install: CMake consumer"
	fi
	say "install: MPI consumers (vdcc, pkg-config viaduct-mpi, CMake viaduct::viaduct_mpi and viaduct_mpi_static) under vdrun -n 2"
	if mpi_consumers "$prefix" "$tmp"; then
		record PASS "install: MPI consumers"
	else
		record FAIL "install: MPI consumers"
	fi
	say "install: installed vdinfo (finds its library through RPATH)"
	if env -u LD_LIBRARY_PATH "$prefix/bin/vdinfo"; then
		record PASS "install: vdinfo runs"
	else
		record FAIL "install: vdinfo runs"
	fi
}

print_summary() {
	local line
	printf '\n==================== make test summary ====================\n'
	for line in "${summary[@]}"; do
		printf '%s\n' "$line"
	done
	printf '============================================================\n'
}

main() {
	local start=$SECONDS
	test_config release build "" -DVIADUCT_SANITIZE=
	test_config asan build-asan "" -DVIADUCT_SANITIZE=address
	test_config tsan build-tsan "$(tsan_prefix)" -DVIADUCT_SANITIZE=thread
	install_smoke
	print_summary
	echo "make test: $((SECONDS - start)) s, $failures failed step(s)"
	# Last, in the plain form CI log readers look for.
	printf 'tests: %d passed, %d failed, %d skipped\n' \
		"$total_passed" "$total_failed" "$total_skipped"
	[ "$failures" -eq 0 ]
}

if [ "${1:-}" = --install-only ]; then  # the install step alone
	install_smoke
	print_summary
	[ "$failures" -eq 0 ]
	exit
fi
main "$@"
