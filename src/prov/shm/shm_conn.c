/* SPDX-License-Identifier: MIT */
/*
 * shm provider: connection set-up and teardown (protocol in shm_conn.h).
 * The connection region, the peer's TPT and receive-CQ ring are mapped
 * here, after every field the other process wrote is validated.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "prov/shm/shm_conn.h"

#define VD_SHM_MAX_DEPTH 4096u
#define VD_SHM_MAX_PIO (64u << 20)
#define VD_SHM_CONFIRM_NS 5000000000ull   /* requester answers at once */
#define VD_SHM_RETRY_NS 2000000ull        /* reconnect pace, no listener */
#define VD_SHM_PROBE_VAL 0x70726f62u      /* "prob" */

/* The peer writes this word (with its own value) to prove it may use
 * process_vm_writev on us. */
static uint32_t vd_shm_probe_word = VD_SHM_PROBE_VAL;

/* ---- the connection region ----------------------------------------------------- */

/* Per direction: cookies, xfers, pio ring, message ring. */
#define VD_AREAS 4

struct layout {
	uint32_t off[2][VD_AREAS];
	uint32_t size;
};

static uint64_t al64(uint64_t x)
{
	return (x + VD_CACHELINE - 1) & ~(uint64_t)(VD_CACHELINE - 1);
}

static bool pow2(uint32_t x)
{
	return x && !(x & (x - 1));
}

static bool ring_size_ok(uint32_t bytes)
{
	return pow2(bytes) && bytes >= 4 * VD_CACHELINE && bytes <= VD_SHM_MAX_PIO;
}

/* Bytes of each area of a direction, in layout order. */
static void area_lens(uint32_t depth, uint32_t pio, uint32_t msg, uint64_t len[VD_AREAS])
{
	len[0] = (uint64_t)depth * sizeof(struct vd_shm_cookie);
	len[1] = (uint64_t)depth * sizeof(struct vd_shm_xfer);
	len[2] = pio;
	len[3] = msg;
}

static int layout_make(uint32_t depth, uint32_t pio, uint32_t msg, struct layout *lo)
{
	uint64_t at = al64(sizeof(struct vd_shm_region)), len[VD_AREAS];

	if (!pow2(depth) || depth > VD_SHM_MAX_DEPTH || !ring_size_ok(pio) || !ring_size_ok(msg))
		return -EINVAL;
	area_lens(depth, pio, msg, len);
	for (int d = 0; d < 2; d++) {
		for (int a = 0; a < VD_AREAS; a++) {
			lo->off[d][a] = (uint32_t)at;
			at += al64(len[a]);
		}
	}
	lo->size = (uint32_t)at;
	return 0;
}

static int seal_sizes(int fd)
{
	return fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) ? -errno : 0;
}

int vd_shm_region_create(uint32_t depth, uint32_t pio_bytes, uint32_t msg_bytes, int *memfd)
{
	struct vd_shm_region *r;
	struct layout lo;
	int fd, err = layout_make(depth, pio_bytes, msg_bytes, &lo);

	if (err)
		return err;
	fd = memfd_create("viaduct-conn", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	/* Sealed against shrinking before anyone maps it: no SIGBUS. */
	if (ftruncate(fd, lo.size) || (err = seal_sizes(fd)) != 0) {
		err = err ? err : -errno;
		close(fd);
		return err;
	}
	r = mmap(NULL, lo.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r == MAP_FAILED) {
		err = -errno;
		close(fd);
		return err;
	}
	r->magic = VD_SHM_MAGIC;
	r->version = VD_SHM_VERSION;
	r->size = lo.size;
	r->depth = depth;
	r->pio_bytes = pio_bytes;
	r->msg_bytes = msg_bytes;
	for (int d = 0; d < 2; d++) {
		r->dir[d].off_cookies = lo.off[d][0];
		r->dir[d].off_xfers = lo.off[d][1];
		r->dir[d].off_ring = lo.off[d][2];
		r->dir[d].off_msg = lo.off[d][3];
	}
	munmap(r, lo.size);
	*memfd = fd;
	return 0;
}

/* The memfd cannot shrink under our mapping (the sender could otherwise
 * make every later access SIGBUS). */
static int fd_sized(int fd, size_t min, size_t max, size_t *size)
{
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);

	if (seals < 0 || !(seals & F_SEAL_SHRINK) || fstat(fd, &st))
		return -EPROTO;
	if (st.st_size < 0 || (size_t)st.st_size < min || (size_t)st.st_size > max)
		return -EPROTO;
	*size = (size_t)st.st_size;
	return 0;
}

#define VD_RANGES (2 * VD_AREAS)

/* Every range [off, off+len) inside [hdr, size), 64-byte aligned,
 * pairwise disjoint. */
