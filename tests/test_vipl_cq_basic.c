/* SPDX-License-Identifier: MIT */
/*
 * Description: completion queue behaviour with CQ-bound and unbound VIs.
 * Parent VIs: A (receive queue on the CQ), B (no CQ), C (send queue on the
 * CQ).  The child sends on demand.
 *  - an empty CQ: VipCQDone is VIP_NOT_DONE, VipCQWait(50 ms) is
 *    VIP_TIMEOUT after about 50 ms;
 *  - a message on B adds no entry (B is unbound) and is reaped with
 *    VipRecvWait; a message on A gives one entry (A, recv) and VipRecvDone
 *    after VipCQDone returns its descriptor;
 *  - a send on C gives (C, send); a send on A (send queue unbound) none;
 *  - VipCQNotify is one-shot: the handler runs once for the next entry
 *    (which it consumes), with the NIC and VI; a second entry stays on the
 *    CQ; a handler registered while an entry is waiting runs for it.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "viptest.h"

#define NVI 3
#define NRECV 8
#define MSG 128
#define CMD_QUIT 99u
#define LEVEL VIP_SERVICE_RELIABLE_DELIVERY

enum { VA, VB, VC };

struct side {
	VIP_NIC_HANDLE nic;
	VIP_VI_HANDLE vi[NVI];
	struct vt_mem dm, buf;          /* slots [vi][NRECV receives + 1 send] */
};

#define SLOTS (NRECV + 1)

static VIP_DESCRIPTOR *slot(struct side *s, int v, int j)
{
	return vt_desc_at(&s->dm, (unsigned)(v * SLOTS + j));
}

static void *slot_buf(struct side *s, int v, int j)
{
	return (uint8_t *)s->buf.p + (size_t)(v * SLOTS + j) * MSG;
}

static void side_init(struct side *s, VIP_CQ_HANDLE cq)
{
	VT_OK(vt_mem_get(s->nic, NVI * SLOTS * VT_DESC_STRIDE, NULL, &s->dm));
	VT_OK(vt_mem_get(s->nic, NVI * SLOTS * MSG, NULL, &s->buf));
	for (int v = 0; v < NVI; v++) {
		VIP_VI_ATTRIBUTES va = vt_vi_attrs(s->nic, LEVEL);

		va.EnableRdmaRead = VIP_FALSE;
		VT_OK(VipCreateVi(s->nic, &va, v == VC ? cq : NULL, v == VA ? cq : NULL,
				  &s->vi[v]));
		for (int j = 0; j < NRECV; j++) {
			vt_desc_recv(slot(s, v, j), s->buf.mh, slot_buf(s, v, j), MSG);
			VT_OK(VipPostRecv(s->vi[v], slot(s, v, j), s->dm.mh));
		}
	}
}

static void side_connect(struct side *s, int server)
{
	char tag[16], disc[32];

	for (int v = 0; v < NVI; v++) {
		snprintf(tag, sizeof(tag), "cqb%d", v);
		if (server)
			VT_OK(vt_server_accept(s->nic, s->vi[v], vt_disc(disc, tag), 5000));
		else
			VT_OK(vt_client_connect(s->nic, s->vi[v], vt_disc(disc, tag), 5000));
	}
}

static void side_close(struct side *s)
{
	for (int v = 0; v < NVI; v++) {
		VipDisconnect(s->vi[v]);
		VT_OK(VipDestroyVi(s->vi[v]));
	}
	vt_mem_put(&s->buf);
	vt_mem_put(&s->dm);
}

/* One send on VI v, waited for. */
static void send_one(struct side *s, int v)
{
	VIP_DESCRIPTOR *d = slot(s, v, NRECV), *got;

	vt_desc_send(d, s->buf.mh, slot_buf(s, v, NRECV), MSG);
	VT_OK(VipPostSend(s->vi[v], d, s->dm.mh));
	VT_OK(VipSendWait(s->vi[v], 3000, &got));
	VDT_CHECK(got == d);
}

/* ---- child: sends when told ------------------------------------------------ */

static int child_main(void *arg)
{
	struct side s;
	uint64_t cmd;

	(void)arg;
	memset(&s, 0, sizeof(s));
	VT_OK(VipOpenNic("/dev/via_lo", &s.nic));
	side_init(&s, NULL);
	side_connect(&s, 0);
	while (vt_get_u64(vt_fd, &cmd) == 0 && cmd != CMD_QUIT) {
		VDT_CHECK(cmd < NVI);
		send_one(&s, (int)cmd);
		VDT_CHECK(vt_put_u64(vt_fd, cmd) == 0);
	}
	VDT_CHECK(cmd == CMD_QUIT);
	side_close(&s);
	VT_OK(VipCloseNic(s.nic));
	return 0;
}

/* ---- parent ----------------------------------------------------------------- */

static struct side g_s;
static int g_next[NVI];                 /* next receive slot per VI */

static void peer_send(int v)
{
	uint64_t echo;

	VDT_CHECK(vt_put_u64(vt_fd, (uint64_t)v) == 0);
	VDT_CHECK(vt_get_u64(vt_fd, &echo) == 0 && echo == (uint64_t)v);
}

static void expect_recv(int v, VIP_DESCRIPTOR *d)
{
	VDT_CHECK(d == slot(&g_s, v, g_next[v]));
	VDT_CHECK_EQ(d->CS.Length, MSG);
	g_next[v]++;
}

static void expect_entry(VIP_CQ_HANDLE cq, int v, VIP_BOOLEAN recv)
{
	VIP_VI_HANDLE vi = NULL;
	VIP_BOOLEAN isrecv = !recv;

	VT_OK(VipCQWait(cq, 2000, &vi, &isrecv));
	if (vi != g_s.vi[v] || isrecv != recv) {
		fprintf(stderr, "CQ entry (%p, %d), expected (%p, %d)\n", vi, isrecv,
			g_s.vi[v], recv);
		exit(VDT_FAIL);
	}
}

