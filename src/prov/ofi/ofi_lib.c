/* SPDX-License-Identifier: MIT */
/*
 * ofi provider: libfabric, opened when the first NIC needs it.
 *
 * Linked, libfabric would be loaded into every process that loads
 * libviaduct, and with it its own dependencies: Debian's libpsm2 and
 * libinfinipath calibrate a clock in their constructors, 0.2 s of
 * sleep at every start of a program that never leaves its host.  The
 * provider calls five of libfabric's functions by symbol (the rest are
 * inline calls through the objects' operation tables), looked up with
 * the symbol versions a program built against the same headers gets
 * (cmake/ViaductFabric.cmake), so the fi_info layout matches.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "prov/ofi/ofi.h"

struct vd_fi_lib vd_fi;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_err;

#ifndef VD_FI_SONAME
#define VD_FI_SONAME "libfabric.so.1"
#endif

/* The version each function was linked with at build time, else NULL
 * (a libfabric without symbol versions: the plain name). */
#ifndef VD_FI_VER_getinfo
#define VD_FI_VER_getinfo NULL
#endif
#ifndef VD_FI_VER_freeinfo
#define VD_FI_VER_freeinfo NULL
#endif
#ifndef VD_FI_VER_dupinfo
#define VD_FI_VER_dupinfo NULL
#endif
#ifndef VD_FI_VER_fabric
#define VD_FI_VER_fabric NULL
#endif
#ifndef VD_FI_VER_strerror
#define VD_FI_VER_strerror NULL
#endif

/* The library, or NULL after saying why on stderr. */
static void *lib_open(void)
{
	void *h = dlopen(VD_FI_SONAME, RTLD_NOW | RTLD_LOCAL);
	char why[512];

	if (h)
		return h;
	const char *e = dlerror();
	snprintf(why, sizeof(why), "%s", e ? e : "not found");
#ifdef VD_FI_LIBDIR
	/* Where the build found it: a libfabric outside the loader's
	 * search path, as a linked one would be found through the build's
	 * own paths. */
	char path[4096];
	if (snprintf(path, sizeof(path), "%s/%s", VD_FI_LIBDIR, VD_FI_SONAME) < (int)sizeof(path))
		h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
#endif
	if (!h)
		fprintf(stderr, "viaduct: ofi: cannot load libfabric: %s\n", why);
	return h;
}

/* The path the loader took it from, for messages. */
static const char *lib_path(void *h)
{
	struct link_map *m = NULL;

	return dlinfo(h, RTLD_DI_LINKMAP, &m) == 0 && m && m->l_name[0] ? m->l_name
									 : VD_FI_SONAME;
}

/* The function `name` of the version the build linked against (the
 * first one missing is named on stderr). */
static bool lib_sym(void *h, void *slot, const char *name, const char *ver)
{
	/* POSIX leaves object-to-function pointer casts to the platform;
	 * dlsym's own contract makes them valid here. */
	void *f = ver ? dlvsym(h, name, ver) : dlsym(h, name);

	if (!f)
		fprintf(stderr,
			"viaduct: ofi: %s has no %s%s%s: it is not the libfabric viaduct "
			"was built with; run with that one (LD_LIBRARY_PATH)\n",
			lib_path(h), name, ver ? "@" : "", ver ? ver : "");
	memcpy(slot, &f, sizeof(f));
	return f != NULL;
}

/* Never unloaded, not even when refused: its dependencies' constructors
 * have run, and libfabric's own threads and handlers may outlive any one
 * NIC. */
static void lib_load(void)
{
	void *h = lib_open();

	if (!h) {
		load_err = -ENODEV;
		return;
	}
	if (!lib_sym(h, &vd_fi.getinfo, "fi_getinfo", VD_FI_VER_getinfo) ||
	    !lib_sym(h, &vd_fi.freeinfo, "fi_freeinfo", VD_FI_VER_freeinfo) ||
	    !lib_sym(h, &vd_fi.dupinfo, "fi_dupinfo", VD_FI_VER_dupinfo) ||
	    !lib_sym(h, &vd_fi.fabric, "fi_fabric", VD_FI_VER_fabric) ||
	    !lib_sym(h, &vd_fi.strerror, "fi_strerror", VD_FI_VER_strerror))
		load_err = -ENODEV;
}

int vd_ofi_lib_load(void)
{
	pthread_once(&load_once, lib_load);
	return load_err;
}
