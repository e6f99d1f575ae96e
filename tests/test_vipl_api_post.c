/* SPDX-License-Identifier: MIT */
/*
 * VIPL API, one process: posting on an unconnected VI, descriptor
 * validation (outside registered memory, wrong handle, misaligned, bad
 * SegCount, reserved bits), *Done / *Wait on empty and pending queues,
 * lenient teardown.
 */
#include "viptest.h"

#include <string.h>
#include <unistd.h>

static VIP_NIC_HANDLE nic;
static VIP_NIC_ATTRIBUTES na;
static struct vt_mem m;          /* descriptors at slots 0..7, data above */

#define DATA(off) ((char *)m.p + 8192 + (off))

static VIP_VI_HANDLE new_vi(VIP_USHORT level)
{
	VIP_VI_ATTRIBUTES va = vt_vi_attrs(nic, level);
	VIP_VI_HANDLE vi;

	VT_OK(VipCreateVi(nic, &va, NULL, NULL, &vi));
	return vi;
}

static void test_empty_queues(void)
{
	VIP_VI_HANDLE vi = new_vi(VIP_SERVICE_RELIABLE_DELIVERY);
	VIP_DESCRIPTOR *d = (void *)0x77;
	uint64_t t0;
	int r;

	VT_EXPECT(VipSendDone(vi, &d), VIP_DESCRIPTOR_ERROR);
	VDT_CHECK(d == NULL);
	d = (void *)0x77;
	VT_EXPECT(VipRecvDone(vi, &d), VIP_DESCRIPTOR_ERROR);
	VDT_CHECK(d == NULL);
	VT_EXPECT(VipSendDone(vi, NULL), VIP_INVALID_PARAMETER);
	VT_EXPECT(VipRecvDone(vi, NULL), VIP_INVALID_PARAMETER);
	VT_EXPECT(VipSendWait(vi, 0, NULL), VIP_INVALID_PARAMETER);
	VT_EXPECT(VipRecvWait(vi, 0, NULL), VIP_INVALID_PARAMETER);
	/* Wait on an empty queue: nothing can ever complete; either the
	 * empty-queue answer at once or a timeout, never a hang. */
	for (VIP_ULONG to = 0; to <= 50; to += 50) {
		d = (void *)0x77;
		t0 = vt_now_ms();
		r = VipRecvWait(vi, to, &d);
		VDT_CHECK(r == VIP_DESCRIPTOR_ERROR || r == VIP_TIMEOUT);
		VDT_CHECK(r != VIP_DESCRIPTOR_ERROR || d == NULL);
		VDT_CHECK(vt_now_ms() - t0 < 2000);
		r = VipSendWait(vi, to, &d);
		VDT_CHECK(r == VIP_DESCRIPTOR_ERROR || r == VIP_TIMEOUT);
	}
	VT_OK(VipDestroyVi(vi));
}

/* Receives may be posted in Idle state; they stay pending. */
static void test_recv_idle(void)
{
	VIP_VI_HANDLE vi = new_vi(VIP_SERVICE_RELIABLE_RECEPTION);
	VIP_DESCRIPTOR *d = NULL;
	VIP_VI_STATE st;
	VIP_VI_ATTRIBUTES va;
	VIP_BOOLEAN se, re;
	uint64_t t0;
	int r;

	for (unsigned i = 0; i < 4; i++) {
		vt_desc_recv(vt_desc_at(&m, i), m.mh, DATA(i * 1024), 1024);
		VT_OK(VipPostRecv(vi, vt_desc_at(&m, i), m.mh));
	}
	VT_OK(VipQueryVi(vi, &st, &va, &se, &re));
	VDT_CHECK(st == VIP_STATE_IDLE && se && !re);
	VT_EXPECT(VipRecvDone(vi, &d), VIP_NOT_DONE);
	r = VipRecvWait(vi, 0, &d);
	VDT_CHECK(r == VIP_TIMEOUT || r == VIP_NOT_DONE);
	t0 = vt_now_ms();
	VT_EXPECT(VipRecvWait(vi, 100, &d), VIP_TIMEOUT);
	VDT_CHECK(vt_now_ms() - t0 >= 90 && vt_now_ms() - t0 < 2000);
	VDT_CHECK(!(vt_desc_at(&m, 0)->CS.Status & VIP_STATUS_DONE));
	/* Lenient teardown: Disconnect on Idle twice, destroy with posted
	 * receives. */
	VT_OK(VipDisconnect(vi));
	VT_OK(VipDisconnect(vi));
	VT_OK(VipDestroyVi(vi));
}

