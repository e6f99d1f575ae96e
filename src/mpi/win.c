/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: windows -- creation in its four flavors, MPI_Win_free, and
 * what a window tells about itself (group, name, attributes, error
 * handler).  A handle is a slot of the window table with the slot's
 * generation above it: slots are reused, but a freed window's handle
 * stays invalid (MPI_ERR_WIN) instead of naming the newer window in its
 * slot -- until that slot has been reused 2^11 times.
 *
 * Memory of a window is registered with the NIC of every transport its
 * peers come through (shm inside a host, ofi across): the handles, base,
 * size and displacement unit of every member are allgathered, so an
 * origin addresses the target's memory by RDMA and the target's NIC
 * checks each access against the registration.  MPI_Win_free
 * deregisters, which revokes the handles at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "errh_user.h"
#include "typeop.h"
#include "win.h"

#define SLOT_BITS 20
#define SLOT_MASK ((1 << SLOT_BITS) - 1)
#define GEN_LIMIT (1u << (31 - SLOT_BITS))

static struct vd_win **wins;            /* [slot]; NULL when free */
static unsigned *gens;                  /* [slot]: the generation of its handle */
static int nwins = 1;                   /* slots ever used; 0 is MPI_WIN_NULL */
static int cap;

struct vd_win *vd_win_get(MPI_Win win)
{
	int slot = win & SLOT_MASK;

	if (win <= 0 || slot >= nwins || !wins[slot])
		return NULL;
	return wins[slot]->handle == win ? wins[slot] : NULL;
}

static struct vd_win *last_found;      /* messages come in runs per window */

struct vd_win *vd_win_by_ctx(uint32_t ctx)
{
	if (last_found && last_found->ctx == ctx)
		return last_found;
	for (int i = 1; i < nwins; i++)
		if (wins[i] && wins[i]->ctx == ctx)
			return last_found = wins[i];
	return NULL;
}

static int table_grow(void)
{
	int ncap = cap ? cap * 2 : 16;
	struct vd_win **n = realloc(wins, (size_t)ncap * sizeof(*n));
	unsigned *g;

	if (!n)
		return -ENOMEM;
	wins = n;
	if (!(g = realloc(gens, (size_t)ncap * sizeof(*g))))
		return -ENOMEM;
	memset(g + cap, 0, (size_t)(ncap - cap) * sizeof(*g));
	gens = g;
	cap = ncap;
	return 0;
}

/* A free slot (the lowest), or -1. */
static int slot_take(void)
{
	for (int i = 1; i < nwins; i++)
		if (!wins[i])
			return i;
	if (nwins > SLOT_MASK || (nwins >= cap && table_grow()))
		return -1;
	return nwins++;
}

static int table_add(struct vd_win *w)
{
	int slot = slot_take();

	if (slot < 0)
		return -ENOMEM;
	gens[slot] = (gens[slot] + 1) % GEN_LIMIT;
	w->handle = slot | (int)(gens[slot] << SLOT_BITS);
	wins[slot] = w;
	return 0;
}

/* ---- errors ------------------------------------------------------------------ */

int vd_win_raise(struct vd_win *w, int code, const char *fn)
{
	char text[MPI_MAX_ERROR_STRING], msg[MPI_MAX_ERROR_STRING + 128];
	int len;

	if (code == MPI_SUCCESS)
		return MPI_SUCCESS;
	if (!w)
		return vd_mpi_raise(MPI_COMM_WORLD, code, fn);
	if (w->errh == MPI_ERRORS_RETURN)
		return code;
	if (w->errh > MPI_ERRORS_ABORT) {
		vd_errh_user_call_win(w->errh, w->handle, code);
		return code;
	}
	if (PMPI_Error_string(code, text, &len) != MPI_SUCCESS)
		snprintf(text, sizeof(text), "error %d", code);
	snprintf(msg, sizeof(msg), "%s: %s", fn, text);
	fprintf(stderr, "viaduct MPI: rank %d: %s\n", vd_mpi.rank, msg);
	fflush(stderr);
	vd_pmi_abort(code, msg);
}

struct vd_win *vd_win_arg(MPI_Win win, const char *fn, int *err)
{
	struct vd_win *w;

	if (vd_mpi.phase != VD_MPI_RUNNING) {
		*err = vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_OTHER, fn);
		return NULL;
	}
	w = vd_win_get(win);
	*err = w ? MPI_SUCCESS : vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_WIN, fn);
	return w;
}

