/* SPDX-License-Identifier: MIT */
/*
 * A discriminator's listener port is taken by someone else, and the
 * connection is made all the same.  Over ofi a listener's port comes
 * from a hash of its discriminator, so two processes on one host whose
 * discriminators collide -- or anything else bound to that port -- must
 * not keep a server from listening (it used to fail VipConnectWait) nor
 * a client from finding it.
 *
 * Phase 1: a plain socket holds the port of discriminator X; the child
 * listens on X, the parent connects to X.
 * Phase 2: the parent's own NIC listens on Y, whose port is X's; the
 * child (a new NIC) listens on X again, and the parent's request for X,
 * which first reaches the parent's own listener, finds the child.
 * Phase 3: X's port is held by a plain socket and the next one by the
 * parent's own listener for Z: a peer-to-peer request on X, which shares
 * that listener, is taken (it failed: the first port's error stuck).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "viptest.h"

static char disc_x[32], disc_y[32], disc_z[32];

/* The provider's port choice for a discriminator (ofi_conn.c): FNV-1a
 * of its bytes, mod 4096, above the port base.  The test checks below
 * that the collision it builds is real, so a different choice in the
 * provider fails it rather than passing it unseen. */
static unsigned disc_port_at(const char *d, unsigned probe)
{
	uint32_t h = 2166136261u;
	const char *base = getenv("VIADUCT_OFI_PORT_BASE");

	for (size_t i = 0; d[i]; i++)
		h = (h ^ (uint8_t)d[i]) * 16777619u;
	return (unsigned)(base && *base ? atoi(base) : 20480) + (h + probe) % 4096u;
}

static unsigned disc_port(const char *d)
{
	return disc_port_at(d, 0);
}

/* A plain TCP socket bound to port, or -1 if in use.  Listening, it is
 * bound even where connections to the port linger in TIME_WAIT
 * (SO_REUSEADDR; a listener still excludes others); not listening, it
 * refuses connections. */
static int hold_port(unsigned port, bool listening)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd >= 0 &&
	    (!listening || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0) &&
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && (!listening || listen(fd, 1) == 0))
		return fd;
	if (fd >= 0)
		close(fd);
	return -1;
}

static VIP_VI_HANDLE new_vi(VIP_NIC_HANDLE nic)
{
	VIP_VI_ATTRIBUTES va = vt_vi_attrs(nic, VIP_SERVICE_RELIABLE_DELIVERY);
	VIP_VI_HANDLE vi;

	VT_OK(VipCreateVi(nic, &va, NULL, NULL, &vi));
	return vi;
}

static void vi_done(VIP_VI_HANDLE vi)
{
	VipDisconnect(vi);
	VT_OK(VipDestroyVi(vi));
}

static int child_main(void *arg)
{
	VIP_NIC_HANDLE nic;
	VIP_VI_HANDLE vi;

	(void)arg;
	for (int phase = 1; phase <= 2; phase++) {
		VDT_CHECK(vt_sync(vt_fd) == 0);         /* the port is held */
		VT_OK(VipOpenNic("ofi", &nic));
		vi = new_vi(nic);
		VT_OK(vt_server_accept(nic, vi, disc_x, 10000));
		VDT_CHECK(vt_sync(vt_fd) == 0);         /* both connected */
		vi_done(vi);
		VT_OK(VipCloseNic(nic));
	}
	return 0;
}

/* A listener for disc on this NIC, left bound by a wait that times out. */
static void listen_on(VIP_NIC_HANDLE nic, const char *disc)
{
	VIP_NET_ADDRESS *local = vt_addr(nic, disc);
	VIP_NET_ADDRESS *remote = calloc(1, sizeof(*remote) + 128);
	VIP_VI_ATTRIBUTES ra;
	VIP_CONN_HANDLE conn;

	VDT_CHECK(local && remote);
	VT_EXPECT(VipConnectWait(nic, local, 1, remote, &ra, &conn), VIP_TIMEOUT);
	free(local);
	free(remote);
}

