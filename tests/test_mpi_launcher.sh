#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Never a silent singleton: a program started by a launcher viaduct does
# not speak to (srun --mpi=none with several tasks, a PMI launcher on a
# TCP port) fails in MPI_Init with a message naming what it saw and what
# to use -- it used to run as N copies of "rank 0 of 1" and exit 0.  A
# PMIx launcher (srun --mpi=pmix, Open MPI's mpirun) is served by the PMIx
# client (test_mpi_openmpi runs real ones); faked here, its server cannot
# be reached, and MPI_Init fails saying so -- or, in a build without the
# client, refuses it by name.  The launchers' variables are set as they
# set them; a real singleton (none of them, or a launcher with one task)
# still runs as rank 0 of 1.
#
# Usage: test_mpi_launcher.sh BUILD_DIR       (exit 0 pass, 1 fail, 77 skip)
set -u
B=${1:-${VIADUCT_BUILD:-}}
PROG=$B/examples/mpi_hello
[ -x "$PROG" ] || { echo "SKIP: $PROG not built"; exit 77; }
fails=0

# refused LABEL WORD VAR=VALUE...: MPI_Init fails, naming WORD and vdrun.
refused() {
	local label=$1 word=$2 out rc
	shift 2
	out=$(env -u PMI_FD "$@" timeout 30 "$PROG" 2>&1)
	rc=$?
	if [ "$rc" -eq 0 ] || [[ $out == *"hello from rank 0 of 1"* ]] ||
		[[ $out != *"$word"* ]] || [[ $out != *"vdrun -n N"* ]]; then
		echo "FAIL: $label: exit $rc: $out"
		fails=$((fails + 1))
	else
		echo "ok: $label refused: ${out%%$'\n'*}"
	fi
}

# pmix_fails LABEL VAR=VALUE...: MPI_Init fails, naming PMIx (the
# client: server unreachable) or the launcher (no client).
pmix_fails() {
	local label=$1 out rc
	shift
	out=$(env -u PMI_FD "$@" timeout 30 "$PROG" 2>&1)
	rc=$?
	if [ "$rc" -eq 0 ] || [[ $out == *"hello from rank 0 of 1"* ]] ||
		{ [[ $out != *"PMIx"* ]] && [[ $out != *"Open MPI"* ]]; }; then
		echo "FAIL: $label: exit $rc: $out"
		fails=$((fails + 1))
	else
		echo "ok: $label fails: ${out%%$'\n'*}"
	fi
}

# singleton LABEL VAR=VALUE...: runs as rank 0 of 1.
singleton() {
	local label=$1 out rc
	shift
	out=$(env -u PMI_FD "$@" timeout 30 "$PROG" 2>&1)
	rc=$?
	if [ "$rc" -ne 0 ] || [[ $out != *"hello from rank 0 of 1"* ]]; then
		echo "FAIL: $label: exit $rc: $out"
		fails=$((fails + 1))
	else
		echo "ok: $label runs as a singleton"
	fi
}

pmix_fails "Open MPI mpirun -n 4" OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_RANK=2 \
	PMIX_NAMESPACE=prterun-vm-1234@1 PMIX_RANK=2
pmix_fails "srun --mpi=pmix" PMIX_NAMESPACE=slurm.pmix.42.0 PMIX_RANK=1 \
	"PMIX_SERVER_URI41=pmix-server.1;tcp4://127.0.0.1:4711" SLURM_STEP_NUM_TASKS=4 SLURM_PROCID=1
refused "srun --mpi=none -n 4" "srun with 4 tasks" SLURM_JOB_ID=42 SLURM_STEP_ID=0 \
	SLURM_STEP_NUM_TASKS=4 SLURM_NTASKS=4 SLURM_PROCID=3
refused "PMI on a TCP port" "PMI_PORT" PMI_PORT=127.0.0.1:4711 PMI_RANK=1 PMI_SIZE=2
refused "PMI_SIZE without PMI_FD" "PMI_SIZE=3" PMI_RANK=0 PMI_SIZE=3

singleton "no launcher"
singleton "srun -n 1" SLURM_JOB_ID=42 SLURM_STEP_ID=0 SLURM_STEP_NUM_TASKS=1 SLURM_PROCID=0
singleton "mpirun -n 1 (size 1)" OMPI_COMM_WORLD_SIZE=1
singleton "an sbatch script (no step)" SLURM_JOB_ID=42 SLURM_NTASKS=4

[ "$fails" -eq 0 ]
