/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: synchronisation of one-sided communication.
 *
 * Every wait here is for this rank's own operations (counted per target
 * by win_ops.c; an RDMA or an accumulate's answer means the data is in
 * place at the target) or for a control message, and it runs the
 * progress engine meanwhile -- which also serves other ranks' lock
 * requests and accumulates on this rank's windows.
 *
 *   fence      finish own operations, then a barrier: once every member
 *              has arrived, everything aimed at anyone is in place.
 *   PSCW       Win_post sends POST to each origin; Win_start waits for
 *              the POSTs of its targets; Win_complete finishes the
 *              operations and sends COMPLETE; Win_wait counts them.
 *   lock       a lock manager per window at the target (shared count,
 *              exclusive flag, FIFO of waiters) served by its progress
 *              engine: LOCK -> GRANT, then UNLOCK once the origin's
 *              operations are finished.  A target that only sits in a
 *              barrier or MPI_Win_free still grants and releases.
 */
#include <stdlib.h>

#include "typeop.h"
#include "win.h"

#define MODE_ALL (MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT |                   \
		  MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED)

/* The first error of an operation finished since the last report. */
static int take_deferred(struct vd_win *w)
{
	int err = w->deferred_err;

	w->deferred_err = MPI_SUCCESS;
	return err;
}

/* ---- the lock manager (target side) ----------------------------------------------- */

static bool grantable(const struct vd_win *w, bool excl)
{
	return excl ? !w->lock_exclusive && !w->lock_shared : !w->lock_exclusive;
}

static void grant(struct vd_win *w, int origin, bool excl)
{
	if (excl)
		w->lock_exclusive = true;
	else
		w->lock_shared++;
	vd_win_ctl(w, origin, VD_WIN_GRANT, 0);
}

static void lock_request(struct vd_win *w, int origin, bool excl)
{
	struct vd_win_waiter *q;

	if (!w->waiting && grantable(w, excl)) {
		grant(w, origin, excl);
		return;
	}
	q = malloc(sizeof(*q));
	if (!q)
		vd_pmi_abort(MPI_ERR_NO_MEM, "viaduct MPI: out of memory for a lock request");
	*q = (struct vd_win_waiter){ origin, excl, NULL };
	*w->waiting_tail = q;
	w->waiting_tail = &q->next;
}

static void lock_release(struct vd_win *w, bool excl)
{
	if (excl)
		w->lock_exclusive = false;
	else if (w->lock_shared > 0)
		w->lock_shared--;
	while (w->waiting && grantable(w, w->waiting->exclusive)) {
		struct vd_win_waiter *q = w->waiting;
		w->waiting = q->next;
		if (!w->waiting)
			w->waiting_tail = &w->waiting;
		grant(w, q->origin, q->exclusive);
		free(q);
	}
}

void vd_win_ctl_arrived(struct vd_win *w, int origin, const struct vd_msg *m)
{
	bool excl = m->flags & 1;

	switch (m->tag) {
	case VD_WIN_LOCK: lock_request(w, origin, excl); break;
	case VD_WIN_GRANT: w->granted[origin] = true; break;
	case VD_WIN_UNLOCK: lock_release(w, excl); break;
	case VD_WIN_POST: w->posts[origin]++; break;
	case VD_WIN_COMPLETE: w->completes++; break;
	default: break;
	}
}

void vd_win_sync_free(struct vd_win *w)
{
	while (w->waiting) {
		struct vd_win_waiter *q = w->waiting;
		w->waiting = q->next;
		free(q);
	}
	w->waiting_tail = &w->waiting;
}

/* ---- fence ------------------------------------------------------------------------ */

static struct vd_win *sync_arg(MPI_Win win, int assert, const char *fn, int *err)
{
	struct vd_win *w = vd_win_arg(win, fn, err);

	if (w && (assert & ~MODE_ALL))
		*err = vd_win_raise(w, MPI_ERR_ASSERT, fn);
	return *err ? NULL : w;
}

static bool passive(const struct vd_win *w)
{
	if (w->lock_all)
		return true;
	for (int r = 0; r < w->size; r++)
		if (w->locked[r])
			return true;
	return false;
}

#pragma weak MPI_Win_fence = PMPI_Win_fence
int PMPI_Win_fence(int assert, MPI_Win win)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_fence";
	int err;
	struct vd_win *w = sync_arg(win, assert, fn, &err);

	if (!w)
		return err;
	if (passive(w) || w->access || w->exposing)
		return vd_win_raise(w, MPI_ERR_RMA_SYNC, fn);
	vd_win_wait_zero(&w->pending_all);
	err = vd_coll_code(vd_coll_barrier(w->c));
	w->fence_epoch = !(assert & MPI_MODE_NOSUCCEED);
	if (!err)
		err = take_deferred(w);
	return vd_win_raise(w, err, fn);
}

/* ---- post / start / complete / wait ---------------------------------------------------- */

/* The window ranks of a group's members; MPI_ERR_GROUP if one is not in
 * the window. */
