/* SPDX-License-Identifier: MIT */
/*
 * VIPL API, one process: VI creation and attributes, invalid handles for
 * every VI-taking function, Giganet user data, viaduct extensions.
 */
#include "viptest.h"

#include <string.h>
#include <unistd.h>

static VIP_NIC_HANDLE nic;
static VIP_NIC_ATTRIBUTES na;

static void test_create_errors(void)
{
	static const VIP_USHORT bad_levels[] = {
		0, 3, 5, 6, 7, 8, 0x10, VIP_SERVICE_ACK,
		VIP_SERVICE_DFC | VIP_SERVICE_RELIABLE_DELIVERY,
	};
	VIP_VI_ATTRIBUTES va = vt_vi_attrs(nic, VIP_SERVICE_RELIABLE_DELIVERY);
	VIP_NIC_HANDLE other;
	VIP_PROTECTION_HANDLE foreign;
	VIP_CQ_HANDLE foreign_cq;
	VIP_VI_HANDLE vi;
	int r;

	VT_EXPECT(VipCreateVi(nic, NULL, NULL, NULL, &vi), VIP_INVALID_PARAMETER);
	VT_EXPECT(VipCreateVi(nic, &va, NULL, NULL, NULL), VIP_INVALID_PARAMETER);
	for (size_t i = 0; i < sizeof(bad_levels) / sizeof(bad_levels[0]); i++) {
		va.ReliabilityLevel = bad_levels[i];
		VT_EXPECT(VipCreateVi(nic, &va, NULL, NULL, &vi),
			  VIP_INVALID_RELIABILITY_LEVEL);
	}
	va.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
	va.MaxTransferSize = na.MaxTransferSize + 1;
	VT_EXPECT(VipCreateVi(nic, &va, NULL, NULL, &vi), VIP_INVALID_MTU);
	va.MaxTransferSize = na.MaxTransferSize;
	va.Ptag = (void *)0x1234;
	r = VipCreateVi(nic, &va, NULL, NULL, &vi);
	VDT_CHECK(r == VIP_INVALID_PTAG || r == VIP_INVALID_PARAMETER);
	VT_OK(VipOpenNic("/dev/via_lo", &other));
	VT_OK(VipCreatePtag(other, &foreign));
	VT_OK(VipCreateCQ(other, 16, &foreign_cq));
	va.Ptag = foreign;
	r = VipCreateVi(nic, &va, NULL, NULL, &vi);
	VDT_CHECK(r == VIP_INVALID_PTAG || r == VIP_INVALID_PARAMETER);
	va.Ptag = NULL;
	/* CQs must be live CQs of the same NIC handle. */
	VT_EXPECT(VipCreateVi(nic, &va, foreign_cq, NULL, &vi), VIP_INVALID_PARAMETER);
	VT_EXPECT(VipCreateVi(nic, &va, NULL, foreign_cq, &vi), VIP_INVALID_PARAMETER);
	VT_EXPECT(VipCreateVi(nic, &va, (void *)0x1234, NULL, &vi), VIP_INVALID_PARAMETER);
	VT_EXPECT(VipCreateVi(nic, &va, NULL, nic, &vi), VIP_INVALID_PARAMETER);
	VT_OK(VipCloseNic(other));
}

/* All three levels work; RDMA read only where RDMAReadSupport says so. */
static void test_create_levels(void)
{
	static const VIP_USHORT levels[] = {
		VIP_SERVICE_UNRELIABLE, VIP_SERVICE_RELIABLE_DELIVERY,
		VIP_SERVICE_RELIABLE_RECEPTION,
	};

	for (int i = 0; i < 3; i++) {
		VIP_VI_ATTRIBUTES va = vt_vi_attrs(nic, levels[i]);
		VIP_VI_HANDLE vi;
		int r = VipCreateVi(nic, &va, NULL, NULL, &vi);

		if (na.RDMAReadSupport & levels[i]) {
			VT_OK(r);
			VT_OK(VipDestroyVi(vi));
		} else {
			VT_EXPECT(r, VIP_INVALID_RDMAREAD);
		}
		va.EnableRdmaRead = VIP_FALSE;
		VT_OK(VipCreateVi(nic, &va, NULL, NULL, &vi));
		VT_OK(VipDestroyVi(vi));
	}
}

