/* SPDX-License-Identifier: MIT */
/*
 * The parameter registry: every VIADUCT_* environment variable, declared
 * once with its type, default, range and meaning.  A value that does not
 * parse or is out of range is refused (the caller fails, the message says
 * what is allowed) -- never quietly replaced by the default.  A VIADUCT_*
 * name nobody declares gets one warning naming the closest declared one,
 * as UCX warns of unused variables.  vdinfo --params lists them all.
 *
 * Adding a parameter is one line in the table below.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "viaduct/viaduct.h"

enum ptype { PT_BOOL, PT_UINT, PT_SIZE, PT_CHOICE, PT_STRING };

struct param {
	const char *name;
	enum ptype type;
	const char *dflt;               /* as shown; may describe a rule */
	uint64_t min, max;              /* PT_UINT, PT_SIZE */
	const char *choices;            /* PT_CHOICE: "a|b|c", first = 0 */
	const char *desc;
};

#define KiB 1024ull
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)

static const struct param params[] = {
	{ "VIADUCT_LMM_CACHE", PT_BOOL, "1", 0, 0, NULL,
	  "0 disables the pin-down cache: every lmm_cache_get registers" },
	{ "VIADUCT_LMM_CACHE_MAX_ENTRIES", PT_UINT, "4096", 1, 1u << 22, NULL,
	  "entries the pin-down cache keeps" },
	{ "VIADUCT_LMM_CACHE_MAX_BYTES", PT_SIZE,
	  "half of RLIMIT_MEMLOCK (a quarter of RAM when unlimited)", 0, 1ull << 50, NULL,
	  "bytes the pin-down cache keeps locked" },
	{ "VIADUCT_LMM_FORK", PT_CHOICE, "exclude", 0, 0, "exclude|keep",
	  "keep: a forked child keeps registered pages (the parent's page lists may go stale)" },
	{ "VIADUCT_PROVIDER", PT_STRING, "shm", 0, 0, NULL,
	  "the VIPL provider for device names that name none: shm, ofi or ofi:<libfabric provider>" },
	{ "VIADUCT_OFI_PROVIDER", PT_STRING, "(best for inter-host traffic)", 0, 0, NULL,
	  "the libfabric provider the ofi provider uses (tcp, verbs, efa, cxi, ...)" },
	{ "VIADUCT_OFI_IFACE", PT_STRING, "(first non-loopback)", 0, 0, NULL,
	  "network interface or address the ofi provider listens on" },
	{ "VIADUCT_OFI_PORT_BASE", PT_UINT, "20480", 1024, 61000, NULL,
	  "first port of the range where ofi connection listeners bind (4096 ports)" },
	{ "VIADUCT_OFI_TIMEOUT_MS", PT_UINT, "10000", 100, 3600000, NULL,
	  "how long an unanswered ofi peer counts as alive (ms)" },
	{ "VIADUCT_OFI_ZC_MIN", PT_SIZE, "65536", 0, 1ull << 40, NULL,
	  "from this size ofi transfers move by the fabric's RMA, without a copy (0: never)" },
	{ "VIADUCT_OFI_MR_LOCAL", PT_BOOL, "0", 0, 0, NULL,
	  "1: the ofi provider registers its local buffers as FI_MR_LOCAL fabrics need, on any fabric" },
	{ "VIADUCT_JOB_KEY", PT_STRING, "(key file)", 0, 0, NULL,
	  "secret shared by the processes of one job; else ~/.viaduct/job-key" },
	{ "VIADUCT_SHM_PIO_MAX", PT_SIZE, "8192", 0, 128 * KiB, NULL,
	  "largest message the shm provider sends inline in automatic mode" },
	{ "VIADUCT_SPIN_US", PT_UINT, "20", 0, 10000000, NULL,
	  "microseconds a *Wait call polls before it sleeps (default 20 on shm, 200 on ofi)" },
	{ "VIADUCT_VIPL_STRICT_PTAG", PT_BOOL, "0", 0, 0, NULL,
	  "1: a VI created with a NULL ptag gets the NIC's default ptag" },
	{ "VIADUCT_DEBUG", PT_BOOL, "0", 0, 0, NULL,
	  "1: log connection failures and protocol errors to stderr" },
	{ "VIADUCT_MPI_EAGER_MAX", PT_SIZE, "32728", 64, 32728, NULL,
	  "largest MPI message sent eagerly, through the VI's message ring" },
	{ "VIADUCT_MPI_NET_EAGER_MAX", PT_SIZE, "32728", 64, 32728, NULL,
	  "largest MPI message sent eagerly to a rank on another host" },
	/* The upper bound is VD_PIPE_LIMIT in src/mpi/proto.c. */
	{ "VIADUCT_MPI_PIPELINE_MAX", PT_SIZE, "131072", 0, 16ull << 20, NULL,
	  "up to this size the automatic protocol pipelines a message through the ring inside a host (0: never)" },
	{ "VIADUCT_MPI_NET_PIPELINE_MAX", PT_SIZE, "65536", 0, 16ull << 20, NULL,
	  "the pipelined limit for a rank on another host (0: only answers, up to "
	  "VIADUCT_MPI_NET_PIPELINE_TURN_MAX)" },
	{ "VIADUCT_MPI_NET_PIPELINE_TURN_MAX", PT_SIZE, "65536", 0, 16ull << 20, NULL,
	  "the pipelined limit for a rank on another host when the message answers one of that rank's "
	  "(nothing sent to it since its last message began; 0: never)" },
	{ "VIADUCT_MPI_NET_GET_MAX", PT_SIZE, "1048576", 0, 1ull << 40, NULL,
	  "to a rank on another host, larger messages up to this size go by get (the receiver reads), "
	  "above by rendezvous (the sender writes; 0: always rendezvous)" },
	{ "VIADUCT_MPI_TUNE", PT_BOOL, "1", 0, 0, NULL,
	  "0: keep the built-in switch points inside a host (ring to get, get to split) instead of measuring them at MPI_Init" },
	{ "VIADUCT_MPI_SPLIT_MIN", PT_SIZE, "262144", 0, 1ull << 40, NULL,
	  "from this size the automatic protocol splits a message (0: never)" },
	{ "VIADUCT_MPI_LARGE", PT_CHOICE, "get", 0, 0, "get|rndv|rendezvous",
	  "protocol above the eager limit" },
	{ "VIADUCT_MPI_PROTOCOL", PT_CHOICE, "auto", 0, 0, "auto|eager|get|rndv|rendezvous",
	  "force one protocol for every message" },
	{ "VIADUCT_MPI_NET", PT_CHOICE, "auto", 0, 0, "auto|shm|ofi",
	  "how MPI ranks reach each other: auto (shm inside a host, ofi between hosts), shm, ofi" },
	{ "VIADUCT_MPI_CONNECT", PT_CHOICE, "lazy", 0, 0, "lazy|eager",
	  "when MPI ranks connect: lazy (a pair on its first message), eager (every pair at MPI_Init)" },
	{ "VIADUCT_MPI_COLL_HIER", PT_BOOL, "1", 0, 0, NULL,
	  "0: collectives ignore the hosts (flat algorithms even across hosts)" },
	{ "VIADUCT_MPI_COLL_SHM", PT_BOOL, "1", 0, 0, NULL,
	  "0: node-local collectives go point to point instead of through a shared segment" },
	{ "VIADUCT_MPI_COLL_CROWDED", PT_CHOICE, "auto", 0, 0, "auto|no|yes",
	  "whether node-local collectives treat the host as crowded (its ranks outnumber its CPUs: larger "
	  "shared-segment steps, nothing read directly by Allgather and reductions): auto (count the CPUs), no, yes" },
	{ "VIADUCT_MPI_COLL_DIRECT_MIN", PT_UINT, "16384", 0, 1u << 30, NULL,
	  "from this many bytes a block, node-local Bcast, Allgather and Alltoall (Reduce and "
	  "Allreduce from four times as many) read each other's buffers directly (one copy) "
	  "instead of through the shared segment (0: never)" },
	{ "VIADUCT_PMIX_TIMEOUT_S", PT_UINT, "120", 1, 86400, NULL,
	  "how long a PMIx call (fence, get) may wait for the launcher's server, in seconds" },
	{ "VIADUCT_MPI_DEEP_RING_RANKS", PT_UINT, "16", 0, 1u << 20, NULL,
	  "ranks on a host up to which its shm connections get 512 KiB message rings instead of 128 KiB, and network peers (the most any rank has) up to which the job's ofi connections do (0: never)" },
	{ "VIADUCT_MPI_SPIN_US", PT_UINT, "20", 0, 10000000, NULL,
	  "how long an MPI wait polls before it sleeps, in us (default 20; 1 when the host's ranks outnumber its CPUs, and then node-local collectives yield at once unless this is set)" },
	{ "VIADUCT_MPI_SPIN_XFER_US", PT_UINT, "1000", 0, 10000000, NULL,
	  "how long an MPI wait polls after a message from another host, in us, and eight times that without a completion while a transfer across hosts is under way (default 1000; the plain budget, either way, when the host's ranks outnumber its CPUs)" },
	{ "VIADUCT_MPI_PIN", PT_BOOL, "0", 0, 0, NULL,
	  "1: pin MPI message buffers (RLIMIT_MEMLOCK then limits them)" },
	{ "VIADUCT_MPI_REGCACHE_BYTES", PT_SIZE,
	  "64 MiB (a quarter of RLIMIT_MEMLOCK without CAP_IPC_LOCK)", 0, 1ull << 50, NULL,
	  "bytes of MPI message buffers kept registered" },
	{ "VIADUCT_CC", PT_STRING, "cc", 0, 0, NULL,
	  "the C compiler vdcc runs" },
	{ "VIADUCT_CXX", PT_STRING, "c++", 0, 0, NULL,
	  "the C++ compiler vdcxx runs" },
	{ "VIADUCT_FC", PT_STRING, "gfortran", 0, 0, NULL,
	  "the Fortran compiler vdfort runs" },
	{ "VIADUCT_RSH", PT_STRING, "ssh", 0, 0, NULL,
	  "the command vdrun reaches other hosts with, as 'CMD host command...'" },
	{ "VIADUCT_VDRUN_TIMEOUT", PT_UINT, "30", 1, 86400, NULL,
	  "seconds a remote host has to connect back to vdrun" },
	{ "VIADUCT_VDRUN_LINK_TIMEOUT", PT_UINT, "2", 2, 3600, NULL,
	  "seconds of silence after which vdrun and a host's proxy count their link lost" },
	{ "VIADUCT_BUILD", PT_STRING, "(unset)", 0, 0, NULL,
	  "the build tree, for the test programs" },
	{ "VIADUCT_MPI_EAGER_TABLE_MAX", PT_SIZE, "32728", 64, 32728, NULL,
	  "bench/mpi: the largest size of the forced-eager column" },
};
#define NPARAMS (sizeof(params) / sizeof(params[0]))

