/* SPDX-License-Identifier: MIT */
/*
 * shm provider: per-NIC state, the rendezvous sockets and the queue of
 * received connection requests (see shm_conn.h for the protocol).
 *
 * Several waiters may want requests from one listening address at once
 * (a VipConnectWait thread and peer VIs sharing a local address), so a
 * request is never handed to whoever happened to read it: every request
 * read goes on the listener's queue, and each waiter claims its own.  One
 * waiter at a time polls the socket (l->polling); the others sleep on
 * l->cond and re-check the queue after each polling round.
 *
 * Also here: the NIC's pending peer-to-peer set-ups, which every
 * VipConnectPeerDone/Wait on the NIC advances together ("sweeps").
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "prov/shm/shm_conn.h"

/* ---- small helpers ---------------------------------------------------------- */

uint64_t vd_shm_deadline(int timeout_ms)
{
	if (timeout_ms < 0)
		return VD_SHM_FOREVER;
	return vd_now_ns() + (uint64_t)timeout_ms * 1000000u;
}

/* Milliseconds from now to deadline, rounded up; -1 = forever. */
static int ms_until(uint64_t deadline)
{
	uint64_t now = vd_now_ns(), ms;

	if (deadline == VD_SHM_FOREVER)
		return -1;
	if (deadline <= now)
		return 0;
	ms = (deadline - now + 999999u) / 1000000u;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

int vd_shm_addr_from(struct vd_shm_addr *a, const VIP_NET_ADDRESS *na)
{
	memset(a, 0, sizeof(*a));
	if (!na || na->HostAddressLen != VD_SHM_ADDR_LEN ||
	    na->DiscriminatorLen > VD_SHM_MAX_DISCRIMINATOR)
		return -EINVAL;
	a->host_len = na->HostAddressLen;
	a->disc_len = na->DiscriminatorLen;
	memcpy(a->b, na->HostAddress, (size_t)a->host_len + a->disc_len);
	return 0;
}

static bool addr_valid(const struct vd_shm_addr *a)
{
	return a->host_len == VD_SHM_ADDR_LEN && a->disc_len <= VD_SHM_MAX_DISCRIMINATOR;
}

bool vd_shm_addr_eq(const struct vd_shm_addr *a, const struct vd_shm_addr *b)
{
	return a->host_len == b->host_len && a->disc_len == b->disc_len &&
	       memcmp(a->b, b->b, (size_t)a->host_len + a->disc_len) == 0;
}

/* Total order on full addresses (bytes, then length), the same from
 * either side: decides who connects in a peer-to-peer pair. */
int vd_shm_addr_cmp(const struct vd_shm_addr *a, const struct vd_shm_addr *b)
{
	size_t la = (size_t)a->host_len + a->disc_len;
	size_t lb = (size_t)b->host_len + b->disc_len;
	int c = memcmp(a->b, b->b, la < lb ? la : lb);

	if (c)
		return c;
	return la < lb ? -1 : la > lb;
}

int vd_shm_addr_local(const struct vd_shm_addr *a)
{
	uint8_t node[VD_SHM_ADDR_LEN];

	vd_shm_node_address(NULL, node);
	if (a->host_len != VD_SHM_ADDR_LEN || memcmp(a->b, node, VD_SHM_ADDR_LEN))
		return -EHOSTUNREACH;
	return 0;
}

int vd_shm_wait_fd(int fd, uint64_t deadline)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	int n;

	do
		n = poll(&pf, 1, ms_until(deadline));
	while (n < 0 && errno == EINTR);
	return n > 0 ? 0 : -ETIMEDOUT;
}

int vd_shm_peer_check(int sock, pid_t *pid)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cr, &len) || len != sizeof(cr))
		return -errno ? -errno : -EPROTO;
	if (cr.uid != geteuid()) {
		vd_log("shm: connection from pid %d uid %u refused: not our user %u",
		       (int)cr.pid, (unsigned)cr.uid, (unsigned)geteuid());
		return -EPERM;
	}
	*pid = cr.pid;
	return 0;
}

/* ---- handshake messages ------------------------------------------------------ */