static void test_query_set(void)
{
	VIP_VI_ATTRIBUTES va = vt_vi_attrs(nic, VIP_SERVICE_RELIABLE_RECEPTION), q;
	VIP_PROTECTION_HANDLE p;
	VIP_VI_HANDLE vi;
	VIP_VI_STATE st = (VIP_VI_STATE)77;
	VIP_BOOLEAN se = 5, re = 5;
	int r;

	VT_OK(VipCreatePtag(nic, &p));
	va.Ptag = p;
	va.MaxTransferSize = 32768;
	va.EnableRdmaRead = VIP_FALSE;
	VT_OK(VipCreateVi(nic, &va, NULL, NULL, &vi));
	memset(&q, 0x5a, sizeof(q));
	VT_OK(VipQueryVi(vi, &st, &q, &se, &re));
	VDT_CHECK_EQ(st, VIP_STATE_IDLE);
	VDT_CHECK_EQ(se, VIP_TRUE);
	VDT_CHECK_EQ(re, VIP_TRUE);
	VDT_CHECK_EQ(q.ReliabilityLevel, VIP_SERVICE_RELIABLE_RECEPTION);
	VDT_CHECK_EQ(q.MaxTransferSize, 32768);
	VDT_CHECK(q.Ptag == p);
	VDT_CHECK(q.EnableRdmaWrite && !q.EnableRdmaRead);
	/* A NULL output: refused or skipped, never a crash. */
	r = VipQueryVi(vi, NULL, &q, &se, &re);
	VDT_CHECK(r == VIP_INVALID_PARAMETER || r == VIP_SUCCESS);

	/* Idle VIs may change every attribute (a server retries Accept). */
	va.ReliabilityLevel = VIP_SERVICE_UNRELIABLE;
	va.EnableRdmaWrite = VIP_FALSE;
	va.MaxTransferSize = 4096;
	va.Ptag = NULL;
	VT_OK(VipSetViAttributes(vi, &va));
	VT_OK(VipQueryVi(vi, &st, &q, &se, &re));
	VDT_CHECK_EQ(q.ReliabilityLevel, VIP_SERVICE_UNRELIABLE);
	VDT_CHECK_EQ(q.MaxTransferSize, 4096);
	VDT_CHECK(q.Ptag == NULL && !q.EnableRdmaWrite);
	VT_EXPECT(VipSetViAttributes(vi, NULL), VIP_INVALID_PARAMETER);
	va.ReliabilityLevel = 3;
	VT_EXPECT(VipSetViAttributes(vi, &va), VIP_INVALID_RELIABILITY_LEVEL);
	va.ReliabilityLevel = VIP_SERVICE_UNRELIABLE;
	va.MaxTransferSize = na.MaxTransferSize + 1;
	VT_EXPECT(VipSetViAttributes(vi, &va), VIP_INVALID_MTU);
	VT_OK(VipQueryVi(vi, &st, &q, &se, &re));
	VDT_CHECK_EQ(q.ReliabilityLevel, VIP_SERVICE_UNRELIABLE);
	VDT_CHECK_EQ(q.MaxTransferSize, 4096);
	/* A ptag in use by a VI cannot be destroyed. */
	va.MaxTransferSize = 4096;
	va.Ptag = p;
	VT_OK(VipSetViAttributes(vi, &va));
	VDT_CHECK(VipDestroyPtag(nic, p) != VIP_SUCCESS);
	VT_OK(VipDestroyVi(vi));
	VT_OK(VipDestroyPtag(nic, p));
}

static void cb_vi(VIP_PVOID c, VIP_NIC_HANDLE n, VIP_VI_HANDLE v, VIP_DESCRIPTOR *d)
{
	(void)c, (void)n, (void)v, (void)d;
	fprintf(stderr, "notify handler ran for a bad VI handle\n");
	_exit(VDT_FAIL);
}

