/* SPDX-License-Identifier: MIT */
/*
 * shm provider, connection management (shm_conn.c, shm_nic.c,
 * shm_service.c): the provider ops it implements and what those three
 * files share.  Nothing here is seen by the core.
 *
 * Rendezvous: every listening address (host + discriminator) is an
 * abstract SOCK_SEQPACKET Unix socket named
 *     "\0viaduct-vipl/<euid>/<secret>/<hex(host bytes, discriminator bytes)>"
 * where <secret> is this user's, from a private file (shm_name.c), so
 * another user can neither guess nor take the name.
 * created on the first VipConnectWait / peer wait for that address and
 * kept until VipCloseNic, so requests queue in its backlog between waits.
 * Abstract names leave nothing in the filesystem and vanish with the
 * process (kill -9 included).
 *
 * Handshake (fds passed with SCM_RIGHTS):
 *   requester                                  acceptor
 *   creates + attaches the region
 *   REQUEST / PEER_REQUEST ------------------>  queued on the listener
 *                          <------------------  CLAIMED (a waiter took it)
 *                                               attach, probe, vi->conn = c,
 *                                               offer receives (still not
 *                                               Connected)
 *                          <------------------  ACCEPT | REJECT | FAIL
 *   probe, vd_vi_connected                      (or NO_MATCH: not for us)
 *   CONFIRM | FAIL         ------------------>  Connected
 * Each side's receives are offered before the other side can send, so
 * nobody sends into an empty cookie queue.  After CONFIRM the socket only
 * carries notices (struct vd_shm_notice_msg).
 *
 * Peer-to-peer: the side with the smaller full address is the requester;
 * the other listens on its local address and takes the PEER_REQUEST whose
 * (to, from) equal its (local, remote).  Every VipConnectPeerDone/Wait on
 * a NIC advances ALL of that NIC's pending peer connections, so processes
 * that wait on their VIs in different orders never wait on each other.
 *
 * Errors returned by the ops, for vd_ret():
 *   -ETIMEDOUT     VIP_TIMEOUT     a waiter took the request, nobody
 *                                  answered in time (or accept found the
 *                                  requester gone)
 *   -ECONNREFUSED  VIP_REJECT      rejected, or the acceptor went away
 *                                  after taking the request
 *   -ENOENT        VIP_NO_MATCH    no matching waiter during the timeout
 *   -EHOSTUNREACH  VIP_NOT_REACHABLE  remote host is not this node
 *   -EPROTO, -EINVAL, -EADDRINUSE  VIP_INVALID_PARAMETER (EADDRINUSE:
 *                                  another process listens there)
 *   -ENOMEM, -EMFILE, -ENFILE, -EPERM  VIP_ERROR_RESOURCE (EPERM: peer of
 *                                  another user / process_vm_writev not
 *                                  permitted; the reason is vd_log()ged)
 *   -EBADSLT       VIP_INVALID_RELIABILITY_LEVEL
 *   -EMSGSIZE      VIP_INVALID_MTU
 *   -EXDEV         VIP_INVALID_QOS
 */
#ifndef VIADUCT_SHM_CONN_H
#define VIADUCT_SHM_CONN_H

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "prov/shm/shm.h"

/* ---- provider ops (the lead's vd_shm_ops points here) ------------------- */
int vd_shm_nic_open(struct vd_nic *nic, const char *spec);
void vd_shm_nic_close(struct vd_nic *nic);
int vd_shm_connect_wait(struct vd_nic *nic, const VIP_NET_ADDRESS *local,
			int timeout_ms, struct vd_conn_req **req);
void vd_shm_conn_req_info(struct vd_conn_req *req, VIP_NET_ADDRESS *remote,
			  size_t remote_room, VIP_VI_ATTRIBUTES *attrs);
int vd_shm_connect_accept(struct vd_conn_req *req, struct vd_vi *vi);
void vd_shm_connect_reject(struct vd_conn_req *req);
int vd_shm_connect_request(struct vd_vi *vi, const VIP_NET_ADDRESS *local,
			   const VIP_NET_ADDRESS *remote, int timeout_ms,
			   VIP_VI_ATTRIBUTES *remote_attrs);
int vd_shm_peer_request(struct vd_vi *vi, const VIP_NET_ADDRESS *local,
			const VIP_NET_ADDRESS *remote, int timeout_ms);
int vd_shm_peer_progress(struct vd_vi *vi, int timeout_ms,
			 VIP_VI_ATTRIBUTES *remote_attrs);
void vd_shm_disconnect(struct vd_vi *vi);

/* ---- wire formats ----------------------------------------------------------- */
#define VD_SHM_ADDR_BYTES 44    /* >= VD_SHM_ADDR_LEN + VD_SHM_MAX_DISCRIMINATOR */
static_assert(VD_SHM_ADDR_BYTES >= VD_SHM_ADDR_LEN + VD_SHM_MAX_DISCRIMINATOR,
	      "address room");

