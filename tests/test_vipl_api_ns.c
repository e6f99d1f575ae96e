/* SPDX-License-Identifier: MIT */
/*
 * VIPL name service, one process: VipNSGetHostByName resolves names the
 * way getaddrinfo does.  Every IP address of this host's interfaces and
 * an alias of this host in /etc/hosts give the node's address (both were
 * refused before); a name of another host and a name nobody knows are
 * VIP_ERROR_NAMESERVICE.  The /etc/hosts part runs in a private mount
 * namespace with a hosts file of the test's own (root only).
 */
#include "viptest.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

static VIP_NIC_HANDLE nic;
static VIP_NET_ADDRESS *self_addr;

static VIP_NET_ADDRESS *new_addr(void)
{
	VIP_NET_ADDRESS *a = calloc(1, sizeof(*a) + 64);

	VDT_CHECK(a != NULL);
	return a;
}

/* name resolves to this node's address. */
static void expect_local(const char *name)
{
	VIP_NET_ADDRESS *a = new_addr();

	VT_OK(VipNSGetHostByName(nic, (VIP_CHAR *)name, a, 0));
	VDT_CHECK(a->HostAddressLen == self_addr->HostAddressLen);
	VDT_CHECK(memcmp(a->HostAddress, self_addr->HostAddress, a->HostAddressLen) == 0);
	free(a);
}

static void expect_unknown(const char *name)
{
	VIP_NET_ADDRESS *a = new_addr();

	VT_EXPECT(VipNSGetHostByName(nic, (VIP_CHAR *)name, a, 0), VIP_ERROR_NAMESERVICE);
	free(a);
}

static void test_own_addresses(void)
{
	struct ifaddrs *ifs, *i;
	char buf[INET6_ADDRSTRLEN + IF_NAMESIZE + 2];
	int n = 0;

	VDT_CHECK(getifaddrs(&ifs) == 0);
	for (i = ifs; i; i = i->ifa_next) {
		const void *ip;

		if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET &&
				     i->ifa_addr->sa_family != AF_INET6))
			continue;
		ip = i->ifa_addr->sa_family == AF_INET
			? (const void *)&((struct sockaddr_in *)i->ifa_addr)->sin_addr
			: (const void *)&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
		VDT_CHECK(inet_ntop(i->ifa_addr->sa_family, ip, buf, sizeof(buf)) != NULL);
		if (i->ifa_addr->sa_family == AF_INET6 &&
		    IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr))
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%%%s", i->ifa_name);
		expect_local(buf);
		n++;
	}
	freeifaddrs(ifs);
	printf("ok: %d addresses of this host's interfaces resolve to the node\n", n);
}

/* In a child with its own mount namespace: a hosts file where
 * viaduct-test-alias is this host and viaduct-test-other another one. */
static int aliases_child(void)
{
	char path[] = "/tmp/viaduct-hosts.XXXXXX";
	int fd = mkstemp(path);
	const char *hosts = "127.0.0.1 localhost\n"
			    "127.0.1.1 viaduct-test-alias viaduct-test-alias2.example\n"
			    "192.0.2.250 viaduct-test-other\n";

	if (fd < 0 || write(fd, hosts, strlen(hosts)) != (ssize_t)strlen(hosts))
		return 2;
	close(fd);
	if (unshare(CLONE_NEWNS) != 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount(path, "/etc/hosts", NULL, MS_BIND, NULL) != 0) {
		unlink(path);
		return 77;
	}
	unlink(path);
	expect_local("viaduct-test-alias");
	expect_local("viaduct-test-alias2.example");
	expect_unknown("viaduct-test-other");
	return 0;
}

static void test_hosts_aliases(void)
{
	pid_t pid;
	int ws;

	if (geteuid() != 0) {
		puts("note: not root: the /etc/hosts alias check needs a mount namespace");
		return;
	}
	pid = fork();
	VDT_CHECK(pid >= 0);
	if (pid == 0)
		_exit(aliases_child());
	VDT_CHECK(waitpid(pid, &ws, 0) == pid && WIFEXITED(ws));
	if (WEXITSTATUS(ws) == 77) {
		puts("note: no private mount namespace here: alias check skipped");
		return;
	}
	VDT_CHECK(WEXITSTATUS(ws) == 0);
	puts("ok: aliases from /etc/hosts resolve; another host's name does not");
}

int main(void)
{
	char host[256];

	alarm(60);
	VT_OK(VipOpenNic("/dev/via_lo", &nic));
	self_addr = new_addr();
	VT_OK(VipNSGetHostByName(nic, (VIP_CHAR *)"localhost", self_addr, 0));
	VDT_CHECK(gethostname(host, sizeof(host)) == 0);
	expect_local(host);
	test_own_addresses();
	test_hosts_aliases();
	expect_unknown("no-such-host.invalid");
	expect_unknown("192.0.2.251");
	VT_OK(VipCloseNic(nic));
	free(self_addr);
	puts("ok");
	return 0;
}