int vd_shm_send_hs(int sock, const struct vd_shm_hs *hs, const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(VD_HS_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)hs, .iov_len = sizeof(*hs) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;

	if (nfds > 0) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, (size_t)nfds * sizeof(int));
	}
	/* Small message on an idle socket: never blocks in practice; never
	 * SIGPIPE when the peer is gone. */
	if (sendmsg(sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(*hs))
		return errno ? -errno : -EPROTO;
	return 0;
}

void vd_shm_send_type(int sock, uint16_t type, int err)
{
	struct vd_shm_hs hs = {
		.magic = VD_SHM_HS_MAGIC, .version = VD_SHM_HS_VERSION,
		.type = type, .err = err,
	};

	(void)vd_shm_send_hs(sock, &hs, NULL, 0);
}

static uint32_t fds_allowed(uint16_t type, uint32_t *required)
{
	switch (type) {
	case VD_HS_REQUEST:
	case VD_HS_PEER_REQUEST:
		*required = VD_HS_FD_REGION | VD_HS_FD_TPT;
		return VD_HS_FD_REGION | VD_HS_FD_TPT | VD_HS_FD_RCQ;
	case VD_HS_ACCEPT:
		*required = VD_HS_FD_TPT;
		return VD_HS_FD_TPT | VD_HS_FD_RCQ;
	default:
		*required = 0;
		return 0;
	}
}

static bool attrs_valid(const struct vd_shm_hs *hs)
{
	uint16_t rl = hs->reliability;

	return (rl == VIP_SERVICE_UNRELIABLE || rl == VIP_SERVICE_RELIABLE_DELIVERY ||
		rl == VIP_SERVICE_RELIABLE_RECEPTION) &&
	       hs->qos <= 1 && hs->rdma <= (VD_HS_RDMA_WRITE | VD_HS_RDMA_READ) &&
	       hs->max_transfer <= VD_MAX_TRANSFER && hs->probe_addr != 0 &&
	       hs->vi_bits != 0;
}

/* Every field from the other process is checked before anyone uses it. */
static bool hs_valid(const struct vd_shm_hs *hs)
{
	uint32_t required, allowed;

	if (hs->magic != VD_SHM_HS_MAGIC || hs->version != VD_SHM_HS_VERSION ||
	    hs->type < VD_HS_REQUEST || hs->type > VD_HS_CONFIRM)
		return false;
	allowed = fds_allowed(hs->type, &required);
	if ((hs->fds & ~allowed) || (hs->fds & required) != required)
		return false;
	switch (hs->type) {
	case VD_HS_REQUEST:
	case VD_HS_PEER_REQUEST:
		return addr_valid(&hs->from) && addr_valid(&hs->to) && attrs_valid(hs);
	case VD_HS_ACCEPT:
		return attrs_valid(hs);
	case VD_HS_FAIL:
		return hs->err > 0 && hs->err < 4096;
	default:
		return true;
	}
}

static void close_fds(const int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* The fds of all SCM_RIGHTS blocks, in order; -1 when more than fit. */
static int collect_fds(struct msghdr *mh, int *got, int room)
{
	int n = 0;
	bool overflow = false;

	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
			if (n < room)
				got[n++] = fd;
			else {
				close(fd);
				overflow = true;
			}
		}
	}
	return overflow ? -1 : n;
}

/* Hand the received fds to their slots per hs->fds; false (and all
 * closed) when their number does not match. */
static bool place_fds(const struct vd_shm_hs *hs, const int *got, int n,
		      int fd[VD_HS_MAX_FDS])
{
	int k = 0;

	if (__builtin_popcount(hs->fds) != n) {
		close_fds(got, n);
		return false;
	}
	for (int i = 0; i < VD_HS_MAX_FDS; i++)
		fd[i] = (hs->fds & (1u << i)) ? got[k++] : -1;
	return true;
}

