/* SPDX-License-Identifier: MIT */
/*
 * The table of providers, provider selection by device name and
 * VIADUCT_PROVIDER, and the stubs that make every operation callable.
 *
 * Device names: "shm", "ofi" and "ofi:<libfabric provider>" (also with a
 * "/dev/" prefix) name a provider; any other name ("/dev/via_lo",
 * "/dev/clanvi0", "nic0" -- what existing VIA programs pass) selects the
 * provider VIADUCT_PROVIDER names, by default shm.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vipl/prov.h"

static const struct vd_prov_entry g_providers[] = {
	{ "shm", &vd_shm_ops, NULL },
#ifdef VIADUCT_HAVE_OFI
	{ "ofi", &vd_ofi_ops, NULL },
#else
	{ "ofi", NULL, "this build has no libfabric (install libfabric-dev and rebuild)" },
#endif
};
#define NPROV (sizeof(g_providers) / sizeof(g_providers[0]))

/* ---- stubs ------------------------------------------------------------------ */

static int st_nic_open(struct vd_nic *n, const char *s) { (void)n, (void)s; return -ENOSYS; }
static void st_nic_close(struct vd_nic *n) { (void)n; }
static void st_query(struct vd_nic *n, struct vd_prov_caps *c) { (void)n, (void)c; }
static int st_node_address(struct vd_nic *n, uint8_t *a) { (void)n, (void)a; return -ENOSYS; }
static int st_ns_lookup(struct vd_nic *n, const char *nm, unsigned i, uint8_t *a)
{ (void)n, (void)nm, (void)i, (void)a; return -ENXIO; }
static int st_ns_reverse(struct vd_nic *n, const uint8_t *a, char *nm, size_t r, size_t *need)
{ (void)n, (void)a, (void)nm, (void)r, (void)need; return -ENXIO; }
static int st_mr_reg(struct vd_nic *n, uint32_t i, const struct vd_mr_info *m)
{ (void)n, (void)i, (void)m; return 0; }
static void st_mr_update(struct vd_nic *n, uint32_t i, const struct vd_mr_info *m)
{ (void)n, (void)i, (void)m; }
static int st_mr_dereg(struct vd_nic *n, uint32_t i) { (void)n, (void)i; return 0; }
static int st_connect_wait(struct vd_nic *n, const VIP_NET_ADDRESS *l, int t, struct vd_conn_req **r)
{ (void)n, (void)l, (void)t, (void)r; return -ENOSYS; }
static void st_conn_req_info(struct vd_conn_req *r, VIP_NET_ADDRESS *a, size_t room, VIP_VI_ATTRIBUTES *at)
{ (void)r, (void)a, (void)room, (void)at; }
static int st_connect_accept(struct vd_conn_req *r, struct vd_vi *v) { (void)r, (void)v; return -ENOSYS; }
static void st_connect_reject(struct vd_conn_req *r) { (void)r; }
static int st_connect_request(struct vd_vi *v, const VIP_NET_ADDRESS *l, const VIP_NET_ADDRESS *r,
			      int t, VIP_VI_ATTRIBUTES *a)
{ (void)v, (void)l, (void)r, (void)t, (void)a; return -ENOSYS; }
static int st_peer_request(struct vd_vi *v, const VIP_NET_ADDRESS *l, const VIP_NET_ADDRESS *r, int t)
{ (void)v, (void)l, (void)r, (void)t; return -ENOSYS; }
static int st_peer_progress(struct vd_vi *v, int t, VIP_VI_ATTRIBUTES *a)
{ (void)v, (void)t, (void)a; return -ENOSYS; }
static void st_vi(struct vd_vi *v) { (void)v; }
static int st_vi_int(struct vd_vi *v) { (void)v; return -ENOSYS; }
static int st_sleep(struct vd_vi *v, uint64_t d) { (void)v, (void)d; return -ENOSYS; }
static int st_cq_open(struct vd_cq *c) { (void)c; return -ENOSYS; }
static void st_cq_close(struct vd_cq *c) { (void)c; }
static int st_cq_pop(struct vd_cq *c, uint64_t *b, bool *r) { (void)c, (void)b, (void)r; return -EAGAIN; }
static int st_cq_push_local(struct vd_cq *c, struct vd_vi *v, bool r) { (void)c, (void)v, (void)r; return -ENOSYS; }
static int st_cq_sleep(struct vd_cq *c, uint64_t d, bool r) { (void)c, (void)d, (void)r; return -ENOSYS; }
static bool st_cq_ready(struct vd_cq *c) { (void)c; return false; }
static int st_cq_arm(struct vd_cq *c, struct vd_waitv *w, void **a) { (void)c, (void)w, (void)a; return -ENOSYS; }
static void st_cq_disarm(struct vd_cq *c, void *a, bool t) { (void)c, (void)a, (void)t; }
static int st_ring_send(struct vd_vi *v, const void *h, uint32_t hl, const void *d, uint32_t l)
{ (void)v, (void)h, (void)hl, (void)d, (void)l; return -ENOSYS; }
static int st_ring_peek(struct vd_vi *v, const void **m, uint32_t *l) { (void)v, (void)m, (void)l; return -ENOSYS; }