/* A send on an unconnected VI is refused or completes in error. */
static void test_send_idle(void)
{
	VIP_VI_HANDLE vi = new_vi(VIP_SERVICE_RELIABLE_DELIVERY);
	VIP_DESCRIPTOR *d = vt_desc_at(&m, 0), *out = NULL;
	int r;

	vt_desc_send(d, m.mh, DATA(0), 100);
	r = VipPostSend(vi, d, m.mh);
	if (r == VIP_SUCCESS) {
		VT_EXPECT(VipSendWait(vi, 1000, &out), VIP_DESCRIPTOR_ERROR);
		VDT_CHECK(out == d);
		VDT_CHECK(d->CS.Status & VIP_STATUS_DONE);
		VDT_CHECK(d->CS.Status & VIP_STATUS_ERROR_MASK);
	} else {
		VT_EXPECT(r, VIP_INVALID_STATE);
	}
	VT_OK(VipDestroyVi(vi));
}

/* Post a bad receive: refused with VIP_INVALID_PARAMETER, or accepted and
 * completed at once with a format/protection error. */
static void expect_bad_recv(VIP_VI_HANDLE vi, VIP_DESCRIPTOR *d,
			    VIP_MEM_HANDLE mh, const char *what)
{
	VIP_DESCRIPTOR *out = NULL;
	int r = VipPostRecv(vi, d, mh);

	if (r == VIP_INVALID_PARAMETER)
		return;
	if (r != VIP_SUCCESS) {
		fprintf(stderr, "%s: VipPostRecv returned %s\n", what, vt_ret_str(r));
		exit(VDT_FAIL);
	}
	r = VipRecvWait(vi, 200, &out);
	if (r != VIP_DESCRIPTOR_ERROR || out != d ||
	    !(d->CS.Status & (VIP_STATUS_FORMAT_ERROR | VIP_STATUS_PROTECTION_ERROR))) {
		fprintf(stderr, "%s: accepted; then %s, status 0x%x\n", what,
			vt_ret_str(r), out == d ? d->CS.Status : 0);
		exit(VDT_FAIL);
	}
}