int vd_shm_recv_hs(int sock, struct vd_shm_hs *hs, int fd[VD_HS_MAX_FDS])
{
	union {
		char buf[CMSG_SPACE(8 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = hs, .iov_len = sizeof(*hs) };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	int got[8], n;
	ssize_t r;

	for (int i = 0; i < VD_HS_MAX_FDS; i++)
		fd[i] = -1;
	do
		r = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN : -ECONNRESET;
	n = collect_fds(&mh, got, 8);
	if (r == 0 && n == 0)
		return -ECONNRESET;
	if (n < 0 || r != (ssize_t)sizeof(*hs) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
	    !hs_valid(hs)) {
		close_fds(got, n < 0 ? 8 : n);
		return -EPROTO;
	}
	return place_fds(hs, got, n, fd) ? 0 : -EPROTO;
}

/* ---- requests -------------------------------------------------------------------- */

void vd_shm_req_free(struct vd_conn_req *r)
{
	if (r->sock >= 0)
		close(r->sock);
	close_fds(r->fd, VD_HS_MAX_FDS);
	free(r);
}

static bool req_dead(const struct vd_conn_req *r)
{
	struct pollfd pf = { .fd = r->sock, .events = POLLRDHUP };

	/* The requester gave up (timeout, kill) while its request queued. */
	return r->sock < 0 || poll(&pf, 1, 0) != 0;
}

/* ---- listeners --------------------------------------------------------------------- */

static void cond_init_mono(pthread_cond_t *c)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
}

static int listen_on(const struct vd_shm_addr *a)
{
	struct sockaddr_un sa;
	socklen_t len;
	int fd, err = vd_shm_sockname(&sa, a, &len);

	if (err)
		return err;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, len) || listen(fd, VD_SHM_BACKLOG)) {
		err = -errno;
		close(fd);
		if (err == -EADDRINUSE)
			vd_log("shm: address already listened on by another NIC or process "
			       "of this user");
		return err;
	}
	return fd;
}

/* A descriptor kept in reserve: at the fd limit, accept() fails with
 * EMFILE and leaves the request queued, so the listening socket stays
 * readable and a poller would spin.  Giving up the reserve lets us take
 * the request and refuse it, so the requester learns at once. */
static _Atomic int g_spare_fd = -1;
static _Atomic unsigned g_listeners;    /* the reserve lives while any do */

static void spare_fd_ensure(void)
{
	int fd;

	if (atomic_load(&g_spare_fd) >= 0)
		return;
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && !atomic_compare_exchange_strong(&g_spare_fd, &(int){ -1 }, fd))
		close(fd);
}

int vd_shm_listener_get(struct vd_shm_nicx *nx, const struct vd_shm_addr *a,
			struct vd_shm_listener **out)
{
	struct vd_shm_listener *l;
	struct vd_list *it;
	int fd;

	pthread_mutex_lock(&nx->pub.lock);
	for (it = nx->pub.listeners.next; it != &nx->pub.listeners; it = it->next) {
		l = vd_container_of(it, struct vd_shm_listener, link);
		if (vd_shm_addr_eq(&l->addr, a))
			goto found;
	}
	l = calloc(1, sizeof(*l));
	fd = l ? listen_on(a) : -ENOMEM;
	if (fd < 0) {
		free(l);
		pthread_mutex_unlock(&nx->pub.lock);
		return fd;
	}
	l->fd = fd;
	l->addr = *a;
	atomic_fetch_add(&g_listeners, 1);
	spare_fd_ensure();
	cond_init_mono(&l->cond);
	vd_list_init(&l->queue);
	vd_list_add(&nx->pub.listeners, &l->link);
found:
	pthread_mutex_unlock(&nx->pub.lock);
	*out = l;
	return 0;
}

/* NIC lock held, nobody polling. */
static void listener_free(struct vd_shm_listener *l)
{
	while (l->queue.next != &l->queue) {
		struct vd_conn_req *r = vd_container_of(l->queue.next, struct vd_conn_req, link);
		vd_list_del(&r->link);
		vd_shm_send_type(r->sock, VD_HS_NO_MATCH, 0);   /* go elsewhere */
		vd_shm_req_free(r);
	}
	for (unsigned i = 0; i < l->nraw; i++)
		close(l->raw[i]);
	close(l->fd);
	if (atomic_fetch_sub(&g_listeners, 1) == 1) {
		int spare = atomic_exchange(&g_spare_fd, -1);

		if (spare >= 0)
			close(spare);
	}
	vd_list_del(&l->link);
	pthread_cond_destroy(&l->cond);
	free(l);
}

