/* SPDX-License-Identifier: MIT */
/*
 * Where the ranks live, and so which VIPL provider joins each pair.
 * Every rank publishes a node identity through PMI (the boot id and the
 * network namespace: two namespaces of one machine are two hosts, as in
 * the test harness); rank 0 numbers the nodes and publishes the map.
 * With VIADUCT_MPI_NET=auto, peers on the rank's own node are reached
 * through the shm provider (one copy) and the others through ofi (the
 * fabric's RMA for zero copy), as MPICH-PM/CLUMP on a cluster of SMPs.  Over ofi
 * each rank that has remote peers publishes its fabric address, and rank
 * 0 a fresh job key when the environment has none: the launcher's
 * key-value space is shared by the job's processes only.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "engine.h"

#define NODE_ID_MAX 64
#define ADDR_MAX 16             /* bytes of a provider's host address */
/* The node map travels as 3 hex digits per rank (node numbers below
 * 4096, vdrun's rank limit), 256 ranks per PMI value (768 of its 1024
 * bytes). */
#define MAP_DIGITS 3
#define MAP_CHUNK 256
#define MAP_NODES_MAX 4096

enum net_choice { NET_AUTO, NET_SHM, NET_OFI };

static struct {
	bool job_net;                   /* some pair of the job uses ofi */
	uint16_t *node;                 /* by world rank: node number */
	enum vd_transport *via;         /* by world rank: transport to it */
	unsigned uses;                  /* bit per transport this rank uses */
	unsigned alen[VD_T_N];          /* host address bytes */
	uint8_t local[VD_T_N][ADDR_MAX];
	uint8_t (*addr)[ADDR_MAX];      /* by world rank: ofi addresses */
	uint64_t nonce;                 /* rank 0's random number for this job */
	int fewest, most;               /* ranks on the emptiest and the fullest node */
	bool all_net;                   /* VIADUCT_MPI_NET=ofi: every peer through ofi */
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
	snprintf(out, len, "w%u:%s-%llu", VD_MSG_VERSION, boot, (unsigned long long)st.st_ino);
}

static void hex(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

/* n bytes from the first 2n hex digits of s. */
static int unhex_n(const char *s, uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		if (!isxdigit((unsigned char)s[2 * i]) || !isxdigit((unsigned char)s[2 * i + 1]) ||
		    sscanf(s + 2 * i, "%2x", &v) != 1)
			return -EPROTO;
		p[i] = (uint8_t)v;
	}
	return 0;
}

/* The lowest rank of its node. */
static bool node_leader(int rank)
{
	for (int r = 0; r < rank; r++)
		if (P.node[r] == P.node[rank])
			return false;
	return true;
}

/* How many ranks live on node nd. */
static int node_ranks(int nd)
{
	int n = 0;

	for (int r = 0; r < vd_mpi.size; r++)
		n += P.node[r] == nd;
	return n;
}

/* A rank's identity names its wire version first ("w3:<node>"): ranks
 * of two viaduct builds that differ there drop each other's messages,
 * and a job that mixes them would hang.  The version, or 0 when the
 * value names none (an older viaduct, or not viaduct's). */
static unsigned id_version(const char *id)
{
	char *end;
	unsigned long v;

	if (id[0] != 'w' || !isdigit((unsigned char)id[1]))
		return 0;
	v = strtoul(id + 1, &end, 10);
	return *end == ':' && v <= 255 ? (unsigned)v : 0;
}

static int wrong_version(int r, unsigned v)
{
	fprintf(stderr, "viaduct MPI: rank %d speaks MPI wire version %u%s, rank 0 speaks %u: "
		"every rank of a job must run the same viaduct (check each host's "
		"installation and LD_LIBRARY_PATH)\n", r, v, v ? "" : " (an older viaduct)",
		VD_MSG_VERSION);
	return -EPROTO;
}

/* Rank 0: number the nodes in order of first appearance, from every
 * rank's identity. */
