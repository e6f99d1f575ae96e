/* SPDX-License-Identifier: MIT */
/*
 * ofi provider: addresses -- the interface a NIC answers on, what it
 * reports of itself, and the name service (host names and IPv4
 * addresses through getaddrinfo).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prov/ofi/ofi.h"

/* VIADUCT_OFI_IFACE (a name or an IPv4 address), else the first IPv4
 * address of an interface that is up and not loopback, else 127.0.0.1. */
int vd_ofi_pick_iface(char *ip, size_t room, uint8_t host[VD_OFI_ADDR_LEN])
{
	const char *want = getenv("VIADUCT_OFI_IFACE");
	struct ifaddrs *ifs, *i;
	struct in_addr a;
	bool found = false;

	if (want && *want && inet_pton(AF_INET, want, &a) == 1)
		goto done;
	if (getifaddrs(&ifs))
		return -errno;
	for (i = ifs; i && !found; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP))
			continue;
		if (want && *want ? strcmp(i->ifa_name, want) != 0 :
		    (i->ifa_flags & IFF_LOOPBACK) != 0)
			continue;
		a = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
		found = true;
	}
	freeifaddrs(ifs);
	if (!found && want && *want) {
		fprintf(stderr, "viaduct: VIADUCT_OFI_IFACE=%s: no such IPv4 interface\n", want);
		return -ENODEV;
	}
	if (!found)
		inet_pton(AF_INET, "127.0.0.1", &a);
done:
	memcpy(host, &a, VD_OFI_ADDR_LEN);
	inet_ntop(AF_INET, &a, ip, (socklen_t)room);
	return 0;
}

void vd_ofi_query(struct vd_nic *nic, struct vd_prov_caps *c)
{
	struct vd_ofi_nic *on = vd_ofi_nic(nic);

	c->flags = VD_PROV_RDMA_READ | VD_PROV_RINGS;
	c->addr_len = VD_OFI_ADDR_LEN;
	c->max_discriminator = VD_OFI_MAX_DISC;
	c->inline_max = VD_OFI_EAGER_MAX;
	c->max_transfer = VD_MAX_TRANSFER;
	c->max_vi = 1024;
	c->max_cq = 1024;
	c->max_segs = VD_MAX_SEGS;
	c->reliability = VIP_SERVICE_UNRELIABLE | VIP_SERVICE_RELIABLE_DELIVERY |
			 VIP_SERVICE_RELIABLE_RECEPTION;
	snprintf(c->fabric, sizeof(c->fabric), "libfabric %.24s on %.24s",
		 on->info->fabric_attr->prov_name, on->iface_ip);
	/* A round trip over tcp takes 10-40 us, and a waiter that slept
	 * wakes through the fabric's epoll on a vCPU that may have been
	 * descheduled: a VipRecvWait ping-pong between two namespace hosts
	 * took 37-39 us with the 20 us spin, where VipRecvDone took 9-10.
	 * On fabrics with round trips of a few microseconds the budget is
	 * simply never reached. */
	c->spin_ns = VD_OFI_SPIN_NS;
}

int vd_ofi_node_address(struct vd_nic *nic, uint8_t *addr)
{
	memcpy(addr, vd_ofi_nic(nic)->host, VD_OFI_ADDR_LEN);
	return 0;
}

int vd_ofi_ns_lookup(struct vd_nic *nic, const char *name, unsigned index, uint8_t *addr)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL, *i;
	unsigned n = 0;
	int err = -ENXIO;

	if (getaddrinfo(name, NULL, &hints, &res))
		return -ENXIO;
	for (i = res; i; i = i->ai_next, n++) {
		if (n == index) {
			memcpy(addr, &((struct sockaddr_in *)i->ai_addr)->sin_addr, VD_OFI_ADDR_LEN);
			/* This host by its loopback name: the address peers
			 * reach it at. */
			if (addr[0] == 127)
				memcpy(addr, vd_ofi_nic(nic)->host, VD_OFI_ADDR_LEN);
			err = 0;
			break;
		}
	}
	freeaddrinfo(res);
	return err;
}

int vd_ofi_ns_reverse(struct vd_nic *nic, const uint8_t *addr, char *name,
		      size_t room, size_t *need)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char host[NI_MAXHOST];

	(void)nic;
	memcpy(&sa.sin_addr, addr, VD_OFI_ADDR_LEN);
	if (getnameinfo((struct sockaddr *)&sa, sizeof(sa), host, sizeof(host), NULL, 0,
			NI_NAMEREQD))
		return -ENXIO;
	*need = strlen(host) + 1;
	if (room < *need)
		return -ENOSPC;
	memcpy(name, host, *need);
	return 0;
}
