/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: attributes cached on datatypes (the keys and lists are
 * attr.c's).  The lists sit in a table of their own, by datatype handle,
 * so the datatype objects need not know about them: MPI_Type_free deletes
 * a datatype's attributes through their delete callbacks
 * (vd_type_attr_free) before its handle can be reused, and a datatype
 * duplicate gets copies through the copy callbacks (vd_type_attr_copy).
 * Predefined datatypes may carry attributes too.  Errors are raised on
 * MPI_COMM_WORLD, as the datatype calls do.
 */
#include <errno.h>
#include <stdlib.h>

#include "attr.h"

struct type_attrs {
	MPI_Datatype type;
	struct vd_attr *attrs;
	struct type_attrs *next;
};

static struct type_attrs *holders;      /* types with a list, newest first */

/* The list of type t, made when `create`; NULL if there is none (or no
 * memory to make it). */
static struct vd_attr **list_of(MPI_Datatype t, bool create)
{
	struct type_attrs *h;

	for (h = holders; h; h = h->next)
		if (h->type == t)
			return &h->attrs;
	if (!create || !(h = calloc(1, sizeof(*h))))
		return NULL;
	h->type = t;
	h->next = holders;
	holders = h;
	return &h->attrs;
}

/* Remove the holder of t (its list already empty). */
static void holder_drop(MPI_Datatype t)
{
	for (struct type_attrs **pp = &holders; *pp; pp = &(*pp)->next) {
		if ((*pp)->type == t) {
			struct type_attrs *h = *pp;

			*pp = h->next;
			free(h);
			return;
		}
	}
}

int vd_type_attr_free(MPI_Datatype t)
{
	struct vd_attr **l = list_of(t, false);
	int rc = l ? vd_attr_list_delete(l, t) : MPI_SUCCESS;

	if (rc == MPI_SUCCESS)
		holder_drop(t);
	return rc;
}

int vd_type_attr_copy(MPI_Datatype from, MPI_Datatype to)
{
	struct vd_attr **src = list_of(from, false), **dst;

	if (!src || !*src)
		return MPI_SUCCESS;
	if (!(dst = list_of(to, true)))
		return MPI_ERR_NO_MEM;
	return vd_attr_list_copy(*src, from, dst);
}

void vd_type_attr_finalize(void)
{
	while (holders) {
		struct type_attrs *h = holders;

		holders = h->next;
		vd_attr_list_discard(&h->attrs);
		free(h);
	}
}

/* ---- predefined callbacks ---------------------------------------------- */

#pragma weak MPI_TYPE_NULL_COPY_FN = PMPI_TYPE_NULL_COPY_FN
int PMPI_TYPE_NULL_COPY_FN(MPI_Datatype oldtype, int keyval, void *extra_state,
			   void *attribute_val_in, void *attribute_val_out, int *flag)
{
	VD_API_GUARD();
	(void)oldtype, (void)keyval, (void)extra_state, (void)attribute_val_in;
	(void)attribute_val_out;
	*flag = 0;
	return MPI_SUCCESS;
}

#pragma weak MPI_TYPE_DUP_FN = PMPI_TYPE_DUP_FN
int PMPI_TYPE_DUP_FN(MPI_Datatype oldtype, int keyval, void *extra_state,
		     void *attribute_val_in, void *attribute_val_out, int *flag)
{
	VD_API_GUARD();
	(void)oldtype, (void)keyval, (void)extra_state;
	*(void **)attribute_val_out = attribute_val_in;
	*flag = 1;
	return MPI_SUCCESS;
}

#pragma weak MPI_TYPE_NULL_DELETE_FN = PMPI_TYPE_NULL_DELETE_FN
int PMPI_TYPE_NULL_DELETE_FN(MPI_Datatype datatype, int keyval, void *attribute_val,
			     void *extra_state)
{
	VD_API_GUARD();
	(void)datatype, (void)keyval, (void)attribute_val, (void)extra_state;
	return MPI_SUCCESS;
}

/* ---- the API --------------------------------------------------------------- */

static int raise_type(int code, const char *fn)
{
	return vd_mpi_raise(MPI_COMM_WORLD, code, fn);
}

#pragma weak MPI_Type_create_keyval = PMPI_Type_create_keyval
int PMPI_Type_create_keyval(MPI_Type_copy_attr_function *type_copy_attr_fn,
			    MPI_Type_delete_attr_function *type_delete_attr_fn,
			    int *type_keyval, void *extra_state)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Type_create_keyval";

	VD_MPI_CHECK_RUNNING(fn);
	if (!type_keyval)
		return raise_type(MPI_ERR_ARG, fn);
	return raise_type(vd_keyval_create(VD_ATTR_TYPE, type_copy_attr_fn, type_delete_attr_fn,
					   extra_state, type_keyval),
			  fn);
}

#pragma weak MPI_Type_free_keyval = PMPI_Type_free_keyval
int PMPI_Type_free_keyval(int *type_keyval)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Type_free_keyval";

	VD_MPI_CHECK_RUNNING(fn);
	if (!type_keyval)
		return raise_type(MPI_ERR_ARG, fn);
	return raise_type(vd_keyval_free(VD_ATTR_TYPE, type_keyval), fn);
}

/* A valid datatype and a type keyval: MPI_SUCCESS or raised. */
static int attr_arg(MPI_Datatype type, int keyval, const char *fn)
{
	VD_MPI_CHECK_RUNNING(fn);
	if (!vd_dtype_get(type))
		return raise_type(MPI_ERR_TYPE, fn);
	return vd_keyval_ok(VD_ATTR_TYPE, keyval) ? MPI_SUCCESS : raise_type(MPI_ERR_KEYVAL, fn);
}

#pragma weak MPI_Type_set_attr = PMPI_Type_set_attr
int PMPI_Type_set_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Type_set_attr";
	struct vd_attr **l;
	int err = attr_arg(datatype, type_keyval, fn);

	if (err)
		return err;
	if (!(l = list_of(datatype, true)))
		return raise_type(MPI_ERR_NO_MEM, fn);
	return raise_type(vd_attr_set(l, datatype, type_keyval, attribute_val), fn);
}

#pragma weak MPI_Type_get_attr = PMPI_Type_get_attr
int PMPI_Type_get_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val, int *flag)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Type_get_attr";
	struct vd_attr **l;
	int err = attr_arg(datatype, type_keyval, fn);

	if (err)
		return err;
	if (!attribute_val || !flag)
		return raise_type(MPI_ERR_ARG, fn);
	l = list_of(datatype, false);
	*flag = l && vd_attr_get(*l, type_keyval, (void **)attribute_val);
	return MPI_SUCCESS;
}

#pragma weak MPI_Type_delete_attr = PMPI_Type_delete_attr
int PMPI_Type_delete_attr(MPI_Datatype datatype, int type_keyval)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Type_delete_attr";
	struct vd_attr **l;
	int err = attr_arg(datatype, type_keyval, fn);

	if (err)
		return err;
	l = list_of(datatype, false);
	return l ? raise_type(vd_attr_delete(l, datatype, type_keyval), fn) : MPI_SUCCESS;
}
