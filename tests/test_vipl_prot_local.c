/* SPDX-License-Identifier: MIT */
/*
 * Description: local protection on the send side.  The parent sends, the
 * child has one receive posted (buffer filled with a pattern).  Each case
 * runs on a fresh Reliable Delivery connection:
 *   the data segment names a random handle, another region's handle, a
 *   range running past its region, a region of another ptag than the VI;
 *   VipPostSend gets a wrong handle for the descriptor's own region, or a
 *   descriptor that lies outside the region its handle names.
 * Each must be refused -- VipPostSend fails, or the descriptor completes
 * with an error bit (PROTECTION_ERROR expected for bad data segments) --
 * and nothing is sent: the receiver's descriptor does not complete
 * successfully and its buffer keeps the pattern.  A correct send runs
 * first and last as a control.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "viptest.h"

#define LEN 2048u
#define RBUF 8192u
#define SEED_S 0x5e9du
#define SEED_R 0x4ec7u
#define LEVEL VIP_SERVICE_RELIABLE_DELIVERY

enum kind {
	L_OK, L_RANDOM_MH, L_OTHER_MH, L_RANGE, L_PTAG, L_DESC_MH, L_DESC_OUT,
	L_NKINDS
};

static const char *const kind_name[L_NKINDS] = {
	"correct send", "data segment with a random handle",
	"data segment with another region's handle",
	"data segment running past its region",
	"data segment in a region of another ptag",
	"wrong handle for the descriptor", "descriptor outside its region",
};

static const int order[] = {
	L_OK, L_RANDOM_MH, L_OTHER_MH, L_RANGE, L_PTAG, L_DESC_MH, L_DESC_OUT, L_OK,
};
#define NORDER (sizeof(order) / sizeof(order[0]))

/* ---- receiver (child) ----------------------------------------------------- */

static void recv_check(VIP_VI_HANDLE vi, struct vt_mem *rb, VIP_DESCRIPTOR *posted,
		       int kind)
{
	VIP_DESCRIPTOR *d = NULL;
	int r;

	if (kind == L_OK) {
		VT_OK(VipRecvWait(vi, 3000, &d));
		VDT_CHECK(d == posted);
		VDT_CHECK_EQ(d->CS.Length, LEN);
		VDT_CHECK(vt_check(rb->p, LEN, SEED_S) < 0);
		return;
	}
	usleep(50 * 1000);      /* anything sent would have arrived by now */
	r = VipRecvDone(vi, &d);
	if (r == VIP_SUCCESS) {
		fprintf(stderr, "receiver got a message from a refused send (%s), "
			"status %#x length %u\n", kind_name[kind], d->CS.Status,
			d->CS.Length);
		exit(VDT_FAIL);
	}
	/* NOT_DONE (still posted), or flushed if the error broke the
	 * connection. */
	if (r == VIP_DESCRIPTOR_ERROR && d)
		VDT_CHECK(d->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR);
	else
		VT_EXPECT(r, VIP_NOT_DONE);
	if (vt_check(rb->p, RBUF, SEED_R) >= 0) {
		fprintf(stderr, "receive buffer changed by a refused send (%s)\n",
			kind_name[kind]);
		exit(VDT_FAIL);
	}
}

static int recv_main(void *arg)
{
	VIP_NIC_HANDLE nic;
	struct vt_mem dm, rb;
	char tag[16], disc[32];

	(void)arg;
	VT_OK(VipOpenNic("/dev/via_lo", &nic));
	VT_OK(vt_mem_get(nic, VT_DESC_STRIDE, NULL, &dm));
	VT_OK(vt_mem_get(nic, RBUF, NULL, &rb));
	for (unsigned i = 0; i < NORDER; i++) {
		VIP_VI_ATTRIBUTES va = vt_vi_attrs(nic, LEVEL);
		VIP_DESCRIPTOR *d = vt_desc_at(&dm, 0);
		VIP_VI_HANDLE vi;

		va.EnableRdmaRead = VIP_FALSE;
		VT_OK(VipCreateVi(nic, &va, NULL, NULL, &vi));
		vt_fill(rb.p, RBUF, SEED_R);
		vt_desc_recv(d, rb.mh, rb.p, RBUF);
		VT_OK(VipPostRecv(vi, d, dm.mh));
		snprintf(tag, sizeof(tag), "pl%u", i);
		VT_OK(vt_server_accept(nic, vi, vt_disc(disc, tag), 5000));
		VDT_CHECK(vt_sync(vt_fd) == 0);         /* sender is done */
		recv_check(vi, &rb, d, order[i]);
		VDT_CHECK(vt_sync(vt_fd) == 0);
		VipDisconnect(vi);
		VT_OK(VipDestroyVi(vi));
	}
	vt_mem_put(&rb);
	vt_mem_put(&dm);
	VT_OK(VipCloseNic(nic));
	return 0;
}

/* ---- sender (parent) ------------------------------------------------------ */

struct sender {
	VIP_NIC_HANDLE nic;
	VIP_PROTECTION_HANDLE ptag_a, ptag_b;
	struct vt_mem dm, sb, other, bptag;     /* sb: send buffer (ptag A) */
	uint8_t *unreg;                         /* 64-aligned, not registered */
};

static VIP_MEM_HANDLE random_handle(const struct sender *s)
{
	VIP_MEM_HANDLE h = 0;

	while (h == 0 || h == s->dm.mh || h == s->sb.mh || h == s->other.mh ||
	       h == s->bptag.mh)
		VDT_CHECK(getrandom(&h, sizeof(h), 0) == (ssize_t)sizeof(h));
	return h;
}

