/* SPDX-License-Identifier: MIT */
/*
 * ofi provider connections.
 *
 * A discriminator's listener is an RDM endpoint on a port derived from it
 * (VIADUCT_OFI_PORT_BASE + hash mod 4096), so a requester needs nothing
 * but the host address and the discriminator, as in VIA.  Handshake:
 *   REQ  requester -> listener   its endpoint name, connection, nonce_req
 *   ACC  accepter  -> requester  its endpoint name, connection, nonce_acc
 *   CFM  requester -> accepter   (or REJ instead of ACC)
 * Each carries a keyed hash under the job key over its contents and the
 * other side's nonce, so only a process holding the key completes one,
 * and a replayed REQ or ACC leads nowhere.  Every later message must
 * present the receiver's connection index and 64-bit token.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "prov/ofi/ofi.h"

#define PORT_RANGE 4096u
#define MAX_QUEUED_REQS 64
#define CFM_TIMEOUT_MS 5000
#define PROBE_NS 250000000ull   /* a silent port: the next one is asked too */
/* One try of a request: long enough to get past every silent port. */
#define TRY_NS (VD_OFI_PORT_PROBES * PROBE_NS)

static uint64_t param(const char *name, uint64_t dflt)
{
	uint64_t v = dflt;

	(void)viaduct_param_uint(name, dflt, &v);      /* checked at open */
	return v;
}

/* The discriminator's port of probe i (0 .. VD_OFI_PORT_PROBES - 1). */
static unsigned disc_port(const uint8_t *d, unsigned n, unsigned i)
{
	uint32_t h = 2166136261u;

	for (unsigned k = 0; k < n; k++)
		h = (h ^ d[k]) * 16777619u;
	return (unsigned)param("VIADUCT_OFI_PORT_BASE", VD_OFI_PORT_BASE) +
	       (h + i) % PORT_RANGE;
}

/* ---- connection table ------------------------------------------------------------------- */

static struct vd_ofi_conn *conn_new(struct vd_ofi_nic *on, struct vd_vi *vi)
{
	struct vd_ofi_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->on = on;
	c->vi = vi;
	c->token = vd_random64() | 1;
	c->ring_bytes = c->peer_ring_bytes = VD_OFI_RING_BYTES;
	vd_lock_init(&c->in_lock);
	c->in_tail = &c->in_head;
	c->rin_tail = &c->rin_head;
	atomic_store(&c->last_rx_ns, vd_now_ns());
	pthread_mutex_lock(&on->lock);
	/* Indices are never reused within a NIC: a stale message or
	 * completion can only find its own connection. */
	c->idx = on->conns_hwm;
	if (c->idx == on->nconns) {
		pthread_mutex_unlock(&on->lock);
		free(c);
		return NULL;
	}
	/* Release: pairs with retry_kicks()'s acquire load. */
	__atomic_store_n(&on->conns[c->idx], c, __ATOMIC_RELEASE);
	__atomic_store_n(&on->conns_hwm, c->idx + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&on->lock);
	return c;
}

struct vd_ofi_conn *vd_ofi_conn_lookup(struct vd_ofi_nic *on, uint32_t idx, uint64_t token)
{
	struct vd_ofi_conn *c;

	if (idx >= on->nconns)
		return NULL;
	pthread_mutex_lock(&on->lock);
	c = on->conns[idx];
	pthread_mutex_unlock(&on->lock);
	return c && c->token == token && !atomic_load(&c->dead) ? c : NULL;
}

/* The first break of c claims how it ended; false if c had broken.  A
 * connection that breaks drops what the backlog still holds for it (its
 * peer may be gone), unless we end it on purpose and tell the peer why
 * (drain: vd_ofi_conn_break with tell, vd_ofi_conn_break_after): then
 * those messages go out for a while, in order, the reason last -- a
 * dropped one would leave the reason held behind a gap at the peer, and
 * the peer waiting for it. */
static bool claim_break(struct vd_ofi_conn *c, bool drain)
{
	uint64_t none = 0, how = drain ? vd_now_ns() + VD_OFI_DRAIN_NS : VD_OFI_END_DROP;

	/* Seq_cst, the claim before `broken`: pairs with drop_on_break's
	 * loads of `broken`, then `ended` -- it never sees a broken
	 * connection without how it ended. */
	if (!atomic_compare_exchange_strong(&c->ended, &none, how))
		return false;
	atomic_store(&c->broken, true);
	return true;
}

static void conn_break(struct vd_ofi_conn *c, VIP_ERROR_CODE code, bool tell, bool drain)
{
	if (!claim_break(c, drain))
		return;
	vd_log("ofi: connection %u breaks (VIA error %d%s)", c->idx, (int)code,
	       tell ? ", peer told" : "");
	atomic_store(&c->break_code, (uint32_t)code);
	vd_ofi_zc_unexpose_all(c);      /* nothing of ours stays readable */
	if (tell) {
		struct vd_ofi_hdr h = { .magic = VD_OFI_MAGIC, .version = VD_OFI_VERSION,
					.type = VD_OFI_NOTICE, .conn = c->peer_conn,
					.token = c->peer_token, .a = (uint64_t)code };
		(void)vd_ofi_send_msg(c->on, c->peer, c, &h, NULL, 0, 0);
	}
	vd_event_bump(&c->on->events);
	pthread_cond_broadcast(&c->on->cond);
}

void vd_ofi_conn_break(struct vd_ofi_conn *c, VIP_ERROR_CODE code, bool tell)
{
	conn_break(c, code, tell, tell);
}

/* Break c after the message we just queued for it, which tells the
 * peer why (an RDMA refusal's DONE). */
void vd_ofi_conn_break_after(struct vd_ofi_conn *c, VIP_ERROR_CODE code)
{
	conn_break(c, code, false, true);
}

