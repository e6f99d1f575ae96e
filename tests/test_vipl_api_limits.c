/* SPDX-License-Identifier: MIT */
/*
 * VIPL API, one process: the limits VipQueryNic reports are the limits
 * that hold.  MaxCQ completion queues and MaxVI VIs can be made on one
 * NIC, one more of either is VIP_ERROR_RESOURCE, and destroying one makes
 * room again.  (Before, 19993 CQs and 200000 VIs were made against a
 * reported 4096 and 65536.)  A second NIC has limits of its own.
 */
#include "viptest.h"

#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

static VIP_NIC_HANDLE nic;
static VIP_NIC_ATTRIBUTES na;

/* Every CQ keeps a memfd: MaxCQ of them need that many descriptors. */
static void raise_fd_limit(rlim_t need)
{
	struct rlimit rl;

	VDT_CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
	if (rl.rlim_cur < need && rl.rlim_max >= need)
		rl.rlim_cur = need;
	else if (rl.rlim_cur < need)
		rl.rlim_cur = rl.rlim_max;
	VDT_CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	VDT_SKIP_IF(rl.rlim_cur < need, "RLIMIT_NOFILE too low for MaxCQ completion queues");
}

static void test_max_cq(void)
{
	VIP_CQ_HANDLE *cq = calloc(na.MaxCQ + 1, sizeof(*cq)), other;
	VIP_NIC_HANDLE nic2;

	VDT_CHECK(cq != NULL);
	for (VIP_ULONG i = 0; i < na.MaxCQ; i++)
		VT_OK(VipCreateCQ(nic, 1, &cq[i]));
	VT_EXPECT(VipCreateCQ(nic, 1, &cq[na.MaxCQ]), VIP_ERROR_RESOURCE);
	VT_OK(VipOpenNic("/dev/via_lo", &nic2));        /* a NIC of its own */
	VT_OK(VipCreateCQ(nic2, 1, &other));
	VT_OK(VipDestroyCQ(other));
	VT_OK(VipCloseNic(nic2));
	VT_OK(VipDestroyCQ(cq[7]));
	VT_OK(VipCreateCQ(nic, 1, &cq[7]));
	VT_EXPECT(VipCreateCQ(nic, 1, &cq[na.MaxCQ]), VIP_ERROR_RESOURCE);
	for (VIP_ULONG i = 0; i < na.MaxCQ; i++)
		VT_OK(VipDestroyCQ(cq[i]));
	free(cq);
}

static void test_max_vi(void)
{
	VIP_VI_HANDLE *vi = calloc(na.MaxVI + 1, sizeof(*vi));
	VIP_VI_ATTRIBUTES va = vt_vi_attrs(nic, VIP_SERVICE_RELIABLE_DELIVERY);

	VDT_CHECK(vi != NULL);
	for (VIP_ULONG i = 0; i < na.MaxVI; i++)
		VT_OK(VipCreateVi(nic, &va, NULL, NULL, &vi[i]));
	VT_EXPECT(VipCreateVi(nic, &va, NULL, NULL, &vi[na.MaxVI]), VIP_ERROR_RESOURCE);
	VT_OK(VipDestroyVi(vi[3]));
	VT_OK(VipCreateVi(nic, &va, NULL, NULL, &vi[3]));
	VT_EXPECT(VipCreateVi(nic, &va, NULL, NULL, &vi[na.MaxVI]), VIP_ERROR_RESOURCE);
	for (VIP_ULONG i = 0; i < na.MaxVI; i++)
		VT_OK(VipDestroyVi(vi[i]));
	free(vi);
}

int main(void)
{
	alarm(120);
	VT_OK(VipOpenNic("/dev/via_lo", &nic));
	VT_OK(VipQueryNic(nic, &na));
	VDT_CHECK(na.MaxCQ > 0 && na.MaxCQ <= 1u << 20);
	VDT_CHECK(na.MaxVI > 0 && na.MaxVI <= 1u << 20);
	raise_fd_limit((rlim_t)na.MaxCQ + 64);
	test_max_cq();
	test_max_vi();
	VT_OK(VipCloseNic(nic));
	puts("ok");
	return 0;
}