static bool ranges_ok(const uint32_t off[VD_RANGES], const uint64_t len[VD_RANGES],
		      uint64_t hdr, uint64_t size)
{
	for (int i = 0; i < VD_RANGES; i++) {
		if ((off[i] & (VD_CACHELINE - 1)) || off[i] < hdr || off[i] + len[i] > size)
			return false;
		for (int j = 0; j < i; j++)
			if (off[i] < off[j] + len[j] && off[j] < off[i] + len[i])
				return false;
	}
	return true;
}

/* Validates a copy of the header taken once, so a peer rewriting the
 * shared header later changes nothing we use. */
static int region_check(const struct vd_shm_region *h, size_t size, uint32_t off[VD_RANGES])
{
	uint64_t len[VD_RANGES];

	if (h->magic != VD_SHM_MAGIC || h->version != VD_SHM_VERSION || h->size != size ||
	    !pow2(h->depth) || h->depth > VD_SHM_MAX_DEPTH || !ring_size_ok(h->pio_bytes) ||
	    !ring_size_ok(h->msg_bytes) || h->msg_bytes < VD_SHM_MSG_BYTES)
		return -EPROTO;
	for (int d = 0; d < 2; d++) {
		const struct vd_shm_dir *dir = &h->dir[d];
		uint32_t *o = off + VD_AREAS * d;

		o[0] = dir->off_cookies;
		o[1] = dir->off_xfers;
		o[2] = dir->off_ring;
		o[3] = dir->off_msg;
		area_lens(h->depth, h->pio_bytes, h->msg_bytes, len + VD_AREAS * d);
	}
	return ranges_ok(off, len, sizeof(*h), size) ? 0 : -EPROTO;
}

int vd_shm_conn_attach(struct vd_shm_conn *c, int memfd, int dir_tx)
{
	struct vd_shm_region hdr;
	uint32_t off[VD_RANGES];
	size_t size;
	char *base;
	int err = fd_sized(memfd, sizeof(hdr), 1u << 30, &size);

	if (err || (dir_tx != 0 && dir_tx != 1))
		return err ? err : -EINVAL;
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (base == MAP_FAILED)
		return -errno;
	memcpy(&hdr, base, sizeof(hdr));
	err = region_check(&hdr, size, off);
	if (err) {
		munmap(base, size);
		return err;
	}
	int tx = VD_AREAS * dir_tx, rx = VD_AREAS * (1 - dir_tx);
	c->region = (struct vd_shm_region *)base;
	c->region_len = size;
	c->tx = &c->region->dir[dir_tx];
	c->rx = &c->region->dir[1 - dir_tx];
	c->tx_cookies = (struct vd_shm_cookie *)(base + off[tx]);
	c->tx_xfers = (struct vd_shm_xfer *)(base + off[tx + 1]);
	c->tx_ring = (uint8_t *)(base + off[tx + 2]);
	c->rx_cookies = (struct vd_shm_cookie *)(base + off[rx]);
	c->rx_xfers = (struct vd_shm_xfer *)(base + off[rx + 1]);
	c->rx_ring = (uint8_t *)(base + off[rx + 2]);
	c->tx_msg = (uint8_t *)(base + off[tx + 3]);
	c->rx_msg = (uint8_t *)(base + off[rx + 3]);
	c->depth = hdr.depth;
	c->pio_bytes = hdr.pio_bytes;
	c->msg_lines = hdr.msg_bytes / VD_CACHELINE;
	err = vd_shm_ring_init(c);
	if (err) {
		munmap(base, size);
		c->region = NULL;
	}
	return err;
}

/* ---- the peer's TPT and receive CQ ------------------------------------------------ */

static int map_peer_tpt(struct vd_shm_conn *c, int fd)
{
	const struct vd_shm_tpt_shared *t;
	size_t size;

	if (fd_sized(fd, VD_SHM_TPT_BYTES, VD_SHM_TPT_BYTES, &size))
		return -EPROTO;
	t = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (t == MAP_FAILED)
		return -errno;
	if (t->magic != VD_SHM_TPT_MAGIC || t->version != VD_SHM_TPT_VERSION ||
	    t->nentries != VD_TPT_MAX) {
		munmap((void *)t, size);
		return -EPROTO;
	}
	c->peer_tpt = t;
	return 0;
}

static int map_peer_rcq(struct vd_shm_conn *c, int fd)
{
	struct vd_cq_ring *q;
	size_t size;

	/* Exactly one doorbell page: every slot we may set is inside it. */
	if (fd_sized(fd, sizeof(*q), sizeof(*q), &size))
		return -EPROTO;
	q = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (q == MAP_FAILED)
		return -errno;
	if (q->magic != VD_CQR_MAGIC || q->version != VD_CQR_VERSION || q->size != size) {
		munmap(q, size);
		return -EPROTO;
	}
	c->peer_rcq = q;
	c->peer_rcq_len = size;
	return 0;
}