/* The service thread tells the core of breaks (it holds no lock). */
static void report_breaks(struct vd_ofi_nic *on)
{
	for (;;) {
		struct vd_vi *vi = NULL;
		uint32_t code = 0;

		pthread_mutex_lock(&on->lock);
		for (uint32_t i = 0; i < on->conns_hwm && !vi; i++) {
			struct vd_ofi_conn *c = on->conns[i];
			if (c && c->vi && atomic_load(&c->broken) && !atomic_load(&c->dead) &&
			    c->hs_state == 4 && !atomic_exchange(&c->reported, true)) {
				vi = c->vi;
				code = atomic_load(&c->break_code);
			}
		}
		pthread_mutex_unlock(&on->lock);
		if (!vi)
			return;
		vd_vi_conn_broken(vi, (VIP_ERROR_CODE)code);
	}
}

void vd_ofi_keepalive(struct vd_ofi_nic *on)
{
	uint64_t now = vd_now_ns();
	uint64_t limit = param("VIADUCT_OFI_TIMEOUT_MS", 10000) * 1000000ull;

	pthread_mutex_lock(&on->lock);
	for (uint32_t i = 0; i < on->conns_hwm; i++) {
		struct vd_ofi_conn *c = on->conns[i];
		if (!c || c->hs_state != 4 || atomic_load(&c->broken) || atomic_load(&c->dead))
			continue;
		if (vd_ns_since(now, atomic_load(&c->last_rx_ns)) > limit) {
			vd_log("ofi: peer of connection %u silent for %llu ms", c->idx,
			       (unsigned long long)(limit / 1000000));
			vd_ofi_conn_break(c, VIP_ERROR_CONN_LOST, false);
			continue;
		}
		if (vd_ns_since(now, atomic_load(&c->last_tx_ns)) > VD_OFI_KEEPALIVE_NS / 2) {
			struct vd_ofi_hdr h = { .magic = VD_OFI_MAGIC, .version = VD_OFI_VERSION,
						.type = VD_OFI_KEEPALIVE, .conn = c->peer_conn,
						.token = c->peer_token };
			atomic_store(&c->last_tx_ns, now);
			/* A peer that died fails this send: its completion
			 * breaks the connection. */
			(void)vd_ofi_send_msg(on, c->peer, c, &h, NULL, 0, 0);
		}
	}
	pthread_mutex_unlock(&on->lock);
	report_breaks(on);
}

/* ---- handshake messages --------------------------------------------------------------------- */

static void cm_fill(struct vd_ofi_nic *on, struct vd_ofi_conn *c, struct vd_ofi_cm *cm,
		    const VIP_NET_ADDRESS *local, struct vd_vi *vi)
{
	memset(cm, 0, sizeof(*cm));
	memcpy(cm->ep, on->data.name, on->data.name_len);
	cm->ep_len = (uint32_t)on->data.name_len;
	cm->conn = c ? c->idx : 0;
	cm->token = c ? c->token : 0;
	memcpy(cm->host, on->host, VD_OFI_ADDR_LEN);
	if (local) {
		cm->disc_len = local->DiscriminatorLen;
		memcpy(cm->disc, local->HostAddress + local->HostAddressLen, local->DiscriminatorLen);
	}
	if (vi) {
		cm->reliability = vi->attrs.ReliabilityLevel;
		cm->mtu = vi->attrs.MaxTransferSize;
		cm->rdma_flags = (vi->attrs.EnableRdmaWrite ? VD_TPT_RDMA_WRITE : 0) |
				 (vi->attrs.EnableRdmaRead ? VD_TPT_RDMA_READ : 0) |
				 (on->zc ? VD_OFI_CM_ZC : 0);
		if (c && c->ring_bytes == VD_OFI_RING_BYTES_DEEP)
			cm->rdma_flags |= VD_OFI_CM_DEEP_RING;
	}
}

/* The receive ring a requesting VI asks for, and the one a peer's
 * handshake says it has. */
static uint32_t ring_bytes_of(struct vd_vi *vi)
{
	return atomic_load(&vi->ext_flags) & VIADUCT_VI_DEEP_RING ? VD_OFI_RING_BYTES_DEEP
								   : VD_OFI_RING_BYTES;
}

static uint32_t peer_ring_bytes(const struct vd_ofi_cm *cm)
{
	return cm->rdma_flags & VD_OFI_CM_DEEP_RING ? VD_OFI_RING_BYTES_DEEP : VD_OFI_RING_BYTES;
}

static void cm_seal(struct vd_ofi_nic *on, struct vd_ofi_cm *cm, const char *label, uint64_t salt)
{
	cm->mac[1] = 0;
	cm->mac[0] = vd_ofi_mac(on, label, cm, offsetof(struct vd_ofi_cm, mac), salt);
}

static bool cm_valid(struct vd_ofi_nic *on, const struct vd_ofi_cm *cm, const char *label,
		     uint64_t salt)
{
	return cm->mac[0] == vd_ofi_mac(on, label, cm, offsetof(struct vd_ofi_cm, mac), salt) &&
	       cm->ep_len > 0 && cm->ep_len <= VD_OFI_EP_NAME_MAX &&
	       cm->disc_len <= VD_OFI_MAX_DISC && cm->want_len <= VD_OFI_MAX_DISC;
}

static int cm_send(struct vd_ofi_nic *on, fi_addr_t to, struct vd_ofi_conn *owner,
		   uint8_t type, uint32_t conn, uint64_t token, const struct vd_ofi_cm *cm)
{
	struct vd_ofi_hdr h = { .magic = VD_OFI_MAGIC, .version = VD_OFI_VERSION,
				.type = type, .conn = conn, .token = token };

	return vd_ofi_send_msg(on, to, owner, &h, cm, sizeof(*cm), 0);
}

static int av_insert_name(struct vd_ofi_nic *on, const struct vd_ofi_cm *cm, fi_addr_t *fa)
{
	int n;

	pthread_mutex_lock(&on->fab_lock);
	n = fi_av_insert(on->av, cm->ep, 1, fa, 0, NULL);
	pthread_mutex_unlock(&on->fab_lock);
	return n == 1 ? 0 : -EPROTO;
}

static struct vd_ofi_listen *listen_find(struct vd_ofi_nic *on, const struct vd_ofi_ep *ep,
					 const uint8_t *disc, unsigned n)
{
	for (struct vd_list *l = on->listens.next; l != &on->listens; l = l->next) {
		struct vd_ofi_listen *li = vd_container_of(l, struct vd_ofi_listen, link);
		if ((!ep || li->ep == ep) && li->disc_len == n && !memcmp(li->disc, disc, n))
			return li;
	}
	return NULL;
}

