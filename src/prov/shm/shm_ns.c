/* SPDX-License-Identifier: MIT */
/*
 * The shm provider's node address and name service (one node).
 *
 * Node address: the same 6 bytes in every process of the machine, hashed
 * from /etc/machine-id (or the host name).
 *
 * Name service: every name that denotes this host maps to the node
 * address, and that address maps back to the short host name.  "Denotes
 * this host" is decided as getaddrinfo decides it: aliases from
 * /etc/hosts and the host's own IP addresses count, not only its names.
 * Any other name or address is unknown (-ENXIO).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "prov/shm/shm.h"

/* ---- node address ------------------------------------------------------------ */

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;

	while (n--) {
		h ^= *c++;
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint8_t g_node_addr[VD_SHM_ADDR_LEN];
static pthread_once_t g_node_once = PTHREAD_ONCE_INIT;

/* The same value in every process of the machine: hashed from
 * /etc/machine-id, or from the host name where there is none. */
static void node_address_init(void)
{
	uint64_t h = 0xcbf29ce484222325ull;
	char buf[256];
	struct utsname u;
	ssize_t n = -1;
	int fd, i;

	fd = open("/etc/machine-id", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf));
		close(fd);
	}
	if (n > 0)
		h = fnv1a(h, buf, (size_t)n);
	else if (uname(&u) == 0)
		h = fnv1a(h, u.nodename, strlen(u.nodename));
	g_node_addr[0] = 0x02;       /* locally administered, unicast */
	for (i = 1; i < VD_SHM_ADDR_LEN; i++)
		g_node_addr[i] = (uint8_t)(h >> (8 * (i - 1)));
}

static void node_address(uint8_t addr[VD_SHM_ADDR_LEN])
{
	pthread_once(&g_node_once, node_address_init);
	memcpy(addr, g_node_addr, VD_SHM_ADDR_LEN);
}

/* ---- names ---------------------------------------------------------------------- */

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

int vd_shm_node_address(struct vd_nic *nic, uint8_t *addr)
{
	(void)nic;
	node_address(addr);
	return 0;
}

int vd_shm_ns_lookup(struct vd_nic *nic, const char *name, unsigned index, uint8_t *addr)
{
	/* One node, one address: only index 0 exists. */
	if (index != 0 || !name_is_local(name))
		return -ENXIO;
	memcpy(addr, nic->addr, VD_SHM_ADDR_LEN);
	return 0;
}

int vd_shm_ns_reverse(struct vd_nic *nic, const uint8_t *addr, char *name,
		      size_t room, size_t *need)
{
	char buf[NAME_MAX_LEN];

	if (memcmp(addr, nic->addr, VD_SHM_ADDR_LEN) != 0)
		return -ENXIO;
	short_name(buf, sizeof(buf));
	*need = strlen(buf) + 1;
	if (room < *need)
		return -ENOSPC;
	memcpy(name, buf, *need);
	return 0;
}
