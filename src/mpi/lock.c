/* SPDX-License-Identifier: MIT */
/*
 * MPI_THREAD_MULTIPLE: one lock around the library.
 *
 * Every PMPI_ function opens with VD_API_GUARD(), which takes the lock on
 * entry and -- through the compiler's cleanup attribute -- drops it on
 * every way out, so no return path can leak it.  Calls nest (MPI_Sendrecv
 * calls PMPI_Irecv; a user reduction function may call MPI), so the lock
 * counts its depth per thread.  Below MPI_THREAD_MULTIPLE nothing is
 * taken: one predictable branch per call.
 *
 * A blocking wait must not sleep holding the lock: the thread that is to
 * sleep in the completion queues becomes the one sleeper and lets go of
 * the lock for that time (vd_lock_suspend/resume); any other thread that
 * would block waits on a condition variable instead, which every pass of
 * progress that completed something broadcasts.  Why one coarse lock and
 * not fine-grained ones: the engine's state (requests, match queues,
 * connections, communicators, datatypes, windows) is touched together on
 * every path, and a lock per structure would be taken several times per
 * message; contended threads mostly wait for the wire anyway.
 */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "mpi_internal.h"

static pthread_mutex_t big = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t progressed;
static bool cond_ready;
static _Thread_local int depth;         /* this thread's nesting */
static bool sleeper;                    /* a thread sleeps in the CQs */

static bool multiple(void)
{
	return __atomic_load_n(&vd_mpi.thread_level, __ATOMIC_RELAXED) == MPI_THREAD_MULTIPLE;
}

int vd_lock_take(void)
{
	if (depth++ == 0)
		pthread_mutex_lock(&big);
	return 1;
}

void vd_lock_drop(void)
{
	if (--depth == 0)
		pthread_mutex_unlock(&big);
}

/* MPI_Init_thread, before any other thread may call: the condition
 * variable waits on CLOCK_MONOTONIC. */
void vd_lock_init(void)
{
	pthread_condattr_t a;

	if (cond_ready)
		return;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&progressed, &a);
	pthread_condattr_destroy(&a);
	cond_ready = true;
}

/* Let go of the lock entirely for a wait that touches no state of the
 * library (a node-local collective waiting in its segment, coll_shm.c),
 * so other threads run their own communicators' operations meanwhile.
 * Returns what vd_lock_reacquire needs; 0: the lock was not held. */
int vd_lock_release(void)
{
	int saved = depth;

	if (!multiple() || saved == 0)
		return 0;
	depth = 0;
	pthread_mutex_unlock(&big);
	return saved;
}

void vd_lock_reacquire(int saved)
{
	if (!saved)
		return;
	pthread_mutex_lock(&big);
	depth = saved;
}

/* Whether the caller may sleep in the CQs: true makes it the sleeper,
 * with the lock let go until vd_lock_sleep_end. */
bool vd_lock_sleep_begin(int *saved)
{
	*saved = 0;
	if (!multiple() || depth == 0)
		return true;
	if (sleeper)
		return false;
	sleeper = true;
	*saved = vd_lock_release();
	return true;
}

void vd_lock_sleep_end(int saved)
{
	if (!saved)
		return;
	vd_lock_reacquire(saved);
	sleeper = false;
	pthread_cond_broadcast(&progressed);
}

/* Another thread sleeps in the CQs: wait for it or for any progress, at
 * most ms milliseconds. */
void vd_lock_wait_progress(unsigned ms)
{
	struct timespec until;
	int saved = depth;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += (long)ms * 1000000L;
	until.tv_sec += until.tv_nsec / 1000000000L;
	until.tv_nsec %= 1000000000L;
	depth = 0;
	(void)pthread_cond_timedwait(&progressed, &big, &until);
	depth = saved;
}

/* Progress completed something: threads waiting for it look again. */
void vd_lock_broadcast(void)
{
	if (cond_ready)
		pthread_cond_broadcast(&progressed);
}