/* Nobody waits on that discriminator here: the requester gets NO_MATCH
 * at once (VIA clients retry), as over shm -- or, if this NIC never
 * listened on it, tries the discriminator's next port. */
static void reply_no_match(struct vd_ofi_nic *on, const struct vd_ofi_cm *req, uint32_t why)
{
	struct vd_ofi_cm cm;
	fi_addr_t to;

	if (av_insert_name(on, req, &to))
		return;
	cm_fill(on, NULL, &cm, NULL, NULL);
	cm.reserved = why;
	cm_seal(on, &cm, "REJ", req->nonce_req);
	(void)cm_send(on, to, NULL, VD_OFI_CONN_REJ, req->conn, req->token, &cm);
}

/* A port the REQ went to knew nothing of it (on->lock held).  Never more
 * than the ports asked: a repeated answer (a replay within the same
 * handshake) must not make the requester give up on ports unasked. */
static void probe_failed_locked(struct vd_ofi_conn *c)
{
	if (c->probes_failed < c->probes_sent)
		c->probes_failed++;
}

static const uint8_t *disc_of(const VIP_NET_ADDRESS *a)
{
	return a->HostAddress + a->HostAddressLen;
}

/* A request from the peer a VipConnectPeerRequest of ours waits for
 * (on->lock held): queued for it.  True if taken. */
static bool peer_take(struct vd_ofi_nic *on, struct vd_ofi_ep *ep, const struct vd_ofi_cm *cm)
{
	for (struct vd_list *l = on->peers.next; l != &on->peers; l = l->next) {
		struct vd_ofi_peer *p = vd_container_of(l, struct vd_ofi_peer, link);
		const VIP_NET_ADDRESS *lo = (const void *)p->local, *re = (const void *)p->remote;
		struct vd_conn_req *r;

		if (p->requester || p->li->ep != ep || cm->want_len != lo->DiscriminatorLen ||
		    memcmp(cm->want, disc_of(lo), lo->DiscriminatorLen) ||
		    memcmp(cm->host, re->HostAddress, VD_OFI_ADDR_LEN) ||
		    cm->disc_len != re->DiscriminatorLen ||
		    memcmp(cm->disc, disc_of(re), re->DiscriminatorLen))
			continue;
		if (p->reqs.next != &p->reqs) {
			/* A repeat: the same REQ to another port, or the
			 * requester began again (hs_stale) and waits on this
			 * one. */
			r = vd_container_of(p->reqs.next, struct vd_conn_req, link);
			r->cm = *cm;
			return true;
		}
		if (!(r = calloc(1, sizeof(*r))))
			return true;            /* no memory: dropped, it retries */
		r->on = on;
		r->cm = *cm;
		vd_list_add(&p->reqs, &r->link);
		pthread_cond_broadcast(&on->cond);
		return true;
	}
	return false;
}

/* on->lock held. */
static void on_req(struct vd_ofi_nic *on, struct vd_ofi_ep *ep, const struct vd_ofi_cm *cm)
{
	struct vd_ofi_listen *li;
	struct vd_conn_req *r;
	unsigned n = 0;

	if (!cm_valid(on, cm, "REQ", 0)) {
		vd_log("ofi: connection request without the job key refused");
		return;
	}
	if (peer_take(on, ep, cm))
		return;
	li = listen_find(on, ep, cm->want, cm->want_len);
	if (!li || !li->waiters) {
		reply_no_match(on, cm, li ? VD_OFI_REJ_NO_MATCH : VD_OFI_REJ_UNKNOWN);
		return;
	}
	for (struct vd_list *l = li->reqs.next; l != &li->reqs; l = l->next)
		n++;
	r = n < MAX_QUEUED_REQS ? calloc(1, sizeof(*r)) : NULL;
	if (!r)
		return;
	r->on = on;
	r->cm = *cm;
	vd_list_add(&li->reqs, &r->link);
	pthread_cond_broadcast(&on->cond);
}

/* An ACC for a request this side gave up on (its wait ran out): refuse
 * it, or the accepter waits CFM_TIMEOUT_MS for our confirmation, and its
 * listener answers nobody else meanwhile (on->lock held). */
static void late_acc(struct vd_ofi_nic *on, const struct vd_ofi_conn *c, const struct vd_ofi_cm *acc)
{
	struct vd_ofi_cm cm;
	fi_addr_t to;

	if (!cm_valid(on, acc, "ACC", c->nonce_req) || av_insert_name(on, acc, &to))
		return;
	cm_fill(on, NULL, &cm, NULL, NULL);
	cm_seal(on, &cm, "REJ", c->nonce_req);
	(void)cm_send(on, to, NULL, VD_OFI_CONN_REJ, acc->conn, acc->token, &cm);
}

void vd_ofi_on_cm(struct vd_ofi_nic *on, struct vd_ofi_ep *ep, const struct vd_ofi_hdr *h,
		  const void *payload, fi_addr_t from)
{
	struct vd_ofi_cm cm;
	struct vd_ofi_conn *c;
	bool ours;

	(void)from;
	if (h->len != sizeof(cm))
		return;
	memcpy(&cm, payload, sizeof(cm));
	pthread_mutex_lock(&on->lock);
	if (h->type == VD_OFI_CONN_REQ) {
		if (ep->listener)
			on_req(on, ep, &cm);
		pthread_mutex_unlock(&on->lock);
		return;
	}
	c = h->conn < on->nconns ? on->conns[h->conn] : NULL;
	/* A handshake of ours, still waiting for an answer? */
	ours = c && c->token == h->token && !ep->listener && c->hs_state == 1;
	if (ours && atomic_load(&c->dead)) {
		if (h->type == VD_OFI_CONN_ACC)
			late_acc(on, c, &cm);
	} else if (ours) {
		if (h->type == VD_OFI_CONN_ACC && cm_valid(on, &cm, "ACC", c->nonce_req)) {
			c->hs_state = 2;
			c->hs_acc_ns = vd_now_ns();
		}
		else if (h->type == VD_OFI_CONN_REJ && cm_valid(on, &cm, "REJ", c->nonce_req)) {
			if (cm.reserved == VD_OFI_REJ_UNKNOWN)
				probe_failed_locked(c); /* another NIC's port */
			else
				c->hs_state = cm.reserved == VD_OFI_REJ_NO_MATCH ? 5 : 3;
		}
		else if (h->type == VD_OFI_CONN_CFM && cm_valid(on, &cm, "CFM", c->nonce_acc))
			c->hs_state = 4;
		if (c->hs_state != 1)
			c->hs_peer = cm;
		pthread_cond_broadcast(&on->cond);
	}
	pthread_mutex_unlock(&on->lock);
}

