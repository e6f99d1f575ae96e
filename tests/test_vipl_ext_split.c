/* SPDX-License-Identifier: MIT */
/*
 * Description: the request splitting extension (VIADUCT_VI_SPLIT_RECV, seed
 * 001 section 3.7.2).  The child's VI has the flag and four 4096-byte
 * receives posted; the parent sends 10000 bytes, then 100 bytes.  The
 * 10000 bytes fill three descriptors: Length 4096 + VIADUCT_STATUS_MORE,
 * 4096 + MORE, 1808 without MORE, the data intact across them; the 100
 * bytes land alone in the fourth descriptor (no MORE).  Done with the
 * sender forcing PIO, forcing DMA and automatic.  stats.split_recvs counts
 * the MORE descriptors.  Finally the flag is cleared: the same 10000-byte
 * message into a 4096-byte receive completes with VIP_STATUS_LENGTH_ERROR.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "viptest.h"

#define RLEN 4096u
#define BIGLEN 10000u
#define SMALLLEN 100u
#define SEED 0x5b17u
#define LEVEL VIP_SERVICE_RELIABLE_DELIVERY

static const unsigned modes[] = { VIADUCT_XFER_PIO, VIADUCT_XFER_DMA, VIADUCT_XFER_AUTO };
static const char *const mode_name[] = { "PIO", "DMA", "auto" };
#define NMODES 3

static VIP_VI_HANDLE make_vi(VIP_NIC_HANDLE nic, int server, unsigned flags)
{
	VIP_VI_ATTRIBUTES va = vt_vi_attrs(nic, LEVEL);
	struct viaduct_vi_ext ext = { .flags = flags };
	VIP_VI_HANDLE vi;
	char disc[32];

	va.EnableRdmaRead = VIP_FALSE;
	VT_OK(VipCreateVi(nic, &va, NULL, NULL, &vi));
	VT_OK(viaduct_vi_set_ext(vi, &ext));
	if (server)
		VT_OK(vt_server_accept(nic, vi, vt_disc(disc, "split"), 5000));
	else
		VT_OK(vt_client_connect(nic, vi, vt_disc(disc, "split"), 5000));
	return vi;
}

/* ---- receiver (child) ------------------------------------------------------ */

static void post4(VIP_VI_HANDLE vi, struct vt_mem *dm, struct vt_mem *rb)
{
	memset(rb->p, 0, 4 * RLEN);
	for (unsigned j = 0; j < 4; j++) {
		vt_desc_recv(vt_desc_at(dm, j), rb->mh, (uint8_t *)rb->p + j * RLEN, RLEN);
		VT_OK(VipPostRecv(vi, vt_desc_at(dm, j), dm->mh));
	}
}

static void expect_piece(VIP_VI_HANDLE vi, struct vt_mem *dm, unsigned j,
			 uint32_t len, int more)
{
	VIP_DESCRIPTOR *d;
	uint32_t st;

	VT_OK(VipRecvWait(vi, 3000, &d));
	st = d->CS.Status;
	if (d != vt_desc_at(dm, j) || d->CS.Length != len ||
	    !!(st & VIADUCT_STATUS_MORE) != more || (st & VIP_STATUS_ERROR_MASK)) {
		fprintf(stderr, "piece %u: desc %p (want %p) Length %u (want %u) "
			"status %#x (MORE wanted: %d)\n", j, (void *)d,
			(void *)vt_desc_at(dm, j), d->CS.Length, len, st, more);
		exit(VDT_FAIL);
	}
}

static void recv_split(VIP_VI_HANDLE vi, struct vt_mem *dm, struct vt_mem *rb)
{
	long bad;

	post4(vi, dm, rb);
	VDT_CHECK(vt_sync(vt_fd) == 0);         /* receives posted */
	expect_piece(vi, dm, 0, RLEN, 1);
	expect_piece(vi, dm, 1, RLEN, 1);
	expect_piece(vi, dm, 2, BIGLEN - 2 * RLEN, 0);
	bad = vt_check(rb->p, BIGLEN, SEED);
	if (bad >= 0) {
		fprintf(stderr, "split message corrupt at byte %ld\n", bad);
		exit(VDT_FAIL);
	}
	expect_piece(vi, dm, 3, SMALLLEN, 0);
	VDT_CHECK(vt_check((uint8_t *)rb->p + 3 * RLEN, SMALLLEN, SEED + 1) < 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);
}

static void recv_unsplit(VIP_NIC_HANDLE nic, struct vt_mem *dm, struct vt_mem *rb)
{
	VIP_VI_HANDLE vi = make_vi(nic, 0, 0);
	VIP_DESCRIPTOR *d = vt_desc_at(dm, 0), *got = NULL;
	int r;

	vt_desc_recv(d, rb->mh, rb->p, RLEN);
	VT_OK(VipPostRecv(vi, d, dm->mh));
	VDT_CHECK(vt_sync(vt_fd) == 0);
	r = VipRecvWait(vi, 3000, &got);
	if (r != VIP_DESCRIPTOR_ERROR || got != d ||
	    !(d->CS.Status & VIP_STATUS_LENGTH_ERROR)) {
		fprintf(stderr, "unsplit 10000 bytes into 4096: %s status %#x\n",
			vt_ret_str(r), got ? got->CS.Status : 0);
		exit(VDT_FAIL);
	}
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VipDisconnect(vi);
	VT_OK(VipDestroyVi(vi));
}

