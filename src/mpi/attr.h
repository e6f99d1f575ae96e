/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: attribute keys and attribute lists shared by the objects
 * that cache attributes -- communicators (comm_attr.c), datatypes
 * (type_attr.c) and windows (win_attr.c).  A keyval belongs to one kind of
 * object.  The callbacks' object argument is the object's handle
 * (MPI_Comm, MPI_Datatype and MPI_Win are all int), so one list type
 * serves them all.  Functions return MPI codes,
 * not raised.
 */
#ifndef VIADUCT_MPI_ATTR_H
#define VIADUCT_MPI_ATTR_H

#include "mpi_internal.h"

enum vd_attr_kind { VD_ATTR_COMM = 1, VD_ATTR_TYPE = 2, VD_ATTR_WIN = 3 };

typedef int vd_attr_copy_fn(int obj, int keyval, void *extra, void *in, void *out, int *flag);
typedef int vd_attr_delete_fn(int obj, int keyval, void *value, void *extra);

/* Keyvals: NULL callbacks act as the null ones. */
int vd_keyval_create(enum vd_attr_kind kind, vd_attr_copy_fn *copy, vd_attr_delete_fn *del,
		     void *extra, int *keyval);
/* MPI_ERR_KEYVAL unless *keyval is a live keyval of kind; then it goes
 * (its attributes keep it alive) and *keyval is MPI_KEYVAL_INVALID. */
int vd_keyval_free(enum vd_attr_kind kind, int *keyval);
bool vd_keyval_ok(enum vd_attr_kind kind, int keyval);

/* The attribute list of object obj at *head (keyval checked by the
 * caller).  Set runs the delete callback on a value it replaces; get
 * gives the value and whether there is one; delete of an absent
 * attribute is no error. */
int vd_attr_set(struct vd_attr **head, int obj, int keyval, void *value);
bool vd_attr_get(const struct vd_attr *head, int keyval, void **value);
int vd_attr_delete(struct vd_attr **head, int obj, int keyval);
/* The copy callbacks of from's attributes (object obj) fill *to. */
int vd_attr_list_copy(const struct vd_attr *from, int obj, struct vd_attr **to);
/* The delete callbacks of all, in order; the first failure stops. */
int vd_attr_list_delete(struct vd_attr **head, int obj);
/* Free the list without callbacks. */
void vd_attr_list_discard(struct vd_attr **head);

#endif /* VIADUCT_MPI_ATTR_H */