/* Wait (on->lock held) until pred or the deadline, driving progress. */
static int wait_until(struct vd_ofi_nic *on, bool (*pred)(void *), void *arg, uint64_t deadline)
{
	while (!pred(arg)) {
		if (deadline && vd_now_ns() >= deadline)
			return -ETIMEDOUT;
		pthread_mutex_unlock(&on->lock);
		vd_ofi_progress(on, vd_now_ns() + 5000000, true);
		pthread_mutex_lock(&on->lock);
	}
	return 0;
}

/* The same for a listener (VipConnectWait), which moves nothing itself:
 * the service thread, or an application thread in a CQ wait, handles an
 * arriving request and signals on->cond.  A thread parked in
 * VipConnectWait (a server's listener next to threads that move data)
 * then never holds the progress lock against them -- that made every
 * message of theirs a hand-off between threads. */
static int wait_passive(struct vd_ofi_nic *on, bool (*pred)(void *), void *arg,
			uint64_t deadline)
{
	while (!pred(arg)) {
		uint64_t now = vd_now_ns(), slice = 50000000u;
		struct timespec ts;

		if (deadline && now >= deadline)
			return -ETIMEDOUT;
		if (deadline && deadline - now < slice)
			slice = deadline - now;
		clock_gettime(CLOCK_REALTIME, &ts);
		slice += (uint64_t)ts.tv_nsec;
		ts.tv_sec += (time_t)(slice / 1000000000u);
		ts.tv_nsec = (long)(slice % 1000000000u);
		(void)pthread_cond_timedwait(&on->cond, &on->lock, &ts);
	}
	return 0;
}

static uint64_t deadline_of(int timeout_ms)
{
	return timeout_ms < 0 ? 0 : vd_now_ns() + (uint64_t)timeout_ms * 1000000u;
}

/* ---- listeners ------------------------------------------------------------------------------ */

/* The listener endpoint of a port, opened on first use (on->lock held). */
static struct vd_ofi_ep *port_ep(struct vd_ofi_nic *on, unsigned port, int *err)
{
	struct vd_ofi_ep *e;
	char svc[16];

	for (struct vd_list *l = on->listeners.next; l != &on->listeners; l = l->next) {
		e = vd_container_of(l, struct vd_ofi_ep, link);
		if (e->port == port)
			return e;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		*err = -ENOMEM;
		return NULL;
	}
	e->listener = true;
	e->port = port;
	snprintf(svc, sizeof(svc), "%u", port);
	*err = vd_ofi_ep_open(on, e, svc);
	if (*err) {
		vd_ofi_ep_close(e);
		free(e);
		return NULL;
	}
	vd_list_add(&on->listeners, &e->link);
	return e;
}

/* The discriminator's entry (on->lock held); several discriminators of
 * one NIC may share a port's endpoint. */
static struct vd_ofi_listen *listener_get(struct vd_ofi_nic *on, const uint8_t *disc,
					  unsigned n, int *err)
{
	struct vd_ofi_listen *li = listen_find(on, NULL, disc, n);
	struct vd_ofi_ep *e = NULL;

	if (li)
		return li;
	for (unsigned i = 0; i < VD_OFI_PORT_PROBES && !e; i++)
		e = port_ep(on, disc_port(disc, n, i), err);
	if (e)
		*err = 0;       /* an earlier port's failure is no failure */
	else
		vd_log("ofi: cannot listen on port %u nor the %u after it: %s",
		       disc_port(disc, n, 0), VD_OFI_PORT_PROBES - 1, strerror(-*err));
	li = e ? calloc(1, sizeof(*li)) : NULL;
	if (!li) {
		if (e)
			*err = -ENOMEM;
		return NULL;
	}
	li->ep = e;
	li->disc_len = (uint16_t)n;
	memcpy(li->disc, disc, n);
	vd_list_init(&li->reqs);
	vd_list_add(&on->listens, &li->link);
	return li;
}

void vd_ofi_listeners_free(struct vd_ofi_nic *on)
{
	while (on->listens.next != &on->listens) {
		struct vd_ofi_listen *li = vd_container_of(on->listens.next, struct vd_ofi_listen, link);
		vd_list_del(&li->link);
		while (li->reqs.next != &li->reqs) {
			struct vd_list *l = li->reqs.next;
			vd_list_del(l);
			free(vd_container_of(l, struct vd_conn_req, link));
		}
		free(li);
	}
	while (on->listeners.next != &on->listeners) {
		struct vd_ofi_ep *e = vd_container_of(on->listeners.next, struct vd_ofi_ep, link);
		vd_list_del(&e->link);
		vd_ofi_ep_close(e);
		free(e);
	}
}

static bool has_req(void *arg)
{
	struct vd_ofi_listen *li = arg;

	return li->reqs.next != &li->reqs;
}

int vd_ofi_connect_wait(struct vd_nic *nic, const VIP_NET_ADDRESS *local, int timeout_ms,
			struct vd_conn_req **req)
{
	struct vd_ofi_nic *on = vd_ofi_nic(nic);
	uint64_t deadline = deadline_of(timeout_ms);
	struct vd_ofi_listen *li;
	int err = 0;

	if (memcmp(local->HostAddress, on->host, VD_OFI_ADDR_LEN))
		return -EINVAL;         /* not this host's address */
	pthread_mutex_lock(&on->lock);
	li = listener_get(on, local->HostAddress + local->HostAddressLen,
			  local->DiscriminatorLen, &err);
	if (li) {
		li->waiters++;
		err = on->service_started ? wait_passive(on, has_req, li, deadline)
					  : wait_until(on, has_req, li, deadline);
		li->waiters--;
	}
	if (!err) {
		struct vd_list *l = li->reqs.next;
		vd_list_del(l);
		*req = vd_container_of(l, struct vd_conn_req, link);
	}
	pthread_mutex_unlock(&on->lock);
	return err;
}

