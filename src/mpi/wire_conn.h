/* SPDX-License-Identifier: MIT */
/*
 * How the engine's VIs come up (wire_conn.c): all at MPI_Init
 * (VIADUCT_MPI_CONNECT=eager, peer to peer), or a pair on its first
 * message (lazy, the default).  wire.c owns what travels on a VI; this
 * file only makes them.
 */
#ifndef VIADUCT_MPI_WIRE_CONN_H
#define VIADUCT_MPI_WIRE_CONN_H

#include "engine.h"

/* Before any VI is opened (vd_conn_start, or the eager start-up): whether
 * VIs on shm, and on the network transport, get VIADUCT_VI_DEEP_RING.
 * Every rank must decide the same for a pair: the requester's flag sizes
 * the connection. */
void vd_conn_deep_rings(bool local, bool remote);
/* The peer's address on transport k for the pair (from, to); from -1
 * names to's listener (lazy connections). */
VIP_NET_ADDRESS *vd_conn_addr(uint8_t *room, enum vd_transport k, int host_rank, int from,
			      int to);
/* A VI for peer `rank` on nic, its receive queue on cq: 0 or -errno. */
int vd_conn_vi_open(enum vd_transport k, VIP_NIC_HANDLE nic, VIP_CQ_HANDLE cq, int rank,
		    VIP_VI_HANDLE *vi);

/* Lazy mode: listen on every transport with peers (nic[k] non-NULL) and
 * start the threads that accept and request connections.  0 or -errno. */
int vd_conn_start(VIP_NIC_HANDLE const nic[VD_T_N], VIP_CQ_HANDLE const cq[VD_T_N]);
/* Ask for a connection to peer (nothing if one exists or is coming). */
void vd_conn_want(int peer);
/* Connections made since the last call, in *ranks and *vis (room for
 * max); how many.  Cheap when there are none. */
int vd_conn_take(int *ranks, VIP_VI_HANDLE *vis, int max);
/* End the job if a connection this rank asked for failed, or took
 * longer than the connection timeout. */
void vd_conn_check(void);
/* Stop the threads (VIs made stay with the engine). */
void vd_conn_stop(void);

#endif /* VIADUCT_MPI_WIRE_CONN_H */
