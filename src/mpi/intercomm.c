/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: intercommunicators.  An intercommunicator is a struct
 * vd_comm whose world/size are the remote group -- the ranks point to
 * point names -- and whose rank is this process's rank in the local group;
 * a message carries the sender's local rank, which is its rank in the
 * receiver's remote group, so the point-to-point engine works unchanged.
 * The local group is in local_world/local_size, and a hidden
 * intracommunicator over it (local_comm) runs the local half of every
 * agreement, through the internal collectives (which raise nothing, so
 * the program's error handler sees each error once, on the communicator
 * it called with).
 *
 * Context ids: an intercommunicator takes two consecutive ids above every
 * member's next_ctx (of both groups): the first for itself, the second for
 * the hidden local communicators -- one per group, which share the id as
 * split colours do, having no member in common.  Agreement is local
 * Allreduce, exchange between the two leaders (local rank 0, or the named
 * leaders at creation), local Bcast.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "comm_arg.h"
#include "typeop.h"

#define CTX_IDS_INTER 2u
#define CTX_STEP 4u

/* An intercommunicator over remote[0..rn) and local[0..ln) (this process
 * at lrank), contexts from ctx.  0 or -ENOMEM. */
static int inter_new(const int *remote, int rn, const int *local, int ln, int lrank,
		     uint32_t ctx, MPI_Errhandler errh, MPI_Comm *out)
{
	struct vd_comm *c;
	int *lw = malloc((size_t)ln * sizeof(int));
	int err = lw ? vd_comm_new(remote, rn, lrank, ctx, errh, out) : -ENOMEM;

	if (err) {
		free(lw);
		return err;
	}
	c = vd_comm_get(*out);
	memcpy(lw, local, (size_t)ln * sizeof(int));
	c->inter = true;
	c->local_world = lw;
	c->local_size = ln;
	err = vd_comm_new(local, ln, lrank, ctx + CTX_STEP, errh, &c->local_comm);
	if (err) {
		vd_comm_drop(*out);
		*out = MPI_COMM_NULL;
	}
	return err;
}

/* What the two groups tell each other through their leaders: each group's
 * maximum next_ctx and one word of the leader's choosing.  in: this
 * process's next_ctx and word; out[0] the local maximum, out[1] the
 * remote maximum, out[2] the remote leader's word.  MPI code. */
static int inter_exchange(struct vd_comm *c, unsigned mine_ctx, unsigned word,
			  unsigned out[3])
{
	struct vd_comm *lc = vd_comm_get(c->local_comm);
	unsigned send[2], recv[2] = { 0, 0 };
	int rc = vd_coll_code(vd_coll_allreduce(&mine_ctx, &out[0], 1, MPI_UNSIGNED, MPI_MAX,
						lc));

	if (rc != MPI_SUCCESS)
		return rc;
	send[0] = out[0];
	send[1] = word;
	if (c->rank == 0)
		rc = vd_coll_code(vd_coll_sendrecv(send, 2, MPI_UNSIGNED, 0, recv, 2,
						   MPI_UNSIGNED, 0, c));
	if (rc != MPI_SUCCESS)
		return rc;
	rc = vd_coll_code(vd_coll_bcast(recv, 2, MPI_UNSIGNED, 0, lc));
	out[1] = recv[0];
	out[2] = recv[1];
	return rc;
}

static unsigned max_u(unsigned a, unsigned b)
{
	return a > b ? a : b;
}

int vd_intercomm_dup(MPI_Comm comm, struct vd_comm *c, MPI_Comm *newcomm)
{
	unsigned x[3];
	uint32_t ctx;
	int rc = inter_exchange(c, vd_ctx_next(), 0, x);

	(void)comm;
	if (rc != MPI_SUCCESS)
		return rc;
	if (vd_ctx_reserve(max_u(x[0], x[1]), CTX_IDS_INTER, &ctx))
		return MPI_ERR_INTERN;
	return vd_mpi_errno(inter_new(c->world, c->size, c->local_world, c->local_size, c->rank,
				      ctx, c->errh, newcomm));
}