void vd_ofi_conn_req_info(struct vd_conn_req *req, VIP_NET_ADDRESS *remote,
			  size_t remote_room, VIP_VI_ATTRIBUTES *attrs)
{
	/* The core passes the room of an address like the listener's own:
	 * header, host and discriminator, without sizeof's padding. */
	size_t need = offsetof(VIP_NET_ADDRESS, HostAddress) + VD_OFI_ADDR_LEN + req->cm.disc_len;

	memset(attrs, 0, sizeof(*attrs));
	attrs->ReliabilityLevel = req->cm.reliability;
	attrs->MaxTransferSize = req->cm.mtu;
	attrs->EnableRdmaWrite = req->cm.rdma_flags & VD_TPT_RDMA_WRITE ? VIP_TRUE : VIP_FALSE;
	attrs->EnableRdmaRead = req->cm.rdma_flags & VD_TPT_RDMA_READ ? VIP_TRUE : VIP_FALSE;
	if (remote_room < need)
		return;
	remote->HostAddressLen = VD_OFI_ADDR_LEN;
	remote->DiscriminatorLen = req->cm.disc_len;
	memcpy(remote->HostAddress, req->cm.host, VD_OFI_ADDR_LEN);
	memcpy(remote->HostAddress + VD_OFI_ADDR_LEN, req->cm.disc, req->cm.disc_len);
}

/* ---- accept / reject / request -------------------------------------------------------------- */

static bool hs_moved(void *arg)
{
	struct vd_ofi_conn *c = arg;

	return c->hs_state != 1 || atomic_load(&c->broken);
}

static void conn_attach(struct vd_vi *vi, struct vd_ofi_conn *c)
{
	/* Release: c complete before a progress pass (vd_ofi_conn_of's acquire)
	 * finds it through the VI. */
	__atomic_store_n(&vi->conn, c, __ATOMIC_RELEASE);
	vd_vi_connected(vi);
}

/* c is dead: once a progress pass that found it alive ended, nothing
 * touches its held messages but us.  c->vi changes under on->lock
 * (report_breaks reads it there) and the progress lock (every kick runs
 * inside a progress pass). */
static void conn_detach(struct vd_ofi_conn *c)
{
	vd_ofi_progress_lock(c->on);
	vd_ofi_conn_free_data(c);
	pthread_mutex_lock(&c->on->lock);
	c->vi = NULL;
	pthread_mutex_unlock(&c->on->lock);
	vd_unlock(&c->on->progress);
}

static void conn_drop(struct vd_ofi_conn *c)
{
	atomic_store(&c->dead, true);
	conn_detach(c);
}

void vd_ofi_connect_reject(struct vd_conn_req *req)
{
	struct vd_ofi_nic *on = req->on;
	struct vd_ofi_cm cm;
	fi_addr_t to;

	if (!av_insert_name(on, &req->cm, &to)) {
		cm_fill(on, NULL, &cm, NULL, NULL);
		cm_seal(on, &cm, "REJ", req->cm.nonce_req);
		(void)cm_send(on, to, NULL, VD_OFI_CONN_REJ, req->cm.conn, req->cm.token, &cm);
	}
	free(req);
}

int vd_ofi_connect_accept(struct vd_conn_req *req, struct vd_vi *vi)
{
	struct vd_ofi_nic *on = req->on;
	struct vd_ofi_conn *c;
	struct vd_ofi_cm cm;
	int err;

	/* The two VIs must agree, as over shm.  A mismatch leaves the
	 * request as it was: the server may change its VI and accept again
	 * (VipConnectAccept), the client is not told. */
	if (req->cm.reliability != vi->attrs.ReliabilityLevel)
		return -EBADSLT;
	if (req->cm.mtu != vi->attrs.MaxTransferSize)
		return -EMSGSIZE;
	c = conn_new(on, vi);
	if (!c || av_insert_name(on, &req->cm, &c->peer)) {
		if (c)
			conn_drop(c);
		vd_ofi_connect_reject(req);
		return -ENOMEM;
	}
	c->peer_conn = req->cm.conn;
	c->peer_token = req->cm.token;
	c->zc = on->zc && (req->cm.rdma_flags & VD_OFI_CM_ZC);
	/* The requesting VI's flag sizes both directions (as over shm);
	 * each end's handshake still names the ring it receives into. */
	c->ring_bytes = c->peer_ring_bytes = peer_ring_bytes(&req->cm);
	c->nonce_req = req->cm.nonce_req;
	c->nonce_acc = vd_random64();
	cm_fill(on, c, &cm, NULL, vi);
	cm.nonce_req = c->nonce_req;
	cm.nonce_acc = c->nonce_acc;
	cm_seal(on, &cm, "ACC", c->nonce_req);
	pthread_mutex_lock(&on->lock);
	c->hs_state = 1;
	pthread_mutex_unlock(&on->lock);
	err = cm_send(on, c->peer, c, VD_OFI_CONN_ACC, c->peer_conn, c->peer_token, &cm);
	pthread_mutex_lock(&on->lock);
	if (!err)
		err = wait_until(on, hs_moved, c, deadline_of(CFM_TIMEOUT_MS));
	if (!err && c->hs_state != 4)
		err = -ECONNABORTED;
	pthread_mutex_unlock(&on->lock);
	free(req);
	if (err) {
		conn_drop(c);
		return err == -ETIMEDOUT ? -ECONNABORTED : err;
	}
	conn_attach(vi, c);
	return 0;
}

/* The REQ, sealed, for every port it goes to (on->lock held: c is in
 * the table, where the service thread's keepalive pass reads it). */
static void req_prepare(struct vd_ofi_nic *on, struct vd_ofi_conn *c, const VIP_NET_ADDRESS *local,
			const VIP_NET_ADDRESS *remote, struct vd_vi *vi, struct vd_ofi_cm *cm)
{
	c->ring_bytes = ring_bytes_of(vi);
	cm_fill(on, c, cm, local, vi);
	cm->want_len = remote->DiscriminatorLen;
	memcpy(cm->want, disc_of(remote), remote->DiscriminatorLen);
	c->nonce_req = cm->nonce_req = vd_random64();
	cm_seal(on, cm, "REQ", 0);
	c->hs_state = 1;
}