static void test_bad_descriptors(void)
{
	VIP_VI_HANDLE vi = new_vi(VIP_SERVICE_RELIABLE_DELIVERY);
	VIP_DESCRIPTOR *d = vt_desc_at(&m, 0), *loose;
	struct vt_mem small, other;
	VIP_VI_STATE st;
	VIP_VI_ATTRIBUTES va;
	VIP_BOOLEAN se, re;

	VT_EXPECT(VipPostRecv(vi, NULL, m.mh), VIP_INVALID_PARAMETER);
	VT_EXPECT(VipPostSend(vi, NULL, m.mh), VIP_INVALID_PARAMETER);
	vt_desc_recv(d, m.mh, DATA(0), 64);
	expect_bad_recv(vi, d, m.mh ^ 0x40000000u, "unknown descriptor handle");
	VT_OK(vt_mem_get(nic, 4096, NULL, &other));
	expect_bad_recv(vi, d, other.mh, "descriptor outside its handle's region");
	VDT_CHECK(posix_memalign((void **)&loose, 64, 256) == 0);
	vt_desc_recv(loose, m.mh, DATA(0), 64);
	expect_bad_recv(vi, loose, m.mh, "descriptor in unregistered memory");
	free(loose);
	d = (VIP_DESCRIPTOR *)((char *)vt_desc_at(&m, 1) + 32);
	vt_desc_recv(d, m.mh, DATA(0), 64);
	expect_bad_recv(vi, d, m.mh, "misaligned descriptor");
	/* The descriptor runs past the end of its region. */
	VT_OK(vt_mem_get(nic, 48, NULL, &small));
	d = small.p;
	vt_desc_recv(d, m.mh, DATA(0), 32);
	d->CS.SegCount = 2;
	vt_seg(d, 1)->Handle = m.mh;
	vt_seg(d, 1)->Data.Address = DATA(100);
	vt_seg(d, 1)->Length = 10;
	expect_bad_recv(vi, d, small.mh, "descriptor crossing its region's end");
	vt_mem_put(&small);
	d = vt_desc_at(&m, 2);
	vt_desc_recv(d, m.mh, DATA(0), 64);
	d->CS.SegCount = (VIP_UINT16)(na.MaxSegmentsPerDesc + 1);
	expect_bad_recv(vi, d, m.mh, "SegCount > MaxSegmentsPerDesc");
	for (unsigned bit = 0x10; bit <= 0x8000; bit <<= 1) {
		vt_desc_recv(d, m.mh, DATA(0), 64);
		d->CS.Control |= (VIP_UINT16)bit;
		expect_bad_recv(vi, d, m.mh, "reserved Control bit");
	}
	vt_desc_recv(d, m.mh, DATA(0), 64);
	d->CS.Control = VIP_CONTROL_OP_RESERVED;
	expect_bad_recv(vi, d, m.mh, "reserved opcode");
	vt_desc_recv(d, m.mh, DATA(0), 64);
	d->CS.Control = VIP_CONTROL_OP_RDMAWRITE;
	expect_bad_recv(vi, d, m.mh, "RDMA opcode on the receive queue");
	vt_mem_put(&other);
	/* Nothing bad is left on the queue; a good receive still posts. */
	VT_OK(VipQueryVi(vi, &st, &va, &se, &re));
	VDT_CHECK(re);
	vt_desc_recv(vt_desc_at(&m, 3), m.mh, DATA(0), 64);
	VT_OK(VipPostRecv(vi, vt_desc_at(&m, 3), m.mh));
	VT_OK(VipDestroyVi(vi));
}

/* After a region is deregistered its descriptors cannot be posted. */
static void test_deregistered(void)
{
	VIP_VI_HANDLE vi = new_vi(VIP_SERVICE_UNRELIABLE);
	struct vt_mem t;
	VIP_DESCRIPTOR *d;
	VIP_MEM_HANDLE mh;

	VT_OK(vt_mem_get(nic, 4096, NULL, &t));
	d = t.p;
	mh = t.mh;
	vt_desc_recv(d, mh, (char *)t.p + 1024, 64);
	VT_OK(VipDeregisterMem(nic, t.p, mh));
	expect_bad_recv(vi, d, mh, "descriptor in deregistered memory");
	free(t.p);
	VT_OK(VipDestroyVi(vi));
}

/* Many receives posted idle, then the VI destroyed: nothing leaks and the
 * queue depth limit is at least what clients use (200 under cLAN). */
static void test_deep_queue(void)
{
	VIP_VI_HANDLE vi = new_vi(VIP_SERVICE_RELIABLE_DELIVERY);
	struct vt_mem big;
	unsigned n = 512;

	VT_OK(vt_mem_get(nic, (size_t)n * VT_DESC_STRIDE + 4096, NULL, &big));
	for (unsigned i = 0; i < n; i++) {
		VIP_DESCRIPTOR *d = vt_desc_at(&big, i);

		vt_desc_recv(d, big.mh, (char *)big.p + (size_t)n * VT_DESC_STRIDE, 4096);
		VT_OK(VipPostRecv(vi, d, big.mh));
	}
	VT_OK(VipDestroyVi(vi));
	vt_mem_put(&big);
}

int main(void)
{
	alarm(60);
	VT_OK(VipOpenNic("/dev/via_lo", &nic));
	VT_OK(VipQueryNic(nic, &na));
	VT_OK(vt_mem_get(nic, 65536, NULL, &m));
	test_empty_queues();
	test_recv_idle();
	test_send_idle();
	test_bad_descriptors();
	test_deregistered();
	test_deep_queue();
	vt_mem_put(&m);
	VT_OK(VipCloseNic(nic));
	puts("ok");
	return 0;
}
