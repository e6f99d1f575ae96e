/* SPDX-License-Identifier: MIT */
/*
 * White-box: a hostile peer that holds the job key.  It connects as any
 * VIPL program would, then writes crafted wire messages into the
 * connection through the provider's own send path -- past every check
 * its own VIPL calls would make:
 *  - a zero-copy send naming a key that exposes nothing;
 *  - a zero-copy send whose request is the wrong size;
 *  - message-ring messages past the credit the receiver gave;
 *  - a ring credit for messages the receiver never sent, on its own and
 *    riding on a ring message;
 *  - a DONE and an RDMA read answer for operations never issued;
 *  - a send that starts in the middle.
 * Each time the victim breaks that one connection (its VI leaves
 * Connected within 5 s), its receive buffers and its RDMA-enabled region
 * keep every byte, and a new connection from the same peer then works.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "viptest.h"
#include "vipl/vipl_internal.h"
#include "prov/ofi/ofi.h"

enum attack {
	ZC_BAD_KEY, ZC_BAD_SIZE, RING_OVER_CREDIT, RING_FALSE_CREDIT, RING_FALSE_RIDER,
	STRAY_DONE, STRAY_READ_DATA, SEND_MID_START, NR_ATTACKS
};

static const char *const names[NR_ATTACKS] = {
	"zero-copy send with a key that exposes nothing", "zero-copy request of the wrong size",
	"ring messages past the credit", "ring credit for nothing sent",
	"ring message carrying a credit for nothing sent",
	"DONE for no operation", "RDMA read answer for no read", "send starting mid-way",
};

/* The victim's memory: descriptors, receive buffers, an RDMA-enabled
 * area nobody is told about. */
#define PATTERN 0x5au
#define NRECV 2u
#define RECV_LEN 4096u
#define RECV_OFF 4096u
#define AREA_OFF (RECV_OFF + NRECV * RECV_LEN)
#define AREA 65536u
#define TOTAL (AREA_OFF + AREA)

static const char *tag(char buf[16], int k)
{
	snprintf(buf, 16, "host%d", k);
	return buf;
}

static void craft(struct vd_ofi_conn *c, uint8_t type, uint32_t seq, uint32_t flags,
		  uint64_t a, uint64_t b, const void *p, size_t len)
{
	struct vd_ofi_hdr h;

	vd_ofi_hdr_init(c, &h, type, seq);
	h.flags = flags;
	h.a = a;
	h.b = b;
	VDT_CHECK(vd_ofi_send_msg(c->on, c->peer, c, &h, p, len, 0) == 0);
}

static void attack(struct vd_ofi_conn *c, enum attack k)
{
	static uint8_t junk[32000];
	struct vd_ofi_zc z = { 0x1000, 0xdeadbeefcafef00dull };

	switch (k) {
	case ZC_BAD_KEY:
		craft(c, VD_OFI_SEND, 0, VD_OFI_F_ZC | VD_OFI_F_LAST | VD_OFI_F_ACK, 0, 2048,
		      &z, sizeof(z));
		break;
	case ZC_BAD_SIZE:
		craft(c, VD_OFI_SEND, 0, VD_OFI_F_ZC | VD_OFI_F_LAST | VD_OFI_F_ACK, 0, 2048,
		      &z, 8);
		break;
	case RING_OVER_CREDIT:  /* 5 x 32000 bytes into a 128 KiB ring, unread */
		for (int i = 0; i < 5; i++)
			craft(c, VD_OFI_RING, 0, 0, 0, 0, junk, sizeof(junk));
		break;
	case RING_FALSE_CREDIT:
		craft(c, VD_OFI_RING_CREDIT, 0, 0, 4096, 0, NULL, 0);
		break;
	case RING_FALSE_RIDER: {
		struct vd_ofi_hdr h;

		vd_ofi_hdr_init(c, &h, VD_OFI_RING, 0);
		h.flags = VD_OFI_F_CREDIT;
		h.c = 4096;
		VDT_CHECK(vd_ofi_send_msg(c->on, c->peer, c, &h, junk, 64, 0) == 0);
		break;
	}
	case STRAY_DONE:
		craft(c, VD_OFI_DONE, 7, 0, 0, 0, NULL, 0);
		break;
	case STRAY_READ_DATA:
		craft(c, VD_OFI_RDMAR_DATA, 3, 0, 0, 0, junk, 64);
		break;
	case SEND_MID_START:
		craft(c, VD_OFI_SEND, 0, VD_OFI_F_LAST, 100, 200, junk, 100);
		break;
	default:
		break;
	}
}

/* ---- the attacker (child) ------------------------------------------------------ */

