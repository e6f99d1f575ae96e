/* SPDX-License-Identifier: MIT */
/*
 * Name service of a one-node provider: every name that denotes this host
 * maps to the node's NIC address, and that address maps back to the short
 * host name.  "Denotes this host" is decided as getaddrinfo decides it:
 * aliases from /etc/hosts and the host's own IP addresses count, not only
 * its names.  Any other name or address is unknown (VIP_ERROR_NAMESERVICE).
 * Nothing here keeps state that connections depend on, so VipNSShutdown is
 * harmless.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "vipl/vipl_internal.h"

#define NAME_MAX_LEN 256

static const char *const g_local_names[] = {
	"", "localhost", "localhost.localdomain", "127.0.0.1", "::1",
	"ip6-localhost", "ip6-loopback",
};

/* The FQDN of this host, looked up once (may involve a resolver). */
static char g_fqdn[NAME_MAX_LEN];
static pthread_once_t g_fqdn_once = PTHREAD_ONCE_INIT;

static void nodename(char *buf, size_t room)
{
	struct utsname u;

	if (uname(&u) == 0)
		snprintf(buf, room, "%s", u.nodename);
	else
		snprintf(buf, room, "%s", "localhost");
}

static void short_name(char *buf, size_t room)
{
	nodename(buf, room);
	buf[strcspn(buf, ".")] = '\0';
}

static void fqdn_init(void)
{
	struct addrinfo hints, *res = NULL;
	char host[NAME_MAX_LEN];

	if (gethostname(host, sizeof(host)))
		return;
	host[sizeof(host) - 1] = '\0';
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = AI_CANONNAME;
	hints.ai_family = AF_UNSPEC;
	if (getaddrinfo(host, NULL, &hints, &res) == 0 && res) {
		if (res->ai_canonname)
			snprintf(g_fqdn, sizeof(g_fqdn), "%s", res->ai_canonname);
		freeaddrinfo(res);
	}
}

/* Host names compare without case and without one trailing dot. */
static bool same_name(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	if (la && a[la - 1] == '.')
		la--;
	if (lb && b[lb - 1] == '.')
		lb--;
	return la == lb && strncasecmp(a, b, la) == 0;
}

static bool is_loopback_literal(const char *name)
{
	struct in_addr a4;

	/* Any 127.0.0.0/8 address (Debian maps the host name to 127.0.1.1). */
	return inet_pton(AF_INET, name, &a4) == 1 &&
	       (ntohl(a4.s_addr) >> 24) == 127;
}

static bool same_ip(const struct sockaddr *a, const struct sockaddr *b)
{
	if (!a || !b || a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->sa_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			      &((const struct sockaddr_in6 *)b)->sin6_addr,
			      sizeof(struct in6_addr)) == 0;
	return false;
}

/* A loopback address, or one of an interface of this host. */
static bool address_is_local(const struct sockaddr *sa, const struct ifaddrs *ifs)
{
	if (sa->sa_family == AF_INET &&
	    (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127)
		return true;
	if (sa->sa_family == AF_INET6 &&
	    IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr))
		return true;
	for (const struct ifaddrs *i = ifs; i; i = i->ifa_next)
		if (same_ip(sa, i->ifa_addr))
			return true;
	return false;
}

/* Resolve as getaddrinfo does; true if an address it gives is this
 * host's.  A name of another host is logged: this provider reaches only
 * this one. */
static bool resolves_to_local(const char *name)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	struct ifaddrs *ifs = NULL;
	bool local = false;

	if (getaddrinfo(name, NULL, &hints, &res) != 0 || !res)
		return false;
	if (getifaddrs(&ifs) != 0)
		ifs = NULL;             /* loopback is still recognised */
	for (const struct addrinfo *r = res; r && !local; r = r->ai_next)
		local = r->ai_addr && address_is_local(r->ai_addr, ifs);
	if (!local)
		vd_log("name service: '%.200s' is another host; the %s provider "
		       "reaches this host only", name, "shm");
	freeifaddrs(ifs);
	freeaddrinfo(res);
	return local;
}

static bool name_is_local(const char *name)
{
	char buf[NAME_MAX_LEN];
	size_t i;

	for (i = 0; i < sizeof(g_local_names) / sizeof(g_local_names[0]); i++)
		if (same_name(name, g_local_names[i]))
			return true;
	if (is_loopback_literal(name))
		return true;
	nodename(buf, sizeof(buf));
	if (same_name(name, buf))
		return true;
	short_name(buf, sizeof(buf));
	if (same_name(name, buf))
		return true;
	if (gethostname(buf, sizeof(buf)) == 0) {
		buf[sizeof(buf) - 1] = '\0';
		if (same_name(name, buf))
			return true;
	}
	/* Last, as it may ask a resolver (once per process). */
	pthread_once(&g_fqdn_once, fqdn_init);
	if (g_fqdn[0] && same_name(name, g_fqdn))
		return true;
	return strnlen(name, NAME_MAX_LEN) < NAME_MAX_LEN && resolves_to_local(name);
}

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

	if (!nic || !Name || !VipAddress)
		return VIP_INVALID_PARAMETER;
	/* One node, one address: only index 0 exists. */
	if (NameIndex != 0 || !name_is_local(Name))
		return VIP_ERROR_NAMESERVICE;
	VipAddress->HostAddressLen = VD_NIC_ADDR_LEN;
	memcpy(VipAddress->HostAddress, nic->addr, VD_NIC_ADDR_LEN);
	return VIP_SUCCESS;
}

/* *NameLen: room in Name on input; the size needed (NUL included) on
 * output, also when the room was too small (VIP_INVALID_PARAMETER). */
VIP_RETURN VipNSGetHostByAddr(VIP_NIC_HANDLE NicHandle, VIP_NET_ADDRESS *VipAddress,
			      VIP_CHAR *Name, VIP_ULONG *NameLen)
{
	struct vd_nic *nic = vd_obj_lookup(NicHandle, VD_OBJ_NIC);
	char buf[NAME_MAX_LEN];
	size_t need;

	if (!nic || !VipAddress || !NameLen)
		return VIP_INVALID_PARAMETER;
	if (VipAddress->HostAddressLen != VD_NIC_ADDR_LEN ||
	    memcmp(VipAddress->HostAddress, nic->addr, VD_NIC_ADDR_LEN) != 0)
		return VIP_ERROR_NAMESERVICE;
	short_name(buf, sizeof(buf));
	need = strlen(buf) + 1;
	if (!Name || *NameLen < need) {
		*NameLen = need;
		return VIP_INVALID_PARAMETER;
	}
	memcpy(Name, buf, need);
	*NameLen = need;
	return VIP_SUCCESS;
}