/* Nobody leaves before everybody of both groups has come: the local
 * barrier gathers one group, the leaders' exchange joins the two, the
 * second local barrier lets everyone go. */
int vd_intercomm_barrier(struct vd_comm *c)
{
	struct vd_comm *lc = vd_comm_get(c->local_comm);
	char s = 0, r;
	int rc = vd_coll_code(vd_coll_barrier(lc));

	if (rc == MPI_SUCCESS && c->rank == 0)
		rc = vd_coll_code(vd_coll_sendrecv(&s, 0, MPI_BYTE, 0, &r, 0, MPI_BYTE, 0, c));
	return rc == MPI_SUCCESS ? vd_coll_code(vd_coll_barrier(lc)) : rc;
}

/* ---- Intercomm_create ------------------------------------------------------ */

/* The leader's half: swap {size, max next_ctx} and the member lists with
 * the remote leader over peer_comm.  MPI code; *remote malloc'd. */
static int leaders_swap(const struct vd_comm *lc, unsigned lmax, MPI_Comm peer_comm,
			int remote_leader, int tag, unsigned hdr[2], int **remote)
{
	unsigned mine[2] = { (unsigned)lc->size, lmax };
	int rc = PMPI_Sendrecv(mine, 2, MPI_UNSIGNED, remote_leader, tag, hdr, 2, MPI_UNSIGNED,
			       remote_leader, tag, peer_comm, MPI_STATUS_IGNORE);

	if (rc != MPI_SUCCESS)
		return rc;
	if (hdr[0] == 0 || hdr[0] > (unsigned)vd_mpi.size)
		return MPI_ERR_INTERN;
	if (!(*remote = malloc(hdr[0] * sizeof(int))))
		return MPI_ERR_NO_MEM;
	return PMPI_Sendrecv(lc->world, lc->size, MPI_INT, remote_leader, tag, *remote,
			     (int)hdr[0], MPI_INT, remote_leader, tag, peer_comm,
			     MPI_STATUS_IGNORE);
}

/* The leader's checks of the arguments only it uses.  MPI code. */
static int peer_check(MPI_Comm peer_comm, int remote_leader, int tag)
{
	struct vd_comm *p = vd_comm_get(peer_comm);

	if (!p)
		return MPI_ERR_COMM;
	if (remote_leader < 0 || remote_leader >= p->size)
		return MPI_ERR_RANK;
	if (p->world[remote_leader] == vd_mpi.rank)
		return MPI_ERR_RANK;    /* the groups would overlap */
	return tag < 0 ? MPI_ERR_TAG : MPI_SUCCESS;
}

/* Everything the local group learns from its leader: its code, the remote
 * size and the overall maximum next_ctx, then the remote members.  Errors
 * found at the leader thus reach every member.  MPI code. */
static int learn_remote(struct vd_comm *lc, int local_leader, MPI_Comm peer_comm,
			int remote_leader, int tag, unsigned info[3], int **remote)
{
	unsigned lmax, mine = vd_ctx_next(), hdr[2] = { 0, 0 };
	int rc = vd_coll_code(vd_coll_allreduce(&mine, &lmax, 1, MPI_UNSIGNED, MPI_MAX, lc));

	if (rc != MPI_SUCCESS)
		return rc;
	*remote = NULL;
	if (lc->rank == local_leader) {
		info[0] = (unsigned)peer_check(peer_comm, remote_leader, tag);
		if (info[0] == MPI_SUCCESS)
			info[0] = (unsigned)leaders_swap(lc, lmax, peer_comm, remote_leader, tag,
							 hdr, remote);
		info[1] = hdr[0];
		info[2] = max_u(lmax, hdr[1]);
	}
	if ((rc = vd_coll_code(vd_coll_bcast(info, 3, MPI_UNSIGNED, local_leader, lc))))
		return rc;
	if (info[0] != MPI_SUCCESS)
		return (int)info[0];
	if (!*remote && !(*remote = malloc(info[1] * sizeof(int))))
		return MPI_ERR_NO_MEM;  /* the others then fail in the Bcast */
	return vd_coll_code(vd_coll_bcast(*remote, (int)info[1], MPI_INT, local_leader, lc));
}