static int recv_main(void *arg)
{
	VIP_NIC_HANDLE nic;
	VIP_VI_HANDLE vi;
	struct vt_mem dm, rb;
	struct viaduct_vi_ext ext;
	struct viaduct_vi_stats st;

	(void)arg;
	VT_OK(VipOpenNic("/dev/via_lo", &nic));
	VT_OK(vt_mem_get(nic, 4 * VT_DESC_STRIDE, NULL, &dm));
	VT_OK(vt_mem_get(nic, 4 * RLEN, NULL, &rb));
	vi = make_vi(nic, 0, VIADUCT_VI_SPLIT_RECV);
	VT_OK(viaduct_vi_get_ext(vi, &ext));
	VDT_CHECK_EQ(ext.flags, VIADUCT_VI_SPLIT_RECV);
	for (int m = 0; m < NMODES; m++)
		recv_split(vi, &dm, &rb);
	VT_OK(viaduct_vi_get_stats(vi, &st));
	VDT_CHECK_EQ(st.split_recvs, 2 * NMODES);
	VDT_CHECK_EQ(st.recvs, 4 * NMODES);
	VDT_CHECK_EQ(st.recv_bytes, (BIGLEN + SMALLLEN) * NMODES);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VipDisconnect(vi);
	VT_OK(VipDestroyVi(vi));
	recv_unsplit(nic, &dm, &rb);
	vt_mem_put(&rb);
	vt_mem_put(&dm);
	VT_OK(VipCloseNic(nic));
	return 0;
}

/* ---- sender (parent) --------------------------------------------------------- */

static void send_two(VIP_VI_HANDLE vi, struct vt_mem *dm, struct vt_mem *sb, int small)
{
	VIP_DESCRIPTOR *d;

	vt_fill(sb->p, BIGLEN, SEED);
	vt_fill((uint8_t *)sb->p + BIGLEN, SMALLLEN, SEED + 1);
	vt_desc_send(vt_desc_at(dm, 0), sb->mh, sb->p, BIGLEN);
	VT_OK(VipPostSend(vi, vt_desc_at(dm, 0), dm->mh));
	if (small) {
		vt_desc_send(vt_desc_at(dm, 1), sb->mh, (uint8_t *)sb->p + BIGLEN,
			     SMALLLEN);
		VT_OK(VipPostSend(vi, vt_desc_at(dm, 1), dm->mh));
	}
	VT_OK(VipSendWait(vi, 3000, &d));
	VDT_CHECK(d == vt_desc_at(dm, 0));
	if (small) {
		VT_OK(VipSendWait(vi, 3000, &d));
		VDT_CHECK(d == vt_desc_at(dm, 1));
	}
}

static int send_main(void *arg)
{
	VIP_NIC_HANDLE nic;
	VIP_VI_HANDLE vi;
	VIP_DESCRIPTOR *d = NULL;
	struct vt_mem dm, sb;
	int r;

	(void)arg;
	VT_OK(VipOpenNic("/dev/via_lo", &nic));
	VT_OK(vt_mem_get(nic, 2 * VT_DESC_STRIDE, NULL, &dm));
	VT_OK(vt_mem_get(nic, BIGLEN + SMALLLEN, NULL, &sb));
	vi = make_vi(nic, 1, 0);
	for (int m = 0; m < NMODES; m++) {
		struct viaduct_vi_ext ext = { .xfer_mode = modes[m] };

		VT_OK(viaduct_vi_set_ext(vi, &ext));
		VDT_CHECK(vt_sync(vt_fd) == 0);
		send_two(vi, &dm, &sb, 1);
		VDT_CHECK(vt_sync(vt_fd) == 0);
		printf("ok: 10000 bytes split into 4096+4096+1808 (%s)\n", mode_name[m]);
	}
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VipDisconnect(vi);
	VT_OK(VipDestroyVi(vi));
	vi = make_vi(nic, 1, 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_desc_send(vt_desc_at(&dm, 0), sb.mh, sb.p, BIGLEN);
	VT_OK(VipPostSend(vi, vt_desc_at(&dm, 0), dm.mh));
	r = VipSendWait(vi, 3000, &d);
	printf("sender of the oversized message: %s status %#x\n", vt_ret_str(r),
	       d ? d->CS.Status : 0);
	VDT_CHECK(r != VIP_TIMEOUT && d == vt_desc_at(&dm, 0));
	VDT_CHECK(vt_sync(vt_fd) == 0);
	printf("ok: without the flag: VIP_STATUS_LENGTH_ERROR\n");
	VipDisconnect(vi);
	VT_OK(VipDestroyVi(vi));
	vt_mem_put(&sb);
	vt_mem_put(&dm);
	VT_OK(VipCloseNic(nic));
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
