/* SPDX-License-Identifier: MIT */
/*
 * NIC handles: open/close/query, the node address, the asynchronous error
 * handler, system management info and the unsupported Giganet extras.
 *
 * Every device name is accepted and maps to the one provider (shm); the
 * same device may be opened any number of times per process, and each
 * open gets its own TPT, ptags, VIs and CQs.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "vipl/vipl_internal.h"

#define MAX_PTAGS 4096

/* ---- open / close ------------------------------------------------------------ */

/* Every VIADUCT_* value valid (the registry says what is wrong), and the
 * provider the device name or VIADUCT_PROVIDER selects. */
static int provider_pick(const char *device, const struct vd_prov_ops **ops,
			 char *spec, size_t room)
{
	int err = viaduct_params_check();

	if (err)
		return err;
	err = vd_prov_select(device, ops, spec, room);
	return err == -ENOENT ? -ENOTSUP : err;   /* VIP_ERROR_NOT_SUPPORTED */
}

static void nic_init_fields(struct vd_nic *nic, const char *device,
			    const struct vd_prov_ops *ops)
{
	uint64_t strict = 0;

	nic->ops = ops;
	nic->caps = &nic->caps_store;
	pthread_mutex_init(&nic->lock, NULL);
	vd_list_init(&nic->vis);
	vd_list_init(&nic->cqs);
	snprintf(nic->device, sizeof(nic->device), "%s", device);
	(void)viaduct_param_uint("VIADUCT_VIPL_STRICT_PTAG", 0, &strict);  /* checked */
	nic->strict_ptag = strict == 1;
}

/* Limits the core enforces whatever the provider says. */
static void caps_clamp(struct vd_prov_caps *c)
{
	if (c->addr_len > VD_ADDR_MAX)
		c->addr_len = VD_ADDR_MAX;
	if (!c->max_transfer || c->max_transfer > VD_MAX_TRANSFER)
		c->max_transfer = VD_MAX_TRANSFER;
	if (!c->max_segs || c->max_segs > VD_MAX_SEGS)
		c->max_segs = VD_MAX_SEGS;
}

/* Ask the open provider what it can do and where this node is. */
static int nic_learn(struct vd_nic *nic)
{
	memset(nic->caps, 0, sizeof(*nic->caps));
	nic->ops->query(nic, nic->caps);
	caps_clamp(nic->caps);
	if (!nic->caps->addr_len)
		return -EPROTO;
	return nic->ops->node_address(nic, nic->addr);
}

/* TPT, default ptag, provider; undone in reverse on failure. */
static int nic_start(struct vd_nic *nic, const char *spec)
{
	int err = vd_tpt_init(nic);

	if (err)
		return err;
	err = vd_ptag_create(nic, &nic->default_ptag);
	if (!err) {
		err = nic->ops->nic_open(nic, spec);
		if (!err) {
			err = nic_learn(nic);
			if (!err)
				return 0;
			nic->ops->nic_close(nic);
		}
		vd_ptag_destroy_all(nic);
	}
	vd_tpt_fini(nic);
	return err;
}

VIP_RETURN VipOpenNic(const VIP_CHAR *DeviceName, VIP_NIC_HANDLE *NicHandle)
{
	const struct vd_prov_ops *ops;
	struct vd_nic *nic;
	char spec[64];
	int err;

	if (!DeviceName || !NicHandle)
		return VIP_INVALID_PARAMETER;
	err = provider_pick(DeviceName, &ops, spec, sizeof(spec));
	if (err)
		return vd_ret(err);
	nic = vd_obj_new(VD_OBJ_NIC, sizeof(*nic));
	if (!nic)
		return VIP_ERROR_RESOURCE;
	nic_init_fields(nic, DeviceName, ops);
	err = nic_start(nic, spec);
	if (err) {
		/* A provider that was asked for by name says why it failed. */
		if (ops != vd_prov_default())
			fprintf(stderr, "viaduct: VipOpenNic(%s): provider %s: %s\n",
				DeviceName, ops->name, strerror(-err));
		vd_log("VipOpenNic(%s): %s", DeviceName, strerror(-err));
		pthread_mutex_destroy(&nic->lock);
		vd_obj_free(nic);
		return vd_ret(err);
	}
	*NicHandle = vd_obj_handle(nic);
	return VIP_SUCCESS;
}

