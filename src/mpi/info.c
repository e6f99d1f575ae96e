/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: info objects.  An info is an ordered list of (key, value)
 * strings -- Info_get_nthkey counts in the order keys were first set --
 * behind a handle into a table that grows on demand: 0 = MPI_INFO_NULL,
 * 1 = MPI_INFO_ENV (predefined, never freed, filled at first use).
 *
 * Info objects do not belong to a communicator, so errors are raised on
 * MPI_COMM_WORLD.  They may be used before MPI_Init (MPI-4.0 11.2.1),
 * so no function here insists on a running library.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_arg.h"

struct info_entry {
	char *key, *value;
};

struct vd_info {
	int n, cap;
	struct info_entry *e;
};

static struct vd_info **infos;          /* [handle] */
static int ninfos;
static struct vd_info info_env;
static bool env_filled;

static int raise_info(int code, const char *fn)
{
	return vd_mpi_raise(MPI_COMM_WORLD, code, fn);
}

static int info_put(struct vd_info *in, const char *key, const char *value);

/* MPI_INFO_ENV: what the job was started with (MPI-4.0 11.4.1). */
static void fill_env(void)
{
	char v[32];

	if (env_filled || vd_mpi.phase != VD_MPI_RUNNING)
		return;
	env_filled = true;
	snprintf(v, sizeof(v), "%d", vd_mpi.size);
	info_put(&info_env, "maxprocs", v);     /* absent if out of memory */
}

static struct vd_info *info_get(MPI_Info h)
{
	if (h == MPI_INFO_ENV) {
		fill_env();
		return &info_env;
	}
	if (h <= MPI_INFO_ENV || h >= ninfos)
		return NULL;
	return infos[h];
}

static int slot_alloc(void)
{
	struct vd_info **n;
	int i, cap;

	for (i = MPI_INFO_ENV + 1; i < ninfos; i++)
		if (!infos[i])
			return i;
	cap = ninfos ? 2 * ninfos : 16;
	if (!(n = realloc(infos, (size_t)cap * sizeof(*n))))
		return -ENOMEM;
	memset(n + ninfos, 0, (size_t)(cap - ninfos) * sizeof(*n));
	infos = n;
	i = ninfos > MPI_INFO_ENV + 1 ? ninfos : MPI_INFO_ENV + 1;
	ninfos = cap;
	return i;
}

static void info_clear(struct vd_info *in)
{
	for (int i = 0; i < in->n; i++) {
		free(in->e[i].key);
		free(in->e[i].value);
	}
	free(in->e);
	memset(in, 0, sizeof(*in));
}

static int find(const struct vd_info *in, const char *key)
{
	for (int i = 0; i < in->n; i++)
		if (!strcmp(in->e[i].key, key))
			return i;
	return -1;
}

/* Set key to value (both copied).  0 or -ENOMEM. */
static int info_put(struct vd_info *in, const char *key, const char *value)
{
	int i = find(in, key);
	char *v = strdup(value);

	if (!v)
		return -ENOMEM;
	if (i >= 0) {
		free(in->e[i].value);
		in->e[i].value = v;
		return 0;
	}
	if (in->n == in->cap) {
		int cap = in->cap ? 2 * in->cap : 8;
		struct info_entry *e = realloc(in->e, (size_t)cap * sizeof(*e));

		if (!e) {
			free(v);
			return -ENOMEM;
		}
		in->e = e;
		in->cap = cap;
	}
	if (!(in->e[in->n].key = strdup(key))) {
		free(v);
		return -ENOMEM;
	}
	in->e[in->n++].value = v;
	return 0;
}

/* A new empty info in *out: 0 or -ENOMEM. */
static int info_new(MPI_Info *out)
{
	struct vd_info *in = calloc(1, sizeof(*in));
	int h = in ? slot_alloc() : -ENOMEM;

	if (h < 0) {
		free(in);
		return h;
	}
	infos[h] = in;
	*out = h;
	return 0;
}

