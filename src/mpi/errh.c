/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: error classes, their texts, the predefined error handlers
 * and the user's (errh_user.c).  Predefined codes are classes, so
 * MPI_Error_class is the identity on them; codes and classes the program
 * adds (above MPI_ERR_LASTCODE) are looked up in errh_user.c.
 *
 * An error is always reported on a communicator: the one the call names
 * if it is valid, else MPI_COMM_WORLD (MPI-3.1 8.3).  Before MPI_Init and
 * after MPI_Finalize there is no communicator table; the handler then is
 * the one last set on MPI_COMM_WORLD (ERRORS_ARE_FATAL before MPI_Init),
 * so a program that chose MPI_ERRORS_RETURN keeps getting codes back.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "comm_arg.h"

#include "errh_user.h"

/* MPI_COMM_WORLD's handler as last set; used when the table is gone. */
static MPI_Errhandler world_errh = MPI_ERRORS_ARE_FATAL;

static const char *const class_text[] = {
	[MPI_SUCCESS] = "no error",
	[MPI_ERR_BUFFER] = "invalid buffer pointer",
	[MPI_ERR_COUNT] = "invalid count argument",
	[MPI_ERR_TYPE] = "invalid datatype (null, freed, or not committed)",
	[MPI_ERR_TAG] = "invalid tag argument",
	[MPI_ERR_COMM] = "invalid communicator",
	[MPI_ERR_RANK] = "invalid rank",
	[MPI_ERR_REQUEST] = "invalid request handle",
	[MPI_ERR_ROOT] = "invalid root rank",
	[MPI_ERR_GROUP] = "invalid group",
	[MPI_ERR_OP] = "invalid reduction operation (or not defined on this datatype)",
	[MPI_ERR_TOPOLOGY] = "invalid topology",
	[MPI_ERR_DIMS] = "invalid dimension argument",
	[MPI_ERR_ARG] = "invalid argument",
	[MPI_ERR_UNKNOWN] = "unknown error",
	[MPI_ERR_TRUNCATE] = "message truncated: receive buffer too small",
	[MPI_ERR_OTHER] = "other error (e.g. MPI not initialised, or a peer process failed)",
	[MPI_ERR_INTERN] = "internal error in the MPI library",
	[MPI_ERR_IN_STATUS] = "error code is in the status array",
	[MPI_ERR_PENDING] = "request pending (not completed)",
	[MPI_ERR_NO_MEM] = "out of memory (or registered-memory limit, RLIMIT_MEMLOCK, reached)",
	[MPI_ERR_WIN] = "invalid window (null or freed)",
	[MPI_ERR_BASE] = "invalid base address",
	[MPI_ERR_LOCKTYPE] = "invalid lock type",
	[MPI_ERR_RMA_CONFLICT] = "conflicting accesses to a window",
	[MPI_ERR_RMA_SYNC] = "one-sided call outside its synchronisation (no epoch, or wrong one)",
	[MPI_ERR_SIZE] = "invalid size",
	[MPI_ERR_DISP] = "invalid displacement unit",
	[MPI_ERR_ASSERT] = "invalid assertion",
	[MPI_ERR_RMA_RANGE] = "target memory outside the window (or not attached)",
	[MPI_ERR_RMA_ATTACH] = "memory cannot be attached (or detached)",
	[MPI_ERR_RMA_SHARED] = "memory cannot be shared (ranks on different hosts)",
	[MPI_ERR_RMA_FLAVOR] = "wrong window flavor for this call",
	[MPI_ERR_INFO] = "invalid info object",
	[MPI_ERR_INFO_KEY] = "invalid info key (empty or longer than MPI_MAX_INFO_KEY - 1)",
	[MPI_ERR_INFO_VALUE] = "invalid info value (empty or longer than MPI_MAX_INFO_VAL - 1)",
	[MPI_ERR_INFO_NOKEY] = "info key not set",
	[MPI_ERR_KEYVAL] = "invalid attribute key",
};

/* The text of a valid code, or NULL. */
static const char *code_text(int code)
{
	if (code > MPI_ERR_LASTCODE)
		return vd_err_user_text(code);
	if (code < 0 || code >= (int)(sizeof(class_text) / sizeof(class_text[0])))
		return NULL;
	return class_text[code];
}

bool vd_err_predefined(int code)
{
	return code <= MPI_ERR_LASTCODE && code_text(code);
}

int vd_mpi_errno(int err)
{
	switch (err) {
	case 0:
		return MPI_SUCCESS;
	case -ENOMEM:
		return MPI_ERR_NO_MEM;
	case -EMSGSIZE:
		return MPI_ERR_TRUNCATE;
	case -EIO:
	case -ECONNRESET:
	case -EPIPE:
		return MPI_ERR_OTHER;
	case -EINVAL:
		return MPI_ERR_ARG;
	default:
		return MPI_ERR_INTERN;
	}
}