static int pidfd_of(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	return -1;      /* no pidfd: the socket's EOF still tells */
#endif
}

static void hs_attrs(const struct vd_shm_hs *hs, VIP_VI_ATTRIBUTES *a)
{
	memset(a, 0, sizeof(*a));
	a->ReliabilityLevel = hs->reliability;
	a->MaxTransferSize = (VIP_ULONG)hs->max_transfer;
	a->QoS = NULL;          /* a pointer means nothing in this process */
	a->Ptag = NULL;
	a->EnableRdmaWrite = (hs->rdma & VD_HS_RDMA_WRITE) != 0;
	a->EnableRdmaRead = (hs->rdma & VD_HS_RDMA_READ) != 0;
}

/* What the other side's handshake message brought: its TPT, its receive
 * CQ, who it is.  fd[] stay open (the caller closes them). */
static int conn_peer_setup(struct vd_shm_conn *c, const struct vd_shm_hs *hs,
			   const int fd[VD_HS_MAX_FDS], pid_t pid)
{
	int err = map_peer_tpt(c, fd[1]);

	if (!err && fd[2] >= 0)
		err = map_peer_rcq(c, fd[2]);
	if (err)
		return err;
	c->peer_pid = pid;
	c->pidfd = pidfd_of(pid);
	hs_attrs(hs, &c->peer_attrs);
	return 0;
}

static void close_fds(int fd[VD_HS_MAX_FDS])
{
	for (int i = 0; i < VD_HS_MAX_FDS; i++)
		if (fd[i] >= 0)
			close(fd[i]);
}

static struct vd_shm_conn *conn_new(void)
{
	struct vd_shm_conn *c = calloc(1, sizeof(*c));

	if (c)
		c->sock = c->pidfd = -1;
	return c;
}

/* c must come from conn_new (this file); frees it. */
void vd_shm_conn_free(struct vd_shm_conn *c)
{
	if (!c)
		return;
	vd_shm_ring_unlink(c);          /* before its memory goes */
	free(c->msg_dirty);
	if (c->region)
		munmap(c->region, c->region_len);
	if (c->peer_tpt)
		munmap((void *)c->peer_tpt, VD_SHM_TPT_BYTES);
	if (c->peer_rcq)
		munmap(c->peer_rcq, c->peer_rcq_len);
	if (c->sock >= 0)
		close(c->sock);
	if (c->pidfd >= 0)
		close(c->pidfd);
	free(c);
}

/* ---- permission probe ----------------------------------------------------------------- */

/* Can we process_vm_writev into pid?  Writes the peer's probe word with
 * the value it says the word holds, so nothing changes there. */
static int probe(pid_t pid, const struct vd_shm_hs *hs)
{
	uint32_t v = hs->probe_val;
	struct iovec l = { .iov_base = &v, .iov_len = sizeof(v) };
	struct iovec r = { .iov_base = (void *)(uintptr_t)hs->probe_addr, .iov_len = sizeof(v) };

	if (process_vm_writev(pid, &l, 1, &r, 1, 0) == (ssize_t)sizeof(v))
		return 0;
	if (errno == EPERM) {
		vd_log("shm: process_vm_writev to pid %d not permitted: same user? "
		       "Yama ptrace_scope (/proc/sys/kernel/yama/ptrace_scope)? "
		       "is either process non-dumpable (setuid, prctl)?", (int)pid);
		return -EPERM;
	}
	if (errno == ESRCH)
		return -ECONNREFUSED;   /* it exited meanwhile */
	vd_log("shm: process_vm_writev probe of pid %d: %s", (int)pid, strerror(errno));
	return -EPROTO;
}

/* ---- handshake messages ------------------------------------------------------------------ */

static void hs_fill(struct vd_shm_hs *hs, uint16_t type, const struct vd_vi *vi)
{
	memset(hs, 0, sizeof(*hs));
	hs->magic = VD_SHM_HS_MAGIC;
	hs->version = VD_SHM_HS_VERSION;
	hs->type = type;
	hs->max_transfer = vi->attrs.MaxTransferSize;
	hs->reliability = vi->attrs.ReliabilityLevel;
	hs->qos = vi->attrs.QoS != NULL;
	hs->rdma = (vi->attrs.EnableRdmaWrite ? VD_HS_RDMA_WRITE : 0) |
		   (vi->attrs.EnableRdmaRead ? VD_HS_RDMA_READ : 0);
	hs->vi_bits = vd_obj_handle_bits(vi);
	hs->probe_addr = (uint64_t)(uintptr_t)&vd_shm_probe_word;
	hs->probe_val = VD_SHM_PROBE_VAL;
}

/* Our TPT and, when the VI's receive queue has a CQ, its event ring:
 * what a peer needs to RDMA into us and to announce our receives. */
