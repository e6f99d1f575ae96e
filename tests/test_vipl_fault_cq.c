/* SPDX-License-Identifier: MIT */
/*
 * A hostile peer and the completion queue it can write into.  The victim
 * has one CQ for the receive queues of two VIs: one connected to an honest
 * sender, one to an attacker (both in the child process).  The attacker,
 * through the mapping of the victim's CQ page its own library holds:
 *   1. writes random bytes, then all ones, over the whole page, again and
 *      again, while the honest sender sends;
 *   2. claims 1000 completions its connection never had, and signals
 *      them;
 *   3. keeps the "owner is asleep" word at zero while the honest sender
 *      sends one message to a sleeping victim;
 *   4. keeps the "someone rang already" word set, likewise.
 * The victim must never crash or hang, every CQ event must have a
 * completed descriptor behind it, every honest message must arrive, the
 * forging connection (only it) must break, and the sleeping victim must
 * wake within a bounded time.  (The CQ page used to hold a process-shared
 * mutex and the events themselves: scribbling it crashed or hung the
 * victim, and forged events were taken as completions.)
 */
#include "viptest.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prov/shm/shm.h"
#include "vipl/vipl_internal.h"

#define NRECV 64
#define MSG 8
static char disc_h[32], disc_x[32];

struct victim {
	VIP_NIC_HANDLE nic;
	VIP_CQ_HANDLE cq;
	VIP_VI_HANDLE vi_h, vi_x;
	struct vt_mem dm, bm;
	unsigned got_h;
};

static void post_recvs(struct victim *v, VIP_VI_HANDLE vi, unsigned first)
{
	for (unsigned i = first; i < first + NRECV; i++) {
		VIP_DESCRIPTOR *d = vt_desc_at(&v->dm, i);

		vt_desc_recv(d, v->bm.mh, (char *)v->bm.p + i * MSG, MSG);
		VT_OK(VipPostRecv(vi, d, v->dm.mh));
	}
}

/* Take CQ events for up to `ms`, until `want` honest messages arrived.
 * Every event must name one of our VIs and have a descriptor behind it. */
static void drain(struct victim *v, unsigned want, unsigned ms)
{
	uint64_t end = vt_now_ms() + ms;

	while (v->got_h < want && vt_now_ms() < end) {
		VIP_VI_HANDLE vi = NULL;
		VIP_BOOLEAN is_recv = VIP_FALSE;
		VIP_DESCRIPTOR *d = NULL;
		int r = VipCQWait(v->cq, 100, &vi, &is_recv);

		if (r == VIP_TIMEOUT)
			continue;
		VT_OK(r);
		VDT_CHECK(is_recv == VIP_TRUE);
		VDT_CHECK(vi == v->vi_h || vi == v->vi_x);
		r = VipRecvDone(vi, &d);
		if (r == VIP_NOT_DONE) {
			fprintf(stderr, "a CQ event for the %s VI with no completed receive\n",
				vi == v->vi_h ? "honest" : "attacker's");
			exit(1);
		}
		VDT_CHECK(d != NULL);
		if (vi == v->vi_h) {
			VDT_CHECK(r == VIP_SUCCESS && d->CS.Length == MSG);
			v->got_h++;
		}
	}
	if (v->got_h < want)
		fprintf(stderr, "%u of %u honest messages in %u ms\n", v->got_h, want, ms);
	VDT_CHECK(v->got_h >= want);
}

static int victim(void *arg)
{
	struct victim v = { 0 };
	VIP_VI_ATTRIBUTES va;
	uint64_t t0;

	(void)arg;
	VT_OK(VipOpenNic("/dev/via_lo", &v.nic));
	VT_OK(VipCreateCQ(v.nic, 4 * NRECV, &v.cq));
	va = vt_vi_attrs(v.nic, VIP_SERVICE_RELIABLE_DELIVERY);
	VT_OK(VipCreateVi(v.nic, &va, NULL, v.cq, &v.vi_h));
	VT_OK(VipCreateVi(v.nic, &va, NULL, v.cq, &v.vi_x));
	VT_OK(vt_mem_get(v.nic, 2 * NRECV * VT_DESC_STRIDE, NULL, &v.dm));
	VT_OK(vt_mem_get(v.nic, 4 * NRECV * MSG, NULL, &v.bm));
	post_recvs(&v, v.vi_h, 0);
	post_recvs(&v, v.vi_x, NRECV);
	VT_OK(vt_server_accept(v.nic, v.vi_h, disc_h, 10000));
	VT_OK(vt_server_accept(v.nic, v.vi_x, disc_x, 10000));
	VDT_CHECK(vt_sync(vt_fd) == 0);

	drain(&v, 20, 10000);           /* 1: scribbles */
	VDT_CHECK(vt_sync(vt_fd) == 0);
	drain(&v, 25, 10000);           /* 2: forged announcements */
	t0 = vt_now_ms();
	while (vt_state(v.vi_x) != VIP_STATE_ERROR && vt_now_ms() - t0 < 5000)
		usleep(1000);
	VDT_CHECK(vt_state(v.vi_x) == VIP_STATE_ERROR);
	VDT_CHECK(vt_state(v.vi_h) == VIP_STATE_CONNECTED);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	t0 = vt_now_ms();               /* 3: asleep, "waiting" kept at 0 */
	drain(&v, 26, 5000);
	printf("ok: woke %llu ms after the attacker hid the sleeper\n",
	       (unsigned long long)(vt_now_ms() - t0));
	VDT_CHECK(vt_sync(vt_fd) == 0);
	t0 = vt_now_ms();               /* 4: asleep, "rung" kept at 1 */
	drain(&v, 27, 5000);
	printf("ok: woke %llu ms after the attacker claimed the bell rung\n",
	       (unsigned long long)(vt_now_ms() - t0));
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VipDisconnect(v.vi_h);
	VipDisconnect(v.vi_x);
	VipDestroyVi(v.vi_h);
	VipDestroyVi(v.vi_x);
	VipDestroyCQ(v.cq);
	vt_mem_put(&v.dm);
	vt_mem_put(&v.bm);
	VipCloseNic(v.nic);
	return 0;
}