/* The REQ to the discriminator's next port (on->lock held).  A port
 * nobody could be sent to counts as one that knew nothing of it. */
static int probe_send(struct vd_ofi_nic *on, struct vd_ofi_conn *c, const VIP_NET_ADDRESS *remote,
		      const struct vd_ofi_cm *cm)
{
	char ip[INET_ADDRSTRLEN], port[16];
	fi_addr_t listener;
	int n;

	inet_ntop(AF_INET, remote->HostAddress, ip, sizeof(ip));
	snprintf(port, sizeof(port), "%u",
		 disc_port(disc_of(remote), remote->DiscriminatorLen, c->probes_sent));
	pthread_mutex_lock(&on->fab_lock);
	n = fi_av_insertsvc(on->av, ip, port, &listener, 0, NULL);
	pthread_mutex_unlock(&on->fab_lock);
	if (n != 1)
		return -EHOSTUNREACH;
	c->probes_sent++;
	if (cm_send(on, listener, c, VD_OFI_CONN_REQ, 0, 0, cm))
		probe_failed_locked(c);
	return 0;
}

void vd_ofi_probe_failed(struct vd_ofi_conn *c)
{
	pthread_mutex_lock(&c->on->lock);
	probe_failed_locked(c);
	pthread_cond_broadcast(&c->on->cond);
	pthread_mutex_unlock(&c->on->lock);
}

static bool probe_moved(void *arg)
{
	struct vd_ofi_conn *c = arg;

	return hs_moved(c) || c->probes_failed >= c->probes_sent;
}

/* Ask the discriminator's ports in turn (on->lock held): the next one
 * once every port asked knew nothing of it (another NIC's listener said
 * so, or nothing listens there), or after PROBE_NS of silence.  A slow
 * listener may still answer then: its answer counts wherever it comes
 * from, since every port gets the same REQ. */
static int req_wait(struct vd_ofi_nic *on, struct vd_ofi_conn *c, const VIP_NET_ADDRESS *remote,
		    const struct vd_ofi_cm *cm, uint64_t deadline, uint64_t *slice_end)
{
	while (!hs_moved(c)) {
		bool none_knew = c->probes_failed >= c->probes_sent;
		bool more = c->probes_sent < VD_OFI_PORT_PROBES;
		uint64_t until = deadline;
		int err;

		if (more && (none_knew || vd_now_ns() >= *slice_end)) {
			err = probe_send(on, c, remote, cm);
			if (err)
				return err;
			*slice_end = vd_now_ns() + PROBE_NS;
			continue;
		}
		if (none_knew)
			return -ENOENT;
		if (more && (!until || until > *slice_end))
			until = *slice_end;
		err = wait_until(on, probe_moved, c, until);
		if (err && until == deadline)
			/* No port has answered for the discriminator.  If
			 * the first knew nothing of it, nobody was found
			 * (VIP_NO_MATCH, as before ports were probed); if it
			 * is silent, a listener there may be slow. */
			return c->probes_failed ? -ENOENT : err;
	}
	return 0;
}

static void peer_attrs(const struct vd_ofi_cm *cm, VIP_VI_ATTRIBUTES *a)
{
	memset(a, 0, sizeof(*a));
	a->ReliabilityLevel = cm->reliability;
	a->MaxTransferSize = cm->mtu;
	a->EnableRdmaWrite = cm->rdma_flags & VD_TPT_RDMA_WRITE ? VIP_TRUE : VIP_FALSE;
	a->EnableRdmaRead = cm->rdma_flags & VD_TPT_RDMA_READ ? VIP_TRUE : VIP_FALSE;
}

/* After ACC: learn the accepter, confirm. */
static int req_finish(struct vd_ofi_nic *on, struct vd_ofi_conn *c)
{
	struct vd_ofi_cm cm;

	if (av_insert_name(on, &c->hs_peer, &c->peer))
		return -EPROTO;
	c->peer_conn = c->hs_peer.conn;
	c->peer_token = c->hs_peer.token;
	c->zc = on->zc && (c->hs_peer.rdma_flags & VD_OFI_CM_ZC);
	c->peer_ring_bytes = peer_ring_bytes(&c->hs_peer);
	c->nonce_acc = c->hs_peer.nonce_acc;
	cm_fill(on, c, &cm, NULL, NULL);
	cm_seal(on, &cm, "CFM", c->nonce_acc);
	return cm_send(on, c->peer, c, VD_OFI_CONN_CFM, c->peer_conn, c->peer_token, &cm);
}

/* The end of vi's handshake c, whose req_wait returned err (on->lock
 * held; let go): confirmed and attached, or dropped. */
static int req_conclude(struct vd_ofi_nic *on, struct vd_ofi_conn *c, struct vd_vi *vi,
			int err, VIP_VI_ATTRIBUTES *remote_attrs)
{
	if (!err && (atomic_load(&c->broken) || c->hs_state == 5))
		err = -ENOENT;          /* nobody listens or waits there */
	else if (!err && c->hs_state == 3)
		err = -ECONNREFUSED;
	if (err) {
		/* Given up: an ACC from now on is refused (vd_ofi_on_cm), and
		 * one that came since the wait ended is refused here. */
		atomic_store(&c->dead, true);
		if (c->hs_state == 2)
			late_acc(on, c, &c->hs_peer);
	}
	pthread_mutex_unlock(&on->lock);
	if (!err)
		err = req_finish(on, c);
	if (err) {
		conn_drop(c);
		return err;
	}
	pthread_mutex_lock(&on->lock);
	c->hs_state = 4;
	pthread_mutex_unlock(&on->lock);
	peer_attrs(&c->hs_peer, remote_attrs);
	if (remote_attrs->ReliabilityLevel != vi->attrs.ReliabilityLevel) {
		conn_drop(c);
		return -EBADSLT;
	}
	conn_attach(vi, c);
	return 0;
}