static int number_nodes(const char *mine)
{
	char key[32], id[NODE_ID_MAX], (*ids)[NODE_ID_MAX];
	int nn = 0, err = 0;

	ids = calloc((size_t)vd_mpi.size, sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	for (int r = 0; r < vd_mpi.size && !err; r++) {
		int k;
		snprintf(key, sizeof(key), "vd-node-%d", r);
		if (r == 0)
			snprintf(id, sizeof(id), "%s", mine);
		else if ((err = vd_pmi_get_from(r, key, id, sizeof(id))))
			break;
		if (id_version(id) != VD_MSG_VERSION) {
			err = wrong_version(r, id_version(id));
			break;
		}
		for (k = 0; k < nn && strcmp(ids[k], id); k++)
			;
		if (k == nn)
			memcpy(ids[nn++], id, sizeof(id));
		P.node[r] = (uint16_t)k;
	}
	free(ids);
	return err;
}

/* Rank 0: the map, MAP_CHUNK ranks per key, and the job's nonce: two
 * launchers may give two jobs the same name (Slurm's JOBID.STEPID in two
 * clusters, a launcher's pid in two containers), and the ranks of one
 * must never connect to those of the other. */
static int put_map(void)
{
	char key[32], val[MAP_CHUNK * MAP_DIGITS + 1];
	int err = 0;

	if (getrandom(&P.nonce, sizeof(P.nonce), 0) != (ssize_t)sizeof(P.nonce))
		return -EIO;
	snprintf(val, sizeof(val), "%016llx", (unsigned long long)P.nonce);
	if ((err = vd_pmi_put("vd-job-nonce", val)))
		return err;

	for (int c = 0; c * MAP_CHUNK < vd_mpi.size && !err; c++) {
		int n = 0;
		for (int r = c * MAP_CHUNK; r < vd_mpi.size && r < (c + 1) * MAP_CHUNK; r++)
			n += sprintf(val + n, "%03x", P.node[r]);
		snprintf(key, sizeof(key), "vd-nodes-%d", c);
		err = vd_pmi_put(key, val);
	}
	return err;
}

/* Every rank but 0: the nonce and the map, validated (they come
 * through the launcher). */
static int get_map(void)
{
	char key[32], val[MAP_CHUNK * MAP_DIGITS + 16];
	unsigned long long nonce;
	int err;

	if ((err = vd_pmi_get_from(0, "vd-job-nonce", val, sizeof(val))))
		return err;
	if (strlen(val) != 16 || sscanf(val, "%16llx", &nonce) != 1)
		return -EPROTO;
	P.nonce = nonce;

	for (int c = 0; c * MAP_CHUNK < vd_mpi.size; c++) {
		int first = c * MAP_CHUNK, n = vd_mpi.size - first;
		if (n > MAP_CHUNK)
			n = MAP_CHUNK;
		snprintf(key, sizeof(key), "vd-nodes-%d", c);
		if ((err = vd_pmi_get_from(0, key, val, sizeof(val))))
			return err;
		if (strlen(val) != (size_t)n * MAP_DIGITS)
			return -EPROTO;
		for (int i = 0; i < n; i++) {
			unsigned v;
			/* Numbered in order of first appearance: never above the rank. */
			if (sscanf(val + MAP_DIGITS * i, "%3x", &v) != 1 || v > (unsigned)(first + i))
				return -EPROTO;
			P.node[first + i] = (uint16_t)v;
		}
	}
	return 0;
}

/* Every rank's node: each publishes its identity; rank 0 alone reads
 * them all and publishes the numbering (two fences, about 2N launcher
 * requests in all -- not N per rank, which a launcher serves one by
 * one). */
static int learn_nodes(void)
{
	char key[32], mine[NODE_ID_MAX];
	int err;

	P.node = calloc((size_t)vd_mpi.size, sizeof(*P.node));
	P.via = calloc((size_t)vd_mpi.size, sizeof(*P.via));
	if (!P.node || !P.via)
		return -ENOMEM;
	node_id(mine, sizeof(mine));
	snprintf(key, sizeof(key), "vd-node-%d", vd_mpi.rank);
	if ((err = vd_pmi_put(key, mine)) || (err = vd_pmi_fence()))
		return err;
	if (vd_mpi.rank == 0 && ((err = number_nodes(mine)) || (err = put_map())))
		return err;
	if ((err = vd_pmi_fence()))
		return err;
	return vd_mpi.rank == 0 ? 0 : get_map();
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
	if (vd_pmi_get_from(0, "vd-job-key", h, sizeof(h)))
		return -EPROTO;
	return setenv("VIADUCT_JOB_KEY", h, 0) ? -ENOMEM : 0;
}

/* The transport to every peer, and whether any pair of the job goes
 * through the network (every rank knows the whole map, so all agree). */
static void choose(enum net_choice choice)
{
	for (int r = 0; r < vd_mpi.size; r++) {
		if (P.node[r] != P.node[0])
			P.job_net = true;
		if (r == vd_mpi.rank)
			continue;
		P.via[r] = choice == NET_OFI || P.node[r] != P.node[vd_mpi.rank] ? VD_T_OFI
										 : VD_T_SHM;
		P.uses |= 1u << P.via[r];
	}
	if (choice == NET_OFI)
		P.job_net = P.all_net = true;
}

/* The fewest and the most ranks any node holds (node numbers are below
 * the job's size: get_map checks). */
static int count_nodes(void)
{
	int *count = calloc((size_t)vd_mpi.size, sizeof(*count));

	if (!count)
		return -ENOMEM;
	for (int r = 0; r < vd_mpi.size; r++)
		count[P.node[r]]++;
	P.fewest = vd_mpi.size;
	for (int n = 0; n < vd_mpi.size; n++) {
		if (count[n] && count[n] < P.fewest)
			P.fewest = count[n];
		if (count[n] > P.most)
			P.most = count[n];
	}
	free(count);
	return 0;
}

int vd_place_init(void)
{
	uint64_t choice = NET_AUTO;
	int err;

	if (viaduct_param_uint("VIADUCT_MPI_NET", NET_AUTO, &choice))
		return -EINVAL;
	if (vd_mpi.size == 1)
		return 0;
	if ((err = put_key()) || (err = learn_nodes()))
		return err;
	choose((enum net_choice)choice);
	if ((err = count_nodes()))
		return err;
	if (P.job_net && choice == NET_SHM) {
		fprintf(stderr, "viaduct MPI: rank %d: VIADUCT_MPI_NET=shm, but the ranks are on "
			"more than one host\n", vd_mpi.rank);
		return -EINVAL;
	}
	return P.job_net ? take_key() : 0;
}

enum vd_transport vd_place_via(int rank)
{
	return P.via ? P.via[rank] : VD_T_SHM;
}

uint64_t vd_place_nonce(void)
{
	return P.nonce;
}

int vd_place_local_ranks(void)
{
	int n = 0;

	for (int r = 0; P.node && r < vd_mpi.size; r++)
		n += P.node[r] == P.node[vd_mpi.rank];
	return n ? n : 1;
}

int vd_place_most_local(void)
{
	return P.node ? P.most : 1;
}

uint64_t vd_place_net_peers_max(void)
{
	if (!P.node)
		return 0;
	return (uint64_t)(vd_mpi.size - (P.all_net ? 1 : P.fewest));
}

int vd_place_node(int rank)
{
	return P.node ? P.node[rank] : 0;
}

bool vd_place_uses(enum vd_transport t)
{
	return P.uses >> t & 1;
}

bool vd_place_job_net(void)
{
	return P.job_net;
}

int vd_place_local(enum vd_transport t, VIP_NIC_HANDLE nic)
{
	uint8_t room[64];
	VIP_NET_ADDRESS *a = (VIP_NET_ADDRESS *)room;
	VIP_NIC_ATTRIBUTES na;

	if (VipQueryNic(nic, &na) != VIP_SUCCESS || na.NicAddressLen == 0 ||
	    na.NicAddressLen > ADDR_MAX)
		return -ENODEV;
	P.alen[t] = na.NicAddressLen;
	a->HostAddressLen = (VIP_UINT16)P.alen[t];
	a->DiscriminatorLen = 0;
	if (VipNSGetHostByName(nic, "localhost", a, 0) != VIP_SUCCESS)
		return -EHOSTUNREACH;
	memcpy(P.local[t], a->HostAddress, P.alen[t]);
	return 0;
}

/* Addresses per key of a node's list: 16 of at most 32 hex digits fit
 * the 1024-byte values of Hydra and Slurm's PMI. */
#define ADDR_CHUNK 16

/* The node's leader (its lowest rank) gathers the addresses of its ranks
 * and publishes them in rank order, ADDR_CHUNK to a key. */
static int publish_node_list(void)
{
	char key[48], h[2 * ADDR_MAX + 1], val[ADDR_CHUNK * 2 * ADDR_MAX + 1];
	size_t step = 2 * (size_t)P.alen[VD_T_OFI], n = 0;
	int nd = P.node[vd_mpi.rank], left = node_ranks(nd), k = 0, chunk = 0, err;

	for (int r = 0; r < vd_mpi.size; r++) {
		if (P.node[r] != nd)
			continue;
		if (r == vd_mpi.rank) {
			hex(P.local[VD_T_OFI], P.alen[VD_T_OFI], val + n);
		} else {
			snprintf(key, sizeof(key), "vd-addr-%d", r);
			if ((err = vd_pmi_get_from(r, key, h, sizeof(h))))
				return err;
			if (strlen(h) != step)
				return -EPROTO;
			memcpy(val + n, h, step);
		}
		n += step;
		if (++k == ADDR_CHUNK || --left == 0) {
			val[n] = '\0';
			snprintf(key, sizeof(key), "vd-naddr-%d-%d", nd, chunk++);
			if ((err = vd_pmi_put(key, val)))
				return err;
			n = 0;
			k = 0;
		}
	}
	return 0;
}

/* Every address of node nd's ranks from its leader's list. */
static int read_node_list(int nd)
{
	char key[48], val[ADDR_CHUNK * 2 * ADDR_MAX + 1];
	size_t step = 2 * (size_t)P.alen[VD_T_OFI];
	const char *at = val;
	int leader = -1, k = 0, chunk = 0, err;

	for (int r = 0; r < vd_mpi.size; r++) {
		if (P.node[r] != nd)
			continue;
		if (leader < 0)
			leader = r;
		if (k == 0) {
			snprintf(key, sizeof(key), "vd-naddr-%d-%d", nd, chunk++);
			if ((err = vd_pmi_get_from(leader, key, val, sizeof(val))))
				return err;
			at = val;
		}
		if (strlen(at) < step)
			return -EPROTO;         /* a list shorter than the node */
		if (r != vd_mpi.rank && (err = unhex_n(at, P.addr[r], P.alen[VD_T_OFI])))
			return err;
		at += step;
		k = (k + 1) % ADDR_CHUNK;
		if (k == 0 && *at)
			return -EPROTO;         /* longer than a chunk */
	}
	return *at ? -EPROTO : 0;
}

/* The lists of every node with a rank we reach through the fabric (our
 * own node's too, when VIADUCT_MPI_NET=ofi). */
static int read_node_lists(void)
{
	bool *done = calloc(MAP_NODES_MAX, sizeof(*done));     /* by node */
	int err = 0;

	if (!done)
		return -ENOMEM;
	for (int r = 0; r < vd_mpi.size && !err; r++) {
		if (r == vd_mpi.rank || P.via[r] != VD_T_OFI || done[P.node[r]])
			continue;
		done[P.node[r]] = true;
		err = read_node_list(P.node[r]);
	}
	free(done);
	return err;
}

/* Collective when the job uses the network (then every rank has a peer
 * through the fabric): each rank publishes its fabric address, each
 * node's leader gathers its node's into lists, and each rank reads the
 * lists of the nodes it reaches through the fabric -- N/16 reads a rank
 * instead of one per peer, which grew with the square of the job. */
int vd_place_exchange(void)
{
	char key[32], h[2 * ADDR_MAX + 1];
	int err;

	if (!P.job_net || vd_mpi.size < 2)
		return 0;
	P.addr = calloc((size_t)vd_mpi.size, sizeof(*P.addr));
	if (!P.addr)
		return -ENOMEM;
	hex(P.local[VD_T_OFI], P.alen[VD_T_OFI], h);
	snprintf(key, sizeof(key), "vd-addr-%d", vd_mpi.rank);
	if ((err = vd_pmi_put(key, h)) || (err = vd_pmi_fence()))
		return err;
	if (node_leader(vd_mpi.rank) && (err = publish_node_list()))
		return err;
	if ((err = vd_pmi_fence()))
		return err;
	return read_node_lists();
}

const uint8_t *vd_place_host(enum vd_transport t, int rank, unsigned *len)
{
	*len = P.alen[t];
	return t == VD_T_OFI && rank != vd_mpi.rank ? P.addr[rank] : P.local[t];
}

void vd_place_where(int rank, char *out, size_t len)
{
	char ip[INET_ADDRSTRLEN];

	if (!P.via || rank < 0 || rank >= vd_mpi.size) {
		snprintf(out, len, "on an unknown host");
	} else if (P.via[rank] != VD_T_OFI || !P.addr) {
		snprintf(out, len, "on %s host", P.node[rank] == P.node[vd_mpi.rank] ?
						  "this" : "another");
	} else if (P.alen[VD_T_OFI] == 4 && inet_ntop(AF_INET, P.addr[rank], ip, sizeof(ip))) {
		snprintf(out, len, "on host %s", ip);
	} else {
		snprintf(out, len, "on node %u", (unsigned)P.node[rank]);
	}
}

void vd_place_finalize(void)
{
	free(P.addr);
	free(P.node);
	free(P.via);
	memset(&P, 0, sizeof(P));
}
