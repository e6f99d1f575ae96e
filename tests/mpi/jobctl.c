/* SPDX-License-Identifier: MIT */
/*
 * Job control: argv[1] says how the last rank fails once everyone is past
 * a barrier -- "exit3" (exit(3) without finalizing), "kill" (SIGKILL to
 * itself), "abort" (MPI_Abort(MPI_COMM_WORLD, 5)) -- while the other
 * ranks block in a receive that never completes; "leave" (exit(0) without
 * finalizing) while the others are in MPI_Finalize; "ok" finishes
 * normally.
 * The failing rank prints "FAILTIME <seconds>" (CLOCK_REALTIME) so the
 * runner can measure how fast the launcher stops the job.
 */
#include <stdbool.h>

#include "mpitest.h"

/* The "exit3" rank leaves without MPI_Finalize on purpose: LeakSanitizer
 * (ASan builds) would turn its exit status 3 into its own. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
	return 1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "ok";
	int x;

	mt_init(&argc, &argv, 20);
	MPI_Barrier(MPI_COMM_WORLD);
	if (!strcmp(mode, "ok"))
		return mt_finish("jobctl ok");
	bool leave = !strcmp(mode, "leave");

	if (mt_rank == mt_size - 1) {
		struct timespec ts;

		mt_sleep_ms(leave ? 300 : 100);         /* the others are waiting by now */
		clock_gettime(CLOCK_REALTIME, &ts);
		printf("FAILTIME %ld.%09ld\n", (long)ts.tv_sec, ts.tv_nsec);
		fflush(stdout);
		if (!strcmp(mode, "exit3"))
			exit(3);
		if (leave)
			exit(0);
		if (!strcmp(mode, "kill"))
			raise(SIGKILL);
		MPI_Abort(MPI_COMM_WORLD, 5);
		return 99;              /* MPI_Abort returned */
	}
	if (leave) {
		/* Never completes: one rank will not come. */
		MPI_Finalize();
		fprintf(stderr, "rank %d: MPI_Finalize returned without rank %d\n", mt_rank,
			mt_size - 1);
		return 97;
	}
	/* Never satisfied: only the launcher can end this rank. */
	MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	fprintf(stderr, "rank %d: impossible receive completed\n", mt_rank);
	return 98;
}