static const struct param *find(const char *name)
{
	for (size_t i = 0; i < NPARAMS; i++)
		if (!strcmp(params[i].name, name))
			return &params[i];
	return NULL;
}

/* ---- parsing ------------------------------------------------------------------ */

static int parse_bool(const char *v)
{
	static const char *const yes[] = { "1", "yes", "true", "on" };
	static const char *const no[] = { "0", "no", "false", "off" };

	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(v, yes[i]))
			return 1;
		if (!strcasecmp(v, no[i]))
			return 0;
	}
	return -1;
}

/* Decimal or 0x hex, for sizes with an optional k, m or g (binary). */
static int parse_uint(const char *v, bool size, uint64_t *out)
{
	char *end;
	unsigned long long x;
	uint64_t mul = 1;

	if (!isdigit((unsigned char)v[0]))
		return -EINVAL;
	errno = 0;
	x = strtoull(v, &end, 0);
	if (errno)
		return -EINVAL;
	if (size && *end && !end[1]) {
		char c = (char)tolower((unsigned char)*end);
		mul = c == 'k' ? KiB : c == 'm' ? MiB : c == 'g' ? GiB : 0;
		end += mul != 0;
	}
	if (*end || !mul || x > UINT64_MAX / mul)
		return -EINVAL;
	*out = x * mul;
	return 0;
}