/* ---- reading requests (the polling waiter, no lock held) -------------------------- */

static void shed_one(struct vd_shm_listener *l)
{
	int spare = atomic_exchange(&g_spare_fd, -1), s;

	if (spare < 0) {
		usleep(10000);  /* no reserve: at least do not spin */
		return;
	}
	close(spare);
	s = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
	if (s >= 0) {
		vd_log("shm: at the file descriptor limit: refusing a connection request");
		vd_shm_send_type(s, VD_HS_FAIL, EMFILE);
		close(s);
	}
	spare_fd_ensure();
}

static void accept_all(struct vd_shm_listener *l)
{
	for (;;) {
		int s = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		pid_t pid;

		if (s < 0 && (errno == EMFILE || errno == ENFILE))
			shed_one(l);
		if (s < 0)
			return;         /* EAGAIN, or ECONNABORTED etc.: next round */
		if (vd_shm_peer_check(s, &pid) || l->nraw == VD_SHM_RAW_MAX) {
			close(s);
			continue;
		}
		l->raw_pid[l->nraw] = pid;
		l->raw[l->nraw++] = s;
	}
}

static void raw_drop(struct vd_shm_listener *l, unsigned i, bool close_it)
{
	if (close_it)
		close(l->raw[i]);
	l->nraw--;
	l->raw[i] = l->raw[l->nraw];
	l->raw_pid[i] = l->raw_pid[l->nraw];
}

/* Try to read raw socket i's request; on success it moves to `got`. */
static void raw_read(struct vd_shm_listener *l, unsigned i, struct vd_list *got)
{
	struct vd_conn_req *r = calloc(1, sizeof(*r));
	int err;

	if (!r)
		return;
	err = vd_shm_recv_hs(l->raw[i], &r->hs, r->fd);
	if (err == -EAGAIN) {
		free(r);
		return;
	}
	r->sock = l->raw[i];
	r->pid = l->raw_pid[i];
	raw_drop(l, i, false);
	if (err || (r->hs.type != VD_HS_REQUEST && r->hs.type != VD_HS_PEER_REQUEST) ||
	    !vd_shm_addr_eq(&r->hs.to, &l->addr)) {
		if (!err)
			vd_shm_send_type(r->sock, VD_HS_NO_MATCH, 0);
		vd_shm_req_free(r);
		return;
	}
	vd_list_add(got, &r->link);
}

static void intake(struct vd_shm_listener *l, int timeout_ms, struct vd_list *got)
{
	struct pollfd pf[1 + VD_SHM_RAW_MAX];
	unsigned n = l->nraw;

	pf[0] = (struct pollfd){ .fd = l->fd, .events = POLLIN };
	for (unsigned i = 0; i < n; i++)
		pf[1 + i] = (struct pollfd){ .fd = l->raw[i], .events = POLLIN };
	if (poll(pf, 1 + n, timeout_ms) <= 0)
		return;
	accept_all(l);
	/* Newly accepted sockets too: their request usually is there already. */
	for (unsigned i = l->nraw; i-- > 0;)
		raw_read(l, i, got);
}

/* ---- claiming ---------------------------------------------------------------------- */

/* NIC lock held. */
static struct vd_conn_req *take(struct vd_shm_listener *l, vd_shm_match_fn match,
				const void *arg)
{
	struct vd_list *it, *next;

	for (it = l->queue.next; it != &l->queue; it = next) {
		struct vd_conn_req *r = vd_container_of(it, struct vd_conn_req, link);

		next = it->next;
		if (!match(r, arg))
			continue;
		vd_list_del(&r->link);
		if (req_dead(r)) {
			vd_shm_req_free(r);
			continue;
		}
		/* Tells the requester someone took it: from now on its
		 * timeout means VIP_TIMEOUT, not VIP_NO_MATCH. */
		struct vd_shm_hs hs = {
			.magic = VD_SHM_HS_MAGIC, .version = VD_SHM_HS_VERSION,
			.type = VD_HS_CLAIMED,
		};
		if (vd_shm_send_hs(r->sock, &hs, NULL, 0)) {
			vd_shm_req_free(r);
			continue;
		}
		return r;
	}
	return NULL;
}

