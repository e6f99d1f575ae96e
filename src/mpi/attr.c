/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: communicator names, attribute keys and cached attributes.
 *
 * Keyvals are handles into a table; the predefined ones (MPI_TAG_UB ...
 * MPI_APPNUM, below VD_KEYVAL_FIRST_USER) are not in it: their values live
 * on MPI_COMM_WORLD only and are computed when asked.  A user keyval
 * counts one reference for its handle and one per attribute that uses it,
 * so MPI_Comm_free_keyval while attributes remain leaves their delete
 * callbacks working (MPI-4.0 7.7.2).
 *
 * A communicator's attributes are a list in the order they were first set;
 * Comm_dup copies them in that order through the copy callbacks, Comm_free
 * deletes them through the delete callbacks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "comm_arg.h"
#include "errh_user.h"

#define VD_KEYVAL_FIRST_USER 16

struct keyval {
	MPI_Comm_copy_attr_function *copy;
	MPI_Comm_delete_attr_function *del;
	void *extra;
	int refs;                       /* 0: free slot */
	bool freed;                     /* the handle is gone */
};

struct vd_attr {
	int keyval;
	void *value;
	struct vd_attr *next;
};

static struct keyval *keyvals;          /* [handle - VD_KEYVAL_FIRST_USER] */
static int nkeyvals;

static struct keyval *keyval_get(int k)
{
	int i = k - VD_KEYVAL_FIRST_USER;

	if (i < 0 || i >= nkeyvals || keyvals[i].refs == 0)
		return NULL;
	return &keyvals[i];
}

/* A keyval the program may still name (not freed). */
static struct keyval *keyval_live(int k)
{
	struct keyval *kv = keyval_get(k);

	return kv && !kv->freed ? kv : NULL;
}

static void keyval_release(int k)
{
	struct keyval *kv = keyval_get(k);

	if (kv && --kv->refs == 0)
		memset(kv, 0, sizeof(*kv));
}

static bool predefined_keyval(int k)
{
	return k >= MPI_TAG_UB && k <= MPI_APPNUM;
}

/* ---- predefined callbacks ---------------------------------------------- */

#pragma weak MPI_COMM_NULL_COPY_FN = PMPI_COMM_NULL_COPY_FN
int PMPI_COMM_NULL_COPY_FN(MPI_Comm oldcomm, int keyval, void *extra_state,
			  void *attribute_val_in, void *attribute_val_out, int *flag)
{
	(void)oldcomm, (void)keyval, (void)extra_state, (void)attribute_val_in;
	(void)attribute_val_out;
	*flag = 0;
	return MPI_SUCCESS;
}

#pragma weak MPI_COMM_DUP_FN = PMPI_COMM_DUP_FN
int PMPI_COMM_DUP_FN(MPI_Comm oldcomm, int keyval, void *extra_state,
		    void *attribute_val_in, void *attribute_val_out, int *flag)
{
	(void)oldcomm, (void)keyval, (void)extra_state;
	*(void **)attribute_val_out = attribute_val_in;
	*flag = 1;
	return MPI_SUCCESS;
}

#pragma weak MPI_COMM_NULL_DELETE_FN = PMPI_COMM_NULL_DELETE_FN
int PMPI_COMM_NULL_DELETE_FN(MPI_Comm comm, int keyval, void *attribute_val,
			    void *extra_state)
{
	(void)comm, (void)keyval, (void)attribute_val, (void)extra_state;
	return MPI_SUCCESS;
}

/* ---- keyvals --------------------------------------------------------------- */

static int keyval_slot(void)
{
	struct keyval *n;
	int cap, first_new = nkeyvals;

	for (int i = 0; i < nkeyvals; i++)
		if (keyvals[i].refs == 0)
			return i;
	cap = nkeyvals ? 2 * nkeyvals : 16;
	if (!(n = realloc(keyvals, (size_t)cap * sizeof(*n))))
		return -ENOMEM;
	memset(n + nkeyvals, 0, (size_t)(cap - nkeyvals) * sizeof(*n));
	keyvals = n;
	nkeyvals = cap;
	return first_new;
}