/* Every VI-taking function with one bad handle. */
static void bad_vi_calls(VIP_VI_HANDLE v, struct vt_mem *m)
{
	const int R = VIP_INVALID_PARAMETER;
	VIP_VI_ATTRIBUTES va = vt_vi_attrs(nic, VIP_SERVICE_RELIABLE_DELIVERY);
	VIP_VI_STATE st;
	VIP_BOOLEAN se, re;
	VIP_DESCRIPTOR *d = vt_desc_at(m, 0), *out = (void *)0x77;
	VIP_NET_ADDRESS *a = vt_addr(nic, "badvi");
	struct viaduct_vi_ext ext = { 0, 0 };
	struct viaduct_vi_stats stats;
	int r;

	vt_desc_recv(d, m->mh, (char *)m->p + 4096, 64);
	VT_EXPECT(VipDestroyVi(v), R);
	VT_EXPECT(VipQueryVi(v, &st, &va, &se, &re), R);
	VT_EXPECT(VipSetViAttributes(v, &va), R);
	VT_EXPECT(VipPostSend(v, d, m->mh), R);
	VT_EXPECT(VipSendDone(v, &out), R);
	VT_EXPECT(VipSendWait(v, 0, &out), R);
	VT_EXPECT(VipSendWait(v, 10, &out), R);
	VT_EXPECT(VipSendNotify(v, NULL, cb_vi), R);
	VT_EXPECT(VipPostRecv(v, d, m->mh), R);
	VT_EXPECT(VipRecvDone(v, &out), R);
	VT_EXPECT(VipRecvWait(v, 10, &out), R);
	VT_EXPECT(VipRecvNotify(v, NULL, cb_vi), R);
	VT_EXPECT(VipConnectRequest(v, a, a, 10, &va), R);
	VT_EXPECT(VipDisconnect(v), R);
	VT_EXPECT(VipConnectPeerRequest(v, a, a, 10), R);
	VT_EXPECT(VipConnectPeerDone(v, &va), R);
	VT_EXPECT(VipConnectPeerWait(v, &va), R);
	VT_EXPECT(viaduct_vi_set_ext(v, &ext), R);
	VT_EXPECT(viaduct_vi_get_ext(v, &ext), R);
	VT_EXPECT(viaduct_vi_get_stats(v, &stats), R);
	VDT_CHECK(VipGetUserData(v) == NULL);
	VipSetUserData(v, (void *)0x99);
	r = VipPostDeferredSends(v, VIP_FALSE, &se);
	VDT_CHECK(r == R || r == VIP_ERROR_NOT_SUPPORTED);
	free(a);
}

static void test_bad_handles(void)
{
	VIP_VI_ATTRIBUTES va = vt_vi_attrs(nic, VIP_SERVICE_RELIABLE_DELIVERY);
	VIP_VI_HANDLE dead, live;
	VIP_CQ_HANDLE cq;
	VIP_PROTECTION_HANDLE p;
	struct vt_mem m;

	VT_OK(vt_mem_get(nic, 8192, NULL, &m));
	VT_OK(VipCreateVi(nic, &va, NULL, NULL, &dead));
	VT_OK(VipDestroyVi(dead));
	VT_OK(VipCreateVi(nic, &va, NULL, NULL, &live));
	VT_OK(VipCreateCQ(nic, 16, &cq));
	VT_OK(VipCreatePtag(nic, &p));
	bad_vi_calls(NULL, &m);
	bad_vi_calls((void *)0x1234, &m);
	bad_vi_calls((void *)-1L, &m);
	bad_vi_calls(dead, &m);
	bad_vi_calls(nic, &m);
	bad_vi_calls(cq, &m);
	bad_vi_calls(p, &m);
	/* The live VI was not disturbed by any of that. */
	{
		VIP_VI_STATE st;
		VIP_BOOLEAN se, re;

		VT_OK(VipQueryVi(live, &st, &va, &se, &re));
		VDT_CHECK(st == VIP_STATE_IDLE && se && re);
	}
	VT_OK(VipDestroyVi(live));
	VT_OK(VipDestroyCQ(cq));
	VT_OK(VipDestroyPtag(nic, p));
	vt_mem_put(&m);
}

static void test_user_data(void)
{
	VIP_VI_ATTRIBUTES va = vt_vi_attrs(nic, VIP_SERVICE_RELIABLE_DELIVERY);
	VIP_VI_HANDLE a, b;
	int x;

	VT_OK(VipCreateVi(nic, &va, NULL, NULL, &a));
	VT_OK(VipCreateVi(nic, &va, NULL, NULL, &b));
	VDT_CHECK(VipGetUserData(a) == NULL);
	VipSetUserData(a, &x);
	VipSetUserData(b, (void *)0x42);
	VDT_CHECK(VipGetUserData(a) == &x);
	VDT_CHECK(VipGetUserData(b) == (void *)0x42);
	VipSetUserData(a, NULL);
	VDT_CHECK(VipGetUserData(a) == NULL);
	VT_OK(VipDestroyVi(a));
	VT_OK(VipDestroyVi(b));
	VDT_CHECK(VipGetUserData(b) == NULL);
}