/* Lenient: whatever the application left open goes with the NIC. */
VIP_RETURN VipCloseNic(VIP_NIC_HANDLE NicHandle)
{
	struct vd_nic *nic = vd_obj_lookup(NicHandle, VD_OBJ_NIC);

	if (!nic)
		return VIP_INVALID_PARAMETER;
	vd_vi_destroy_all(nic);
	vd_cq_destroy_all(nic);
	vd_tpt_release_all(nic);        /* needs ops->mr_quiesce: before close */
	nic->ops->nic_close(nic);
	vd_ptag_destroy_all(nic);
	nic->default_ptag = NULL;
	vd_tpt_fini(nic);
	pthread_mutex_destroy(&nic->lock);
	vd_obj_free(nic);
	return VIP_SUCCESS;
}

/* ---- query -------------------------------------------------------------------- */

static bool have_cap_ipc_lock(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data))
		return false;
	return data[CAP_IPC_LOCK / 32].effective & (1u << (CAP_IPC_LOCK % 32));
}

/* What mlock may pin now: RLIMIT_MEMLOCK, unbounded with CAP_IPC_LOCK. */
static VIP_ULONG max_register_bytes(void)
{
	struct rlimit rl;

	if (have_cap_ipc_lock())
		return ULONG_MAX;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return ULONG_MAX;
	return (VIP_ULONG)rl.rlim_cur;
}

VIP_RETURN VipQueryNic(VIP_NIC_HANDLE NicHandle, VIP_NIC_ATTRIBUTES *a)
{
	struct vd_nic *nic = vd_obj_lookup(NicHandle, VD_OBJ_NIC);

	if (!nic || !a)
		return VIP_INVALID_PARAMETER;
	memset(a, 0, sizeof(*a));
	snprintf(a->Name, sizeof(a->Name), "viaduct-%s", nic->ops->name);
	a->HardwareVersion = 0;
	a->ProviderVersion = VIADUCT_VERSION_MAJOR << 16 |
			     VIADUCT_VERSION_MINOR << 8 | VIADUCT_VERSION_PATCH;
	a->NicAddressLen = nic->caps->addr_len;
	a->LocalNicAddress = nic->addr;   /* valid while the NIC is open */
	a->ThreadSafe = VIP_TRUE;
	a->MaxDiscriminatorLen = (VIP_UINT16)nic->caps->max_discriminator;
	a->MaxRegisterBytes = max_register_bytes();
	a->MaxRegisterRegions = VD_TPT_MAX - 1;
	a->MaxRegisterBlockBytes = a->MaxRegisterBytes;
	a->MaxVI = nic->caps->max_vi;
	a->MaxDescriptorsPerQueue = VD_MAX_QUEUE_DESC;
	a->MaxSegmentsPerDesc = nic->caps->max_segs;
	a->MaxCQ = nic->caps->max_cq;
	a->MaxCQEntries = VD_MAX_CQ_ENTRIES;
	a->MaxTransferSize = nic->caps->max_transfer;
	a->NativeMTU = nic->caps->max_transfer;
	a->MaxPtags = MAX_PTAGS;
	a->ReliabilityLevelSupport = nic->caps->reliability;
	a->RDMAReadSupport = nic->caps->flags & VD_PROV_RDMA_READ ?
		a->ReliabilityLevelSupport : 0;
	return VIP_SUCCESS;
}

/* ---- asynchronous errors -------------------------------------------------------- */

VIP_RETURN VipErrorCallback(VIP_NIC_HANDLE NicHandle, VIP_PVOID Context,
			    void (*Handler)(VIP_PVOID, VIP_ERROR_DESCRIPTOR *))
{
	struct vd_nic *nic = vd_obj_lookup(NicHandle, VD_OBJ_NIC);

	if (!nic)
		return VIP_INVALID_PARAMETER;
	pthread_mutex_lock(&nic->lock);
	nic->err_handler = Handler;      /* NULL removes it */
	nic->err_ctx = Context;
	pthread_mutex_unlock(&nic->lock);
	return VIP_SUCCESS;
}

