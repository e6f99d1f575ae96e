/* SPDX-License-Identifier: MIT */
/* viaduct: version and error strings shared by every layer. */
#ifndef VIADUCT_VIADUCT_H
#define VIADUCT_VIADUCT_H

#ifdef __cplusplus
extern "C" {
#endif

#define VIADUCT_VERSION_MAJOR 0
#define VIADUCT_VERSION_MINOR 1
#define VIADUCT_VERSION_PATCH 0
#define VIADUCT_VERSION_STRING "0.1.0"

/* Version of the library actually loaded (may differ from the header). */
const char *viaduct_version(void);

/* Text for a negative errno returned by any viaduct function, with the
 * viaduct-specific meaning where there is one (e.g. -ENOMEM from lmm names
 * RLIMIT_MEMLOCK).  Never NULL. */
const char *viaduct_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* VIADUCT_VIADUCT_H */