/* Index of v in "a|b|c", or -1. */
static int parse_choice(const char *choices, const char *v)
{
	size_t n = strlen(v);
	int i = 0;

	for (const char *p = choices; *p; i++) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);

		if (len == n && !strncmp(p, v, n))
			return i;
		if (!bar)
			break;
		p = bar + 1;
	}
	return -1;
}

static void allowed(const struct param *p, char *buf, size_t len)
{
	switch (p->type) {
	case PT_BOOL:
		snprintf(buf, len, "0 or 1 (also no/yes, false/true, off/on)");
		break;
	case PT_UINT:
		snprintf(buf, len, "an integer from %" PRIu64 " to %" PRIu64, p->min, p->max);
		break;
	case PT_SIZE:
		snprintf(buf, len, "a size from %" PRIu64 " to %" PRIu64
			 " bytes (k, m, g suffixes allowed)", p->min, p->max);
		break;
	case PT_CHOICE:
		snprintf(buf, len, "one of %s", p->choices);
		break;
	case PT_STRING:
		snprintf(buf, len, "any text");
		break;
	}
}

/* Messages about one variable are printed once per process. */
static pthread_mutex_t said_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct param *said[NPARAMS];
static size_t nsaid;

static int refuse(const struct param *p, const char *v)
{
	char buf[160];
	bool first = true;

	pthread_mutex_lock(&said_lock);
	for (size_t i = 0; i < nsaid; i++)
		first &= said[i] != p;
	if (first && nsaid < NPARAMS)
		said[nsaid++] = p;
	pthread_mutex_unlock(&said_lock);
	if (first) {
		allowed(p, buf, sizeof(buf));
		fprintf(stderr, "viaduct: %s='%s' is not valid: %s is %s\n", p->name, v, p->name,
			buf);
	}
	return -EINVAL;
}