static int group_ranks(const struct vd_win *w, MPI_Group group, int **ranks, int *n)
{
	struct vd_group *g = vd_group_get(group);

	if (!g)
		return MPI_ERR_GROUP;
	*n = g->size;
	*ranks = malloc((size_t)(g->size ? g->size : 1) * sizeof(int));
	if (!*ranks)
		return MPI_ERR_NO_MEM;
	for (int i = 0; i < g->size; i++) {
		(*ranks)[i] = vd_win_rank_of(w, g->world[i]);
		if ((*ranks)[i] < 0) {
			free(*ranks);
			*ranks = NULL;
			return MPI_ERR_GROUP;
		}
	}
	return MPI_SUCCESS;
}

#pragma weak MPI_Win_post = PMPI_Win_post
int PMPI_Win_post(MPI_Group group, int assert, MPI_Win win)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_post";
	int err, *ranks, n;
	struct vd_win *w = sync_arg(win, assert, fn, &err);

	if (!w)
		return err;
	if (w->exposing)
		return vd_win_raise(w, MPI_ERR_RMA_SYNC, fn);
	if ((err = group_ranks(w, group, &ranks, &n)))
		return vd_win_raise(w, err, fn);
	w->exposing = true;
	w->nexpose = n;
	for (int i = 0; i < n; i++)
		vd_win_ctl(w, ranks[i], VD_WIN_POST, 0);
	free(ranks);
	return MPI_SUCCESS;
}

#pragma weak MPI_Win_start = PMPI_Win_start
int PMPI_Win_start(MPI_Group group, int assert, MPI_Win win)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_start";
	int err, *ranks, n;
	struct vd_win *w = sync_arg(win, assert, fn, &err);

	if (!w)
		return err;
	if (w->access || passive(w))
		return vd_win_raise(w, MPI_ERR_RMA_SYNC, fn);
	if ((err = group_ranks(w, group, &ranks, &n)))
		return vd_win_raise(w, err, fn);
	for (int i = 0; i < n; i++) {
		for (unsigned idle = 0; w->posts[ranks[i]] == 0; idle++)
			vd_progress(idle >= 256);
		w->posts[ranks[i]]--;
	}
	w->access = ranks;
	w->naccess = n;
	return MPI_SUCCESS;
}

#pragma weak MPI_Win_complete = PMPI_Win_complete
int PMPI_Win_complete(MPI_Win win)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_complete";
	int err;
	struct vd_win *w = vd_win_arg(win, fn, &err);

	if (!w)
		return err;
	if (!w->access)
		return vd_win_raise(w, MPI_ERR_RMA_SYNC, fn);
	for (int i = 0; i < w->naccess; i++) {
		vd_win_wait_zero(&w->pending[w->access[i]]);
		vd_win_ctl(w, w->access[i], VD_WIN_COMPLETE, 0);
	}
	free(w->access);
	w->access = NULL;
	w->naccess = 0;
	return vd_win_raise(w, take_deferred(w), fn);
}

static void exposure_end(struct vd_win *w)
{
	w->completes -= w->nexpose;
	w->exposing = false;
	w->nexpose = 0;
}

#pragma weak MPI_Win_wait = PMPI_Win_wait
int PMPI_Win_wait(MPI_Win win)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_wait";
	int err;
	struct vd_win *w = vd_win_arg(win, fn, &err);

	if (!w)
		return err;
	if (!w->exposing)
		return vd_win_raise(w, MPI_ERR_RMA_SYNC, fn);
	for (unsigned idle = 0; w->completes < w->nexpose; idle++)
		vd_progress(idle >= 256);
	exposure_end(w);
	return MPI_SUCCESS;
}

#pragma weak MPI_Win_test = PMPI_Win_test
int PMPI_Win_test(MPI_Win win, int *flag)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_test";
	int err;
	struct vd_win *w = vd_win_arg(win, fn, &err);

	if (!w)
		return err;
	if (!flag)
		return vd_win_raise(w, MPI_ERR_ARG, fn);
	if (!w->exposing)
		return vd_win_raise(w, MPI_ERR_RMA_SYNC, fn);
	if (w->completes < w->nexpose)
		vd_progress(false);
	*flag = w->completes >= w->nexpose;
	if (*flag)
		exposure_end(w);
	return MPI_SUCCESS;
}

/* ---- passive target ---------------------------------------------------------------- */

static void lock_one(struct vd_win *w, int rank, bool excl)
{
	w->granted[rank] = false;
	vd_win_ctl(w, rank, VD_WIN_LOCK, excl ? 1 : 0);
}

static void unlock_one(struct vd_win *w, int rank, bool excl)
{
	vd_win_wait_zero(&w->pending[rank]);
	vd_win_ctl(w, rank, VD_WIN_UNLOCK, excl ? 1 : 0);
	w->granted[rank] = false;
}