static void lead_round(struct vd_shm_nicx *nx, struct vd_shm_listener *l, uint64_t deadline)
{
	struct vd_list got;
	int ms = ms_until(deadline);

	vd_list_init(&got);
	l->polling = true;
	pthread_mutex_unlock(&nx->pub.lock);
	/* Bounded, so a waiter whose request another poller queued, or a
	 * NIC being closed, is never stuck for long. */
	intake(l, ms < 0 || ms > 1000 ? 1000 : ms, &got);
	pthread_mutex_lock(&nx->pub.lock);
	while (got.next != &got) {
		struct vd_list *n = got.next;
		vd_list_del(n);
		vd_list_add(&l->queue, n);
	}
	l->polling = false;
	pthread_cond_broadcast(&l->cond);
}

static void wait_round(struct vd_shm_nicx *nx, struct vd_shm_listener *l, uint64_t deadline)
{
	struct timespec ts;

	if (deadline == VD_SHM_FOREVER) {
		pthread_cond_wait(&l->cond, &nx->pub.lock);
		return;
	}
	ts.tv_sec = (time_t)(deadline / 1000000000u);
	ts.tv_nsec = (long)(deadline % 1000000000u);
	pthread_cond_timedwait(&l->cond, &nx->pub.lock, &ts);
}

int vd_shm_claim(struct vd_shm_nicx *nx, struct vd_shm_listener *l,
		 vd_shm_match_fn match, const void *arg, uint64_t deadline,
		 struct vd_conn_req **out)
{
	bool polled = false;
	int err = 0;

	pthread_mutex_lock(&nx->pub.lock);
	for (;;) {
		*out = take(l, match, arg);
		if (*out)
			break;
		if (polled && vd_now_ns() >= deadline) {
			err = -ETIMEDOUT;
			break;
		}
		if (!l->polling) {
			lead_round(nx, l, deadline);
			polled = true;
			continue;
		}
		if (vd_now_ns() >= deadline) {
			err = -ETIMEDOUT;
			break;
		}
		wait_round(nx, l, deadline);
		polled = true;
	}
	pthread_mutex_unlock(&nx->pub.lock);
	return err;
}

/* ---- pending set-ups of the NIC (peer to peer) --------------------------------------- */

/* NIC lock held. */
struct vd_shm_pend *vd_shm_pend_find(struct vd_shm_nicx *nx, const struct vd_vi *vi)
{
	for (struct vd_list *it = nx->pend.next; it != &nx->pend; it = it->next) {
		struct vd_shm_pend *p = vd_container_of(it, struct vd_shm_pend, link);
		if (p->vi == vi)
			return p;
	}
	return NULL;
}

/* A record whose VI was destroyed or left CONNECT_PENDING (disconnect of
 * a VI without a connection does not reach the provider). */
static bool pend_stale(const struct vd_shm_pend *p)
{
	void *h = (void *)(uintptr_t)p->vi_bits;

	return vd_obj_lookup(h, VD_OBJ_VI) != p->vi ||
	       atomic_load(&p->vi->state) != VIP_STATE_CONNECT_PENDING;
}

static bool sweep_eligible(const struct vd_shm_pend *p)
{
	return p->sweepable && !p->busy && !p->finished && !p->cancelled;
}

/* NIC lock held: mark the sweepable records this call will step, the
 * caller's own first (it must never be crowded out). */
static unsigned sweep_collect(struct vd_shm_nicx *nx, const struct vd_vi *own,
			      struct vd_shm_pend **set, unsigned room, struct vd_list *stale)
{
	struct vd_shm_pend *mine = vd_shm_pend_find(nx, own);
	struct vd_list *it, *next;
	unsigned n = 0;