static int vi_fds(const struct vd_vi *vi, int *fds, uint32_t *mask)
{
	int n = 0;

	fds[n++] = vd_shm_nic(vi->nic)->tpt_fd;
	*mask |= VD_HS_FD_TPT;
	if (vi->recv_cq && vi->recv_cq->prov) {
		fds[n++] = ((const struct vd_shm_cq *)vi->recv_cq->prov)->memfd;
		*mask |= VD_HS_FD_RCQ;
	}
	return n;
}

/* Accept-time attribute check (VI-GM: the two VIs must agree). */
static int attrs_match(const struct vd_vi *vi, const struct vd_shm_hs *hs)
{
	if (vi->attrs.ReliabilityLevel != hs->reliability)
		return -EBADSLT;
	if ((uint64_t)vi->attrs.MaxTransferSize != hs->max_transfer)
		return -EMSGSIZE;
	if ((vi->attrs.QoS != NULL) != (hs->qos != 0))
		return -EXDEV;
	return 0;
}

/* ---- VI side effects ------------------------------------------------------------------- */

static void vi_set_conn(struct vd_vi *vi, struct vd_shm_conn *c)
{
	struct vd_shm_conn *old;

	if (c)
		vd_shm_ring_link(vi, c);
	vd_lock(&vi->sq.lock);
	vd_lock(&vi->rq.lock);
	old = vi->conn;
	vi->conn = c;
	vd_unlock(&vi->rq.lock);
	vd_unlock(&vi->sq.lock);
	if (old && old != c)
		vd_shm_ring_unlink(old);
}

/* Acceptor, before ACCEPT: attach and offer the posted receives while
 * the VI is not yet Connected, so the requester, which may send as soon
 * as it sees ACCEPT, finds them. */
static void acc_offer(struct vd_vi *vi, struct vd_shm_conn *c)
{
	c->vi = vi;
	vi_set_conn(vi, c);
	vi->nic->ops->conn_ready(vi);
	vd_lock(&vi->rq.lock);
	vi->nic->ops->recv_publish(vi);
	vd_unlock(&vi->rq.lock);
}

/* Undo acc_offer: the receives were offered in a region nobody will
 * read; they are offered again on the next connection. */
static void acc_unoffer(struct vd_vi *vi, struct vd_shm_conn *c)
{
	vd_lock(&vi->sq.lock);
	vd_lock(&vi->rq.lock);
	if (vi->conn == c) {
		vi->conn = NULL;
		vi->rq.sent = vi->rq.done;
	}
	vd_unlock(&vi->rq.lock);
	vd_unlock(&vi->sq.lock);
	vd_shm_ring_unlink(c);
}


/* Hand the connection to the service thread, which notices the peer's
 * death and notices; a connection it cannot watch is refused. */
static int watch_or_refuse(struct vd_shm_conn *c)
{
	int err = vd_shm_service_add(c);

	if (err)
		vd_log("shm: cannot watch the connection to pid %d (%s): refused",
		       (int)c->peer_pid, strerror(-err));
	return err;
}

/* ---- acceptor ------------------------------------------------------------------------ */

/* Map what the request brought, probe, offer our receives, send ACCEPT.
 * On success p owns the socket and the connection; r keeps its fds. */
static int acc_begin(struct vd_shm_pend *p, struct vd_conn_req *r)
{
	struct vd_shm_conn *c = conn_new();
	struct vd_shm_hs hs;
	int fds[VD_HS_MAX_FDS], n, err = c ? 0 : -ENOMEM;

	if (!err)
		err = vd_shm_conn_attach(c, r->fd[0], 1);
	if (!err)
		err = conn_peer_setup(c, &r->hs, r->fd, r->pid);
	if (!err)
		err = probe(r->pid, &r->hs);
	if (err) {
		vd_shm_send_type(r->sock, VD_HS_FAIL, -err);
		vd_shm_conn_free(c);
		return err;
	}
	acc_offer(p->vi, c);
	hs_fill(&hs, VD_HS_ACCEPT, p->vi);
	n = vi_fds(p->vi, fds, &hs.fds);
	if (vd_shm_send_hs(r->sock, &hs, fds, n)) {
		acc_unoffer(p->vi, c);
		vd_shm_conn_free(c);
		return -ETIMEDOUT;      /* the requester is gone */
	}
	p->c = c;
	p->pid = r->pid;
	p->sock = r->sock;
	r->sock = -1;
	p->confirm_by = vd_now_ns() + VD_SHM_CONFIRM_NS;
	return 0;
}

/* The requester confirmed.  The connection is watched before it counts
 * as up: one nobody watches would never notice the peer's death, so a
 * failure to watch refuses it -- and the shutdown tells the requester,
 * whose VI already counts as Connected. */