#pragma weak MPI_Win_lock = PMPI_Win_lock
int PMPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_lock";
	int err;
	struct vd_win *w = sync_arg(win, assert, fn, &err);
	bool excl = lock_type == MPI_LOCK_EXCLUSIVE;

	if (!w)
		return err;
	if (lock_type != MPI_LOCK_EXCLUSIVE && lock_type != MPI_LOCK_SHARED)
		return vd_win_raise(w, MPI_ERR_LOCKTYPE, fn);
	if (rank == MPI_PROC_NULL)
		return MPI_SUCCESS;
	if (rank < 0 || rank >= w->size)
		return vd_win_raise(w, MPI_ERR_RANK, fn);
	if (w->locked[rank] || w->lock_all || w->access)
		return vd_win_raise(w, MPI_ERR_RMA_SYNC, fn);
	w->locked[rank] = true;
	w->lock_excl[rank] = excl;
	lock_one(w, rank, excl);
	vd_win_wait_flag(&w->granted[rank]);
	return MPI_SUCCESS;
}

#pragma weak MPI_Win_unlock = PMPI_Win_unlock
int PMPI_Win_unlock(int rank, MPI_Win win)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_unlock";
	int err;
	struct vd_win *w = vd_win_arg(win, fn, &err);

	if (!w)
		return err;
	if (rank == MPI_PROC_NULL)
		return MPI_SUCCESS;
	if (rank < 0 || rank >= w->size)
		return vd_win_raise(w, MPI_ERR_RANK, fn);
	if (!w->locked[rank])
		return vd_win_raise(w, MPI_ERR_RMA_SYNC, fn);
	unlock_one(w, rank, w->lock_excl[rank]);
	w->locked[rank] = false;
	return vd_win_raise(w, take_deferred(w), fn);
}

#pragma weak MPI_Win_lock_all = PMPI_Win_lock_all
int PMPI_Win_lock_all(int assert, MPI_Win win)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_lock_all";
	int err;
	struct vd_win *w = sync_arg(win, assert, fn, &err);

	if (!w)
		return err;
	if (passive(w) || w->access)
		return vd_win_raise(w, MPI_ERR_RMA_SYNC, fn);
	w->lock_all = true;
	for (int r = 0; r < w->size; r++)
		lock_one(w, r, false);
	for (int r = 0; r < w->size; r++)
		vd_win_wait_flag(&w->granted[r]);
	return MPI_SUCCESS;
}

#pragma weak MPI_Win_unlock_all = PMPI_Win_unlock_all
int PMPI_Win_unlock_all(MPI_Win win)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_unlock_all";
	int err;
	struct vd_win *w = vd_win_arg(win, fn, &err);

	if (!w)
		return err;
	if (!w->lock_all)
		return vd_win_raise(w, MPI_ERR_RMA_SYNC, fn);
	for (int r = 0; r < w->size; r++)
		unlock_one(w, r, false);
	w->lock_all = false;
	return vd_win_raise(w, take_deferred(w), fn);
}

/* Flush forms: the operations to rank (or all) are complete at the
 * target -- which also makes them complete locally, so the _local forms
 * are the same. */
static int flush(MPI_Win win, int rank, bool all, const char *fn)
{
	int err;
	struct vd_win *w = vd_win_arg(win, fn, &err);

	if (!w)
		return err;
	if (!all && rank == MPI_PROC_NULL)
		return MPI_SUCCESS;
	if (!all && (rank < 0 || rank >= w->size))
		return vd_win_raise(w, MPI_ERR_RANK, fn);
	if (all ? !passive(w) : !w->lock_all && !w->locked[rank])
		return vd_win_raise(w, MPI_ERR_RMA_SYNC, fn);
	vd_win_wait_zero(all ? &w->pending_all : &w->pending[rank]);
	return vd_win_raise(w, take_deferred(w), fn);
}

#pragma weak MPI_Win_flush = PMPI_Win_flush
int PMPI_Win_flush(int rank, MPI_Win win)
{
	VD_API_GUARD();
	return flush(win, rank, false, "MPI_Win_flush");
}

#pragma weak MPI_Win_flush_all = PMPI_Win_flush_all
int PMPI_Win_flush_all(MPI_Win win)
{
	VD_API_GUARD();
	return flush(win, 0, true, "MPI_Win_flush_all");
}

#pragma weak MPI_Win_flush_local = PMPI_Win_flush_local
int PMPI_Win_flush_local(int rank, MPI_Win win)
{
	VD_API_GUARD();
	return flush(win, rank, false, "MPI_Win_flush_local");
}

#pragma weak MPI_Win_flush_local_all = PMPI_Win_flush_local_all
int PMPI_Win_flush_local_all(MPI_Win win)
{
	VD_API_GUARD();
	return flush(win, 0, true, "MPI_Win_flush_local_all");
}

/* The unified model: the public and private copies are the same memory;
 * a full barrier orders this process's loads and stores around it. */
#pragma weak MPI_Win_sync = PMPI_Win_sync
int PMPI_Win_sync(MPI_Win win)
{
	VD_API_GUARD();
	int err;
	struct vd_win *w = vd_win_arg(win, "MPI_Win_sync", &err);

	if (!w)
		return err;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	vd_progress(false);
	return MPI_SUCCESS;
}
