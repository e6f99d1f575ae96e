/* SPDX-License-Identifier: MIT */
/*
 * Where the ranks live, and so which VIPL provider joins them.  Every
 * rank publishes a node identity through PMI (the boot id and the network
 * namespace: two namespaces of one machine are two hosts, as in the test
 * harness); when all match, the shm provider joins the job, otherwise the
 * ofi provider joins every pair (VIADUCT_MPI_NET=auto).  Over ofi each
 * rank then publishes its fabric address, and rank 0 a fresh job key when
 * the environment has none: the launcher's key-value space is shared by
 * the job's processes only.
 *
 * One provider for all peers: a job spread over hosts also reaches the
 * ranks of its own host through ofi.  Choosing per peer needs a NIC and
 * registrations per provider in wire.c (docs/mpi.md, "Across hosts").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "engine.h"

#define NODE_ID_MAX 64
#define ADDR_MAX 16             /* bytes of a provider's host address */

enum net_choice { NET_AUTO, NET_SHM, NET_OFI };

static struct {
	bool net;                       /* ofi joins the job */
	unsigned alen;                  /* host address bytes */
	uint8_t (*addr)[ADDR_MAX];      /* by world rank */
} P;

/* boot id + network namespace inode: differs between hosts and between
 * the network namespaces that stand for hosts on one machine. */
static void node_id(char *out, size_t len)
{
	char boot[48] = "noboot";
	struct stat st = { 0 };
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

	if (f) {
		if (!fgets(boot, sizeof(boot), f))
			snprintf(boot, sizeof(boot), "noboot");
		fclose(f);
		boot[strcspn(boot, "\n")] = '\0';
	}
	(void)stat("/proc/self/ns/net", &st);
	snprintf(out, len, "%s-%llu", boot, (unsigned long long)st.st_ino);
}

static void hex(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

static int unhex(const char *s, uint8_t *p, size_t n)
{
	if (strlen(s) != 2 * n)
		return -EPROTO;
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -EPROTO;
		p[i] = (uint8_t)v;
	}
	return 0;
}

/* Does any rank live on another node?  Every rank publishes its node;
 * rank 0 alone reads them all and publishes the verdict (two fences, 2N
 * gets in all -- not N per rank, which a launcher serves one by one). */
static int any_remote(bool *remote)
{
	char key[32], mine[NODE_ID_MAX], theirs[NODE_ID_MAX], verdict[4];
	int err;

	node_id(mine, sizeof(mine));
	snprintf(key, sizeof(key), "vd-node-%d", vd_mpi.rank);
	if ((err = vd_pmi_put(key, mine)) || (err = vd_pmi_fence()))
		return err;
	if (vd_mpi.rank == 0) {
		bool differ = false;
		for (int r = 1; r < vd_mpi.size && !differ; r++) {
			snprintf(key, sizeof(key), "vd-node-%d", r);
			if ((err = vd_pmi_get(key, theirs, sizeof(theirs))))
				return err;
			differ = strcmp(mine, theirs) != 0;
		}
		if ((err = vd_pmi_put("vd-net", differ ? "1" : "0")))
			return err;
	}
	if ((err = vd_pmi_fence()) || (err = vd_pmi_get("vd-net", verdict, sizeof(verdict))))
		return err;
	if (strcmp(verdict, "0") && strcmp(verdict, "1"))
		return -EPROTO;
	*remote = verdict[0] == '1';
	return 0;
}

/* Rank 0's fresh job key, unless the environment brings one. */
static int put_key(void)
{
	uint8_t k[16];
	char h[33];

	if (vd_mpi.rank != 0 || getenv("VIADUCT_JOB_KEY"))
		return 0;
	if (getrandom(k, sizeof(k), 0) != (ssize_t)sizeof(k))
		return -EIO;
	hex(k, sizeof(k), h);
	return vd_pmi_put("vd-job-key", h);
}

static int take_key(void)
{
	char h[64];

	if (getenv("VIADUCT_JOB_KEY"))
		return 0;
	if (vd_pmi_get("vd-job-key", h, sizeof(h)))
		return -EPROTO;
	return setenv("VIADUCT_JOB_KEY", h, 0) ? -ENOMEM : 0;
}

int vd_place_init(void)
{
	uint64_t choice = NET_AUTO;
	bool remote = false;
	int err;

	if (viaduct_param_uint("VIADUCT_MPI_NET", NET_AUTO, &choice))
		return -EINVAL;
	if (vd_mpi.size == 1)
		return 0;
	if ((err = put_key()) || (err = any_remote(&remote)))
		return err;
	if (remote && choice == NET_SHM) {
		fprintf(stderr, "viaduct MPI: rank %d: VIADUCT_MPI_NET=shm, but the ranks are on "
			"more than one host\n", vd_mpi.rank);
		return -EINVAL;
	}
	P.net = choice == NET_OFI || (choice == NET_AUTO && remote);
	return P.net ? take_key() : 0;
}

bool vd_place_net(void)
{
	return P.net;
}

/* Over ofi: every rank's fabric address, through PMI.  One fence. */
int vd_place_exchange(VIP_NIC_HANDLE nic)
{
	uint8_t room[64];
	VIP_NET_ADDRESS *a = (VIP_NET_ADDRESS *)room;
	VIP_NIC_ATTRIBUTES na;
	char key[32], h[2 * ADDR_MAX + 1];
	int err;

	if (VipQueryNic(nic, &na) != VIP_SUCCESS || na.NicAddressLen == 0 ||
	    na.NicAddressLen > ADDR_MAX)
		return -ENODEV;
	P.alen = na.NicAddressLen;
	P.addr = calloc((size_t)vd_mpi.size, sizeof(*P.addr));
	if (!P.addr)
		return -ENOMEM;
	a->HostAddressLen = (VIP_UINT16)P.alen;
	a->DiscriminatorLen = 0;
	if (VipNSGetHostByName(nic, "localhost", a, 0) != VIP_SUCCESS)
		return -EHOSTUNREACH;
	memcpy(P.addr[vd_mpi.rank], a->HostAddress, P.alen);
	if (!P.net)
		return 0;       /* one host: every rank's address is ours */
	hex(a->HostAddress, P.alen, h);
	snprintf(key, sizeof(key), "vd-addr-%d", vd_mpi.rank);
	if ((err = vd_pmi_put(key, h)) || (err = vd_pmi_fence()))
		return err;
	for (int r = 0; r < vd_mpi.size; r++) {
		snprintf(key, sizeof(key), "vd-addr-%d", r);
		if (r != vd_mpi.rank &&
		    ((err = vd_pmi_get(key, h, sizeof(h))) || (err = unhex(h, P.addr[r], P.alen))))
			return err ? err : -EPROTO;
	}
	return 0;
}

const uint8_t *vd_place_host(int rank, unsigned *len)
{
	*len = P.alen;
	return P.net ? P.addr[rank] : P.addr[vd_mpi.rank];
}

void vd_place_finalize(void)
{
	free(P.addr);
	memset(&P, 0, sizeof(P));
}
