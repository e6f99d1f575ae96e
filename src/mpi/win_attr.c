/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: what a window caches and is told -- user attributes (the
 * keys and lists are attr.c's, as for communicators and datatypes), info
 * hints (kept as given, through info.c's copies), and error handlers
 * made for windows (errh_user.c's table).  The predefined attributes
 * (MPI_WIN_BASE ...) stay with MPI_Win_get_attr in win.c.
 *
 * A window is never duplicated, so copy callbacks are kept but never run;
 * MPI_Win_free runs the delete callbacks, in the order the attributes
 * were first set, before anything else.
 */
#include <errno.h>

#include "attr.h"
#include "errh_user.h"
#include "win.h"

/* ---- predefined callbacks ---------------------------------------------------- */

#pragma weak MPI_WIN_NULL_COPY_FN = PMPI_WIN_NULL_COPY_FN
int PMPI_WIN_NULL_COPY_FN(MPI_Win oldwin, int keyval, void *extra_state,
			  void *attribute_val_in, void *attribute_val_out, int *flag)
{
	VD_API_GUARD();
	(void)oldwin, (void)keyval, (void)extra_state, (void)attribute_val_in;
	(void)attribute_val_out;
	*flag = 0;
	return MPI_SUCCESS;
}

#pragma weak MPI_WIN_DUP_FN = PMPI_WIN_DUP_FN
int PMPI_WIN_DUP_FN(MPI_Win oldwin, int keyval, void *extra_state, void *attribute_val_in,
		    void *attribute_val_out, int *flag)
{
	VD_API_GUARD();
	(void)oldwin, (void)keyval, (void)extra_state;
	*(void **)attribute_val_out = attribute_val_in;
	*flag = 1;
	return MPI_SUCCESS;
}

#pragma weak MPI_WIN_NULL_DELETE_FN = PMPI_WIN_NULL_DELETE_FN
int PMPI_WIN_NULL_DELETE_FN(MPI_Win win, int keyval, void *attribute_val, void *extra_state)
{
	VD_API_GUARD();
	(void)win, (void)keyval, (void)attribute_val, (void)extra_state;
	return MPI_SUCCESS;
}

/* ---- hooks of win.c --------------------------------------------------------------- */

/* info: MPI_INFO_NULL or valid.  MPI code. */
static int hints_copy(MPI_Info info, MPI_Info *copy)
{
	int err;

	*copy = MPI_INFO_NULL;
	if (info == MPI_INFO_NULL)
		return MPI_SUCCESS;
	err = vd_info_copy(info, copy);
	return err == -EINVAL ? MPI_ERR_INFO : vd_mpi_errno(err);
}

int vd_win_hints(struct vd_win *w, MPI_Info info)
{
	return hints_copy(info, &w->info);
}

int vd_win_attr_free(struct vd_win *w)
{
	return vd_attr_list_delete(&w->attrs, w->handle);
}

void vd_win_attr_discard(struct vd_win *w)
{
	vd_attr_list_discard(&w->attrs);
	vd_info_release(&w->info);
	vd_errh_release(w->errh);
}

int vd_win_attr_user(struct vd_win *w, int keyval, void *attribute_val, int *flag,
		     const char *fn)
{
	void *v;

	if (!vd_keyval_ok(VD_ATTR_WIN, keyval))
		return vd_win_raise(w, MPI_ERR_KEYVAL, fn);
	*flag = vd_attr_get(w->attrs, keyval, &v);
	if (*flag)
		*(void **)attribute_val = v;
	return MPI_SUCCESS;
}

/* ---- keyvals and attributes --------------------------------------------------------- */

#pragma weak MPI_Win_create_keyval = PMPI_Win_create_keyval
int PMPI_Win_create_keyval(MPI_Win_copy_attr_function *win_copy_attr_fn,
			   MPI_Win_delete_attr_function *win_delete_attr_fn, int *win_keyval,
			   void *extra_state)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_create_keyval";

	VD_MPI_CHECK_RUNNING(fn);
	if (!win_keyval)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn);
	return vd_mpi_raise(MPI_COMM_WORLD,
			    vd_keyval_create(VD_ATTR_WIN, win_copy_attr_fn, win_delete_attr_fn,
					     extra_state, win_keyval),
			    fn);
}

#pragma weak MPI_Win_free_keyval = PMPI_Win_free_keyval
int PMPI_Win_free_keyval(int *win_keyval)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_free_keyval";

	VD_MPI_CHECK_RUNNING(fn);
	if (!win_keyval)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn);
	return vd_mpi_raise(MPI_COMM_WORLD, vd_keyval_free(VD_ATTR_WIN, win_keyval), fn);
}