static int acc_finish(struct vd_shm_pend *p)
{
	struct vd_shm_conn *c = p->c;
	int err;

	c->sock = p->sock;
	err = watch_or_refuse(c);
	if (err) {
		shutdown(p->sock, SHUT_RDWR);
		c->sock = -1;
		return err;
	}
	p->sock = -1;
	p->c = NULL;
	vd_vi_connected(p->vi);
	return 0;
}

/* -EAGAIN until the requester's answer is there. */
static int acc_confirm(struct vd_shm_pend *p)
{
	struct vd_shm_hs hs;
	int fd[VD_HS_MAX_FDS];
	int err = vd_shm_recv_hs(p->sock, &hs, fd);

	close_fds(fd);                  /* CONFIRM brings none; never keep any */
	if (err == -EAGAIN)
		return vd_now_ns() >= p->confirm_by ? -ETIMEDOUT : -EAGAIN;
	if (err)
		return -ETIMEDOUT;      /* the requester gave up or died */
	if (hs.type == VD_HS_FAIL)
		return -hs.err;
	if (hs.type != VD_HS_CONFIRM)
		return -EPROTO;
	return acc_finish(p);
}

static bool match_peer(const struct vd_conn_req *r, const void *arg)
{
	const struct vd_shm_pend *p = arg;

	return r->hs.type == VD_HS_PEER_REQUEST && vd_shm_addr_eq(&r->hs.to, &p->local) &&
	       vd_shm_addr_eq(&r->hs.from, &p->remote);
}

/* Peer acceptor: claim our request (waiting at most until `until`). */
static int acc_step(struct vd_shm_nicx *nx, struct vd_shm_pend *p, uint64_t until)
{
	struct vd_conn_req *r;
	int err;

	if (p->c)
		return acc_confirm(p);
	if (vd_shm_claim(nx, p->l, match_peer, p, until, &r))
		return -EAGAIN;
	err = attrs_match(p->vi, &r->hs);
	if (err)
		vd_shm_send_type(r->sock, VD_HS_REJECT, 0);
	else
		err = acc_begin(p, r);
	vd_shm_req_free(r);
	return err ? err : -EAGAIN;
}

/* ---- requester ------------------------------------------------------------------------- */

static int req_prepare(struct vd_shm_pend *p)
{
	bool deep = atomic_load(&p->vi->ext_flags) & VIADUCT_VI_DEEP_RING;
	int err = vd_shm_region_create(VD_SHM_DEPTH, VD_SHM_PIO_BYTES,
				       deep ? VD_SHM_MSG_BYTES_DEEP : VD_SHM_MSG_BYTES,
				       &p->region_fd);

	if (err)
		return err;
	p->c = conn_new();
	if (!p->c)
		return -ENOMEM;
	return vd_shm_conn_attach(p->c, p->region_fd, 0);
}

/* One connect attempt: 0 (request sent), -EAGAIN (nobody listens yet,
 * or its backlog is full), or a final error. */
static int req_attempt(struct vd_shm_pend *p)
{
	struct sockaddr_un sa;
	socklen_t len;
	struct vd_shm_hs hs;
	int fds[VD_HS_MAX_FDS], n, err = vd_shm_sockname(&sa, &p->remote, &len);
	int s;

	if (err)
		return err;
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if (connect(s, (struct sockaddr *)&sa, len)) {
		err = errno;
		close(s);
		if (err == ECONNREFUSED || err == ENOENT || err == EAGAIN)
			return -EAGAIN;
		return -err;
	}
	err = vd_shm_peer_check(s, &p->pid);
	if (err) {
		close(s);
		return err;
	}
	hs_fill(&hs, p->type, p->vi);
	hs.from = p->local;
	hs.to = p->remote;
	fds[0] = p->region_fd;
	hs.fds = VD_HS_FD_REGION;
	n = 1 + vi_fds(p->vi, fds + 1, &hs.fds);
	if (vd_shm_send_hs(s, &hs, fds, n)) {
		close(s);
		return -EAGAIN;
	}
	p->sock = s;
	return 0;
}

/* ACCEPT arrived: finish our side, tell the acceptor. */
static int req_finish(struct vd_shm_pend *p, const struct vd_shm_hs *hs,
		      const int fd[VD_HS_MAX_FDS])
{
	struct vd_shm_conn *c = p->c;
	struct vd_shm_hs ok = {
		.magic = VD_SHM_HS_MAGIC, .version = VD_SHM_HS_VERSION,
		.type = VD_HS_CONFIRM,
	};
	int err = conn_peer_setup(c, hs, fd, p->pid);

	if (!err)
		err = probe(p->pid, hs);
	if (!err) {
		c->vi = p->vi;
		c->sock = p->sock;
		err = watch_or_refuse(c);       /* before anyone counts on it */
		if (err)
			c->sock = -1;
	}
	if (err) {
		vd_shm_send_type(p->sock, VD_HS_FAIL, -err);
		return err;
	}
	p->sock = -1;
	p->c = NULL;
	close(p->region_fd);            /* mapped; no more attempts */
	p->region_fd = -1;
	vi_set_conn(c->vi, c);
	vd_vi_connected(c->vi);         /* our receives offered, Connected */
	(void)vd_shm_send_hs(c->sock, &ok, NULL, 0);   /* lost: EOF there */
	return 0;
}