int vd_ofi_connect_request(struct vd_vi *vi, const VIP_NET_ADDRESS *local,
			   const VIP_NET_ADDRESS *remote, int timeout_ms,
			   VIP_VI_ATTRIBUTES *remote_attrs)
{
	struct vd_ofi_nic *on = vd_ofi_nic(vi->nic);
	struct vd_ofi_conn *c = conn_new(on, vi);
	struct vd_ofi_cm cm;
	uint64_t slice_end = 0;
	int err;

	if (!c)
		return -ENOMEM;
	pthread_mutex_lock(&on->lock);
	req_prepare(on, c, local, remote, vi, &cm);
	err = req_wait(on, c, remote, &cm, deadline_of(timeout_ms), &slice_end);
	return req_conclude(on, c, vi, err, remote_attrs);
}

static void peer_cancel(struct vd_ofi_nic *on, struct vd_vi *vi);

void vd_ofi_disconnect(struct vd_vi *vi)
{
	struct vd_ofi_conn *c = vi->conn;

	peer_cancel(vd_ofi_nic(vi->nic), vi);
	if (!c)
		return;
	if (!atomic_load(&c->broken)) {
		struct vd_ofi_hdr h = { .magic = VD_OFI_MAGIC, .version = VD_OFI_VERSION,
					.type = VD_OFI_DISC, .conn = c->peer_conn,
					.token = c->peer_token };
		(void)vd_ofi_send_msg(c->on, c->peer, c, &h, NULL, 0, 0);
	}
	atomic_store(&c->dead, true);
	vd_ofi_zc_unexpose_all(c);
	/* The fabric's transfers into our receive descriptors end before the
	 * core flushes those back to the application (bounded: a peer that
	 * never answers a read is not waited for longer). */
	uint64_t until = vd_now_ns() + 2000000000ull;
	while (atomic_load(&c->zc_out) && vd_now_ns() < until)
		vd_ofi_progress(c->on, vd_now_ns() + 1000000, true);
	if (atomic_load(&c->zc_out))
		vd_log("ofi: connection %u: a zero-copy transfer outlives it", c->idx);
	conn_detach(c);
	__atomic_store_n(&vi->conn, NULL, __ATOMIC_RELEASE);
}

/* ---- peer-to-peer ------------------------------------------------------------------------------ */

static int addr_cmp(const VIP_NET_ADDRESS *a, const VIP_NET_ADDRESS *b)
{
	int c = memcmp(a->HostAddress, b->HostAddress, VD_OFI_ADDR_LEN);
	unsigned n = a->DiscriminatorLen < b->DiscriminatorLen ? a->DiscriminatorLen :
		     b->DiscriminatorLen;

	if (!c)
		c = memcmp(disc_of(a), disc_of(b), n);
	if (!c)
		c = (int)a->DiscriminatorLen - (int)b->DiscriminatorLen;
	return c;
}

static size_t addr_bytes(const VIP_NET_ADDRESS *a)
{
	return sizeof(*a) + a->HostAddressLen + a->DiscriminatorLen;
}

static struct vd_ofi_peer *peer_of(struct vd_ofi_nic *on, struct vd_vi *vi)
{
	for (struct vd_list *l = on->peers.next; l != &on->peers; l = l->next) {
		struct vd_ofi_peer *p = vd_container_of(l, struct vd_ofi_peer, link);
		if (p->vi == vi)
			return p;
	}
	return NULL;
}

/* Free p (on->lock held).  Its handshake under way, if any, is the
 * caller's to drop once the lock is let go (conn_drop takes it). */
static struct vd_ofi_conn *peer_free(struct vd_ofi_peer *p)
{
	struct vd_ofi_conn *hs = p->hs;

	vd_list_del(&p->link);
	while (p->reqs.next != &p->reqs) {
		struct vd_list *l = p->reqs.next;
		vd_list_del(l);
		free(vd_container_of(l, struct vd_conn_req, link));
	}
	free(p);
	return hs;
}

/* A pending peer request of vi's ends with it (VipDisconnect,
 * VipDestroyVi); one a thread is still inside ends there. */
static void peer_cancel(struct vd_ofi_nic *on, struct vd_vi *vi)
{
	struct vd_ofi_conn *hs = NULL;
	struct vd_ofi_peer *p;

	pthread_mutex_lock(&on->lock);
	p = peer_of(on, vi);
	if (p && !p->busy)
		hs = peer_free(p);
	pthread_mutex_unlock(&on->lock);
	if (hs)
		conn_drop(hs);
}

void vd_ofi_peers_free(struct vd_ofi_nic *on)
{
	while (on->peers.next != &on->peers) {
		struct vd_ofi_conn *hs =
			peer_free(vd_container_of(on->peers.next, struct vd_ofi_peer, link));
		if (hs)
			conn_drop(hs);
	}
}

int vd_ofi_peer_request(struct vd_vi *vi, const VIP_NET_ADDRESS *local,
			const VIP_NET_ADDRESS *remote, int timeout_ms)
{
	struct vd_ofi_nic *on = vd_ofi_nic(vi->nic);
	int c = addr_cmp(local, remote), err = 0;
	struct vd_ofi_peer *p;

	if (!c || memcmp(local->HostAddress, on->host, VD_OFI_ADDR_LEN))
		return -EINVAL;         /* ourselves, or not this host */
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->vi = vi;
	p->requester = c > 0;
	p->deadline_ns = deadline_of(timeout_ms);
	memcpy(p->local, local, addr_bytes(local));
	memcpy(p->remote, remote, addr_bytes(remote));
	vd_list_init(&p->reqs);
	pthread_mutex_lock(&on->lock);
	if (!p->requester)
		p->li = listener_get(on, disc_of(local), local->DiscriminatorLen, &err);
	if (!err)
		vd_list_add(&on->peers, &p->link);
	pthread_mutex_unlock(&on->lock);
	if (err)
		free(p);
	return err;
}

static bool peer_has_req(void *arg)
{
	struct vd_ofi_peer *p = arg;

	return p->reqs.next != &p->reqs;
}

/* The accepting side: the request, then the usual accept.  An accept
 * whose requester had already given up on that request (no CONFIRM) is
 * not the end: its newer request comes (the requester begins again
 * after TRY_NS of silence). */