int vd_win_rank_of(const struct vd_win *w, int wr)
{
	for (int r = 0; r < w->size; r++)
		if (w->c->world[r] == wr)
			return r;
	return -1;
}

/* ---- waiting and control messages -------------------------------------------- */

/* Poll; once nothing has come for a while, let the engine sleep briefly. */
static unsigned wait_step(unsigned idle)
{
	return vd_progress(idle >= 256) ? 0 : idle + 1;
}

void vd_win_wait_flag(const bool *flag)
{
	for (unsigned idle = 0; !*flag;)
		idle = wait_step(idle);
}

/* Polls at least once: a rank spinning on operations on its own window
 * (complete at once) must still serve the others' requests. */
void vd_win_wait_zero(const int *counter)
{
	vd_progress(false);
	for (unsigned idle = 0; *counter > 0;)
		idle = wait_step(idle);
}

void vd_win_ctl(struct vd_win *w, int to, enum vd_win_msg kind, uint8_t flags)
{
	struct vd_msg m = { .version = VD_MSG_VERSION, .type = VD_MSG_RMA, .flags = flags,
			    .ctx = w->ctx, .src = w->rank, .tag = kind };

	if (to == w->rank)
		vd_win_ctl_arrived(w, to, &m);
	else if (vd_wire_send(w->c->world[to], &m, NULL, 0))
		vd_pmi_abort(MPI_ERR_NO_MEM, "viaduct MPI: out of memory for a window message");
}

/* Every VD_MSG_RMA: a window that is gone (a message that overtook
 * nothing but arrived after MPI_Win_free, e.g. an unlock) is dropped. */
void vd_win_arrived(int peer, const struct vd_msg *m, const void *payload, size_t plen)
{
	struct vd_win *w = vd_win_by_ctx(m->ctx);

	(void)peer;
	if (!w || m->src < 0 || m->src >= w->size)
		return;
	if (m->tag == VD_WIN_AM)
		vd_win_am_arrived(w, m->src, m, payload, plen);
	else if (m->tag == VD_WIN_AM_REPLY)
		vd_win_am_reply(w, m, payload, plen);
	else
		vd_win_ctl_arrived(w, m->src, m);
}

/* ---- creation ------------------------------------------------------------------ */

static void win_destroy(struct vd_win *w)
{
	for (int k = 0; k < VD_T_N; k++)
		if (w->registered[k])
			vd_wire_deregister((enum vd_transport)k, w->base, w->mh[k]);
	while (w->regions) {
		struct vd_win_region *g = w->regions;
		w->regions = g->next;
		free(g);
	}
	if (w->shm)
		munmap(w->shm, w->shm_len);
	free(w->own_mem);
	if (w->handle)
		wins[w->handle & SLOT_MASK] = NULL;
	if (last_found == w)
		last_found = NULL;
	if (w->comm != MPI_COMM_NULL)
		PMPI_Comm_free(&w->comm);
	free(w->peers);
	free(w->pending);
	free(w->locked);
	free(w->granted);
	free(w->lock_excl);
	free(w->posts);
	free(w->access);
	vd_win_attr_discard(w);
	free(w);
}

static int win_arrays(struct vd_win *w)
{
	size_t n = (size_t)w->size;

	w->peers = calloc(n, sizeof(*w->peers));
	w->pending = calloc(n, sizeof(int));
	w->locked = calloc(n, sizeof(bool));
	w->granted = calloc(n, sizeof(bool));
	w->lock_excl = calloc(n, sizeof(bool));
	w->posts = calloc(n, sizeof(int));
	return w->peers && w->pending && w->locked && w->granted && w->lock_excl && w->posts
		       ? 0 : -ENOMEM;
}

/* A window on a private duplicate of comm with the hints of info, in the
 * table (so messages for it find it as soon as any peer can send them). */
