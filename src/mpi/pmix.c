/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: the PMIx client, for launchers that speak PMIx only --
 * srun --mpi=pmix (many sites' default), Open MPI's mpirun, PRRTE.
 * pmi.c calls it when the environment names a PMIx server
 * (PMIX_NAMESPACE) and there is no PMI-1 socket.
 *
 * libpmix is opened at run time (dlopen of libpmix.so.2), not linked:
 * programs and static links need no PMIx library, and a rank started by
 * a PMIx launcher on a machine without one fails with a message that
 * says so.  Only the ABI-stable calls are used, with plain structs built
 * here (the header's macros call into the library).
 *
 * Keys put by rank r are read from rank r (PMIx keys belong to their
 * putter); puts are global in scope, and a fence collects them.  Every
 * blocking call carries a timeout (VIADUCT_PMIX_TIMEOUT_S, default 120 s):
 * the server is another process.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pmix.h>

#include "mpi_internal.h"
#include "pmix_client.h"

#define PMIX_LIB "libpmix.so.2"

static struct {
	void *lib;
	pmix_status_t (*init)(pmix_proc_t *, pmix_info_t *, size_t);
	pmix_status_t (*finalize)(const pmix_info_t *, size_t);
	pmix_status_t (*abort)(int, const char *, pmix_proc_t *, size_t);
	pmix_status_t (*put)(pmix_scope_t, const char *, pmix_value_t *);
	pmix_status_t (*commit)(void);
	pmix_status_t (*fence)(const pmix_proc_t *, size_t, const pmix_info_t *, size_t);
	pmix_status_t (*get)(const pmix_proc_t *, const char *, const pmix_info_t *, size_t,
			     pmix_value_t **);
	void (*value_destruct)(pmix_value_t *);
	const char *(*error_string)(pmix_status_t);
	pmix_proc_t me;
	int timeout_s;
	bool up;
} X;

static int pmix_load(void)
{
	X.lib = dlopen(PMIX_LIB, RTLD_NOW | RTLD_LOCAL);
	if (!X.lib)
		return -ENOENT;
	*(void **)&X.init = dlsym(X.lib, "PMIx_Init");
	*(void **)&X.finalize = dlsym(X.lib, "PMIx_Finalize");
	*(void **)&X.abort = dlsym(X.lib, "PMIx_Abort");
	*(void **)&X.put = dlsym(X.lib, "PMIx_Put");
	*(void **)&X.commit = dlsym(X.lib, "PMIx_Commit");
	*(void **)&X.fence = dlsym(X.lib, "PMIx_Fence");
	*(void **)&X.get = dlsym(X.lib, "PMIx_Get");
	*(void **)&X.value_destruct = dlsym(X.lib, "PMIx_Value_destruct");
	*(void **)&X.error_string = dlsym(X.lib, "PMIx_Error_string");
	if (!X.init || !X.finalize || !X.abort || !X.put || !X.commit || !X.fence ||
	    !X.get || !X.value_destruct || !X.error_string)
		return -ENOSYS;
	return 0;
}

static int pmix_fail(pmix_status_t rc, const char *what)
{
	fprintf(stderr, "viaduct PMIx: %s: %s\n", what,
		X.error_string ? X.error_string(rc) : "error");
	return -EPROTO;
}

static void info_timeout(pmix_info_t *i)
{
	memset(i, 0, sizeof(*i));
	snprintf(i->key, sizeof(i->key), "%s", PMIX_TIMEOUT);
	i->value.type = PMIX_INT;
	i->value.data.integer = X.timeout_s;
}

static void info_flag(pmix_info_t *i, const char *key)
{
	memset(i, 0, sizeof(*i));
	snprintf(i->key, sizeof(i->key), "%s", key);
	i->value.type = PMIX_BOOL;
	i->value.data.flag = true;
}

/* A value of rank `rank` (PMIX_RANK_WILDCARD: the job's), or NULL. */
static pmix_value_t *get_value(pmix_rank_t rank, const char *key, pmix_status_t *rc)
{
	pmix_proc_t p = X.me;
	pmix_info_t info;
	pmix_value_t *v = NULL;

	p.rank = rank;
	info_timeout(&info);
	*rc = X.get(&p, key, &info, 1, &v);
	return *rc == PMIX_SUCCESS ? v : NULL;
}

static void value_free(pmix_value_t *v)
{
	if (v) {
		X.value_destruct(v);
		free(v);
	}
}

static int job_size(int *size)
{
	pmix_status_t rc;
	pmix_value_t *v = get_value(PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, &rc);
	int err = 0;

	if (!v)
		return pmix_fail(rc, "the job size");
	if (v->type == PMIX_UINT32 && v->data.uint32 >= 1 && v->data.uint32 <= (1u << 20))
		*size = (int)v->data.uint32;
	else
		err = pmix_fail(PMIX_ERR_BAD_PARAM, "the job size the server gave");
	value_free(v);
	return err;
}

int vd_pmix_init(int *rank, int *size, char *nspace, size_t nspace_len)
{
	uint64_t t = 120;
	pmix_status_t rc;
	int err;

	(void)viaduct_param_uint("VIADUCT_PMIX_TIMEOUT_S", 120, &t);
	X.timeout_s = (int)t;
	if ((err = pmix_load())) {
		fprintf(stderr, "viaduct PMIx: this program was started by a PMIx launcher "
			"(PMIX_NAMESPACE is set), but %s cannot be loaded (%s); install it "
			"(Debian: libpmix2)\n", PMIX_LIB, err == -ENOENT ? dlerror() : "too old");
		return -EPROTONOSUPPORT;
	}
	if ((rc = X.init(&X.me, NULL, 0)) != PMIX_SUCCESS)
		return pmix_fail(rc, "PMIx_Init (is the launcher's PMIx server reachable?)");
	X.up = true;
	if (X.me.rank > (1u << 20))
		return pmix_fail(PMIX_ERR_BAD_PARAM, "the rank the server gave");
	if ((err = job_size(size)))
		return err;
	*rank = (int)X.me.rank;
	if (*rank >= *size)
		return pmix_fail(PMIX_ERR_BAD_PARAM, "a rank outside the job");
	snprintf(nspace, nspace_len, "%s", X.me.nspace);
	return 0;
}

int vd_pmix_put(const char *key, const char *value)
{
	pmix_value_t v = { 0 };
	pmix_status_t rc;

	v.type = PMIX_STRING;
	v.data.string = (char *)value;  /* copied by PMIx_Put */
	rc = X.put(PMIX_GLOBAL, key, &v);
	return rc == PMIX_SUCCESS ? 0 : pmix_fail(rc, "PMIx_Put");
}

int vd_pmix_fence(void)
{
	pmix_info_t info[2];
	pmix_status_t rc = X.commit();

	if (rc != PMIX_SUCCESS)
		return pmix_fail(rc, "PMIx_Commit");
	info_flag(&info[0], PMIX_COLLECT_DATA);
	info_timeout(&info[1]);
	rc = X.fence(NULL, 0, info, 2);         /* NULL: every process of the job */
	return rc == PMIX_SUCCESS ? 0 : pmix_fail(rc, "PMIx_Fence");
}

int vd_pmix_get(int from, const char *key, char *value, size_t len)
{
	pmix_status_t rc;
	pmix_value_t *v = get_value(from < 0 ? PMIX_RANK_UNDEF : (pmix_rank_t)from, key, &rc);
	int err = 0;

	if (!v)
		return rc == PMIX_ERR_NOT_FOUND ? -ENOENT : pmix_fail(rc, "PMIx_Get");
	if (v->type != PMIX_STRING || !v->data.string)
		err = pmix_fail(PMIX_ERR_BAD_PARAM, "a value that is not a string");
	else if (strlen(v->data.string) >= len)
		err = -EOVERFLOW;
	else
		memcpy(value, v->data.string, strlen(v->data.string) + 1);
	value_free(v);
	return err;
}

/* PMIX_APPNUM comes as an unsigned or a signed int depending on the
 * server (PRRTE: uint32, Slurm: int); -1 for anything else. */
static int appnum_of(const pmix_value_t *v)
{
	if (v->type == PMIX_UINT32 && v->data.uint32 <= INT_MAX)
		return (int)v->data.uint32;
	if (v->type == PMIX_INT && v->data.integer >= 0)
		return v->data.integer;
	if (v->type == PMIX_UINT16)
		return v->data.uint16;
	return -1;
}

int vd_pmix_appnum(void)
{
	/* Optional: a server without the key answers at once rather than
	 * after the timeout. */
	pmix_info_t info[2];
	pmix_value_t *v = NULL;
	int appnum = -1;

	info_timeout(&info[0]);
	info_flag(&info[1], PMIX_OPTIONAL);
	if (X.get(&X.me, PMIX_APPNUM, info, 2, &v) == PMIX_SUCCESS && v)
		appnum = appnum_of(v);
	value_free(v);
	return appnum;
}

void vd_pmix_finalize(void)
{
	if (X.up)
		(void)X.finalize(NULL, 0);
	X.up = false;
}

void vd_pmix_abort(int code, const char *msg)
{
	/* NULL procs: the whole job.  The server kills us too. */
	if (X.up)
		(void)X.abort(code, msg ? msg : "MPI_Abort", NULL, 0);
}
