/* SPDX-License-Identifier: MIT */
/*
 * White-box: messages that wait in the ofi provider's backlog (the fabric
 * said -FI_EAGAIN) when their connection breaks.
 *  - A target that refuses an RDMA write queues the DONE that says so,
 *    then breaks the connection.  That DONE, and every message queued
 *    before it, must still go out, in order: the initiator's descriptor
 *    completes only with it, and a gap before it holds it back.
 *  - A break that tells the peer (a NOTICE) keeps the backlog alike.
 *  - Either only for a bounded time (VD_OFI_DRAIN_NS).
 *  - A break because the peer is gone drops what waits for it.
 *  - A DONE the fabric refuses outright breaks the connection (the
 *    initiator's wait then ends at its keepalive timeout).
 * The fabric is a fake endpoint that refuses sends while `full`, then
 * records what it is given.
 */
#include <string.h>

#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "vdtest.h"
#include "prov/ofi/ofi.h"

#define SENT_MAX 16

static bool full, fails;
static struct vd_ofi_hdr sent[SENT_MAX];
static unsigned nsent;

static ssize_t fake_send(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			 fi_addr_t to, void *ctx)
{
	(void)ep, (void)desc, (void)to, (void)ctx;
	if (full)
		return -FI_EAGAIN;
	if (fails)
		return -FI_EIO;
	VDT_CHECK(len >= sizeof(struct vd_ofi_hdr) && nsent < SENT_MAX);
	memcpy(&sent[nsent++], buf, sizeof(struct vd_ofi_hdr));
	return 0;       /* never completed: the test ends first */
}

static ssize_t fake_cq_read(struct fid_cq *cq, void *buf, size_t count)
{
	(void)cq, (void)buf, (void)count;
	return -FI_EAGAIN;
}

static struct fi_ops_msg msg_ops = { .size = sizeof(msg_ops), .send = fake_send };
static struct fi_ops_cq cq_ops = { .size = sizeof(cq_ops), .read = fake_cq_read };

static struct vd_ofi_nic on;
static struct vd_ofi_conn *table[1];

static void nic_init(void)
{
	static struct fid_ep ep = { .msg = &msg_ops };
	static struct fid_cq cq = { .ops = &cq_ops };

	memset(&on, 0, sizeof(on));
	pthread_mutex_init(&on.lock, NULL);
	pthread_mutex_init(&on.fab_lock, NULL);
	pthread_cond_init(&on.cond, NULL);
	vd_lock_init(&on.tx_lock);
	vd_lock_init(&on.bl_lock);
	vd_lock_init(&on.progress);
	on.bl_tail = &on.bl_head;
	on.data.ep = &ep;
	on.cq = &cq;
	on.conns = table;
	on.nconns = on.conns_hwm = 1;
}

static struct vd_ofi_conn *conn_new(void)
{
	static struct vd_ofi_conn c;

	memset(&c, 0, sizeof(c));
	c.on = &on;
	c.hs_state = 4;                         /* connected */
	c.peer = FI_ADDR_UNSPEC;                /* no per-peer liveness */
	atomic_store(&c.last_rx_ns, vd_now_ns());
	table[0] = &c;
	return &c;
}

/* Two messages wait in the backlog (the fabric is full): a DONE that
 * succeeded and one more of type `type`. */
static struct vd_ofi_conn *two_waiting(uint8_t type, uint64_t a)
{
	struct vd_ofi_conn *c = conn_new();

	full = true;
	nsent = 0;
	VDT_CHECK(vd_ofi_send_ctl(c, VD_OFI_DONE, 6, 0) == 0);
	if (type)
		VDT_CHECK(vd_ofi_send_ctl(c, type, 7, a) == 0);
	VDT_CHECK(on.bl_head != NULL && nsent == 0);
	return c;
}

static void fabric_frees(void)
{
	full = false;
	vd_ofi_progress(&on, 0, false);         /* flushes the backlog */
	VDT_CHECK(on.bl_head == NULL);
}

int main(void)
{
	struct vd_ofi_conn *c;

	nic_init();

	/* The refusal of an RDMA write, then the break. */
	c = two_waiting(VD_OFI_DONE, VIP_STATUS_RDMA_PROT_ERROR);
	vd_ofi_conn_break_after(c, VIP_ERROR_RDMAW_PROT);
	fabric_frees();
	VDT_CHECK(nsent == 2);
	VDT_CHECK(sent[0].type == VD_OFI_DONE && sent[0].seq == 6 && sent[0].a == 0);
	VDT_CHECK(sent[1].type == VD_OFI_DONE && sent[1].seq == 7 &&
		  sent[1].a == VIP_STATUS_RDMA_PROT_ERROR);
	VDT_CHECK(sent[1].msg_no == sent[0].msg_no + 1);
	printf("ok: a refusal's DONE queued before the break goes out, after what came before it\n");

	/* A break that tells the peer: its NOTICE follows the rest. */
	c = two_waiting(0, 0);
	vd_ofi_conn_break(c, VIP_ERROR_RECVQ_EMPTY, true);
	fabric_frees();
	VDT_CHECK(nsent == 2);
	VDT_CHECK(sent[0].type == VD_OFI_DONE && sent[1].type == VD_OFI_NOTICE &&
		  sent[1].a == VIP_ERROR_RECVQ_EMPTY);
	printf("ok: a NOTICE and what waited before it go out\n");

	/* Broken on purpose, but the peer has taken nothing for longer than
	 * the drain time: dropped, the backlog is every connection's. */
	c = two_waiting(VD_OFI_DONE, VIP_STATUS_RDMA_PROT_ERROR);
	vd_ofi_conn_break_after(c, VIP_ERROR_RDMAW_PROT);
	atomic_store(&c->ended, vd_now_ns() - 1);
	fabric_frees();
	VDT_CHECK(nsent == 0);
	printf("ok: after the drain time a connection broken on purpose drops its backlog\n");

	/* A peer gone: what waits for it is dropped. */
	c = two_waiting(VD_OFI_KEEPALIVE, 0);
	vd_ofi_conn_break(c, VIP_ERROR_CONN_LOST, false);
	fabric_frees();
	VDT_CHECK(nsent == 0);
	printf("ok: a connection broken because its peer is gone drops its backlog\n");

	c = conn_new();
	fails = true;
	vd_ofi_send_done(c, 8, 0);
	fails = false;
	VDT_CHECK(atomic_load(&c->broken) && atomic_load(&c->ended) == VD_OFI_END_DROP);
	printf("ok: a DONE that cannot be sent breaks the connection\n");
	return 0;
}