void vd_async_error(struct vd_nic *nic, struct vd_vi *vi, struct vd_cq *cq,
		    VIP_DESCRIPTOR *desc, VIP_RESOURCE_CODE res, VIP_ERROR_CODE code)
{
	VIP_ERROR_DESCRIPTOR ed;
	VIP_ERROR_HANDLER fn;
	void *ctx;

	if (!nic)
		nic = vi ? vi->nic : cq ? cq->nic : NULL;
	if (!nic)
		return;
	memset(&ed, 0, sizeof(ed));
	ed.NicHandle = vd_obj_handle(nic);
	ed.ViHandle = vi ? vd_obj_handle(vi) : NULL;
	ed.CQHandle = cq ? vd_obj_handle(cq) : NULL;
	ed.DescriptorPtr = desc;
	ed.OpCode = 0;
	ed.ResourceCode = res;
	ed.ErrorCode = code;
	pthread_mutex_lock(&nic->lock);
	fn = nic->err_handler;
	ctx = nic->err_ctx;
	pthread_mutex_unlock(&nic->lock);
	/* Called without the lock: the handler may call back into VIPL. */
	if (fn)
		fn(ctx, &ed);
	else
		vd_log("async error %d (resource %d) on nic %s vi %p cq %p desc %p",
		       (int)code, (int)res, nic->device, ed.ViHandle,
		       ed.CQHandle, (void *)desc);
}

/* ---- system management ----------------------------------------------------------- */

/* Autodiscovery on a one-node provider: this node, when the caller gave
 * room for an address in ADAddrArray[0]. */
VIP_RETURN VipQuerySystemManagementInfo(VIP_NIC_HANDLE NicHandle,
					VIP_ULONG InfoType, VIP_PVOID SysManInfo)
{
	struct vd_nic *nic = vd_obj_lookup(NicHandle, VD_OBJ_NIC);
	VIP_AUTODISCOVERY_LIST *l = SysManInfo;
	VIP_NET_ADDRESS *a;

	if (!nic || !SysManInfo)
		return VIP_INVALID_PARAMETER;
	if (InfoType != VIP_SMI_AUTODISCOVERY)
		return VIP_ERROR_NOT_SUPPORTED;
	l->NumberOfHops = 0;
	l->NumAdAddrs = 0;
	if (l->ADAddrArray && l->ADAddrArray[0]) {
		a = l->ADAddrArray[0];
		a->HostAddressLen = (VIP_UINT16)nic->caps->addr_len;
		a->DiscriminatorLen = 0;
		memcpy(a->HostAddress, nic->addr, nic->caps->addr_len);
		l->NumAdAddrs = 1;
	}
	return VIP_SUCCESS;
}

/* ---- Giganet extras: not supported (after checking the handle) ------------------ */

VIP_RETURN VipAddTagCQ(VIP_CQ_HANDLE CQHandle, VIP_EVENT_HANDLE *Event,
		       VIP_ULONG Tag, VIP_ULONG Priority)
{
	(void)Event, (void)Tag, (void)Priority;
	if (!vd_obj_lookup(CQHandle, VD_OBJ_CQ))
		return VIP_INVALID_PARAMETER;
	return VIP_ERROR_NOT_SUPPORTED;
}

VIP_RETURN VipRemoveTagCQ(VIP_CQ_HANDLE CQHandle, VIP_EVENT_HANDLE Event,
			  VIP_ULONG Tag)
{
	(void)Event, (void)Tag;
	if (!vd_obj_lookup(CQHandle, VD_OBJ_CQ))
		return VIP_INVALID_PARAMETER;
	return VIP_ERROR_NOT_SUPPORTED;
}

VIP_RETURN VipPostDeferredSends(VIP_VI_HANDLE ViHandle, VIP_BOOLEAN EnableInterrupt,
				VIP_BOOLEAN *SendsDeferred)
{
	(void)EnableInterrupt, (void)SendsDeferred;
	if (!vd_obj_lookup(ViHandle, VD_OBJ_VI))
		return VIP_INVALID_PARAMETER;
	return VIP_ERROR_NOT_SUPPORTED;
}

bool vd_nic_reserve(struct vd_nic *nic, uint32_t *count, uint32_t max)
{
	bool ok;

	pthread_mutex_lock(&nic->lock);
	ok = *count < max;
	if (ok)
		(*count)++;
	pthread_mutex_unlock(&nic->lock);
	return ok;
}

void vd_nic_unreserve(struct vd_nic *nic, uint32_t *count)
{
	pthread_mutex_lock(&nic->lock);
	(*count)--;
	pthread_mutex_unlock(&nic->lock);
}