static int peer_on_shared_port(unsigned port)
{
	char peer[32];
	VIP_NIC_HANDLE nic;
	VIP_VI_HANDLE vi;
	VIP_NET_ADDRESS *local, *remote;
	VIP_VI_ATTRIBUTES ra;
	int fd = hold_port(port, true);

	VDT_CHECK(fd >= 0);
	VT_OK(VipOpenNic("ofi", &nic));
	listen_on(nic, disc_z);                 /* the port after X's */
	vi = new_vi(nic);
	/* The lower address accepts: X's side, which listens on X. */
	snprintf(peer, sizeof(peer), "pz.%d", (int)getpid());
	local = vt_addr(nic, disc_x);
	remote = vt_addr(nic, peer);
	VDT_CHECK(local && remote);
	VT_OK(VipConnectPeerRequest(vi, local, remote, 100));
	VT_EXPECT(VipConnectPeerWait(vi, &ra), VIP_TIMEOUT);     /* nobody comes */
	VT_OK(VipDestroyVi(vi));
	VT_OK(VipCloseNic(nic));
	close(fd);
	free(local);
	free(remote);
	printf("ok: port %u held, the next one this NIC's own: a peer request on X is taken\n",
	       port);
	return 0;
}

static int parent_main(void *arg)
{
	unsigned port = disc_port(disc_x);
	VIP_NIC_HANDLE nic;
	VIP_VI_HANDLE vi;
	int fd = hold_port(port, false);

	(void)arg;
	VDT_CHECK(fd >= 0);
	VT_OK(VipOpenNic("ofi", &nic));
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vi = new_vi(nic);
	VT_OK(vt_client_connect(nic, vi, disc_x, 10000));
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vi_done(vi);
	printf("ok: port %u held by a plain socket: X's server listens and is found\n", port);

	close(fd);
	listen_on(nic, disc_y);
	fd = hold_port(port, false);
	VDT_CHECK_EQ(fd, -1);                   /* Y's listener holds X's port */
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vi = new_vi(nic);
	VT_OK(vt_client_connect(nic, vi, disc_x, 10000));
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vi_done(vi);
	VT_OK(VipCloseNic(nic));
	printf("ok: port %u held by a listener for %s: X's server listens and is found\n",
	       port, disc_y);
	return peer_on_shared_port(port);
}

/* X with a port nothing holds, Y with the same port, Z with the next. */
static int pick_discs(void)
{
	int fd = -1;

	for (int n = 0; n < 64 && fd < 0; n++) {
		snprintf(disc_x, sizeof(disc_x), "px%d.%d", n, (int)getpid());
		fd = hold_port(disc_port(disc_x), false);
	}
	if (fd < 0)
		return -1;
	close(fd);
	for (int n = 0; n < 1000000; n++) {
		snprintf(disc_y, sizeof(disc_y), "py%d.%d", n, (int)getpid());
		if (disc_port(disc_y) == disc_port(disc_x))
			break;
	}
	for (int n = 0; n < 1000000; n++) {
		snprintf(disc_z, sizeof(disc_z), "pz%d.%d", n, (int)getpid());
		if (disc_port(disc_z) == disc_port_at(disc_x, 1))
			return disc_port(disc_y) == disc_port(disc_x) ? 0 : -1;
	}
	return -1;
}

/* Argument: the libfabric provider (tcp, meaning tcp;ofi_rxm, or net). */
int main(int argc, char **argv)
{
	VIP_NIC_HANDLE nic;

	setenv("VIADUCT_JOB_KEY", "00112233445566778899aabbccddeeff", 1);
	setenv("VIADUCT_OFI_PROVIDER", argc > 1 ? argv[1] : "tcp", 1);
	VDT_SKIP_IF(VipOpenNic("ofi", &nic) != VIP_SUCCESS, "the ofi provider cannot open here");
	VT_OK(VipCloseNic(nic));
	VDT_CHECK(pick_discs() == 0);
	return vt_fork2(parent_main, child_main, NULL, 60);
}