static int win_new(MPI_Comm comm, int flavor, MPI_Info info, struct vd_win **out)
{
	struct vd_win *w = calloc(1, sizeof(*w));
	int err;

	if (!w)
		return MPI_ERR_NO_MEM;
	if ((err = vd_win_hints(w, info))) {
		free(w);
		return err;
	}
	w->flavor = flavor;
	w->model = MPI_WIN_UNIFIED;
	w->errh = MPI_ERRORS_ARE_FATAL;
	w->waiting_tail = &w->waiting;
	err = PMPI_Comm_dup(comm, &w->comm);
	if (err) {
		w->comm = MPI_COMM_NULL;
		win_destroy(w);
		return err;
	}
	w->c = vd_comm_get(w->comm);
	w->ctx = w->c->ctx;
	w->rank = w->c->rank;
	w->size = w->c->size;
	if (win_arrays(w) || table_add(w)) {
		win_destroy(w);
		return MPI_ERR_NO_MEM;
	}
	*out = w;
	return MPI_SUCCESS;
}

/* Register [base, base + bytes) with every transport a member uses. */
static int win_register(struct vd_win *w)
{
	bool need[VD_T_N] = { false };

	if (w->bytes <= 0)
		return 0;
	for (int r = 0; r < w->size; r++)
		if (r != w->rank)
			need[vd_place_via(w->c->world[r])] = true;
	for (int k = 0; k < VD_T_N; k++) {
		if (!need[k])
			continue;
		int err = vd_wire_register((enum vd_transport)k, w->base, (size_t)w->bytes, true,
					   true, &w->mh[k]);
		if (err)
			return err;
		w->registered[k] = true;
	}
	return 0;
}

/* Register and tell every member; a failure anywhere fails everywhere. */
static int win_expose(struct vd_win *w, int local_err)
{
	struct vd_win_peer me = { (uint64_t)(uintptr_t)w->base, (uint64_t)w->bytes,
				  w->disp_unit, local_err, { 0 } };
	int err;

	if (!me.err && win_register(w))
		me.err = MPI_ERR_NO_MEM;
	for (int k = 0; k < VD_T_N; k++)
		me.mh[k] = w->mh[k];
	err = PMPI_Allgather(&me, (int)sizeof(me), MPI_BYTE, w->peers, (int)sizeof(me),
			     MPI_BYTE, w->comm);
	for (int r = 0; !err && r < w->size; r++)
		if (w->peers[r].err)
			err = w->peers[r].err;
	return err;
}

static int create_args(MPI_Comm comm, MPI_Aint size, int disp_unit, const void *out,
		       const char *fn)
{
	VD_MPI_CHECK_RUNNING(fn);
	if (!vd_comm_get(comm))
		return vd_mpi_raise(comm, MPI_ERR_COMM, fn);
	if (!out)
		return vd_mpi_raise(comm, MPI_ERR_ARG, fn);
	if (size < 0)
		return vd_mpi_raise(comm, MPI_ERR_SIZE, fn);
	if (disp_unit <= 0)
		return vd_mpi_raise(comm, MPI_ERR_DISP, fn);
	return MPI_SUCCESS;
}

/* Common tail: expose, hand out the handle, or undo. */
static int create_finish(struct vd_win *w, int local_err, MPI_Comm comm, MPI_Win *win,
			 const char *fn)
{
	int err = win_expose(w, local_err);

	if (err) {
		win_destroy(w);
		return vd_mpi_raise(comm, err, fn);
	}
	*win = w->handle;
	return MPI_SUCCESS;
}

#pragma weak MPI_Win_create = PMPI_Win_create
int PMPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
		    MPI_Win *win)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_create";
	struct vd_win *w;
	int err = create_args(comm, size, disp_unit, win, fn);

	if (err)
		return err;
	if (size > 0 && !base)
		return vd_mpi_raise(comm, MPI_ERR_BASE, fn);
	if ((err = win_new(comm, MPI_WIN_FLAVOR_CREATE, info, &w)))
		return vd_mpi_raise(comm, err, fn);
	w->base = base;                 /* MPI_WIN_BASE, even for size 0 */
	w->bytes = size;
	w->disp_unit = disp_unit;
	return create_finish(w, MPI_SUCCESS, comm, win, fn);
}

#pragma weak MPI_Win_allocate = PMPI_Win_allocate
int PMPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
		      void *baseptr, MPI_Win *win)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_allocate";
	struct vd_win *w;
	int err = create_args(comm, size, disp_unit, win, fn);

	if (!err && !baseptr)
		err = vd_mpi_raise(comm, MPI_ERR_ARG, fn);
	if (err)
		return err;
	if ((err = win_new(comm, MPI_WIN_FLAVOR_ALLOCATE, info, &w)))
		return vd_mpi_raise(comm, err, fn);
	if (posix_memalign(&w->own_mem, 64, size > 0 ? (size_t)size : 1))
		w->own_mem = NULL;
	w->base = size > 0 ? w->own_mem : NULL;
	w->bytes = size;
	w->disp_unit = disp_unit;
	err = create_finish(w, w->own_mem ? MPI_SUCCESS : MPI_ERR_NO_MEM, comm, win, fn);
	if (!err)
		*(void **)baseptr = w->base;
	return err;
}

