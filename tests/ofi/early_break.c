/* SPDX-License-Identifier: MIT */
/*
 * White-box: a connection break that arrives while an accepting VI is
 * still Idle -- the provider watches the connection before the core marks
 * the VI Connected -- must not be lost: the VI ends in Error and the error
 * handler is called.  (It was dropped, and a reliable-level receiver whose
 * peer broke the connection at once waited forever; shm's
 * test_vipl_xfer_rel hit it about every other run under TSan.)  The ofi
 * provider is used because its connection hooks need no live peer.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "vdtest.h"
#include "vipl/vipl_internal.h"

static atomic_int errors;
static _Atomic VIP_ERROR_CODE last;

static void on_error(VIP_PVOID ctx, VIP_ERROR_DESCRIPTOR *e)
{
	(void)ctx;
	atomic_store(&last, e->ErrorCode);
	atomic_fetch_add(&errors, 1);
}

int main(void)
{
	VIP_NIC_HANDLE nic;
	VIP_VI_HANDLE vh;
	VIP_VI_ATTRIBUTES va = { .ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY,
				 .MaxTransferSize = 4096 };
	VIP_VI_STATE st;
	VIP_VI_ATTRIBUTES qa;
	VIP_BOOLEAN sq, rq;
	struct vd_vi *vi;

	setenv("VIADUCT_JOB_KEY", "00112233445566778899aabbccddeeff", 1);
	setenv("VIADUCT_OFI_PROVIDER", "tcp", 1);
	VDT_SKIP_IF(VipOpenNic("ofi", &nic) != VIP_SUCCESS, "the ofi provider cannot open here");
	VDT_CHECK(VipErrorCallback(nic, NULL, on_error) == VIP_SUCCESS);
	VDT_CHECK(VipCreateVi(nic, &va, NULL, NULL, &vh) == VIP_SUCCESS);
	vi = vd_obj_lookup(vh, VD_OBJ_VI);
	VDT_CHECK(vi != NULL);

	vd_vi_conn_broken(vi, VIP_ERROR_CONN_LOST);     /* still Idle */
	vd_vi_connected(vi);                            /* the accept completes */

	VDT_CHECK(VipQueryVi(vh, &st, &qa, &sq, &rq) == VIP_SUCCESS);
	VDT_CHECK_EQ(st, VIP_STATE_ERROR);
	VDT_CHECK_EQ(atomic_load(&errors), 1);
	VDT_CHECK_EQ(atomic_load(&last), VIP_ERROR_CONN_LOST);
	VDT_CHECK(VipDisconnect(vh) == VIP_SUCCESS);
	VDT_CHECK(VipDestroyVi(vh) == VIP_SUCCESS);
	VDT_CHECK(VipCloseNic(nic) == VIP_SUCCESS);
	printf("ok: a break before Connected leaves the VI in Error, reported once\n");
	return 0;
}