/* The handler that applies to errors raised on comm. */
static MPI_Errhandler handler_for(MPI_Comm comm)
{
	struct vd_comm *c = vd_comm_get(comm);

	if (!c)
		c = vd_comm_get(MPI_COMM_WORLD);
	return c ? c->errh : world_errh;
}

/* Print the error and stop the job. */
__attribute__((noreturn))
static void fatal(int code, const char *fn, const char *detail)
{
	const char *text = code_text(code);
	char rank[16] = "?";            /* unknown before MPI_Init */
	char msg[MPI_MAX_ERROR_STRING + 256];

	if (vd_mpi.phase != VD_MPI_BEFORE)
		snprintf(rank, sizeof(rank), "%d", vd_mpi.rank);
	/* The detail says what happened; the class's guesses would only
	 * contradict it. */
	if (detail && code == MPI_ERR_OTHER)
		text = "other error";
	snprintf(msg, sizeof(msg), "%s: %s%s%s", fn ? fn : "MPI",
		 text ? text : "invalid error code", detail ? ": " : "",
		 detail ? detail : "");
	fprintf(stderr, "viaduct MPI: rank %s: %s\n", rank, msg);
	fflush(stderr);
	vd_pmi_abort(code, msg);
}

int vd_mpi_raise_msg(MPI_Comm comm, int code, const char *fn, const char *detail)
{
	MPI_Errhandler h;

	if (code == MPI_SUCCESS)
		return MPI_SUCCESS;
	h = handler_for(comm);
	if (h == MPI_ERRORS_RETURN)
		return code;
	if (h > MPI_ERRORS_ABORT) {
		/* The handler sees the communicator the error belongs to:
		 * WORLD's when the named one is invalid. */
		vd_errh_user_call(h, vd_comm_get(comm) ? comm : MPI_COMM_WORLD, code);
		return code;
	}
	fatal(code, fn, detail);
}

int vd_mpi_not_running(const char *fn)
{
	bool before = vd_mpi.phase == VD_MPI_BEFORE;

	return vd_mpi_raise_msg(MPI_COMM_WORLD, MPI_ERR_OTHER, fn,
				before ? "MPI is not initialised (MPI_Init comes first)" :
					 "MPI is already finalised (MPI_Finalize was called)");
}

#pragma weak MPI_Comm_set_errhandler = PMPI_Comm_set_errhandler
int PMPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Comm_set_errhandler";
	struct vd_comm *c;

	VD_MPI_CHECK_RUNNING(fn);
	c = vd_comm_get(comm);
	if (!c)
		return vd_mpi_raise(comm, MPI_ERR_COMM, fn);
	if (!vd_errh_valid_for(errhandler, VD_ERRH_COMM))
		return vd_mpi_raise(comm, MPI_ERR_ARG, fn);
	vd_errh_retain(errhandler);
	vd_errh_release(c->errh);
	c->errh = errhandler;
	if (comm == MPI_COMM_WORLD)
		world_errh = errhandler;
	return MPI_SUCCESS;
}

#pragma weak MPI_Comm_get_errhandler = PMPI_Comm_get_errhandler
int PMPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler)
{
	VD_API_GUARD();
	struct vd_comm *c;
	int err = vd_comm_arg(comm, errhandler, "MPI_Comm_get_errhandler", &c);

	if (!err) {
		/* A new reference: the caller frees it (MPI-4.0 9.3). */
		vd_errh_retain(c->errh);
		*errhandler = c->errh;
	}
	return err;
}

/* Callable at any time (MPI-3.1 8.7 lists it among the functions usable
 * before MPI_Init). */
#pragma weak MPI_Error_string = PMPI_Error_string
int PMPI_Error_string(int errorcode, char *string, int *resultlen)
{
	VD_API_GUARD();
	const char *text = code_text(errorcode);
	size_t n;

	if (!string || !resultlen)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Error_string");
	if (!text)
		text = "invalid error code";
	n = strlen(text);
	if (n > MPI_MAX_ERROR_STRING - 1)
		n = MPI_MAX_ERROR_STRING - 1;
	memcpy(string, text, n);
	string[n] = '\0';
	*resultlen = (int)n;
	if (!code_text(errorcode))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Error_string");
	return MPI_SUCCESS;
}

#pragma weak MPI_Error_class = PMPI_Error_class
int PMPI_Error_class(int errorcode, int *errorclass)
{
	VD_API_GUARD();
	if (!errorclass || !code_text(errorcode))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Error_class");
	*errorclass = errorcode > MPI_ERR_LASTCODE ? vd_err_user_class(errorcode) : errorcode;
	return MPI_SUCCESS;
}
