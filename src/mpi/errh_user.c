/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: error handlers the program creates, and the error classes,
 * codes and strings it adds.
 *
 * Handlers: handles above MPI_ERRORS_ABORT index a table of functions with
 * a reference count -- one for the user's handle, one per communicator that
 * uses it and one per handle MPI_Comm_get_errhandler gave out -- so a
 * handler freed while a communicator still has it keeps working
 * (MPI-4.0 9.3).  Released slots are reused.
 *
 * Codes and classes added at run time take the values above
 * MPI_ERR_LASTCODE in order, both from one counter, so a value is either
 * a class (its own class) or a code of one class.  The tables outlive
 * MPI_Finalize: an error raised afterwards may still need them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "comm_arg.h"
#include "errh_user.h"

struct user_errh {
	enum vd_errh_kind kind;
	MPI_Comm_errhandler_function *fn;       /* VD_ERRH_COMM */
	MPI_Win_errhandler_function *win_fn;    /* VD_ERRH_WIN */
	int refs;                       /* 0: free slot */
};

static struct user_errh *handlers;
static int nhandlers;

struct user_code {
	int cls;
	char *text;                     /* NULL: "" */
};

static struct user_code *codes;         /* [code - MPI_ERR_LASTCODE - 1] */
static int ncodes;

static struct user_errh *user_errh(MPI_Errhandler h)
{
	int i = h - MPI_ERRORS_ABORT - 1;

	if (i < 0 || i >= nhandlers || handlers[i].refs == 0)
		return NULL;
	return &handlers[i];
}

bool vd_errh_valid(MPI_Errhandler h)
{
	return (h >= MPI_ERRORS_ARE_FATAL && h <= MPI_ERRORS_ABORT) || user_errh(h);
}

bool vd_errh_valid_for(MPI_Errhandler h, enum vd_errh_kind kind)
{
	struct user_errh *u = user_errh(h);

	return (h >= MPI_ERRORS_ARE_FATAL && h <= MPI_ERRORS_ABORT) || (u && u->kind == kind);
}

void vd_errh_retain(MPI_Errhandler h)
{
	struct user_errh *u = user_errh(h);

	if (u)
		u->refs++;
}

void vd_errh_release(MPI_Errhandler h)
{
	struct user_errh *u = user_errh(h);

	if (u && --u->refs == 0) {
		u->fn = NULL;
		u->win_fn = NULL;
	}
}

void vd_errh_user_call(MPI_Errhandler h, MPI_Comm comm, int code)
{
	struct user_errh *u = user_errh(h);

	if (u && u->fn)
		u->fn(&comm, &code);
}

void vd_errh_user_call_win(MPI_Errhandler h, MPI_Win win, int code)
{
	struct user_errh *u = user_errh(h);

	if (u && u->win_fn)
		u->win_fn(&win, &code);
}

static struct user_code *user_code(int code)
{
	int i = code - MPI_ERR_LASTCODE - 1;

	return i >= 0 && i < ncodes ? &codes[i] : NULL;
}

const char *vd_err_user_text(int code)
{
	struct user_code *u = user_code(code);

	return u ? (u->text ? u->text : "") : NULL;
}

int vd_err_user_class(int code)
{
	struct user_code *u = user_code(code);

	return u ? u->cls : MPI_ERR_UNKNOWN;
}

int vd_err_last_used(void)
{
	return MPI_ERR_LASTCODE + ncodes;
}

/* A free handler slot: its index, or -ENOMEM. */
static int handler_slot(void)
{
	struct user_errh *n;
	int cap, first_new = nhandlers;

	for (int i = 0; i < nhandlers; i++)
		if (handlers[i].refs == 0)
			return i;
	cap = nhandlers ? 2 * nhandlers : 8;
	if (!(n = realloc(handlers, (size_t)cap * sizeof(*n))))
		return -ENOMEM;
	memset(n + nhandlers, 0, (size_t)(cap - nhandlers) * sizeof(*n));
	handlers = n;
	nhandlers = cap;
	return first_new;
}