static void test_ext(void)
{
	VIP_VI_ATTRIBUTES va = vt_vi_attrs(nic, VIP_SERVICE_RELIABLE_DELIVERY);
	struct viaduct_vi_ext e = { 0xdead, 0xbeef }, bad;
	struct viaduct_vi_stats s;
	VIP_VI_HANDLE vi;

	VT_OK(VipCreateVi(nic, &va, NULL, NULL, &vi));
	VT_OK(viaduct_vi_get_ext(vi, &e));
	VDT_CHECK_EQ(e.flags, 0);
	VDT_CHECK_EQ(e.xfer_mode, VIADUCT_XFER_AUTO);
	for (unsigned f = 0; f <= VIADUCT_VI_FLAGS_ALL; f++)
		for (unsigned mode = 0; mode <= VIADUCT_XFER_DMA; mode++) {
			e.flags = f;
			e.xfer_mode = mode;
			VT_OK(viaduct_vi_set_ext(vi, &e));
			memset(&e, 0xff, sizeof(e));
			VT_OK(viaduct_vi_get_ext(vi, &e));
			VDT_CHECK(e.flags == f && e.xfer_mode == mode);
		}
	bad.flags = VIADUCT_VI_FLAGS_ALL + 1;
	bad.xfer_mode = 0;
	VT_EXPECT(viaduct_vi_set_ext(vi, &bad), VIP_INVALID_PARAMETER);
	bad.flags = 0x80000000u;
	VT_EXPECT(viaduct_vi_set_ext(vi, &bad), VIP_INVALID_PARAMETER);
	bad.flags = 0;
	bad.xfer_mode = VIADUCT_XFER_DMA + 1;
	VT_EXPECT(viaduct_vi_set_ext(vi, &bad), VIP_INVALID_PARAMETER);
	VT_EXPECT(viaduct_vi_set_ext(vi, NULL), VIP_INVALID_PARAMETER);
	VT_EXPECT(viaduct_vi_get_ext(vi, NULL), VIP_INVALID_PARAMETER);
	/* A refused set changes nothing. */
	VT_OK(viaduct_vi_get_ext(vi, &e));
	VDT_CHECK(e.flags == VIADUCT_VI_FLAGS_ALL && e.xfer_mode == VIADUCT_XFER_DMA);
	memset(&s, 0xff, sizeof(s));
	VT_OK(viaduct_vi_get_stats(vi, &s));
	VDT_CHECK(s.sends == 0 && s.recvs == 0 && s.send_bytes == 0 &&
		  s.rdma_writes == 0 && s.protection_errors == 0);
	VT_EXPECT(viaduct_vi_get_stats(vi, NULL), VIP_INVALID_PARAMETER);
	VT_OK(VipDestroyVi(vi));
}

/* Many VIs at once, destroyed in a scrambled order. */
static void test_many(void)
{
	enum { N = 200 };
	VIP_VI_ATTRIBUTES va = vt_vi_attrs(nic, VIP_SERVICE_RELIABLE_DELIVERY);
	static VIP_VI_HANDLE v[N];

	if (na.MaxVI < N)
		return;
	for (int i = 0; i < N; i++)
		VT_OK(VipCreateVi(nic, &va, NULL, NULL, &v[i]));
	for (int i = 0; i < N; i++)
		VT_OK(VipDestroyVi(v[(i * 7) % N]));
	for (int i = 0; i < N; i++)
		VT_EXPECT(VipDestroyVi(v[i]), VIP_INVALID_PARAMETER);
}

int main(void)
{
	alarm(60);
	VT_OK(VipOpenNic("/dev/via_lo", &nic));
	VT_OK(VipQueryNic(nic, &na));
	test_create_errors();
	test_create_levels();
	test_query_set();
	test_bad_handles();
	test_user_data();
	test_ext();
	test_many();
	VT_OK(VipCloseNic(nic));
	puts("ok");
	return 0;
}