static int attacker(void *arg)
{
	char disc[32], t[16];
	(void)arg;

	for (int k = 0; k < NR_ATTACKS; k++) {
		struct vt_side s;
		vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
		vt_side_connect(&s, vt_disc(disc, tag(t, k)));
		struct vd_vi *vi = vd_obj_lookup(s.vi, VD_OBJ_VI);
		VDT_CHECK(vi && vi->conn);
		attack(vi->conn, (enum attack)k);
		VDT_CHECK(vt_sync(vt_fd) == 0);         /* the victim has judged */
		vt_side_close(&s);
	}
	/* Then an honest send on a new connection. */
	struct vt_side s;
	struct vt_mem m;
	vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	VDT_CHECK(vt_mem_get(s.nic, 4096, NULL, &m) == VIP_SUCCESS);
	vt_side_connect(&s, vt_disc(disc, "honest"));
	VIP_DESCRIPTOR *d = m.p;
	uint8_t *buf = (uint8_t *)m.p + 1024;
	vt_fill(buf, 100, 42);
	vt_desc_send(d, m.mh, buf, 100);
	VT_OK(VipPostSend(s.vi, d, m.mh));
	VT_OK(VipSendWait(s.vi, 5000, &d));
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_side_close(&s);
	vt_mem_put(&m);
	return 0;
}

/* ---- the victim (parent) ------------------------------------------------------- */

static void post_recvs(VIP_VI_HANDLE vi, struct vt_mem *m)
{
	for (unsigned i = 0; i < NRECV; i++) {
		VIP_DESCRIPTOR *d = vt_desc_at(m, i);
		uint8_t *buf = (uint8_t *)m->p + RECV_OFF + i * RECV_LEN;
		vt_desc_recv(d, m->mh, buf, RECV_LEN);
		VT_OK(VipPostRecv(vi, d, m->mh));
	}
}

static bool untouched(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != PATTERN)
			return false;
	return true;
}

static void judge(struct vt_side *s, struct vt_mem *m, int k)
{
	uint64_t give_up = vt_now_ms() + 5000;

	while (vt_state(s->vi) == VIP_STATE_CONNECTED && vt_now_ms() < give_up)
		usleep(1000);
	if (vt_state(s->vi) == VIP_STATE_CONNECTED)
		fprintf(stderr, "%s: the connection stayed up\n", names[k]);
	VDT_CHECK(vt_state(s->vi) != VIP_STATE_CONNECTED);
	if (!untouched((uint8_t *)m->p + RECV_OFF, TOTAL - RECV_OFF))
		fprintf(stderr, "%s: memory changed\n", names[k]);
	/* The receive buffers, and the RDMA-enabled area never offered. */
	VDT_CHECK(untouched((uint8_t *)m->p + RECV_OFF, TOTAL - RECV_OFF));
}

static int victim(void *arg)
{
	VIP_MEM_ATTRIBUTES ma = { .EnableRdmaWrite = VIP_TRUE, .EnableRdmaRead = VIP_TRUE };
	char disc[32], t[16];
	(void)arg;

	for (int k = 0; k < NR_ATTACKS; k++) {
		struct vt_side s;
		struct vt_mem m;
		vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
		VDT_CHECK(vt_mem_get(s.nic, TOTAL, &ma, &m) == VIP_SUCCESS);
		memset((uint8_t *)m.p + RECV_OFF, PATTERN, TOTAL - RECV_OFF);
		post_recvs(s.vi, &m);
		vt_side_connect(&s, vt_disc(disc, tag(t, k)));
		judge(&s, &m, k);
		VDT_CHECK(vt_sync(vt_fd) == 0);
		vt_side_close(&s);
		vt_mem_put(&m);
	}
	struct vt_side s;
	struct vt_mem m;
	VIP_DESCRIPTOR *d;
	vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	VDT_CHECK(vt_mem_get(s.nic, TOTAL, &ma, &m) == VIP_SUCCESS);
	post_recvs(s.vi, &m);
	vt_side_connect(&s, vt_disc(disc, "honest"));
	VT_OK(VipRecvWait(s.vi, 5000, &d));
	VDT_CHECK_EQ(d->CS.Length, 100);
	VDT_CHECK(vt_check((uint8_t *)m.p + RECV_OFF, 100, 42) < 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_side_close(&s);
	vt_mem_put(&m);
	return 0;
}

int main(void)
{
	setenv("VIADUCT_JOB_KEY", "00112233445566778899aabbccddeeff", 1);
	setenv("VIADUCT_PROVIDER", "ofi", 1);
	setenv("VIADUCT_OFI_PROVIDER", "tcp", 1);
	VIP_NIC_HANDLE nic;
	VDT_SKIP_IF(VipOpenNic("ofi", &nic) != VIP_SUCCESS, "the ofi provider cannot open here");
	VipCloseNic(nic);
	return vt_run_main(victim, attacker, 2u << 20, 60);
}