#pragma weak MPI_Intercomm_create = PMPI_Intercomm_create
int PMPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm,
			  int remote_leader, int tag, MPI_Comm *newintercomm)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Intercomm_create";
	struct vd_comm *lc;
	unsigned info[3] = { 0, 0, 0 };
	uint32_t ctx;
	int *remote = NULL, rc = vd_comm_arg(local_comm, newintercomm, fn, &lc);

	if (rc)
		return rc;
	if (lc->inter)
		return vd_mpi_raise(local_comm, MPI_ERR_COMM, fn);
	if (local_leader < 0 || local_leader >= lc->size)
		return vd_mpi_raise(local_comm, MPI_ERR_RANK, fn);
	rc = learn_remote(lc, local_leader, peer_comm, remote_leader, tag, info, &remote);
	if (rc == MPI_SUCCESS && vd_ctx_reserve(info[2], CTX_IDS_INTER, &ctx))
		rc = MPI_ERR_INTERN;
	if (rc == MPI_SUCCESS)
		rc = vd_mpi_errno(inter_new(remote, (int)info[1], lc->world, lc->size, lc->rank,
					    ctx, lc->errh, newintercomm));
	free(remote);
	return vd_mpi_raise(local_comm, rc, fn);
}

/* ---- Intercomm_merge ----------------------------------------------------------- */

/* The group that said high = false comes first; when both said the same,
 * the group whose leader has the lower world rank (every member of both
 * groups knows both leaders, so all order alike). */
static bool local_first(const struct vd_comm *c, bool high, bool remote_high)
{
	if (high != remote_high)
		return !high;
	return c->local_world[0] < c->world[0];
}

/* The merged list of world ranks and this process's rank in it. */
static int *merged_members(const struct vd_comm *c, bool first, int *rank)
{
	int n = c->size + c->local_size;
	int *w = malloc((size_t)n * sizeof(int));
	const int *a = first ? c->local_world : c->world, *b = first ? c->world : c->local_world;
	int na = first ? c->local_size : c->size;

	if (!w)
		return NULL;
	memcpy(w, a, (size_t)na * sizeof(int));
	memcpy(w + na, b, (size_t)(n - na) * sizeof(int));
	*rank = first ? c->rank : c->size + c->rank;
	return w;
}

#pragma weak MPI_Intercomm_merge = PMPI_Intercomm_merge
int PMPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Intercomm_merge";
	struct vd_comm *c;
	unsigned x[3];
	uint32_t ctx;
	int rc = vd_comm_arg(intercomm, newintracomm, fn, &c), rank, *w;

	if (rc)
		return rc;
	if (!c->inter)
		return vd_mpi_raise_msg(intercomm, MPI_ERR_COMM, fn, "not an intercommunicator");
	if ((rc = inter_exchange(c, vd_ctx_next(), high != 0, x)) != MPI_SUCCESS)
		return vd_mpi_raise(intercomm, rc, fn);
	if (vd_ctx_reserve(max_u(x[0], x[1]), 1, &ctx))
		return vd_mpi_raise(intercomm, MPI_ERR_INTERN, fn);
	if (!(w = merged_members(c, local_first(c, high != 0, x[2] != 0), &rank)))
		return vd_mpi_raise(intercomm, MPI_ERR_NO_MEM, fn);
	rc = vd_comm_new(w, c->size + c->local_size, rank, ctx, c->errh, newintracomm);
	free(w);
	return vd_mpi_raise(intercomm, vd_mpi_errno(rc), fn);
}