	if (mine && sweep_eligible(mine)) {
		mine->busy = true;
		set[n++] = mine;
	}
	for (it = nx->pend.next; it != &nx->pend; it = next) {
		struct vd_shm_pend *p = vd_container_of(it, struct vd_shm_pend, link);

		next = it->next;
		if (!sweep_eligible(p))
			continue;
		if (pend_stale(p) && !p->c) {
			vd_list_del(&p->link);
			vd_list_add(stale, &p->link);
		} else if (n < room) {
			p->busy = true;
			set[n++] = p;
		}
	}
	return n;
}

/* NIC lock held.  Connected: the record goes (the core asks no more).
 * Failed: it waits for its owner's next progress call. */
static void sweep_settle(struct vd_shm_pend *p, int res)
{
	p->busy = false;
	if (res == -EINPROGRESS)
		return;
	p->finished = true;
	p->result = res;
	if (!res)
		vd_list_del(&p->link);
}

/* Step every pending peer set-up of the NIC: others without waiting, the
 * caller's own (own) until `until`. */
static void sweep(struct vd_shm_nicx *nx, struct vd_vi *own, uint64_t until)
{
	struct vd_shm_pend *set[64];
	int res[64];
	struct vd_list stale;
	unsigned n;

	vd_list_init(&stale);
	pthread_mutex_lock(&nx->pub.lock);
	n = sweep_collect(nx, own, set, 64, &stale);
	pthread_mutex_unlock(&nx->pub.lock);
	while (stale.next != &stale) {
		struct vd_shm_pend *p = vd_container_of(stale.next, struct vd_shm_pend, link);
		vd_list_del(&p->link);
		vd_shm_pend_free(p, false);
	}
	for (unsigned i = n; i-- > 0;) {       /* the caller's own (set[0]) last */
		res[i] = vd_shm_pend_step(nx, set[i], set[i]->vi == own ? until : 0);
		if (res[i] && res[i] != -EINPROGRESS)
			vd_shm_pend_release(set[i], true);
	}
	pthread_mutex_lock(&nx->pub.lock);
	for (unsigned i = 0; i < n; i++) {
		sweep_settle(set[i], res[i]);
		if (!res[i])
			free(set[i]);
	}
	pthread_cond_broadcast(&nx->cond);
	pthread_mutex_unlock(&nx->pub.lock);
}

/* NIC lock held.  Own record: -EINPROGRESS (go on), or its outcome. */
static int peer_collect(struct vd_shm_nicx *nx, struct vd_vi *vi, uint64_t until,
			VIP_VI_ATTRIBUTES *attrs)
{
	struct vd_shm_pend *p = vd_shm_pend_find(nx, vi);
	struct timespec ts;
	int res;

	if (!p) {
		struct vd_shm_conn *c = vi->conn;
		if (!c || atomic_load(&vi->state) != VIP_STATE_CONNECTED)
			return -EINVAL;
		if (attrs)
			*attrs = c->peer_attrs;
		return 0;
	}
	if (p->finished) {
		res = p->result;
		vd_list_del(&p->link);
		vd_shm_pend_free(p, true);
		return res;
	}
	if (p->busy) {                  /* another waiter is stepping it */
		until = vd_shm_min3(until, vd_now_ns() + VD_SHM_SLICE_NS, VD_SHM_FOREVER);
		ts.tv_sec = (time_t)(until / 1000000000u);
		ts.tv_nsec = (long)(until % 1000000000u);
		pthread_cond_timedwait(&nx->cond, &nx->pub.lock, &ts);
	}
	return -EINPROGRESS;
}

int vd_shm_peer_progress(struct vd_vi *vi, int timeout_ms, VIP_VI_ATTRIBUTES *attrs)
{
	struct vd_shm_nicx *nx = vd_shm_nicx(vi->nic);
	uint64_t until = vd_shm_deadline(timeout_ms);
	bool swept = false;
	int err;

	for (;;) {
		pthread_mutex_lock(&nx->pub.lock);
		err = peer_collect(nx, vi, until, attrs);
		pthread_mutex_unlock(&nx->pub.lock);
		if (err != -EINPROGRESS)
			return err;
		if (swept && vd_now_ns() >= until)
			return -EINPROGRESS;
		sweep(nx, vi, vd_shm_min3(until, vd_now_ns() + VD_SHM_SLICE_NS, VD_SHM_FOREVER));
		swept = true;
	}
}