#pragma weak MPI_Win_create_dynamic = PMPI_Win_create_dynamic
int PMPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_create_dynamic";
	struct vd_win *w;
	int err = create_args(comm, 0, 1, win, fn);

	if (err)
		return err;
	if ((err = win_new(comm, MPI_WIN_FLAVOR_DYNAMIC, info, &w)))
		return vd_mpi_raise(comm, err, fn);
	w->disp_unit = 1;
	return create_finish(w, MPI_SUCCESS, comm, win, fn);
}

/* ---- shared memory windows ------------------------------------------------------- */

static bool one_host(const struct vd_comm *c)
{
	for (int r = 1; r < c->size; r++)
		if (vd_place_node(c->world[r]) != vd_place_node(c->world[0]))
			return false;
	return true;
}

/* A name for the segment no other window of the job can have: contexts
 * are unique among communicators that share a process. */
static void shm_name(const struct vd_win *w, char *name, size_t len)
{
	char job[40];
	size_t i;

	for (i = 0; i < sizeof(job) - 1 && vd_mpi.jobid[i]; i++) {
		char ch = vd_mpi.jobid[i];
		job[i] = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			 (ch >= '0' && ch <= '9') ? ch : '_';
	}
	job[i] = '\0';
	snprintf(name, len, "/vd-win-%s-%d-%u", job, w->c->world[0], w->ctx);
}

/* Rank 0 creates the segment; the others open it after a barrier; then
 * it is unlinked (the mappings keep it). */
static int shm_map(struct vd_win *w, size_t total)
{
	char name[128];
	int fd = -1, err = 0;

	shm_name(w, name, sizeof(name));
	w->shm_len = total ? (total + 4095) & ~(size_t)4095 : 4096;
	if (w->rank == 0) {
		fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
		if (fd >= 0 && ftruncate(fd, (off_t)w->shm_len))
			err = -errno;
	}
	vd_coll_barrier(w->c);
	if (w->rank != 0)
		fd = shm_open(name, O_RDWR, 0600);
	if (fd < 0)
		err = -errno;
	if (!err) {
		w->shm = mmap(NULL, w->shm_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (w->shm == MAP_FAILED) {
			w->shm = NULL;
			err = -errno;
		}
	}
	if (fd >= 0)
		close(fd);
	vd_coll_barrier(w->c);
	if (w->rank == 0)
		shm_unlink(name);
	return err;
}

/* Offset of rank r's part in the segment (parts follow in rank order). */
static size_t shared_offset(const struct vd_win *w, int r)
{
	size_t off = 0;

	for (int i = 0; i < r; i++)
		off += (size_t)w->peers[i].size;
	return off;
}

static int shared_setup(struct vd_win *w)
{
	struct vd_win_peer me = { 0, (uint64_t)w->bytes, w->disp_unit, 0, { 0 } };
	int err = PMPI_Allgather(&me, (int)sizeof(me), MPI_BYTE, w->peers, (int)sizeof(me),
				 MPI_BYTE, w->comm);
	size_t total;

	if (err)
		return err;
	total = shared_offset(w, w->size);
	err = shm_map(w, total) ? MPI_ERR_NO_MEM : MPI_SUCCESS;
	if (!err && w->bytes > 0)
		w->base = (uint8_t *)w->shm + shared_offset(w, w->rank);
	return err;
}

#pragma weak MPI_Win_allocate_shared = PMPI_Win_allocate_shared
int PMPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
			     void *baseptr, MPI_Win *win)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_allocate_shared";
	struct vd_win *w;
	int err = create_args(comm, size, disp_unit, win, fn);

	if (!err && !baseptr)
		err = vd_mpi_raise(comm, MPI_ERR_ARG, fn);
	if (err)
		return err;
	if (!one_host(vd_comm_get(comm)))
		return vd_mpi_raise(comm, MPI_ERR_RMA_SHARED, fn);
	if ((err = win_new(comm, MPI_WIN_FLAVOR_SHARED, info, &w)))
		return vd_mpi_raise(comm, err, fn);
	w->bytes = size;
	w->disp_unit = disp_unit;
	err = create_finish(w, shared_setup(w), comm, win, fn);
	if (!err)
		*(void **)baseptr = w->base;
	return err;
}