/* Build the case's descriptor; return it and the handle to post it with. */
static VIP_DESCRIPTOR *build(struct sender *s, int kind, VIP_MEM_HANDLE *dmh)
{
	VIP_DESCRIPTOR *d = vt_desc_at(&s->dm, 0);

	*dmh = s->dm.mh;
	vt_fill(s->sb.p, s->sb.len, SEED_S);
	vt_fill(s->bptag.p, s->bptag.len, SEED_S);
	vt_desc_send(d, s->sb.mh, s->sb.p, LEN);
	switch (kind) {
	case L_RANDOM_MH: vt_seg(d, 0)->Handle = random_handle(s); break;
	case L_OTHER_MH: vt_seg(d, 0)->Handle = s->other.mh; break;
	case L_RANGE:
		/* sb is LEN bytes long: start half-way in. */
		vt_seg(d, 0)->Data.Address = (uint8_t *)s->sb.p + LEN / 2;
		break;
	case L_PTAG: vt_desc_send(d, s->bptag.mh, s->bptag.p, LEN); break;
	case L_DESC_MH: *dmh = random_handle(s); break;
	case L_DESC_OUT:
		d = (VIP_DESCRIPTOR *)s->unreg;
		vt_desc_send(d, s->sb.mh, s->sb.p, LEN);
		break;
	default: break;
	}
	return d;
}

static void check_refused(int kind, VIP_VI_HANDLE vi, VIP_DESCRIPTOR *d, int rp)
{
	VIP_DESCRIPTOR *got = NULL;
	int r;

	if (rp != VIP_SUCCESS) {
		printf("  %s: VipPostSend refused it (%s)\n", kind_name[kind],
		       vt_ret_str(rp));
		return;
	}
	r = VipSendWait(vi, 3000, &got);
	if (r == VIP_TIMEOUT || got != d) {
		fprintf(stderr, "%s: accepted by VipPostSend but VipSendWait gave "
			"%s, desc %p (posted %p)\n", kind_name[kind], vt_ret_str(r),
			(void *)got, (void *)d);
		exit(VDT_FAIL);
	}
	if (r != VIP_DESCRIPTOR_ERROR || !(d->CS.Status & VIP_STATUS_ERROR_MASK)) {
		fprintf(stderr, "%s: not refused: %s status %#x\n", kind_name[kind],
			vt_ret_str(r), d->CS.Status);
		exit(VDT_FAIL);
	}
	if (kind != L_DESC_MH && kind != L_DESC_OUT &&
	    !(d->CS.Status & VIP_STATUS_PROTECTION_ERROR)) {
		fprintf(stderr, "%s: status %#x lacks VIP_STATUS_PROTECTION_ERROR\n",
			kind_name[kind], d->CS.Status);
		exit(VDT_FAIL);
	}
	printf("  %s: completed with status %#x\n", kind_name[kind], d->CS.Status);
}

static void send_case(struct sender *s, unsigned idx, int kind)
{
	VIP_VI_ATTRIBUTES va = vt_vi_attrs(s->nic, LEVEL);
	VIP_DESCRIPTOR *d, *got = NULL;
	VIP_MEM_HANDLE dmh;
	VIP_VI_HANDLE vi;
	char tag[16], disc[32];
	int rp;

	va.Ptag = s->ptag_a;
	va.EnableRdmaRead = VIP_FALSE;
	VT_OK(VipCreateVi(s->nic, &va, NULL, NULL, &vi));
	snprintf(tag, sizeof(tag), "pl%u", idx);
	VT_OK(vt_client_connect(s->nic, vi, vt_disc(disc, tag), 5000));
	d = build(s, kind, &dmh);
	rp = VipPostSend(vi, d, dmh);
	if (kind == L_OK) {
		VT_OK(rp);
		VT_OK(VipSendWait(vi, 3000, &got));
		VDT_CHECK(got == d);
	} else {
		check_refused(kind, vi, d, rp);
	}
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VipDisconnect(vi);
	VT_OK(VipDestroyVi(vi));
}

static int send_main(void *arg)
{
	struct sender s = { 0 };
	VIP_MEM_ATTRIBUTES ma = { 0 };

	(void)arg;
	VT_OK(VipOpenNic("/dev/via_lo", &s.nic));
	VT_OK(VipCreatePtag(s.nic, &s.ptag_a));
	VT_OK(VipCreatePtag(s.nic, &s.ptag_b));
	ma.Ptag = s.ptag_a;
	VT_OK(vt_mem_get(s.nic, 4 * VT_DESC_STRIDE, &ma, &s.dm));
	VT_OK(vt_mem_get(s.nic, LEN, &ma, &s.sb));
	VT_OK(vt_mem_get(s.nic, LEN, &ma, &s.other));
	ma.Ptag = s.ptag_b;
	VT_OK(vt_mem_get(s.nic, LEN, &ma, &s.bptag));
	VDT_CHECK(posix_memalign((void **)&s.unreg, 4096, 4096) == 0);
	for (unsigned i = 0; i < NORDER; i++) {
		send_case(&s, i, order[i]);
		printf("ok: %s\n", kind_name[order[i]]);
	}
	free(s.unreg);
	vt_mem_put(&s.bptag);
	vt_mem_put(&s.other);
	vt_mem_put(&s.sb);
	vt_mem_put(&s.dm);
	VT_OK(VipDestroyPtag(s.nic, s.ptag_a));
	VT_OK(VipDestroyPtag(s.nic, s.ptag_b));
	VT_OK(VipCloseNic(s.nic));
	return 0;
}

int main(void)
{
	int r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	r = vt_fork2(send_main, recv_main, NULL, 30);
	printf("%s\n", r == 0 ? "PASS" : r == VDT_SKIP ? "SKIP" : "FAIL");
	return r;
}