/* A full VIA address (host bytes then discriminator bytes). */
struct vd_shm_addr {
	uint16_t host_len;
	uint16_t disc_len;
	uint8_t b[VD_SHM_ADDR_BYTES];
};
static_assert(sizeof(struct vd_shm_addr) == 48, "address layout");

#define VD_SHM_HS_MAGIC 0x76646873u     /* "vdhs" */
#define VD_SHM_HS_VERSION 1u

enum vd_shm_hs_type {
	VD_HS_REQUEST = 1,      /* VipConnectRequest */
	VD_HS_PEER_REQUEST = 2, /* VipConnectPeerRequest (smaller address) */
	VD_HS_ACCEPT = 3,
	VD_HS_REJECT = 4,
	VD_HS_NO_MATCH = 5,     /* not for this listener: try again */
	VD_HS_CLAIMED = 6,      /* a waiter took the request */
	VD_HS_FAIL = 7,         /* failed: err is a positive errno */
	VD_HS_CONFIRM = 8,      /* requester connected; acceptor may be too */
};

/* vd_shm_hs.fds: which fds ride along, in this order. */
#define VD_HS_FD_REGION 0x1u
#define VD_HS_FD_TPT 0x2u
#define VD_HS_FD_RCQ 0x4u
#define VD_HS_MAX_FDS 3

/* vd_shm_hs.rdma */
#define VD_HS_RDMA_WRITE 0x1u
#define VD_HS_RDMA_READ 0x2u

struct vd_shm_hs {
	uint32_t magic;
	uint16_t version;
	uint16_t type;                  /* enum vd_shm_hs_type */
	uint32_t fds;                   /* VD_HS_FD_* present */
	int32_t err;                    /* FAIL */
	struct vd_shm_addr from;        /* sender's own (local) address */
	struct vd_shm_addr to;          /* the address it wants */
	uint64_t max_transfer;          /* VI attributes */
	uint64_t vi_bits;               /* vd_obj_handle_bits of the VI */
	uint64_t probe_addr;            /* a word process_vm_writev may hit */
	uint32_t probe_val;             /* its value (written back as is) */
	uint16_t reliability;
	uint8_t qos;                    /* 1: QoS pointer was not NULL */
	uint8_t rdma;                   /* VD_HS_RDMA_* */
	uint64_t reserved[2];
};
static_assert(sizeof(struct vd_shm_hs) == 160, "handshake layout");

#define VD_SHM_NOTICE_MAGIC 0x76646e6fu /* "vdno" */

/* After set-up the socket carries only these. */
struct vd_shm_notice_msg {
	uint32_t magic;
	uint16_t type;                  /* enum vd_shm_notice */
	uint8_t breaks;                 /* 1: the connection is broken */
	uint8_t reserved;
};
static_assert(sizeof(struct vd_shm_notice_msg) == 8, "notice layout");

/* ---- listeners and requests (shm_nic.c) ----------------------------------- */
#define VD_SHM_BACKLOG 512
#define VD_SHM_RAW_MAX 64       /* accepted sockets not yet read */

struct vd_shm_listener {
	struct vd_list link;            /* vd_shm_nic.listeners */
	struct vd_shm_addr addr;
	int fd;
	bool polling;                   /* one waiter polls fd; nic lock */
	pthread_cond_t cond;            /* the others wait here; nic lock */
	struct vd_list queue;           /* vd_conn_req: received, unclaimed */
	int raw[VD_SHM_RAW_MAX];        /* owned by the polling waiter */
	pid_t raw_pid[VD_SHM_RAW_MAX];
	unsigned nraw;
};

/* A request read from a listener (also VipConnectWait's result). */
struct vd_conn_req {
	struct vd_list link;            /* listener queue, then nicx.reqs */
	struct vd_shm_nicx *nx;         /* NULL once the NIC closed */
	int sock;                       /* -1 once failed or orphaned */
	pid_t pid;                      /* SO_PEERCRED */
	int err;                        /* sticky accept failure */
	struct vd_shm_hs hs;
	int fd[VD_HS_MAX_FDS];          /* region, tpt, rcq; -1 if absent */
};

/* A connection being set up for one VI: VipConnectRequest, an accept
 * waiting for CONFIRM, or a peer-to-peer request.  Fields other than the
 * flags under the NIC lock belong to the thread that set `busy`. */
struct vd_shm_pend {
	struct vd_list link;            /* vd_shm_nicx.pend */
	struct vd_vi *vi;
	uint64_t vi_bits;               /* to notice a destroyed VI */
	struct vd_shm_addr local, remote;
	uint64_t deadline;              /* ns, VD_SHM_FOREVER = never */
	uint64_t confirm_by;            /* acceptor: CONFIRM due (ns) */
	uint64_t next_try;              /* requester: reconnect after (ns) */
	uint16_t type;                  /* VD_HS_REQUEST / PEER_REQUEST */
	bool requester;                 /* we connect (else: we accept) */
	bool sweepable;                 /* peer: any waiter on the NIC steps it */
	bool busy;                      /* NIC lock: a thread is stepping it */
	bool cancelled;                 /* NIC lock: disconnect wants it gone */
	bool finished;                  /* NIC lock: failed with `result` */
	bool claimed;                   /* an acceptor took our request */
	int result;
	int sock;                       /* the attempt's socket, or -1 */
	pid_t pid;                      /* the other side (SO_PEERCRED) */
	int region_fd;                  /* requester: the region's memfd */
	/* requester: region attached, not yet vi->conn; acceptor after the
	 * claim: vi->conn, receives offered, waiting for CONFIRM */
	struct vd_shm_conn *c;
	struct vd_shm_listener *l;      /* peer acceptor: its listener */
};