#pragma weak MPI_Comm_create_keyval = PMPI_Comm_create_keyval
int PMPI_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn,
			    MPI_Comm_delete_attr_function *comm_delete_attr_fn,
			    int *comm_keyval, void *extra_state)
{
	static const char fn[] = "MPI_Comm_create_keyval";
	int i;

	VD_MPI_CHECK_RUNNING(fn);
	if (!comm_keyval)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn);
	if ((i = keyval_slot()) < 0)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_NO_MEM, fn);
	/* NULL callbacks act as the null ones. */
	keyvals[i].copy = comm_copy_attr_fn ? comm_copy_attr_fn : PMPI_COMM_NULL_COPY_FN;
	keyvals[i].del = comm_delete_attr_fn ? comm_delete_attr_fn : PMPI_COMM_NULL_DELETE_FN;
	keyvals[i].extra = extra_state;
	keyvals[i].refs = 1;
	*comm_keyval = VD_KEYVAL_FIRST_USER + i;
	return MPI_SUCCESS;
}

#pragma weak MPI_Comm_free_keyval = PMPI_Comm_free_keyval
int PMPI_Comm_free_keyval(int *comm_keyval)
{
	static const char fn[] = "MPI_Comm_free_keyval";

	VD_MPI_CHECK_RUNNING(fn);
	if (!comm_keyval)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn);
	if (!keyval_live(*comm_keyval))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_KEYVAL, fn);
	keyval_get(*comm_keyval)->freed = true;
	keyval_release(*comm_keyval);
	*comm_keyval = MPI_KEYVAL_INVALID;
	return MPI_SUCCESS;
}

/* ---- attributes ------------------------------------------------------------ */

static struct vd_attr **attr_find(struct vd_comm *c, int keyval)
{
	struct vd_attr **pp = &c->attrs;

	while (*pp && (*pp)->keyval != keyval)
		pp = &(*pp)->next;
	return pp;
}

/* Run the delete callback of *pp and unlink it.  The callback's code. */
static int attr_remove(MPI_Comm comm, struct vd_attr **pp)
{
	struct vd_attr *a = *pp;
	struct keyval *kv = keyval_get(a->keyval);
	int rc = kv->del(comm, a->keyval, a->value, kv->extra);

	if (rc != MPI_SUCCESS)
		return rc;
	*pp = a->next;
	keyval_release(a->keyval);
	free(a);
	return MPI_SUCCESS;
}

/* Store value under keyval (no callbacks): 0 or -ENOMEM. */
static int attr_store(struct vd_comm *c, int keyval, void *value)
{
	struct vd_attr **pp = attr_find(c, keyval), *a;

	if (*pp) {
		(*pp)->value = value;
		return 0;
	}
	if (!(a = calloc(1, sizeof(*a))))
		return -ENOMEM;
	a->keyval = keyval;
	a->value = value;
	*pp = a;
	keyval_get(keyval)->refs++;
	return 0;
}

int vd_attr_copy_all(MPI_Comm from, struct vd_comm *f, MPI_Comm to, struct vd_comm *t)
{
	(void)to;
	for (struct vd_attr *a = f->attrs; a; a = a->next) {
		struct keyval *kv = keyval_get(a->keyval);
		void *out = NULL;
		int flag = 0, rc = kv->copy(from, a->keyval, kv->extra, a->value, &out, &flag);

		if (rc != MPI_SUCCESS)
			return rc;
		if (flag && attr_store(t, a->keyval, out))
			return MPI_ERR_NO_MEM;
	}
	return MPI_SUCCESS;
}

int vd_attr_delete_all(MPI_Comm comm, struct vd_comm *c)
{
	int rc = MPI_SUCCESS;

	while (c->attrs && rc == MPI_SUCCESS)
		rc = attr_remove(comm, &c->attrs);
	return rc;
}

void vd_attr_discard(struct vd_comm *c)
{
	while (c->attrs) {
		struct vd_attr *a = c->attrs;

		c->attrs = a->next;
		keyval_release(a->keyval);
		free(a);
	}
}

void vd_attr_finalize(void)
{
	free(keyvals);
	keyvals = NULL;
	nkeyvals = 0;
}

/* comm and keyval as the attribute calls need them: MPI_SUCCESS or raised. */
static int attr_arg(MPI_Comm comm, int keyval, const char *fn, struct vd_comm **c)
{
	int err = vd_comm_arg(comm, &keyval, fn, c);

	if (!err && !keyval_live(keyval))
		err = vd_mpi_raise(comm, MPI_ERR_KEYVAL, fn);
	return err;
}