#pragma weak MPI_Win_shared_query = PMPI_Win_shared_query
int PMPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit,
			  void *baseptr)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_shared_query";
	int err;
	struct vd_win *w = vd_win_arg(win, fn, &err);

	if (!w)
		return err;
	if (w->flavor != MPI_WIN_FLAVOR_SHARED)
		return vd_win_raise(w, MPI_ERR_RMA_FLAVOR, fn);
	if (!size || !disp_unit || !baseptr)
		return vd_win_raise(w, MPI_ERR_ARG, fn);
	if (rank == MPI_PROC_NULL)
		for (rank = 0; rank < w->size - 1 && !w->peers[rank].size; rank++)
			;
	if (rank < 0 || rank >= w->size)
		return vd_win_raise(w, MPI_ERR_RANK, fn);
	*size = (MPI_Aint)w->peers[rank].size;
	*disp_unit = w->peers[rank].disp_unit;
	*(void **)baseptr = (uint8_t *)w->shm + shared_offset(w, rank);
	return MPI_SUCCESS;
}

/* ---- dynamic windows -------------------------------------------------------------- */

static bool overlaps(const struct vd_win *w, uintptr_t lo, uintptr_t hi)
{
	for (const struct vd_win_region *g = w->regions; g; g = g->next)
		if (lo < g->hi && g->lo < hi)
			return true;
	return false;
}

#pragma weak MPI_Win_attach = PMPI_Win_attach
int PMPI_Win_attach(MPI_Win win, void *base, MPI_Aint size)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_attach";
	int err;
	struct vd_win *w = vd_win_arg(win, fn, &err);
	struct vd_win_region *g;

	if (!w)
		return err;
	if (w->flavor != MPI_WIN_FLAVOR_DYNAMIC)
		return vd_win_raise(w, MPI_ERR_RMA_FLAVOR, fn);
	if (size < 0)
		return vd_win_raise(w, MPI_ERR_SIZE, fn);
	if (size > 0 && !base)
		return vd_win_raise(w, MPI_ERR_BASE, fn);
	if (overlaps(w, (uintptr_t)base, (uintptr_t)base + (uintptr_t)size))
		return vd_win_raise(w, MPI_ERR_RMA_ATTACH, fn);
	g = malloc(sizeof(*g));
	if (!g)
		return vd_win_raise(w, MPI_ERR_NO_MEM, fn);
	*g = (struct vd_win_region){ (uintptr_t)base, (uintptr_t)base + (uintptr_t)size,
				     w->regions };
	w->regions = g;
	return MPI_SUCCESS;
}

#pragma weak MPI_Win_detach = PMPI_Win_detach
int PMPI_Win_detach(MPI_Win win, const void *base)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_detach";
	int err;
	struct vd_win *w = vd_win_arg(win, fn, &err);

	if (!w)
		return err;
	if (w->flavor != MPI_WIN_FLAVOR_DYNAMIC)
		return vd_win_raise(w, MPI_ERR_RMA_FLAVOR, fn);
	for (struct vd_win_region **pp = &w->regions; *pp; pp = &(*pp)->next) {
		struct vd_win_region *g = *pp;
		if (g->lo != (uintptr_t)base)
			continue;
		*pp = g->next;
		free(g);
		return MPI_SUCCESS;
	}
	return vd_win_raise(w, MPI_ERR_RMA_ATTACH, fn);
}

/* ---- free ------------------------------------------------------------------------- */

static bool in_epoch(const struct vd_win *w)
{
	if (w->lock_all || w->access || w->exposing)
		return true;
	for (int r = 0; r < w->size; r++)
		if (w->locked[r])
			return true;
	return false;
}

/* Collective: once every member is here, no operation on the window is
 * in flight anywhere (each origin finished its own before coming). */