/* -EAGAIN while waiting for the answer (or for a listener). */
static int req_reply(struct vd_shm_pend *p)
{
	struct vd_shm_hs hs;
	int fd[VD_HS_MAX_FDS];
	int err = vd_shm_recv_hs(p->sock, &hs, fd);

	if (err == -EAGAIN)
		return -EAGAIN;
	if (!err && hs.type == VD_HS_ACCEPT) {
		err = req_finish(p, &hs, fd);
		close_fds(fd);          /* mapped (or not needed) */
		return err;
	}
	close_fds(fd);                  /* only ACCEPT brings any we use */
	if (!err && hs.type == VD_HS_CLAIMED) {
		p->claimed = true;
		return -EAGAIN;
	}
	if (!err && hs.type == VD_HS_REJECT)
		return -ECONNREFUSED;
	if (!err && hs.type == VD_HS_FAIL)
		return -hs.err;
	/* NO_MATCH, EOF or garbage.  Before a claim: try again (the region
	 * is untouched); after one, the acceptor is gone. */
	if (p->claimed)
		return err == -EPROTO ? -EPROTO : -ECONNREFUSED;
	close(p->sock);
	p->sock = -1;
	p->next_try = vd_now_ns() + VD_SHM_RETRY_NS;
	return -EAGAIN;
}

static int req_step(struct vd_shm_pend *p)
{
	int err;

	if (p->sock < 0) {
		if (vd_now_ns() < p->next_try)
			return -EAGAIN;
		err = req_attempt(p);
		if (err == -EAGAIN)
			p->next_try = vd_now_ns() + VD_SHM_RETRY_NS;
		if (err)
			return err;
	}
	return req_reply(p);
}

/* ---- pending set-ups ---------------------------------------------------------------------- */

static bool is_cancelled(struct vd_shm_nicx *nx, struct vd_shm_pend *p)
{
	bool r;

	pthread_mutex_lock(&nx->pub.lock);
	r = p->cancelled;
	pthread_mutex_unlock(&nx->pub.lock);
	return r;
}

static int timed_out(const struct vd_shm_pend *p)
{
	if (!p->requester || p->type == VD_HS_PEER_REQUEST)
		return -ETIMEDOUT;
	/* Client: a waiter took the request but never answered -> TIMEOUT;
	 * nobody ever took it -> NO_MATCH (M-VIA clients retry on it). */
	return p->claimed ? -ETIMEDOUT : -ENOENT;
}

static void pause_until(const struct vd_shm_pend *p, uint64_t until)
{
	uint64_t now = vd_now_ns(), t = vd_shm_min3(until, p->deadline, now + 100000000ull);

	if (p->requester && p->sock < 0 && p->next_try < t)
		t = p->next_try;
	if (p->sock >= 0) {
		(void)vd_shm_wait_fd(p->sock, t);
	} else if (t > now) {
		struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)(t - now) };
		nanosleep(&ts, NULL);
	}
}

/* Advance p until it connects (0), fails (-errno) or `until` passes
 * (-EINPROGRESS).  The caller set p->busy. */
int vd_shm_pend_step(struct vd_shm_nicx *nx, struct vd_shm_pend *p, uint64_t until)
{
	for (;;) {
		uint64_t slice = vd_shm_min3(until, p->deadline, vd_now_ns() + 100000000ull);
		int err = p->requester ? req_step(p) : acc_step(nx, p, slice);
		uint64_t now;

		if (err != -EAGAIN)
			return err;
		now = vd_now_ns();
		/* Once waiting for CONFIRM, the acceptor's own clock rules. */
		if (now >= p->deadline && !(!p->requester && p->c))
			return timed_out(p);
		if (now >= until || is_cancelled(nx, p))
			return -EINPROGRESS;
		if (p->requester || p->c)
			pause_until(p, until);
	}
}

/* Give back what a set-up holds; the record itself stays. */
void vd_shm_pend_release(struct vd_shm_pend *p, bool vi_alive)
{
	if (p->sock >= 0)
		close(p->sock);
	if (p->region_fd >= 0)
		close(p->region_fd);
	if (p->c && !p->requester && vi_alive)
		acc_unoffer(p->vi, p->c);
	vd_shm_conn_free(p->c);
	p->sock = p->region_fd = -1;
	p->c = NULL;
}

void vd_shm_pend_free(struct vd_shm_pend *p, bool vi_alive)
{
	vd_shm_pend_release(p, vi_alive);
	free(p);
}