static void expect_no_entry(VIP_CQ_HANDLE cq)
{
	VIP_VI_HANDLE vi = NULL;
	VIP_BOOLEAN isrecv;
	int r = VipCQDone(cq, &vi, &isrecv);

	if (r != VIP_NOT_DONE) {
		fprintf(stderr, "unexpected CQ entry: %s vi %p recv %d\n",
			vt_ret_str(r), vi, isrecv);
		exit(VDT_FAIL);
	}
}

static void check_empty_cq(VIP_CQ_HANDLE cq)
{
	VIP_VI_HANDLE vi;
	VIP_BOOLEAN isrecv;
	uint64_t t0 = vt_now_ms(), dt;

	expect_no_entry(cq);
	VT_EXPECT(VipCQWait(cq, 50, &vi, &isrecv), VIP_TIMEOUT);
	dt = vt_now_ms() - t0;
	printf("VipCQWait(50 ms) on an empty CQ: VIP_TIMEOUT after %llu ms\n",
	       (unsigned long long)dt);
	VDT_CHECK(dt >= 45 && dt < 1000);
}

static void check_bound_unbound(VIP_CQ_HANDLE cq)
{
	VIP_DESCRIPTOR *d;

	peer_send(VB);
	usleep(20 * 1000);
	expect_no_entry(cq);
	VT_OK(VipRecvWait(g_s.vi[VB], 2000, &d));
	expect_recv(VB, d);
	peer_send(VA);
	expect_entry(cq, VA, VIP_TRUE);
	VT_OK(VipRecvDone(g_s.vi[VA], &d));
	expect_recv(VA, d);
	expect_no_entry(cq);
	send_one(&g_s, VA);                     /* A's send queue: unbound */
	expect_no_entry(cq);
}

static void check_send_cq(VIP_CQ_HANDLE cq)
{
	VIP_DESCRIPTOR *d = slot(&g_s, VC, NRECV), *got;

	vt_desc_send(d, g_s.buf.mh, slot_buf(&g_s, VC, NRECV), MSG);
	VT_OK(VipPostSend(g_s.vi[VC], d, g_s.dm.mh));
	expect_entry(cq, VC, VIP_FALSE);
	VT_OK(VipSendDone(g_s.vi[VC], &got));
	VDT_CHECK(got == d);
	expect_no_entry(cq);
}

struct notes {
	_Atomic int calls;
	VIP_NIC_HANDLE nic;
	VIP_VI_HANDLE vi;
	VIP_BOOLEAN recv;
};

static void notify_cb(VIP_PVOID ctx, VIP_NIC_HANDLE nic, VIP_VI_HANDLE vi,
		      VIP_BOOLEAN recv)
{
	struct notes *n = ctx;

	n->nic = nic;
	n->vi = vi;
	n->recv = recv;
	/* Release: the fields above are visible to the waiter's acquire. */
	atomic_fetch_add_explicit(&n->calls, 1, memory_order_release);
}

static void wait_calls(struct notes *n, int want)
{
	for (int i = 0; i < 1000 && atomic_load_explicit(&n->calls,
							 memory_order_acquire) < want; i++)
		usleep(1000);
	VDT_CHECK_EQ(atomic_load_explicit(&n->calls, memory_order_acquire), want);
	VDT_CHECK(n->nic == g_s.nic && n->vi == g_s.vi[VA] && n->recv == VIP_TRUE);
}

static void check_notify(VIP_CQ_HANDLE cq)
{
	struct notes n = { 0 };
	VIP_DESCRIPTOR *d;

	VT_OK(VipCQNotify(cq, &n, notify_cb));
	usleep(20 * 1000);
	VDT_CHECK_EQ(atomic_load(&n.calls), 0);   /* nothing there yet */
	peer_send(VA);
	wait_calls(&n, 1);
	expect_no_entry(cq);                    /* the handler consumed it */
	VT_OK(VipRecvDone(g_s.vi[VA], &d));
	expect_recv(VA, d);
	peer_send(VA);                          /* one-shot: no second call */
	usleep(200 * 1000);
	VDT_CHECK_EQ(atomic_load(&n.calls), 1);
	/* An entry is waiting: a new handler runs for it. */
	VT_OK(VipCQNotify(cq, &n, notify_cb));
	wait_calls(&n, 2);
	expect_no_entry(cq);
	VT_OK(VipRecvDone(g_s.vi[VA], &d));
	expect_recv(VA, d);
}

static int parent_main(void *arg)
{
	VIP_CQ_HANDLE cq;

	(void)arg;
	VT_OK(VipOpenNic("/dev/via_lo", &g_s.nic));
	VT_OK(VipCreateCQ(g_s.nic, 64, &cq));
	check_empty_cq(cq);
	printf("ok: empty CQ\n");
	side_init(&g_s, cq);
	side_connect(&g_s, 1);
	check_bound_unbound(cq);
	printf("ok: bound and unbound VIs, VipRecvDone after VipCQWait\n");
	check_send_cq(cq);
	printf("ok: send queue on the CQ\n");
	check_notify(cq);
	printf("ok: VipCQNotify one-shot\n");
	VDT_CHECK(vt_put_u64(vt_fd, CMD_QUIT) == 0);
	side_close(&g_s);
	VT_OK(VipDestroyCQ(cq));
	VT_OK(VipCloseNic(g_s.nic));
	return 0;
}

int main(void)
{
	int r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	r = vt_fork2(parent_main, child_main, NULL, 30);
	printf("%s\n", r == 0 ? "PASS" : r == VDT_SKIP ? "SKIP" : "FAIL");
	return r;
}