static int peer_accept(struct vd_ofi_nic *on, struct vd_ofi_peer *p, uint64_t until,
		       VIP_VI_ATTRIBUTES *ra)
{
	for (;;) {
		struct vd_conn_req *r;
		int err = wait_until(on, peer_has_req, p, until);

		if (err)
			return err;
		r = vd_container_of(p->reqs.next, struct vd_conn_req, link);
		vd_list_del(&r->link);
		peer_attrs(&r->cm, ra);
		pthread_mutex_unlock(&on->lock);
		err = vd_ofi_connect_accept(r, p->vi);
		if (err == -EBADSLT || err == -EMSGSIZE)
			vd_ofi_connect_reject(r);       /* nobody to retry it */
		pthread_mutex_lock(&on->lock);
		if (err != -ECONNABORTED || (until && vd_now_ns() >= until))
			return err;
	}
}

/* Begin the requester's handshake (on->lock held; let go around
 * conn_new, which takes it). */
static int peer_hs_start(struct vd_ofi_nic *on, struct vd_ofi_peer *p)
{
	struct vd_ofi_conn *c;

	pthread_mutex_unlock(&on->lock);
	c = conn_new(on, p->vi);
	pthread_mutex_lock(&on->lock);
	if (!c)
		return -ENOMEM;
	req_prepare(on, c, (const void *)p->local, (const void *)p->remote, p->vi, &p->hs_cm);
	p->hs = c;
	p->hs_slice_end = 0;
	p->hs_begun_ns = vd_now_ns();
	return 0;
}

/* A handshake to begin again (on->lock held): silent for as long as a
 * blocking request's try lasts (the accepter may have dropped the REQ
 * unanswered: cancelled, asked again, died), or answered so long ago
 * that the accepter has stopped waiting for the confirmation (the
 * requester polled again only later) -- confirming it would leave a
 * connection only this side believes in. */
static bool hs_stale(const struct vd_ofi_conn *c, uint64_t begun_ns)
{
	uint64_t now = vd_now_ns();

	if (c->hs_state == 1 && !atomic_load(&c->broken))
		return now - begun_ns >= TRY_NS;
	return c->hs_state == 2 && now - c->hs_acc_ns >= CFM_TIMEOUT_MS / 2 * 1000000ull;
}

/* All the discriminator's ports were asked and none knew it: nobody
 * waits there (yet). */
static bool hs_nobody(const struct vd_ofi_conn *c)
{
	return c->probes_sent >= VD_OFI_PORT_PROBES && c->probes_failed >= c->probes_sent;
}

/* The requesting side (on->lock held, and on return): its handshake,
 * begun by this call or an earlier one, until an answer or `until`; a
 * new one 10 ms after the last found nobody, and in place of a stale
 * one (hs_stale).  -ETIMEDOUT with the handshake still under way. */
static int peer_connect(struct vd_ofi_nic *on, struct vd_ofi_peer *p, uint64_t until,
			VIP_VI_ATTRIBUTES *ra)
{
	const VIP_NET_ADDRESS *re = (const void *)p->remote;

	for (;;) {
		struct vd_ofi_conn *c;
		uint64_t now = vd_now_ns(), try_end, look;
		int err;

		if (until && now >= until)
			return -ETIMEDOUT;
		if (!p->hs && now < p->hs_retry_ns) {
			uint64_t nap = until && until < p->hs_retry_ns ? until - now
								       : p->hs_retry_ns - now;
			pthread_mutex_unlock(&on->lock);
			usleep((useconds_t)(nap / 1000u) + 1);
			pthread_mutex_lock(&on->lock);
			continue;
		}
		if (p->hs && hs_stale(p->hs, p->hs_begun_ns)) {
			c = p->hs;
			p->hs = NULL;
			pthread_mutex_unlock(&on->lock);
			conn_drop(c);
			pthread_mutex_lock(&on->lock);
		}
		if (!p->hs && (err = peer_hs_start(on, p)))
			return err;
		c = p->hs;
		try_end = p->hs_begun_ns + TRY_NS;
		look = until && until < try_end ? until : try_end;
		err = req_wait(on, c, re, &p->hs_cm, look, &p->hs_slice_end);
		if (!err && hs_stale(c, p->hs_begun_ns))
			continue;               /* an answer too old to confirm */
		if (err == -ETIMEDOUT || (err == -ENOENT && !hs_nobody(c))) {
			if (look == until)
				return -ETIMEDOUT;  /* under way: a later call goes on */
			continue;           /* the try is over: a new one */
		}
		p->hs = NULL;
		err = req_conclude(on, c, p->vi, err, ra);
		pthread_mutex_lock(&on->lock);
		if (err != -ENOENT)
			return err;
		p->hs_retry_ns = vd_now_ns() + 10000000u;
	}
}

int vd_ofi_peer_progress(struct vd_vi *vi, int timeout_ms, VIP_VI_ATTRIBUTES *ra)
{
	struct vd_ofi_nic *on = vd_ofi_nic(vi->nic);
	uint64_t until = deadline_of(timeout_ms);
	struct vd_ofi_conn *hs = NULL;
	struct vd_ofi_peer *p;
	int err;

	pthread_mutex_lock(&on->lock);
	p = peer_of(on, vi);
	if (!p || p->busy) {
		pthread_mutex_unlock(&on->lock);
		return p ? -EINPROGRESS : -EINVAL;     /* another thread is at it */
	}
	p->busy = true;
	/* The request's own deadline bounds every wait. */
	if (p->deadline_ns && (!until || p->deadline_ns < until))
		until = p->deadline_ns;
	if (timeout_ms == 0)
		until = vd_now_ns() + 1000000;  /* PeerDone: a short look */
	err = p->requester ? peer_connect(on, p, until, ra) : peer_accept(on, p, until, ra);
	if (err == -ETIMEDOUT && (!p->deadline_ns || vd_now_ns() < p->deadline_ns))
		err = -EINPROGRESS;     /* the request itself has time left */
	p->busy = false;
	if (err != -EINPROGRESS)
		hs = peer_free(p);
	pthread_mutex_unlock(&on->lock);
	if (hs)
		conn_drop(hs);
	return err;
}