/* ---- the child: an honest sender and an attacker ----------------------------- */

struct sender {
	VIP_NIC_HANDLE nic;
	VIP_VI_HANDLE vi_h, vi_x;
	struct vt_mem dm, bm;
	unsigned sent;
};

static void send_honest(struct sender *s, unsigned n)
{
	for (unsigned i = 0; i < n; i++, s->sent++) {
		VIP_DESCRIPTOR *d = vt_desc_at(&s->dm, s->sent % 32), *o;

		vt_desc_send(d, s->bm.mh, s->bm.p, MSG);
		VT_OK(VipPostSend(s->vi_h, d, s->dm.mh));
		VT_OK(VipSendWait(s->vi_h, 5000, &o));
	}
}

static struct vd_shm_conn *conn_of(VIP_VI_HANDLE vh)
{
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);
	struct vd_shm_conn *c = vi ? vi->conn : NULL;

	VDT_CHECK(c && c->peer_rcq);
	return c;
}

static void scribble(struct vd_cq_ring *page, size_t len, uint64_t *seed)
{
	uint8_t *p = (uint8_t *)page;

	for (size_t i = 0; i < len; i++) {
		*seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
		p[i] = (uint8_t)(*seed >> 56);
	}
}

static int attacker(void *arg)
{
	struct sender s = { 0 };
	VIP_VI_ATTRIBUTES va;
	struct vd_shm_conn *cx;
	uint64_t seed = 42;

	(void)arg;
	VT_OK(VipOpenNic("/dev/via_lo", &s.nic));
	va = vt_vi_attrs(s.nic, VIP_SERVICE_RELIABLE_DELIVERY);
	VT_OK(VipCreateVi(s.nic, &va, NULL, NULL, &s.vi_h));
	VT_OK(VipCreateVi(s.nic, &va, NULL, NULL, &s.vi_x));
	VT_OK(vt_mem_get(s.nic, 32 * VT_DESC_STRIDE, NULL, &s.dm));
	VT_OK(vt_mem_get(s.nic, MSG, NULL, &s.bm));
	VT_OK(vt_client_connect(s.nic, s.vi_h, disc_h, 10000));
	VT_OK(vt_client_connect(s.nic, s.vi_x, disc_x, 10000));
	cx = conn_of(s.vi_x);
	VDT_CHECK(vt_sync(vt_fd) == 0);

	for (int round = 0; round < 20; round++) {      /* 1 */
		scribble(cx->peer_rcq, cx->peer_rcq_len, &seed);
		send_honest(&s, 1);
		memset(cx->peer_rcq, 0xff, cx->peer_rcq_len);
	}
	VDT_CHECK(vt_sync(vt_fd) == 0);

	atomic_fetch_add(&cx->tx->s.cq_announced, 1000);        /* 2 */
	vd_cq_ring_signal(cx->peer_rcq, atomic_load(&cx->tx->ra.rx_cq_slot) - 1);
	memset(cx->peer_rcq->pending, 0xff, sizeof(cx->peer_rcq->pending));
	atomic_store(&cx->peer_rcq->summary, ~0ull);
	send_honest(&s, 5);
	VDT_CHECK(vt_sync(vt_fd) == 0);

	for (int i = 0; i < 300; i++) {                 /* 3: ~0.3 s */
		atomic_store(&cx->peer_rcq->c.waiting, 0);
		usleep(1000);
	}
	for (int i = 0; i < 50; i++)
		atomic_store(&cx->peer_rcq->c.waiting, 0);
	send_honest(&s, 1);
	VDT_CHECK(vt_sync(vt_fd) == 0);

	for (int i = 0; i < 300; i++) {                 /* 4: ~0.3 s */
		atomic_store(&cx->peer_rcq->c.rung, 1);
		usleep(1000);
	}
	atomic_store(&cx->peer_rcq->c.rung, 1);
	send_honest(&s, 1);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VipDisconnect(s.vi_h);
	VipDestroyVi(s.vi_h);
	VipDestroyVi(s.vi_x);
	vt_mem_put(&s.dm);
	vt_mem_put(&s.bm);
	VipCloseNic(s.nic);
	return 0;
}

int main(void)
{
	vt_disc(disc_h, "cqh");
	vt_disc(disc_x, "cqx");
	return vt_fork2(victim, attacker, NULL, 60);
}