/* The window of a set/delete call with a user keyval of windows (the
 * predefined ones cannot be set or deleted); NULL with *err raised. */
static struct vd_win *attr_arg(MPI_Win win, int keyval, const char *fn, int *err)
{
	struct vd_win *w = vd_win_arg(win, fn, err);

	if (w && !vd_keyval_ok(VD_ATTR_WIN, keyval)) {
		*err = vd_win_raise(w, MPI_ERR_KEYVAL, fn);
		return NULL;
	}
	return w;
}

#pragma weak MPI_Win_set_attr = PMPI_Win_set_attr
int PMPI_Win_set_attr(MPI_Win win, int win_keyval, void *attribute_val)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_set_attr";
	int err;
	struct vd_win *w = attr_arg(win, win_keyval, fn, &err);

	if (!w)
		return err;
	return vd_win_raise(w, vd_attr_set(&w->attrs, win, win_keyval, attribute_val), fn);
}

#pragma weak MPI_Win_delete_attr = PMPI_Win_delete_attr
int PMPI_Win_delete_attr(MPI_Win win, int win_keyval)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_delete_attr";
	int err;
	struct vd_win *w = attr_arg(win, win_keyval, fn, &err);

	if (!w)
		return err;
	return vd_win_raise(w, vd_attr_delete(&w->attrs, win, win_keyval), fn);
}

/* ---- info ------------------------------------------------------------------------------ */

/* The hints given replace those held before (none is acted upon, so all
 * are kept and handed back by Win_get_info). */
#pragma weak MPI_Win_set_info = PMPI_Win_set_info
int PMPI_Win_set_info(MPI_Win win, MPI_Info info)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_set_info";
	int err;
	struct vd_win *w = vd_win_arg(win, fn, &err);
	MPI_Info copy;

	if (!w)
		return err;
	if (info == MPI_INFO_NULL)
		return vd_win_raise(w, MPI_ERR_INFO, fn);
	if ((err = hints_copy(info, &copy)))
		return vd_win_raise(w, err, fn);
	vd_info_release(&w->info);
	w->info = copy;
	return MPI_SUCCESS;
}

#pragma weak MPI_Win_get_info = PMPI_Win_get_info
int PMPI_Win_get_info(MPI_Win win, MPI_Info *info_used)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_get_info";
	int err;
	struct vd_win *w = vd_win_arg(win, fn, &err);

	if (!w)
		return err;
	if (!info_used)
		return vd_win_raise(w, MPI_ERR_ARG, fn);
	return vd_win_raise(w, vd_mpi_errno(vd_info_copy(w->info, info_used)), fn);
}

/* ---- error handlers ---------------------------------------------------------------------- */

#pragma weak MPI_Win_create_errhandler = PMPI_Win_create_errhandler
int PMPI_Win_create_errhandler(MPI_Win_errhandler_function *win_errhandler_fn,
			       MPI_Errhandler *errhandler)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_create_errhandler";

	VD_MPI_CHECK_RUNNING(fn);
	return vd_mpi_raise(MPI_COMM_WORLD,
			    vd_errh_create(VD_ERRH_WIN, NULL, win_errhandler_fn, errhandler), fn);
}

/* MPI_SUCCESS once the handler has run and returned, whatever it is. */
#pragma weak MPI_Win_call_errhandler = PMPI_Win_call_errhandler
int PMPI_Win_call_errhandler(MPI_Win win, int errorcode)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Win_call_errhandler";
	int err;
	struct vd_win *w = vd_win_arg(win, fn, &err);

	if (!w)
		return err;
	vd_win_raise(w, errorcode, fn);
	return MPI_SUCCESS;
}
