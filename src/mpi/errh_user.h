/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: error handlers the program creates, and the error classes,
 * codes and strings it adds (errh_user.c), for errh.c and comm.c.
 */
#ifndef VIADUCT_MPI_ERRH_USER_H
#define VIADUCT_MPI_ERRH_USER_H

#include "mpi_internal.h"

/* What a user handler was made for: it may only be set on such objects. */
enum vd_errh_kind { VD_ERRH_COMM = 1, VD_ERRH_WIN = 2 };

/* A predefined or live user handler (of any kind). */
bool vd_errh_valid(MPI_Errhandler h);
/* One an object of kind may hold: predefined, or a user handler of kind. */
bool vd_errh_valid_for(MPI_Errhandler h, enum vd_errh_kind kind);
/* A new user handler: comm_fn for VD_ERRH_COMM, win_fn for VD_ERRH_WIN.
 * MPI code, not raised. */
int vd_errh_create(enum vd_errh_kind kind, MPI_Comm_errhandler_function *comm_fn,
		   MPI_Win_errhandler_function *win_fn, MPI_Errhandler *out);
/* References held by communicators (no-ops on predefined handlers). */
void vd_errh_retain(MPI_Errhandler h);
void vd_errh_release(MPI_Errhandler h);
/* Call user handler h for code raised on comm. */
void vd_errh_user_call(MPI_Errhandler h, MPI_Comm comm, int code);
/* Call user window handler h for code raised on win. */
void vd_errh_user_call_win(MPI_Errhandler h, MPI_Win win, int code);
/* An added code's text ("" until MPI_Add_error_string) or NULL if the
 * code was never added; its class. */
const char *vd_err_user_text(int code);
int vd_err_user_class(int code);
/* errh.c: whether code is a predefined class. */
bool vd_err_predefined(int code);
/* The largest code or class in use (MPI_LASTUSEDCODE). */
int vd_err_last_used(void);

#endif /* VIADUCT_MPI_ERRH_USER_H */