/* Drop vi's set-up in progress, waiting for a thread stepping it. */
void vd_shm_pend_cancel(struct vd_shm_nicx *nx, struct vd_vi *vi)
{
	struct vd_shm_pend *p;

	pthread_mutex_lock(&nx->pub.lock);
	while ((p = vd_shm_pend_find(nx, vi)) != NULL) {
		if (p->busy) {
			p->cancelled = true;
			pthread_cond_wait(&nx->cond, &nx->pub.lock);
			continue;
		}
		vd_list_del(&p->link);
		pthread_mutex_unlock(&nx->pub.lock);
		vd_shm_pend_free(p, true);
		pthread_mutex_lock(&nx->pub.lock);
	}
	pthread_mutex_unlock(&nx->pub.lock);
}

/* ---- NIC --------------------------------------------------------------------------- */

/* Let peers of the same user process_vm_writev into us even under Yama
 * ptrace_scope=1 (EINVAL without Yama: nothing to do).  Per process, and
 * again in a forked child, which does not inherit the exception. */
static void allow_ptracer(void)
{
	static _Atomic pid_t done_pid;
	pid_t me = getpid();

	/* Relaxed: a repeated prctl is harmless, this only saves syscalls. */
	if (atomic_load_explicit(&done_pid, memory_order_relaxed) == me)
		return;
	(void)prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	atomic_store_explicit(&done_pid, me, memory_order_relaxed);
}

int vd_shm_nic_open(struct vd_nic *nic, const char *spec)
{
	struct vd_shm_nicx *nx = calloc(1, sizeof(*nx));
	int err;

	if (*spec) {
		fprintf(stderr, "viaduct: provider shm takes no options (\"shm:%s\")\n", spec);
		free(nx);
		return -EINVAL;
	}
	if (!nx)
		return -ENOMEM;
	allow_ptracer();
	nx->pub.nic = nic;
	nx->pub.tpt_fd = -1;
	err = vd_shm_tpt_open(&nx->pub);
	if (err) {
		vd_shm_tpt_close(&nx->pub);
		free(nx);
		return err;
	}
	pthread_mutex_init(&nx->pub.lock, NULL);
	vd_list_init(&nx->pub.listeners);
	cond_init_mono(&nx->cond);
	vd_list_init(&nx->pend);
	vd_list_init(&nx->reqs);
	nic->prov = &nx->pub;
	vd_shm_service_nic_ref(1);
	return 0;
}

/* Everything this NIC holds goes: listeners (their queued requesters are
 * told NO_MATCH), half-made connections, requests the core still holds
 * (their fds now; the memory when the core rejects them). */
void vd_shm_nic_close(struct vd_nic *nic)
{
	struct vd_shm_nicx *nx;

	if (!nic->prov)
		return;
	nx = vd_shm_nicx(nic);
	pthread_mutex_lock(&nx->pub.lock);
	while (nx->pend.next != &nx->pend) {
		struct vd_shm_pend *p = vd_container_of(nx->pend.next, struct vd_shm_pend, link);
		vd_list_del(&p->link);
		vd_shm_pend_free(p, false);
	}
	while (nx->reqs.next != &nx->reqs) {
		struct vd_conn_req *r = vd_container_of(nx->reqs.next, struct vd_conn_req, link);
		vd_list_del(&r->link);
		if (r->sock >= 0)
			close(r->sock);
		close_fds(r->fd, VD_HS_MAX_FDS);
		r->sock = r->fd[0] = r->fd[1] = r->fd[2] = -1;
		r->nx = NULL;
	}
	while (nx->pub.listeners.next != &nx->pub.listeners)
		listener_free(vd_container_of(nx->pub.listeners.next,
					      struct vd_shm_listener, link));
	pthread_mutex_unlock(&nx->pub.lock);
	pthread_cond_destroy(&nx->cond);
	pthread_mutex_destroy(&nx->pub.lock);
	vd_shm_tpt_close(&nx->pub);
	nic->prov = NULL;
	free(nx);
	vd_shm_service_nic_ref(-1);
}