/* Per-NIC state: struct vd_shm_nic (the shared contract) first. */
struct vd_shm_nicx {
	struct vd_shm_nic pub;
	pthread_cond_t cond;            /* pend.busy changes; pub.lock */
	struct vd_list pend;            /* vd_shm_pend */
	struct vd_list reqs;            /* vd_conn_req handed to the core */
};

static inline struct vd_shm_nicx *vd_shm_nicx(struct vd_nic *nic)
{
	return vd_container_of(nic->prov, struct vd_shm_nicx, pub);
}

#define VD_SHM_FOREVER UINT64_MAX

uint64_t vd_shm_deadline(int timeout_ms);
/* VIP_NET_ADDRESS -> wire form; -EINVAL on bad lengths. */
int vd_shm_addr_from(struct vd_shm_addr *a, const VIP_NET_ADDRESS *na);
bool vd_shm_addr_eq(const struct vd_shm_addr *a, const struct vd_shm_addr *b);
int vd_shm_addr_cmp(const struct vd_shm_addr *a, const struct vd_shm_addr *b);
/* Host part is this node: 0, else -EHOSTUNREACH. */
int vd_shm_addr_local(const struct vd_shm_addr *a);
/* The abstract socket name of a listening address (shm_name.c): 0, or
 * -EACCES and friends when this user's secret cannot be had. */
int vd_shm_sockname(struct sockaddr_un *sa, const struct vd_shm_addr *a, socklen_t *len);

/* Socket helpers.  Sockets are non-blocking. */
int vd_shm_send_hs(int sock, const struct vd_shm_hs *hs, const int *fds, int nfds);
/* One handshake message: 0 with fds[] (-1 where absent), -EAGAIN when
 * nothing is there, -ECONNRESET on EOF, -EPROTO when malformed. */
int vd_shm_recv_hs(int sock, struct vd_shm_hs *hs, int fd[VD_HS_MAX_FDS]);
void vd_shm_send_type(int sock, uint16_t type, int err);
/* SO_PEERCRED: same euid as ours, else -EPERM (logged). */
int vd_shm_peer_check(int sock, pid_t *pid);
/* Wait for sock readable until deadline; 0, or -ETIMEDOUT. */
int vd_shm_wait_fd(int fd, uint64_t deadline);

int vd_shm_listener_get(struct vd_shm_nicx *nx, const struct vd_shm_addr *a,
			struct vd_shm_listener **out);
typedef bool (*vd_shm_match_fn)(const struct vd_conn_req *r, const void *arg);
/* Take a request `match` accepts from l: polls once, then waits until
 * deadline.  Sends CLAIMED to its requester.  0 or -ETIMEDOUT. */
int vd_shm_claim(struct vd_shm_nicx *nx, struct vd_shm_listener *l,
		 vd_shm_match_fn match, const void *arg, uint64_t deadline,
		 struct vd_conn_req **out);
void vd_shm_req_free(struct vd_conn_req *r);

static inline uint64_t vd_shm_min3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t m = a < b ? a : b;

	return m < c ? m : c;
}

#define VD_SHM_SLICE_NS 10000000ull     /* a peer waiter re-sweeps this often */

/* NIC lock held: vi's pending set-up, or NULL. */
struct vd_shm_pend *vd_shm_pend_find(struct vd_shm_nicx *nx, const struct vd_vi *vi);
/* Drop vi's set-up in progress (waits for a thread stepping it). */
void vd_shm_pend_cancel(struct vd_shm_nicx *nx, struct vd_vi *vi);

/* ---- shm_conn.c ---------------------------------------------------------------- */
/* Advance p until it connects (0), fails (-errno) or `until` passes
 * (-EINPROGRESS).  The caller set p->busy. */
int vd_shm_pend_step(struct vd_shm_nicx *nx, struct vd_shm_pend *p, uint64_t until);
/* Give back what a set-up holds; the record itself stays. */
void vd_shm_pend_release(struct vd_shm_pend *p, bool vi_alive);
/* Drop a pending set-up's sockets and mappings; with vi_alive, also undo
 * what it did to the VI (vi->conn, offered receives). */
void vd_shm_pend_free(struct vd_shm_pend *p, bool vi_alive);

/* ---- shm_service.c ------------------------------------------------------------ */
/* NICs open in this process; the service thread and its fds go when the
 * count drops to 0 (so VipCloseNic leaves no fd behind). */
void vd_shm_service_nic_ref(int delta);

#endif /* VIADUCT_SHM_CONN_H */