int vd_errh_create(enum vd_errh_kind kind, MPI_Comm_errhandler_function *comm_fn,
		   MPI_Win_errhandler_function *win_fn, MPI_Errhandler *out)
{
	int i;

	if (!out || (kind == VD_ERRH_COMM ? !comm_fn : !win_fn))
		return MPI_ERR_ARG;
	if ((i = handler_slot()) < 0)
		return MPI_ERR_NO_MEM;
	handlers[i] = (struct user_errh){ kind, comm_fn, win_fn, 1 };
	*out = MPI_ERRORS_ABORT + 1 + i;
	return MPI_SUCCESS;
}

#pragma weak MPI_Comm_create_errhandler = PMPI_Comm_create_errhandler
int PMPI_Comm_create_errhandler(MPI_Comm_errhandler_function *function,
				MPI_Errhandler *errhandler)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Comm_create_errhandler";

	VD_MPI_CHECK_RUNNING(fn);
	return vd_mpi_raise(MPI_COMM_WORLD,
			    vd_errh_create(VD_ERRH_COMM, function, NULL, errhandler), fn);
}

/* Predefined handlers may be freed too (Comm_get_errhandler hands them
 * out like any other); that only resets the handle. */
#pragma weak MPI_Errhandler_free = PMPI_Errhandler_free
int PMPI_Errhandler_free(MPI_Errhandler *errhandler)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Errhandler_free";

	VD_MPI_CHECK_RUNNING(fn);
	if (!errhandler || !vd_errh_valid(*errhandler))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn);
	vd_errh_release(*errhandler);
	*errhandler = MPI_ERRHANDLER_NULL;
	return MPI_SUCCESS;
}

/* MPI_SUCCESS once the handler has run and returned (MPI-4.0 9.3.1),
 * whatever it is. */
#pragma weak MPI_Comm_call_errhandler = PMPI_Comm_call_errhandler
int PMPI_Comm_call_errhandler(MPI_Comm comm, int errorcode)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Comm_call_errhandler";

	VD_MPI_CHECK_RUNNING(fn);
	if (!vd_comm_get(comm))
		return vd_mpi_raise(comm, MPI_ERR_COMM, fn);
	vd_mpi_raise(comm, errorcode, fn);
	return MPI_SUCCESS;
}

/* One more value above MPI_ERR_LASTCODE, of class cls (-1: itself). */
static int add_code(int cls, int *out)
{
	struct user_code *n = realloc(codes, ((size_t)ncodes + 1) * sizeof(*n));

	if (!n)
		return MPI_ERR_NO_MEM;
	codes = n;
	*out = MPI_ERR_LASTCODE + 1 + ncodes;
	codes[ncodes].cls = cls < 0 ? *out : cls;
	codes[ncodes].text = NULL;
	ncodes++;
	return MPI_SUCCESS;
}

#pragma weak MPI_Add_error_class = PMPI_Add_error_class
int PMPI_Add_error_class(int *errorclass)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Add_error_class";

	VD_MPI_CHECK_RUNNING(fn);
	if (!errorclass)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn);
	return vd_mpi_raise(MPI_COMM_WORLD, add_code(-1, errorclass), fn);
}

#pragma weak MPI_Add_error_code = PMPI_Add_error_code
int PMPI_Add_error_code(int errorclass, int *errorcode)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Add_error_code";
	struct user_code *u = user_code(errorclass);

	VD_MPI_CHECK_RUNNING(fn);
	if (!errorcode)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn);
	/* A class: predefined, or added as a class (not as a code). */
	if (errorclass > MPI_ERR_LASTCODE ? u && u->cls == errorclass
					  : vd_err_predefined(errorclass))
		return vd_mpi_raise(MPI_COMM_WORLD, add_code(errorclass, errorcode), fn);
	return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn);
}

#pragma weak MPI_Add_error_string = PMPI_Add_error_string
int PMPI_Add_error_string(int errorcode, const char *string)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Add_error_string";
	struct user_code *u = user_code(errorcode);
	char *copy;

	VD_MPI_CHECK_RUNNING(fn);
	if (!u || !string || strnlen(string, MPI_MAX_ERROR_STRING) >= MPI_MAX_ERROR_STRING)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn);
	if (!(copy = strdup(string)))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_NO_MEM, fn);
	free(u->text);
	u->text = copy;
	return MPI_SUCCESS;
}