/* The value of a set, declared variable, checked: 0, -EINVAL, or 1 when
 * unset. */
static int lookup(const struct param *p, uint64_t *num)
{
	const char *v = getenv(p->name);
	int r;

	if (!v || !*v)
		return 1;
	switch (p->type) {
	case PT_BOOL:
		r = parse_bool(v);
		break;
	case PT_UINT:
	case PT_SIZE:
		r = parse_uint(v, p->type == PT_SIZE, num);
		if (!r && (*num < p->min || *num > p->max))
			r = -EINVAL;
		return r ? refuse(p, v) : 0;
	case PT_CHOICE:
		r = parse_choice(p->choices, v);
		break;
	default:
		return 0;
	}
	if (r < 0)
		return refuse(p, v);
	*num = (uint64_t)r;
	return 0;
}

int viaduct_param_uint(const char *name, uint64_t dflt, uint64_t *value)
{
	const struct param *p = find(name);
	uint64_t v = 0;
	int r;

	if (!p || !value)
		return -ENOENT;
	r = lookup(p, &v);
	if (r < 0)
		return r;
	*value = r ? dflt : v;
	return 0;
}

/* ---- unknown names --------------------------------------------------------------- */

static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[64], prev, tmp;

	if (lb >= 64)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			tmp = row[j];
			row[j] = a[i - 1] == b[j - 1] ? prev
				 : 1 + (prev < row[j] ? (prev < row[j - 1] ? prev : row[j - 1])
						      : (row[j] < row[j - 1] ? row[j] : row[j - 1]));
			prev = tmp;
		}
	}
	return row[lb];
}

static void warn_unknown(const char *name)
{
	size_t best = SIZE_MAX, d;
	const char *closest = NULL;

	for (size_t i = 0; i < NPARAMS; i++) {
		d = distance(name, params[i].name);
		if (d < best) {
			best = d;
			closest = params[i].name;
		}
	}
	fprintf(stderr, "viaduct: warning: %s is not a viaduct variable and has no effect"
		"%s%s%s (vdinfo --params lists them)\n", name,
		best <= 4 ? "; did you mean " : "", best <= 4 ? closest : "", best <= 4 ? "?" : "");
}

extern char **environ;

static pthread_once_t unknown_once = PTHREAD_ONCE_INIT;

static void check_unknown(void)
{
	char name[128];

	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		size_t n = eq ? (size_t)(eq - *e) : strlen(*e);

		if (strncmp(*e, "VIADUCT_", 8) || n >= sizeof(name))
			continue;
		memcpy(name, *e, n);
		name[n] = '\0';
		if (!find(name))
			warn_unknown(name);
	}
}

int viaduct_params_check(void)
{
	int err = 0;
	uint64_t v;

	pthread_once(&unknown_once, check_unknown);
	for (size_t i = 0; i < NPARAMS; i++)
		if (lookup(&params[i], &v) < 0)
			err = -EINVAL;
	return err;
}

/* ---- listing ------------------------------------------------------------------------- */

static const char *type_name(enum ptype t)
{
	static const char *const names[] = { "bool", "integer", "size", "choice", "string" };

	return names[t];
}

int viaduct_param_count(void)
{
	return (int)NPARAMS;
}

int viaduct_param_info(int index, struct viaduct_param *out)
{
	static __thread char range[160];
	const struct param *p;

	if (index < 0 || (size_t)index >= NPARAMS || !out)
		return -EINVAL;
	p = &params[index];
	allowed(p, range, sizeof(range));
	out->name = p->name;
	out->type = type_name(p->type);
	out->dflt = p->dflt;
	out->range = range;
	out->desc = p->desc;
	out->value = getenv(p->name);
	return 0;
}