int vd_info_copy(MPI_Info from, MPI_Info *out)
{
	const struct vd_info *src = from == MPI_INFO_NULL ? NULL : info_get(from);
	int err;

	if (from != MPI_INFO_NULL && !src)
		return -EINVAL;
	if ((err = info_new(out)))
		return err;
	for (int i = 0; src && i < src->n && !err; i++)
		err = info_put(infos[*out], src->e[i].key, src->e[i].value);
	if (err)
		vd_info_release(out);
	return err;
}

void vd_info_release(MPI_Info *h)
{
	struct vd_info *in = *h > MPI_INFO_ENV ? info_get(*h) : NULL;

	if (in) {
		info_clear(in);
		free(in);
		infos[*h] = NULL;
	}
	*h = MPI_INFO_NULL;
}

void vd_info_finalize(void)
{
	for (int i = MPI_INFO_ENV + 1; i < ninfos; i++) {
		MPI_Info h = i;

		vd_info_release(&h);
	}
	free(infos);
	infos = NULL;
	ninfos = 0;
	info_clear(&info_env);
	env_filled = false;
}

/* A valid info (and out not NULL): MPI_SUCCESS, else raised. */
static int info_arg(MPI_Info h, const void *out, const char *fn, struct vd_info **in)
{
	if (!(*in = info_get(h)))
		return raise_info(MPI_ERR_INFO, fn);
	return out ? MPI_SUCCESS : raise_info(MPI_ERR_ARG, fn);
}

/* A key to look up or set: MPI_SUCCESS or the class. */
static int key_check(const char *key)
{
	if (!key)
		return MPI_ERR_ARG;
	size_t n = strnlen(key, MPI_MAX_INFO_KEY);
	return n == 0 || n >= MPI_MAX_INFO_KEY ? MPI_ERR_INFO_KEY : MPI_SUCCESS;
}

#pragma weak MPI_Info_create = PMPI_Info_create
int PMPI_Info_create(MPI_Info *info)
{
	VD_API_GUARD();
	if (!info)
		return raise_info(MPI_ERR_ARG, "MPI_Info_create");
	return raise_info(vd_mpi_errno(info_new(info)), "MPI_Info_create");
}

#pragma weak MPI_Info_set = PMPI_Info_set
int PMPI_Info_set(MPI_Info info, const char *key, const char *value)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Info_set";
	struct vd_info *in;
	int err = info_arg(info, value, fn, &in);

	if (err)
		return err;
	if ((err = key_check(key)))
		return raise_info(err, fn);
	if (!*value || strnlen(value, MPI_MAX_INFO_VAL) >= MPI_MAX_INFO_VAL)
		return raise_info(MPI_ERR_INFO_VALUE, fn);
	return raise_info(vd_mpi_errno(info_put(in, key, value)), fn);
}

#pragma weak MPI_Info_delete = PMPI_Info_delete
int PMPI_Info_delete(MPI_Info info, const char *key)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Info_delete";
	struct vd_info *in;
	int err = info_arg(info, key, fn, &in), i;

	if (err)
		return err;
	if ((err = key_check(key)))
		return raise_info(err, fn);
	if ((i = find(in, key)) < 0)
		return raise_info(MPI_ERR_INFO_NOKEY, fn);
	free(in->e[i].key);
	free(in->e[i].value);
	memmove(&in->e[i], &in->e[i + 1], (size_t)(in->n - i - 1) * sizeof(in->e[0]));
	in->n--;
	return MPI_SUCCESS;
}

/* Look key up for the getters: its entry index or -1 in *i. */
static int lookup(MPI_Info info, const char *key, const void *out, const char *fn,
		  struct vd_info **in, int *i)
{
	int err = info_arg(info, out, fn, in);

	if (err)
		return err;
	if ((err = key_check(key)))
		return raise_info(err, fn);
	*i = find(*in, key);
	return MPI_SUCCESS;
}

