/* SPDX-License-Identifier: MIT */
/*
 * Two processes: one message of exactly the NIC's MaxTransferSize (capped
 * at 256 MiB to stay within seconds and memory; the cap is printed), AUTO
 * mode, verified; and a send one byte larger than the VI's
 * MaxTransferSize completes with a length (or format) error and delivers
 * nothing.  Skips when the memory cannot be registered here.
 */
#include "viptest.h"

#include <string.h>

#define CAP (256ul << 20)
static char disc[32];

static size_t msg_len(VIP_NIC_HANDLE nic)
{
	VIP_NIC_ATTRIBUTES na;

	VT_OK(VipQueryNic(nic, &na));
	return na.MaxTransferSize < CAP ? na.MaxTransferSize : CAP;
}

/* Word pattern: fast enough for hundreds of MiB. */
static void fill64(void *p, size_t len)
{
	uint64_t *w = p;

	for (size_t i = 0; i < len / 8; i++)
		w[i] = i * 0x9e3779b97f4a7c15ull;
	for (size_t i = len / 8 * 8; i < len; i++)
		((uint8_t *)p)[i] = (uint8_t)i;
}

static int check64(const void *p, size_t len)
{
	const uint64_t *w = p;

	for (size_t i = 0; i < len / 8; i++)
		if (w[i] != i * 0x9e3779b97f4a7c15ull)
			return -1;
	for (size_t i = len / 8 * 8; i < len; i++)
		if (((const uint8_t *)p)[i] != (uint8_t)i)
			return -1;
	return 0;
}

static int get_mem(VIP_NIC_HANDLE nic, size_t len, struct vt_mem *m)
{
	int r = vt_mem_get(nic, len, NULL, m);

	if (r == VIP_ERROR_RESOURCE) {
		fprintf(stderr, "SKIP: cannot register %zu bytes\n", len);
		return VDT_SKIP;
	}
	VT_OK(r);
	return 0;
}

/* Both VIs get MaxTransferSize = the message length, so one byte more is
 * oversize even when the NIC limit is above the cap. */
static size_t open_side(struct vt_side *s)
{
	VIP_NIC_HANDLE nic;
	VIP_VI_ATTRIBUTES va;
	size_t len;

	VT_OK(VipOpenNic("/dev/via_lo", &nic));
	len = msg_len(nic);
	va = vt_vi_attrs(nic, VIP_SERVICE_RELIABLE_DELIVERY);
	va.MaxTransferSize = len;
	VT_OK(VipCloseNic(nic));
	vt_side_open(s, VIP_SERVICE_RELIABLE_DELIVERY, &va);
	return len;
}

static int receiver(void *arg)
{
	struct vt_side s;
	struct vt_mem dm, bm;
	VIP_DESCRIPTOR *o;
	size_t len;
	int r;

	(void)arg;
	len = open_side(&s);
	VT_OK(vt_mem_get(s.nic, 4096, NULL, &dm));
	r = get_mem(s.nic, len + 64, &bm);
	VDT_CHECK(vt_put_u64(vt_fd, (uint64_t)r) == 0);
	if (r)
		return r;
	vt_side_connect(&s, disc);
	vt_desc_recv(vt_desc_at(&dm, 0), bm.mh, bm.p, (uint32_t)len);
	VT_OK(VipPostRecv(s.vi, vt_desc_at(&dm, 0), dm.mh));
	vt_desc_recv(vt_desc_at(&dm, 1), bm.mh, bm.p, 64);
	VT_OK(VipPostRecv(s.vi, vt_desc_at(&dm, 1), dm.mh));
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VT_OK(VipRecvWait(s.vi, 20000, &o));
	VDT_CHECK(o == vt_desc_at(&dm, 0));
	VDT_CHECK_EQ(o->CS.Length, len);
	VDT_CHECK(check64(bm.p, len) == 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);   /* sender did the oversize send */
	/* The oversize send delivered nothing (if the error broke the
	 * connection, the receive is flushed, still without data). */
	r = VipRecvDone(s.vi, &o);
	VDT_CHECK(r == VIP_NOT_DONE || (r == VIP_DESCRIPTOR_ERROR &&
		  (o->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR)));
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_side_close(&s);
	vt_mem_put(&dm);
	vt_mem_put(&bm);
	return 0;
}

static int sender(void *arg)
{
	struct vt_side s;
	struct vt_mem dm, bm;
	VIP_DESCRIPTOR *o;
	uint64_t peer;
	size_t len;
	int r;

	(void)arg;
	len = open_side(&s);
	VT_OK(vt_mem_get(s.nic, 4096, NULL, &dm));
	VDT_CHECK(vt_get_u64(vt_fd, &peer) == 0);
	if (peer)
		return (int)peer;
	r = get_mem(s.nic, len + 64, &bm);
	VDT_CHECK(r == 0);   /* the receiver could; so must we */
	fill64(bm.p, len);
	vt_side_connect(&s, disc);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_desc_send(vt_desc_at(&dm, 0), bm.mh, bm.p, (uint32_t)len);
	VT_OK(VipPostSend(s.vi, vt_desc_at(&dm, 0), dm.mh));
	VT_OK(VipSendWait(s.vi, 20000, &o));
	/* One byte over the VI's MaxTransferSize. */
	{
		vt_desc_send(vt_desc_at(&dm, 1), bm.mh, bm.p, (uint32_t)len + 1);
		r = VipPostSend(s.vi, vt_desc_at(&dm, 1), dm.mh);
		if (r == VIP_SUCCESS) {
			VT_EXPECT(VipSendWait(s.vi, 5000, &o), VIP_DESCRIPTOR_ERROR);
			VDT_CHECK(o->CS.Status & (VIP_STATUS_LENGTH_ERROR |
						  VIP_STATUS_FORMAT_ERROR));
		} else {
			VT_EXPECT(r, VIP_INVALID_PARAMETER);
		}
	}
	if (len < s.na.MaxTransferSize)
		fprintf(stderr, "note: message capped at %zu bytes (MaxTransferSize %lu)\n",
			len, s.na.MaxTransferSize);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_side_close(&s);
	vt_mem_put(&dm);
	vt_mem_put(&bm);
	return 0;
}

int main(void)
{
	vt_disc(disc, "max");
	return vt_fork2(receiver, sender, NULL, 150);
}