static const struct vd_prov_ops g_stubs = {
	.nic_open = st_nic_open, .nic_close = st_nic_close, .query = st_query,
	.node_address = st_node_address, .ns_lookup = st_ns_lookup,
	.ns_reverse = st_ns_reverse, .mr_reg = st_mr_reg, .mr_update = st_mr_update,
	.mr_dereg = st_mr_dereg, .connect_wait = st_connect_wait,
	.conn_req_info = st_conn_req_info, .connect_accept = st_connect_accept,
	.connect_reject = st_connect_reject, .connect_request = st_connect_request,
	.peer_request = st_peer_request, .peer_progress = st_peer_progress,
	.disconnect = st_vi, .conn_ready = st_vi, .conn_attrs_changed = st_vi,
	.wake = st_vi, .send_progress = st_vi_int, .recv_publish = st_vi_int,
	.recv_progress = st_vi_int, .send_sleep = st_sleep, .recv_sleep = st_sleep,
	.cq_open = st_cq_open, .cq_close = st_cq_close, .cq_pop = st_cq_pop,
	.cq_push_local = st_cq_push_local, .cq_sleep = st_cq_sleep,
	.cq_ready = st_cq_ready, .cq_arm = st_cq_arm, .cq_disarm = st_cq_disarm,
	.ring_send = st_ring_send,
	.ring_peek = st_ring_peek, .ring_release = st_vi_int,
};

/* The operations are all function pointers after the header fields, so
 * the table can be walked as an array of them. */
#define OPS_FIRST offsetof(struct vd_prov_ops, nic_open)
typedef void (*vd_any_fn)(void);
_Static_assert((sizeof(struct vd_prov_ops) - OPS_FIRST) % sizeof(vd_any_fn) == 0,
	       "vd_prov_ops: only function pointers after the header");

int vd_prov_resolve(const struct vd_prov_ops *ops, struct vd_prov_ops *out)
{
	size_t n = (sizeof(*out) - OPS_FIRST) / sizeof(vd_any_fn);
	vd_any_fn *dst, *stub;

	if (ops->version != VD_PROV_OPS_VERSION || ops->size > sizeof(*out) ||
	    ops->size < OPS_FIRST)
		return -EPROTO;
	memcpy(out, &g_stubs, sizeof(*out));
	memcpy(out, ops, ops->size);
	dst = (vd_any_fn *)((char *)out + OPS_FIRST);
	stub = (vd_any_fn *)((char *)&g_stubs + OPS_FIRST);
	for (size_t i = 0; i < n; i++)
		if (!dst[i])
			dst[i] = stub[i];
	out->size = sizeof(*out);
	return 0;
}

/* ---- selection ---------------------------------------------------------------- */

static struct vd_prov_ops g_resolved[NPROV];
static int g_resolve_err[NPROV];
static pthread_once_t g_resolve_once = PTHREAD_ONCE_INIT;

static void resolve_all(void)
{
	for (size_t i = 0; i < NPROV; i++)
		if (g_providers[i].ops)
			g_resolve_err[i] = vd_prov_resolve(g_providers[i].ops, &g_resolved[i]);
}

/* The provider `name` begins with ("ofi" in "ofi:tcp"), or -1; *rest is
 * what follows its colon ("" if none). */
static int match(const char *name, const char **rest)
{
	if (!strncmp(name, "/dev/", 5))
		name += 5;
	for (size_t i = 0; i < NPROV; i++) {
		size_t n = strlen(g_providers[i].name);
		if (strncmp(name, g_providers[i].name, n))
			continue;
		if (name[n] == '\0' || name[n] == ':') {
			*rest = name[n] ? name + n + 1 : "";
			return (int)i;
		}
	}
	return -1;
}

static int pick(int i, const char *rest, const struct vd_prov_ops **ops,
		char *spec, size_t room)
{
	if (!g_providers[i].ops) {
		fprintf(stderr, "viaduct: provider %s is not available: %s\n",
			g_providers[i].name, g_providers[i].missing);
		return -ENOTSUP;
	}
	pthread_once(&g_resolve_once, resolve_all);
	if (g_resolve_err[i])
		return g_resolve_err[i];
	if (strlen(rest) >= room)
		return -EINVAL;
	snprintf(spec, room, "%s", rest);
	*ops = &g_resolved[i];
	return 0;
}

const struct vd_prov_ops *vd_prov_default(void)
{
	pthread_once(&g_resolve_once, resolve_all);
	return &g_resolved[0];
}

int vd_prov_select(const char *device, const struct vd_prov_ops **ops,
		   char *spec, size_t spec_room)
{
	const char *env = getenv("VIADUCT_PROVIDER"), *rest;
	int i = match(device, &rest);

	if (i >= 0)
		return pick(i, rest, ops, spec, spec_room);
	if (!env || !*env)
		env = "shm";
	i = match(env, &rest);
	if (i < 0) {
		fprintf(stderr, "viaduct: VIADUCT_PROVIDER=%s names no provider "
			"(shm, ofi, ofi:<libfabric provider>)\n", env);
		return -ENOENT;
	}
	return pick(i, rest, ops, spec, spec_room);
}