static struct vd_shm_pend *pend_new(struct vd_vi *vi, uint16_t type, int timeout_ms)
{
	struct vd_shm_pend *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->vi = vi;
	p->vi_bits = vd_obj_handle_bits(vi);
	p->type = type;
	p->deadline = vd_shm_deadline(timeout_ms);
	p->sock = p->region_fd = -1;
	return p;
}

static void pend_add_busy(struct vd_shm_nicx *nx, struct vd_shm_pend *p)
{
	pthread_mutex_lock(&nx->pub.lock);
	p->busy = true;
	vd_list_add(&nx->pend, &p->link);
	pthread_mutex_unlock(&nx->pub.lock);
}

/* Owner of a busy, unswept p is done with it: unlink, let a waiting
 * disconnect go on, free on failure. */
static void pend_done(struct vd_shm_nicx *nx, struct vd_shm_pend *p, int res)
{
	pthread_mutex_lock(&nx->pub.lock);
	vd_list_del(&p->link);
	p->busy = false;
	pthread_cond_broadcast(&nx->cond);
	pthread_mutex_unlock(&nx->pub.lock);
	if (res)
		vd_shm_pend_free(p, true);
	else
		free(p);
}

/* Run an owner-only set-up (client request, accept) to its end; a
 * concurrent disconnect cancels it. */
static int pend_run(struct vd_shm_nicx *nx, struct vd_shm_pend *p)
{
	int res;

	pend_add_busy(nx, p);
	do
		res = vd_shm_pend_step(nx, p, VD_SHM_FOREVER);
	while (res == -EINPROGRESS && !is_cancelled(nx, p));
	if (res == -EINPROGRESS)
		res = -ECONNREFUSED;    /* the VI was disconnected meanwhile */
	pend_done(nx, p, res);
	return res;
}

/* ---- VipConnectWait / Accept / Reject ----------------------------------------------------- */

static bool match_request(const struct vd_conn_req *r, const void *arg)
{
	(void)arg;
	return r->hs.type == VD_HS_REQUEST;
}

static int local_addr(struct vd_shm_addr *a, const VIP_NET_ADDRESS *na)
{
	if (vd_shm_addr_from(a, na) || vd_shm_addr_local(a))
		return -EINVAL;         /* we can only listen on this node */
	return 0;
}

int vd_shm_connect_wait(struct vd_nic *nic, const VIP_NET_ADDRESS *local,
			int timeout_ms, struct vd_conn_req **req)
{
	struct vd_shm_nicx *nx = vd_shm_nicx(nic);
	struct vd_shm_listener *l;
	struct vd_shm_addr a;
	struct vd_conn_req *r;
	int err = local_addr(&a, local);

	if (!err)
		err = vd_shm_listener_get(nx, &a, &l);
	if (!err)
		err = vd_shm_claim(nx, l, match_request, NULL, vd_shm_deadline(timeout_ms), &r);
	if (err)
		return err;
	pthread_mutex_lock(&nx->pub.lock);
	r->nx = nx;
	vd_list_add(&nx->reqs, &r->link);
	pthread_mutex_unlock(&nx->pub.lock);
	*req = r;
	return 0;
}

void vd_shm_conn_req_info(struct vd_conn_req *r, VIP_NET_ADDRESS *remote,
			  size_t remote_room, VIP_VI_ATTRIBUTES *attrs)
{
	const struct vd_shm_addr *a = &r->hs.from;
	size_t hdr = offsetof(VIP_NET_ADDRESS, HostAddress), room, host, disc;

	if (attrs)
		hs_attrs(&r->hs, attrs);
	if (!remote || remote_room < hdr)
		return;
	/* The caller sized the buffer for its own expectation: truncate. */
	room = remote_room - hdr;
	host = a->host_len < room ? a->host_len : room;
	disc = a->disc_len < room - host ? a->disc_len : room - host;
	remote->HostAddressLen = (VIP_UINT16)host;
	remote->DiscriminatorLen = (VIP_UINT16)disc;
	memcpy(remote->HostAddress, a->b, host);
	memcpy(remote->HostAddress + host, a->b + a->host_len, disc);
}

static void req_release(struct vd_conn_req *r)
{
	if (r->nx) {
		pthread_mutex_lock(&r->nx->pub.lock);
		vd_list_del(&r->link);
		pthread_mutex_unlock(&r->nx->pub.lock);
	}
	vd_shm_req_free(r);
}

/* A mismatch leaves the request as it was (the server may change its VI
 * and accept again); anything else consumes it, as the core expects. */
