/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: error handlers the program creates, and the error classes,
 * codes and strings it adds (errh_user.c), for errh.c and comm.c.
 */
#ifndef VIADUCT_MPI_ERRH_USER_H
#define VIADUCT_MPI_ERRH_USER_H

#include "mpi_internal.h"

/* A handler a communicator may hold: predefined or live user handler. */
bool vd_errh_valid(MPI_Errhandler h);
/* References held by communicators (no-ops on predefined handlers). */
void vd_errh_retain(MPI_Errhandler h);
void vd_errh_release(MPI_Errhandler h);
/* Call user handler h for code raised on comm. */
void vd_errh_user_call(MPI_Errhandler h, MPI_Comm comm, int code);
/* An added code's text ("" until MPI_Add_error_string) or NULL if the
 * code was never added; its class. */
const char *vd_err_user_text(int code);
int vd_err_user_class(int code);
/* errh.c: whether code is a predefined class. */
bool vd_err_predefined(int code);
/* The largest code or class in use (MPI_LASTUSEDCODE). */
int vd_err_last_used(void);

#endif /* VIADUCT_MPI_ERRH_USER_H */