#pragma weak MPI_Comm_set_attr = PMPI_Comm_set_attr
int PMPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val)
{
	static const char fn[] = "MPI_Comm_set_attr";
	struct vd_comm *c;
	struct vd_attr **pp;
	int err = attr_arg(comm, comm_keyval, fn, &c);

	if (err)
		return err;
	pp = attr_find(c, comm_keyval);
	if (*pp) {              /* the old value goes as at a delete */
		struct keyval *kv = keyval_get(comm_keyval);

		err = kv->del(comm, comm_keyval, (*pp)->value, kv->extra);
		if (err != MPI_SUCCESS)
			return vd_mpi_raise(comm, err, fn);
	}
	return vd_mpi_raise(comm, vd_mpi_errno(attr_store(c, comm_keyval, attribute_val)), fn);
}

#pragma weak MPI_Comm_delete_attr = PMPI_Comm_delete_attr
int PMPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval)
{
	static const char fn[] = "MPI_Comm_delete_attr";
	struct vd_comm *c;
	struct vd_attr **pp;
	int err = attr_arg(comm, comm_keyval, fn, &c);

	if (err)
		return err;
	pp = attr_find(c, comm_keyval);
	return *pp ? vd_mpi_raise(comm, attr_remove(comm, pp), fn) : MPI_SUCCESS;
}

/* The predefined attributes of MPI_COMM_WORLD (MPI-4.0 11.1.2): a pointer
 * to an int, or NULL when absent. */
static void *predefined_value(MPI_Comm comm, int keyval)
{
	static int tag_ub = MPI_TAG_UB_VALUE, host = MPI_PROC_NULL, io = MPI_ANY_SOURCE;
	static int wtime_global = 0, universe, last_used;

	if (comm != MPI_COMM_WORLD)
		return NULL;
	switch (keyval) {
	case MPI_TAG_UB:
		return &tag_ub;
	case MPI_HOST:
		return &host;
	case MPI_IO:
		return &io;
	case MPI_WTIME_IS_GLOBAL:
		return &wtime_global;
	case MPI_UNIVERSE_SIZE:
		universe = vd_mpi.size;
		return &universe;
	case MPI_LASTUSEDCODE:
		last_used = vd_err_last_used();
		return &last_used;
	default:                /* MPI_APPNUM: the launchers do not tell */
		return NULL;
	}
}

#pragma weak MPI_Comm_get_attr = PMPI_Comm_get_attr
int PMPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag)
{
	static const char fn[] = "MPI_Comm_get_attr";
	struct vd_comm *c;
	struct vd_attr *a;
	int err = vd_comm_arg(comm, flag, fn, &c);

	if (err)
		return err;
	if (!attribute_val)
		return vd_mpi_raise(comm, MPI_ERR_ARG, fn);
	if (predefined_keyval(comm_keyval)) {
		void *v = predefined_value(comm, comm_keyval);

		*flag = v != NULL;
		if (v)
			*(void **)attribute_val = v;
		return MPI_SUCCESS;
	}
	if (!keyval_live(comm_keyval))
		return vd_mpi_raise(comm, MPI_ERR_KEYVAL, fn);
	a = *attr_find(c, comm_keyval);
	*flag = a != NULL;
	if (a)
		*(void **)attribute_val = a->value;
	return MPI_SUCCESS;
}

/* ---- names ------------------------------------------------------------------- */

#pragma weak MPI_Comm_set_name = PMPI_Comm_set_name
int PMPI_Comm_set_name(MPI_Comm comm, const char *comm_name)
{
	struct vd_comm *c;
	int err = vd_comm_arg(comm, comm_name, "MPI_Comm_set_name", &c);
	size_t n;

	if (err)
		return err;
	/* Longer names are cut (MPI-4.0 7.8 lets the implementation). */
	n = strnlen(comm_name, MPI_MAX_OBJECT_NAME - 1);
	memcpy(c->name, comm_name, n);
	c->name[n] = '\0';
	return MPI_SUCCESS;
}

#pragma weak MPI_Comm_get_name = PMPI_Comm_get_name
int PMPI_Comm_get_name(MPI_Comm comm, char *comm_name, int *resultlen)
{
	struct vd_comm *c;
	int err = vd_comm_arg(comm, comm_name, "MPI_Comm_get_name", &c);

	if (err)
		return err;
	if (!resultlen)
		return vd_mpi_raise(comm, MPI_ERR_ARG, "MPI_Comm_get_name");
	strcpy(comm_name, c->name);
	*resultlen = (int)strlen(c->name);
	return MPI_SUCCESS;
}
