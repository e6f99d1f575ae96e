/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: communicator names and cached attributes (the keys and
 * lists are attr.c's).  Comm_dup copies a communicator's attributes
 * through their copy callbacks, Comm_free deletes them through the delete
 * callbacks.  The predefined attributes (MPI_TAG_UB ...) live on
 * MPI_COMM_WORLD only and are computed when asked.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "attr.h"
#include "comm_arg.h"
#include "errh_user.h"

/* ---- predefined callbacks ---------------------------------------------- */

#pragma weak MPI_COMM_NULL_COPY_FN = PMPI_COMM_NULL_COPY_FN
int PMPI_COMM_NULL_COPY_FN(MPI_Comm oldcomm, int keyval, void *extra_state,
			   void *attribute_val_in, void *attribute_val_out, int *flag)
{
	VD_API_GUARD();
	(void)oldcomm, (void)keyval, (void)extra_state, (void)attribute_val_in;
	(void)attribute_val_out;
	*flag = 0;
	return MPI_SUCCESS;
}

#pragma weak MPI_COMM_DUP_FN = PMPI_COMM_DUP_FN
int PMPI_COMM_DUP_FN(MPI_Comm oldcomm, int keyval, void *extra_state,
		     void *attribute_val_in, void *attribute_val_out, int *flag)
{
	VD_API_GUARD();
	(void)oldcomm, (void)keyval, (void)extra_state;
	*(void **)attribute_val_out = attribute_val_in;
	*flag = 1;
	return MPI_SUCCESS;
}

#pragma weak MPI_COMM_NULL_DELETE_FN = PMPI_COMM_NULL_DELETE_FN
int PMPI_COMM_NULL_DELETE_FN(MPI_Comm comm, int keyval, void *attribute_val,
			     void *extra_state)
{
	VD_API_GUARD();
	(void)comm, (void)keyval, (void)attribute_val, (void)extra_state;
	return MPI_SUCCESS;
}

/* ---- hooks of comm.c --------------------------------------------------------- */

int vd_attr_copy_all(MPI_Comm from, struct vd_comm *f, MPI_Comm to, struct vd_comm *t)
{
	(void)to;
	return vd_attr_list_copy(f->attrs, from, &t->attrs);
}

int vd_attr_delete_all(MPI_Comm comm, struct vd_comm *c)
{
	return vd_attr_list_delete(&c->attrs, comm);
}

void vd_attr_discard(struct vd_comm *c)
{
	vd_attr_list_discard(&c->attrs);
}

/* ---- keyvals and attributes ---------------------------------------------------- */

#pragma weak MPI_Comm_create_keyval = PMPI_Comm_create_keyval
int PMPI_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn,
			    MPI_Comm_delete_attr_function *comm_delete_attr_fn,
			    int *comm_keyval, void *extra_state)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Comm_create_keyval";

	VD_MPI_CHECK_RUNNING(fn);
	if (!comm_keyval)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn);
	return vd_mpi_raise(MPI_COMM_WORLD,
			    vd_keyval_create(VD_ATTR_COMM, comm_copy_attr_fn,
					     comm_delete_attr_fn, extra_state, comm_keyval),
			    fn);
}

#pragma weak MPI_Comm_free_keyval = PMPI_Comm_free_keyval
int PMPI_Comm_free_keyval(int *comm_keyval)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Comm_free_keyval";

	VD_MPI_CHECK_RUNNING(fn);
	if (!comm_keyval)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn);
	return vd_mpi_raise(MPI_COMM_WORLD, vd_keyval_free(VD_ATTR_COMM, comm_keyval), fn);
}

/* comm and keyval as the attribute calls need them: MPI_SUCCESS or raised. */
static int attr_arg(MPI_Comm comm, int keyval, const char *fn, struct vd_comm **c)
{
	int err = vd_comm_arg(comm, &keyval, fn, c);

	if (!err && !vd_keyval_ok(VD_ATTR_COMM, keyval))
		err = vd_mpi_raise(comm, MPI_ERR_KEYVAL, fn);
	return err;
}

#pragma weak MPI_Comm_set_attr = PMPI_Comm_set_attr
int PMPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Comm_set_attr";
	struct vd_comm *c;
	int err = attr_arg(comm, comm_keyval, fn, &c);

	if (err)
		return err;
	return vd_mpi_raise(comm, vd_attr_set(&c->attrs, comm, comm_keyval, attribute_val), fn);
}

#pragma weak MPI_Comm_delete_attr = PMPI_Comm_delete_attr
int PMPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Comm_delete_attr";
	struct vd_comm *c;
	int err = attr_arg(comm, comm_keyval, fn, &c);

	if (err)
		return err;
	return vd_mpi_raise(comm, vd_attr_delete(&c->attrs, comm, comm_keyval), fn);
}

static bool predefined_keyval(int k)
{
	return k >= MPI_TAG_UB && k <= MPI_APPNUM;
}

/* The predefined attributes of MPI_COMM_WORLD (MPI-4.0 11.1.2): a pointer
 * to an int, or NULL when absent. */
static void *predefined_value(MPI_Comm comm, int keyval)
{
	static int tag_ub = MPI_TAG_UB_VALUE, host = MPI_PROC_NULL, io = MPI_ANY_SOURCE;
	static int wtime_global = 0, universe, last_used, appnum;

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
	case MPI_APPNUM:        /* absent when the launcher does not say */
		appnum = vd_pmi_appnum();
		return appnum >= 0 ? &appnum : NULL;
	default:
		return NULL;
	}
}

#pragma weak MPI_Comm_get_attr = PMPI_Comm_get_attr
int PMPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Comm_get_attr";
	struct vd_comm *c;
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
	if (!vd_keyval_ok(VD_ATTR_COMM, comm_keyval))
		return vd_mpi_raise(comm, MPI_ERR_KEYVAL, fn);
	*flag = vd_attr_get(c->attrs, comm_keyval, (void **)attribute_val);
	return MPI_SUCCESS;
}

/* ---- names ------------------------------------------------------------------- */

#pragma weak MPI_Comm_set_name = PMPI_Comm_set_name
int PMPI_Comm_set_name(MPI_Comm comm, const char *comm_name)
{
	VD_API_GUARD();
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
	VD_API_GUARD();
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
