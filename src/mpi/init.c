/* SPDX-License-Identifier: MIT */
/*
 * MPI_Init / MPI_Finalize: the order in which the layers come up (PMI,
 * datatypes, communicators, the VIPL wiring) and go down.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "engine.h"


static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void init_failed(const char *what, int err)
{
	char msg[160];

	snprintf(msg, sizeof(msg), "viaduct MPI: rank %d: MPI_Init: %s failed: %s",
		 vd_mpi.rank, what, strerror(err < 0 ? -err : err));
	fprintf(stderr, "%s\n", msg);
	vd_pmi_abort(MPI_ERR_OTHER, msg);
}

/* The thread that initialised MPI: MPI_Is_thread_main. */
static pthread_t main_thread;

#pragma weak MPI_Init_thread = PMPI_Init_thread
int PMPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	VD_API_GUARD();
	int err;

	(void)argc;
	(void)argv;
	if (vd_mpi.phase != VD_MPI_BEFORE)
		return vd_mpi_raise_msg(MPI_COMM_WORLD, MPI_ERR_OTHER, "MPI_Init",
					vd_mpi.phase == VD_MPI_RUNNING ?
					"MPI is already initialised (once per process)" :
					"MPI is finalised and cannot be initialised again");
	if (viaduct_params_check())
		init_failed("checking the VIADUCT_* environment variables", -EINVAL);
	err = vd_pmi_init(&vd_mpi.rank, &vd_mpi.size, vd_mpi.jobid, sizeof(vd_mpi.jobid));
	if (err)
		init_failed("the PMI handshake with the launcher", err);
	/* Every level is provided as asked; MULTIPLE turns on the lock
	 * (lock.c), which costs the other levels nothing. */
	if (required > MPI_THREAD_MULTIPLE)
		required = MPI_THREAD_MULTIPLE;
	if (required < MPI_THREAD_SINGLE)
		required = MPI_THREAD_SINGLE;
	if (required == MPI_THREAD_MULTIPLE)
		vd_lock_init();
	main_thread = pthread_self();
	/* Read by vd_lock_enter on every call; no other thread may call
	 * before MPI_Init_thread returns, so relaxed is enough. */
	__atomic_store_n(&vd_mpi.thread_level, required, __ATOMIC_RELAXED);
	if (provided)
		*provided = required;
	if ((err = vd_dtype_init()) || (err = vd_comm_init()))
		init_failed("setting up datatypes and communicators", err);
	__atomic_store_n(&vd_mpi.phase, VD_MPI_RUNNING, __ATOMIC_RELEASE);
	err = vd_wire_init();
	if (err)
		init_failed("connecting the ranks through VIPL", err);
	err = vd_tune_init();
	if (err)
		init_failed("measuring the protocols inside this host", err);
	vd_mpi.wtime0 = now();
	return MPI_SUCCESS;
}

#pragma weak MPI_Init = PMPI_Init
int PMPI_Init(int *argc, char ***argv)
{
	VD_API_GUARD();
	return PMPI_Init_thread(argc, argv, MPI_THREAD_SINGLE, NULL);
}

#pragma weak MPI_Initialized = PMPI_Initialized
int PMPI_Initialized(int *flag)
{
	VD_API_GUARD();
	if (!flag)
		return MPI_ERR_ARG;
	*flag = vd_mpi.phase != VD_MPI_BEFORE;
	return MPI_SUCCESS;
}

#pragma weak MPI_Finalized = PMPI_Finalized
int PMPI_Finalized(int *flag)
{
	VD_API_GUARD();
	if (!flag)
		return MPI_ERR_ARG;
	*flag = vd_mpi.phase == VD_MPI_AFTER;
	return MPI_SUCCESS;
}

#pragma weak MPI_Query_thread = PMPI_Query_thread
int PMPI_Query_thread(int *provided)
{
	VD_API_GUARD();
	VD_MPI_CHECK_RUNNING("MPI_Query_thread");
	if (!provided)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Query_thread");
	*provided = vd_mpi.thread_level;
	return MPI_SUCCESS;
}