int vd_shm_connect_accept(struct vd_conn_req *r, struct vd_vi *vi)
{
	struct vd_shm_nicx *nx = vd_shm_nicx(vi->nic);
	struct vd_shm_pend *p;
	int err = r->sock < 0 ? -ETIMEDOUT : attrs_match(vi, &r->hs);

	if (err == -EBADSLT || err == -EMSGSIZE || err == -EXDEV)
		return err;
	p = err ? NULL : pend_new(vi, VD_HS_REQUEST, -1);
	if (!err && !p)
		err = -ENOMEM;
	if (!err)
		err = acc_begin(p, r);
	if (!err)
		err = pend_run(nx, p);
	else
		free(p);
	req_release(r);
	return err;
}

void vd_shm_connect_reject(struct vd_conn_req *r)
{
	if (r->sock >= 0)
		vd_shm_send_type(r->sock, VD_HS_REJECT, 0);
	req_release(r);
}

/* ---- VipConnectRequest ----------------------------------------------------------------------- */

static int pend_addrs(struct vd_shm_pend *p, const VIP_NET_ADDRESS *local,
		      const VIP_NET_ADDRESS *remote)
{
	if (vd_shm_addr_from(&p->remote, remote) || vd_shm_addr_from(&p->local, local))
		return -EINVAL;
	if (vd_shm_addr_local(&p->remote))
		return -EHOSTUNREACH;
	return vd_shm_addr_local(&p->local) ? -EINVAL : 0;
}

int vd_shm_connect_request(struct vd_vi *vi, const VIP_NET_ADDRESS *local,
			   const VIP_NET_ADDRESS *remote, int timeout_ms,
			   VIP_VI_ATTRIBUTES *remote_attrs)
{
	struct vd_shm_nicx *nx = vd_shm_nicx(vi->nic);
	struct vd_shm_pend *p = pend_new(vi, VD_HS_REQUEST, timeout_ms);
	int err = p ? pend_addrs(p, local, remote) : -ENOMEM;

	if (!p)
		return err;
	p->requester = true;
	if (!err)
		err = req_prepare(p);
	if (err) {
		vd_shm_pend_free(p, false);
		return err;
	}
	err = pend_run(nx, p);
	if (!err && remote_attrs)
		*remote_attrs = ((struct vd_shm_conn *)vi->conn)->peer_attrs;
	return err;
}

/* ---- peer to peer -------------------------------------------------------------------------- */

int vd_shm_peer_request(struct vd_vi *vi, const VIP_NET_ADDRESS *local,
			const VIP_NET_ADDRESS *remote, int timeout_ms)
{
	struct vd_shm_nicx *nx = vd_shm_nicx(vi->nic);
	struct vd_shm_pend *p = pend_new(vi, VD_HS_PEER_REQUEST, timeout_ms), *old;
	int cmp, err = p ? pend_addrs(p, local, remote) : -ENOMEM;

	if (!p)
		return err;
	cmp = vd_shm_addr_cmp(&p->local, &p->remote);
	if (!err && cmp == 0)
		err = -EINVAL;          /* talking to itself: nobody would listen */
	p->requester = cmp < 0;
	p->sweepable = true;
	if (!err)
		err = p->requester ? req_prepare(p) : vd_shm_listener_get(nx, &p->local, &p->l);
	if (err) {
		vd_shm_pend_free(p, false);
		return err;
	}
	pthread_mutex_lock(&nx->pub.lock);
	old = vd_shm_pend_find(nx, vi);        /* left by a VI disconnected while pending */
	if (old && !old->busy)
		vd_list_del(&old->link);
	else
		old = NULL;
	vd_list_add(&nx->pend, &p->link);
	pthread_mutex_unlock(&nx->pub.lock);
	if (old)
		vd_shm_pend_free(old, false);
	return 0;
}

/* ---- VipDisconnect ------------------------------------------------------------------------ */

/* A sleeper of the data path that read vi->conn before we cleared it may
 * be on its way into futex_wait on these words.  Changing them first
 * makes such a wait return at once; the wake gets those already asleep.
 * The peer only stores these words, never reads them back. */
static void conn_unblock(struct vd_shm_conn *c)
{
	atomic_fetch_add(&c->rx->s.xfer_write, 1);
	atomic_fetch_add(&c->tx->r.cookie_write, 1);
	vd_futex_wake_shared(&c->rx->s.xfer_write);
	vd_futex_wake_shared(&c->tx->r.cookie_write);
}

void vd_shm_disconnect(struct vd_vi *vi)
{
	struct vd_shm_conn *c;

	vd_shm_pend_cancel(vd_shm_nicx(vi->nic), vi);
	c = vi->conn;
	if (!c)
		return;
	vd_shm_service_remove(c);       /* the service thread is done with it */
	atomic_store(&c->broken, true);
	vd_shm_notice(c, VD_SHM_NOTICE_DISCONNECT, true);
	shutdown(c->sock, SHUT_RDWR);
	vi_set_conn(vi, NULL);          /* the data path lets go under the locks */
	conn_unblock(c);
	vd_shm_conn_free(c);
}