/* Copy at most maxlen characters of src and a terminator into dst. */
static void copy_out(char *dst, const char *src, int maxlen)
{
	size_t n = strlen(src);

	if (n > (size_t)maxlen)
		n = (size_t)maxlen;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

#pragma weak MPI_Info_get = PMPI_Info_get
int PMPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Info_get";
	struct vd_info *in;
	int i, err = lookup(info, key, flag, fn, &in, &i);

	if (err)
		return err;
	if (valuelen < 0 || !value)
		return raise_info(MPI_ERR_ARG, fn);
	*flag = i >= 0;
	if (i >= 0)
		copy_out(value, in->e[i].value, valuelen);
	return MPI_SUCCESS;
}

/* MPI-4: *buflen in is the buffer's size (terminator included); out the
 * value's length plus one, so a caller with a short buffer learns what
 * it needs. */
#pragma weak MPI_Info_get_string = PMPI_Info_get_string
int PMPI_Info_get_string(MPI_Info info, const char *key, int *buflen, char *value, int *flag)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Info_get_string";
	struct vd_info *in;
	int i, err = lookup(info, key, flag, fn, &in, &i);

	if (err)
		return err;
	if (!buflen || *buflen < 0 || (*buflen > 0 && !value))
		return raise_info(MPI_ERR_ARG, fn);
	*flag = i >= 0;
	if (i < 0)
		return MPI_SUCCESS;
	if (*buflen > 0)
		copy_out(value, in->e[i].value, *buflen - 1);
	*buflen = (int)strlen(in->e[i].value) + 1;
	return MPI_SUCCESS;
}

#pragma weak MPI_Info_get_valuelen = PMPI_Info_get_valuelen
int PMPI_Info_get_valuelen(MPI_Info info, const char *key, int *valuelen, int *flag)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Info_get_valuelen";
	struct vd_info *in;
	int i, err = lookup(info, key, flag, fn, &in, &i);

	if (err)
		return err;
	if (!valuelen)
		return raise_info(MPI_ERR_ARG, fn);
	*flag = i >= 0;
	if (i >= 0)
		*valuelen = (int)strlen(in->e[i].value);
	return MPI_SUCCESS;
}

#pragma weak MPI_Info_get_nkeys = PMPI_Info_get_nkeys
int PMPI_Info_get_nkeys(MPI_Info info, int *nkeys)
{
	VD_API_GUARD();
	struct vd_info *in;
	int err = info_arg(info, nkeys, "MPI_Info_get_nkeys", &in);

	if (!err)
		*nkeys = in->n;
	return err;
}

#pragma weak MPI_Info_get_nthkey = PMPI_Info_get_nthkey
int PMPI_Info_get_nthkey(MPI_Info info, int n, char *key)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Info_get_nthkey";
	struct vd_info *in;
	int err = info_arg(info, key, fn, &in);

	if (err)
		return err;
	if (n < 0 || n >= in->n)
		return raise_info(MPI_ERR_ARG, fn);
	copy_out(key, in->e[n].key, MPI_MAX_INFO_KEY - 1);
	return MPI_SUCCESS;
}

#pragma weak MPI_Info_dup = PMPI_Info_dup
int PMPI_Info_dup(MPI_Info info, MPI_Info *newinfo)
{
	VD_API_GUARD();
	struct vd_info *in;
	int err = info_arg(info, newinfo, "MPI_Info_dup", &in);

	if (err)
		return err;
	return raise_info(vd_mpi_errno(vd_info_copy(info, newinfo)), "MPI_Info_dup");
}

#pragma weak MPI_Info_free = PMPI_Info_free
int PMPI_Info_free(MPI_Info *info)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Info_free";

	if (!info)
		return raise_info(MPI_ERR_ARG, fn);
	if (*info <= MPI_INFO_ENV || !info_get(*info))
		return raise_info(MPI_ERR_INFO, fn);
	vd_info_release(info);
	return MPI_SUCCESS;
}