#pragma weak MPI_Win_free = PMPI_Win_free
int PMPI_Win_free(MPI_Win *win)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_free";
	int err;
	struct vd_win *w;

	if (!win)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn);
	if (!(w = vd_win_arg(*win, fn, &err)))
		return err;
	if (in_epoch(w))
		return vd_win_raise(w, MPI_ERR_RMA_SYNC, fn);
	if ((err = vd_win_attr_free(w)))
		return vd_win_raise(w, err, fn);
	vd_win_wait_zero(&w->pending_all);
	err = vd_coll_code(vd_coll_barrier(w->c));
	vd_win_sync_free(w);
	win_destroy(w);
	*win = MPI_WIN_NULL;
	return err ? vd_mpi_raise(MPI_COMM_WORLD, err, fn) : MPI_SUCCESS;
}

/* ---- what a window tells ------------------------------------------------------------ */

#pragma weak MPI_Win_get_group = PMPI_Win_get_group
int PMPI_Win_get_group(MPI_Win win, MPI_Group *group)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_get_group";
	int err;
	struct vd_win *w = vd_win_arg(win, fn, &err);

	if (!w)
		return err;
	if (!group)
		return vd_win_raise(w, MPI_ERR_ARG, fn);
	return vd_win_raise(w, PMPI_Comm_group(w->comm, group), fn);
}

#pragma weak MPI_Win_set_name = PMPI_Win_set_name
int PMPI_Win_set_name(MPI_Win win, const char *win_name)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_set_name";
	int err;
	struct vd_win *w = vd_win_arg(win, fn, &err);

	if (!w)
		return err;
	if (!win_name)
		return vd_win_raise(w, MPI_ERR_ARG, fn);
	snprintf(w->name, sizeof(w->name), "%s", win_name);
	return MPI_SUCCESS;
}

#pragma weak MPI_Win_get_name = PMPI_Win_get_name
int PMPI_Win_get_name(MPI_Win win, char *win_name, int *resultlen)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_get_name";
	int err;
	struct vd_win *w = vd_win_arg(win, fn, &err);

	if (!w)
		return err;
	if (!win_name || !resultlen)
		return vd_win_raise(w, MPI_ERR_ARG, fn);
	strcpy(win_name, w->name);
	*resultlen = (int)strlen(w->name);
	return MPI_SUCCESS;
}

/* The predefined attributes: attribute_val receives a pointer to the
 * value (to the base itself for MPI_WIN_BASE), as the standard says;
 * user keyvals are win_attr.c's. */
#pragma weak MPI_Win_get_attr = PMPI_Win_get_attr
int PMPI_Win_get_attr(MPI_Win win, int win_keyval, void *attribute_val, int *flag)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_get_attr";
	int err;
	struct vd_win *w = vd_win_arg(win, fn, &err);
	void *v;

	if (!w)
		return err;
	if (!attribute_val || !flag)
		return vd_win_raise(w, MPI_ERR_ARG, fn);
	switch (win_keyval) {
	case MPI_WIN_BASE: v = w->base; break;
	case MPI_WIN_SIZE: v = &w->bytes; break;
	case MPI_WIN_DISP_UNIT: v = &w->disp_unit; break;
	case MPI_WIN_CREATE_FLAVOR: v = &w->flavor; break;
	case MPI_WIN_MODEL: v = &w->model; break;
	default:
		return vd_win_attr_user(w, win_keyval, attribute_val, flag, fn);
	}
	*(void **)attribute_val = v;
	*flag = 1;
	return MPI_SUCCESS;
}

#pragma weak MPI_Win_set_errhandler = PMPI_Win_set_errhandler
int PMPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler errhandler)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_set_errhandler";
	int err;
	struct vd_win *w = vd_win_arg(win, fn, &err);

	if (!w)
		return err;
	if (!vd_errh_valid_for(errhandler, VD_ERRH_WIN))
		return vd_win_raise(w, MPI_ERR_ARG, fn);
	vd_errh_retain(errhandler);
	vd_errh_release(w->errh);
	w->errh = errhandler;
	return MPI_SUCCESS;
}

#pragma weak MPI_Win_get_errhandler = PMPI_Win_get_errhandler
int PMPI_Win_get_errhandler(MPI_Win win, MPI_Errhandler *errhandler)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_get_errhandler";
	int err;
	struct vd_win *w = vd_win_arg(win, fn, &err);

	if (!w)
		return err;
	if (!errhandler)
		return vd_win_raise(w, MPI_ERR_ARG, fn);
	/* A new reference: the caller frees it (MPI-4.0 9.3). */
	vd_errh_retain(w->errh);
	*errhandler = w->errh;
	return MPI_SUCCESS;
}
