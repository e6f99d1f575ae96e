/* SPDX-License-Identifier: MIT */
/*
 * The PMIx client (pmix.c), behind pmi.c's vd_pmi_* when the launcher
 * speaks PMIx.  Built where PMIx's headers are (VIADUCT_HAVE_PMIX); the
 * library is opened at run time.  0 or negative errno, the reason said
 * on stderr.
 */
#ifndef VIADUCT_MPI_PMIX_CLIENT_H
#define VIADUCT_MPI_PMIX_CLIENT_H

#include <stddef.h>

int vd_pmix_init(int *rank, int *size, char *nspace, size_t nspace_len);
int vd_pmix_put(const char *key, const char *value);
int vd_pmix_fence(void);
/* from: the rank that put the key (-1: any). */
int vd_pmix_get(int from, const char *key, char *value, size_t len);
/* The rank's application number (PMIX_APPNUM), -1 when the server has none. */
int vd_pmix_appnum(void);
void vd_pmix_finalize(void);
void vd_pmix_abort(int code, const char *msg);

#endif
