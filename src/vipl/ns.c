/* SPDX-License-Identifier: MIT */
/*
 * Name service API: host names and addresses are the provider's business
 * (ns_lookup / ns_reverse in prov.h); this file checks arguments and
 * keeps the VIPL calling conventions.  Nothing here keeps state that
 * connections depend on, so VipNSShutdown is harmless.
 */
#include <errno.h>
#include <string.h>

#include "vipl/vipl_internal.h"

#define NAME_MAX_LEN 256

VIP_RETURN VipNSInit(VIP_NIC_HANDLE NicHandle, VIP_PVOID NSInitInfo)
{
	(void)NSInitInfo;   /* no configuration: NULL and anything else ok */
	if (!vd_obj_lookup(NicHandle, VD_OBJ_NIC))
		return VIP_INVALID_PARAMETER;
	return VIP_SUCCESS;
}

VIP_RETURN VipNSShutdown(VIP_NIC_HANDLE NicHandle)
{
	if (!vd_obj_lookup(NicHandle, VD_OBJ_NIC))
		return VIP_INVALID_PARAMETER;
	return VIP_SUCCESS;
}

/* Writes the host part only: clients append their discriminator and set
 * DiscriminatorLen themselves, so that field is left alone. */
VIP_RETURN VipNSGetHostByName(VIP_NIC_HANDLE NicHandle, VIP_CHAR *Name,
			      VIP_NET_ADDRESS *VipAddress, VIP_ULONG NameIndex)
{
	struct vd_nic *nic = vd_obj_lookup(NicHandle, VD_OBJ_NIC);
	int err;

	if (!nic || !Name || !VipAddress)
		return VIP_INVALID_PARAMETER;
	if (NameIndex > 0xffff || strnlen(Name, NAME_MAX_LEN) >= NAME_MAX_LEN)
		return VIP_ERROR_NAMESERVICE;
	err = nic->ops->ns_lookup(nic, Name, (unsigned)NameIndex, VipAddress->HostAddress);
	if (err)
		return VIP_ERROR_NAMESERVICE;
	VipAddress->HostAddressLen = (VIP_UINT16)nic->caps->addr_len;
	return VIP_SUCCESS;
}

/* *NameLen: room in Name on input; the size needed (NUL included) on
 * output, also when the room was too small (VIP_INVALID_PARAMETER). */
VIP_RETURN VipNSGetHostByAddr(VIP_NIC_HANDLE NicHandle, VIP_NET_ADDRESS *VipAddress,
			      VIP_CHAR *Name, VIP_ULONG *NameLen)
{
	struct vd_nic *nic = vd_obj_lookup(NicHandle, VD_OBJ_NIC);
	char buf[NAME_MAX_LEN];
	size_t need = 0;
	int err;

	if (!nic || !VipAddress || !NameLen)
		return VIP_INVALID_PARAMETER;
	if (VipAddress->HostAddressLen != nic->caps->addr_len)
		return VIP_ERROR_NAMESERVICE;
	err = nic->ops->ns_reverse(nic, VipAddress->HostAddress, buf, sizeof(buf), &need);
	if (err)
		return VIP_ERROR_NAMESERVICE;
	if (!Name || *NameLen < need) {
		*NameLen = need;
		return VIP_INVALID_PARAMETER;
	}
	memcpy(Name, buf, need);
	*NameLen = need;
	return VIP_SUCCESS;
}