#pragma weak MPI_Is_thread_main = PMPI_Is_thread_main
int PMPI_Is_thread_main(int *flag)
{
	VD_API_GUARD();
	VD_MPI_CHECK_RUNNING("MPI_Is_thread_main");
	if (!flag)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Is_thread_main");
	*flag = pthread_equal(pthread_self(), main_thread) != 0;
	return MPI_SUCCESS;
}

/* Before anyone may leave, each rank tells both its neighbours in WORLD
 * that it has come to MPI_Finalize and waits to hear it from both.  A
 * rank that died, or left without MPI_Finalize, is then awaited by two
 * ranks that connected to it themselves (or were connected already) and
 * are still running: its exit breaks their connection, or their connect
 * fails, and the job ends naming it (wire.c) under any launcher -- the
 * PMI fence that follows would wait for it for good under a launcher
 * that does not notice.  Two connections a rank at most, made lazily as
 * any others.  0, or -EIO after a failure the caller ends the job for. */
static int finalize_neighbours(void)
{
	enum { TAG_FINALIZE = 2 };      /* tune.c's messages carry 1 */
	struct vd_comm *world = vd_comm_get(MPI_COMM_WORLD);
	int n = vd_mpi.size, me = vd_mpi.rank;
	int peer[2] = { (me + n - 1) % n, (me + 1) % n };
	int np = n > 2 ? 2 : n - 1;     /* two ranks: one neighbour */
	MPI_Request rq[4];
	char in[2], out = 0;

	for (int i = 0; i < np; i++)
		if (vd_irecv(&in[i], 0, MPI_BYTE, peer[i], TAG_FINALIZE, world, VD_CTX_FINALIZE,
			     &rq[i]) ||
		    vd_isend(&out, 0, MPI_BYTE, peer[i], TAG_FINALIZE, world, VD_CTX_FINALIZE,
			     VD_SEND_STD, &rq[np + i]))
			return -EIO;
	for (int i = 0; i < 2 * np; i++)
		if (vd_wait(&rq[i], MPI_STATUS_IGNORE) != MPI_SUCCESS)
			return -EIO;
	return 0;
}

#pragma weak MPI_Finalize = PMPI_Finalize
int PMPI_Finalize(void)
{
	VD_API_GUARD();
	VD_MPI_CHECK_RUNNING("MPI_Finalize");
	/* MPI_COMM_SELF goes first, as if freed, so its attributes' delete
	 * callbacks run while MPI still works (MPI-4.0 11.2.2). */
	vd_attr_delete_all(MPI_COMM_SELF, vd_comm_get(MPI_COMM_SELF));
	/* Everything this rank queued goes out before anyone disconnects. */
	vd_wire_flush();
	if (finalize_neighbours()) {
		static const char msg[] = "MPI_Finalize: could not meet the neighbouring ranks";

		fprintf(stderr, "viaduct MPI: rank %d: %s\n", vd_mpi.rank, msg);
		vd_pmi_abort(MPI_ERR_OTHER, msg);
	}
	/* From here peers may leave at any moment (the barrier does not
	 * release every rank at once): a lost connection is no error. */
	__atomic_store_n(&vd_mpi.phase, VD_MPI_AFTER, __ATOMIC_RELEASE);
	vd_pmi_fence();
	vd_regcache_flush();
	vd_mpi_mem_finalize();
	vd_wire_finalize();
	/* Requests first: persistent ones hold communicators and datatypes. */
	vd_proto_finalize();
	vd_req_finalize();
	vd_comm_finalize();
	vd_dtype_finalize();
	vd_pmi_finalize();
	return MPI_SUCCESS;
}

#pragma weak MPI_Abort = PMPI_Abort
int PMPI_Abort(MPI_Comm comm, int errorcode)
{
	VD_API_GUARD();
	char msg[64];

	(void)comm;
	snprintf(msg, sizeof(msg), "MPI_Abort(%d) called", errorcode);
	fprintf(stderr, "viaduct MPI: rank %d: %s\n", vd_mpi.rank, msg);
	vd_pmi_abort(errorcode, msg);
}
