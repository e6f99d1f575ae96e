#!/bin/bash
# SPDX-License-Identifier: MIT
# C++'s predefined datatypes (MPI_CXX_BOOL, MPI_CXX_{FLOAT,DOUBLE,
# LONG_DOUBLE}_COMPLEX): a C++ program built with vdcxx reduces bool and
# std::complex values with them on 2 and 3 ranks, and the types carry
# their standard names.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need env
VDCXX=$B/tools/vdcxx
command -v c++ >/dev/null || { echo "SKIP: no C++ compiler"; exit 77; }
TMP=$(mktemp -d /tmp/mpitest-cxx.XXXXXX)
trap 'rm -rf "$TMP" "$mt_log"' EXIT
cat >"$TMP/cxx.cc" <<'EOC'
#include <mpi.h>
#include <complex>
#include <cstdio>
#include <cstring>

static int failures;
#define CHECK(c) ((c) ? (void)0 : (void)(std::printf("FAIL line %d: %s\n", __LINE__, #c), failures++))

static void named(MPI_Datatype t, const char *want)
{
	char name[MPI_MAX_OBJECT_NAME];
	int len = 0, size = 0;

	CHECK(MPI_Type_get_name(t, name, &len) == MPI_SUCCESS && std::strcmp(name, want) == 0);
	CHECK(MPI_Type_size(t, &size) == MPI_SUCCESS);
	if (t == MPI_CXX_BOOL)
		CHECK(size == (int)sizeof(bool));
}

int main(int argc, char **argv)
{
	int rank, size;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	bool mine[2] = { rank == 0, true }, any[2], all[2];
	MPI_Allreduce(mine, any, 2, MPI_CXX_BOOL, MPI_LOR, MPI_COMM_WORLD);
	MPI_Allreduce(mine, all, 2, MPI_CXX_BOOL, MPI_LAND, MPI_COMM_WORLD);
	CHECK(any[0] && any[1] && all[0] == (size == 1) && all[1]);
	std::complex<double> z(rank, 1), zs;
	MPI_Allreduce(&z, &zs, 1, MPI_CXX_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD);
	CHECK(zs == std::complex<double>(size * (size - 1) / 2, size));
	std::complex<float> f(2, 0), fp;
	MPI_Allreduce(&f, &fp, 1, MPI_CXX_FLOAT_COMPLEX, MPI_PROD, MPI_COMM_WORLD);
	CHECK(fp == std::complex<float>((float)(1 << size), 0));
	std::complex<long double> l(1, rank), ls;
	MPI_Allreduce(&l, &ls, 1, MPI_CXX_LONG_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD);
	CHECK(ls == std::complex<long double>(size, size * (size - 1) / 2));
	named(MPI_CXX_BOOL, "MPI_CXX_BOOL");
	named(MPI_CXX_FLOAT_COMPLEX, "MPI_CXX_FLOAT_COMPLEX");
	named(MPI_CXX_DOUBLE_COMPLEX, "MPI_CXX_DOUBLE_COMPLEX");
	named(MPI_CXX_LONG_DOUBLE_COMPLEX, "MPI_CXX_LONG_DOUBLE_COMPLEX");
	int total = 0;
	MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		std::printf("cxx types: %d ranks: %s\n", size, total ? "FAIL" : "ok");
	MPI_Finalize();
	return total != 0;
}
EOC
if ! "$VDCXX" -Wall -Werror "$TMP/cxx.cc" -o "$TMP/cxx" 2>"$mt_log"; then
	mt_bad "vdcxx builds a program that uses the MPI_CXX_* types"
	sed 's/^/     | /' "$mt_log" | tail -8
	mt_done
	exit 1
fi
for n in 1 2 3; do
	if timeout "$MT_TIMEOUT" "$VDRUN" -n "$n" "$TMP/cxx" >"$mt_log" 2>&1 &&
		grep -q "cxx types: $n ranks: ok" "$mt_log"; then
		mt_ok "MPI_CXX_* types on $n rank(s)"
	else
		mt_bad "MPI_CXX_* types on $n rank(s)"
		sed 's/^/     | /' "$mt_log" | tail -8
	fi
done
mt_done
