/* SPDX-License-Identifier: MIT */
/*
 * Protection tags.
 *
 * Internal interface (vd_ptag_get/hold/release are declared in
 * vipl_internal.h; vd_ptag_create/destroy_all, used only by nic.c, are
 * declared here and there):
 *
 *   int vd_ptag_get(struct vd_nic *nic, VIP_PROTECTION_HANDLE h,
 *                   struct vd_ptag **out);
 *       h == NULL: returns 0 and *out = NULL, meaning "default / any"
 *       (the caller decides: memory registration uses nic->default_ptag,
 *       a VI gets ptag_id 0, or the default ptag's id in strict mode).
 *       h a live ptag of this NIC: returns 0, *out = the ptag, WITH A HOLD
 *       (users + 1); drop it with vd_ptag_release() when the VI or
 *       registration stops naming it.
 *       Anything else (garbage, stale, another NIC's ptag): -EACCES
 *       (vd_ret -> VIP_INVALID_PTAG), *out untouched.
 *       Takes only this file's private leaf lock: callable with or
 *       without any vipl lock held.
 *   void vd_ptag_hold(struct vd_ptag *p);     users + 1 (the caller already
 *                                             holds one)
 *   void vd_ptag_release(struct vd_ptag *p);  users - 1; NULL is a no-op
 *   int vd_ptag_create(struct vd_nic *nic, struct vd_ptag **out);
 *   void vd_ptag_destroy_all(struct vd_nic *nic);   VipCloseNic only
 *
 * VipDestroyPtag refuses a ptag with users > 0 (VIP_INVALID_STATE); the
 * check and vd_ptag_get's hold are made under the same lock, so a ptag is
 * never freed while a get is taking a hold on it.
 *
 * All ptags of all NICs are on one list (g_ptags): struct vd_nic has no
 * ptag list, and ptag operations are rare, so a linear walk is fine.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include "vipl/vipl_internal.h"

int vd_ptag_create(struct vd_nic *nic, struct vd_ptag **out);
void vd_ptag_destroy_all(struct vd_nic *nic);

#define MAX_PTAGS_PER_NIC 4096   /* VipQueryNic MaxPtags */

/* The object handed out; struct vd_ptag first so casts both ways work. */
struct ptag_obj {
	struct vd_ptag pub;
	struct vd_list link;     /* g_ptags, under g_ptag_lock */
};

/* Leaf lock: nothing else is taken while it is held (except the handle
 * table's own lock inside vd_obj_new/free). */
static pthread_mutex_t g_ptag_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vd_list g_ptags = { &g_ptags, &g_ptags };

/* fork() while another thread holds the lock: see handle.c.  Registered
 * after handle.c's handlers (a NIC object exists before any ptag), so the
 * prepare handlers run in the lock order: g_ptag_lock, then g_lock. */
static void fork_prepare(void)
{
	pthread_mutex_lock(&g_ptag_lock);
}

static void fork_release(void)
{
	pthread_mutex_unlock(&g_ptag_lock);
}

static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;

static void atfork_init(void)
{
	pthread_atfork(fork_prepare, fork_release, fork_release);
}

void vd_ptag_hold(struct vd_ptag *p)
{
	/* Relaxed: only a count; the destroy check runs under g_ptag_lock
	 * and a hold is only taken by someone who keeps the ptag alive. */
	atomic_fetch_add_explicit(&p->users, 1, memory_order_relaxed);
}

void vd_ptag_release(struct vd_ptag *p)
{
	if (p)
		atomic_fetch_sub_explicit(&p->users, 1, memory_order_relaxed);
}

/* Ptags of `nic`; and whether `id` is taken among them.  Lock held. */
static unsigned count_nic(const struct vd_nic *nic, uint32_t id, bool *taken)
{
	struct vd_list *l;
	unsigned n = 0;

	*taken = false;
	for (l = g_ptags.next; l != &g_ptags; l = l->next) {
		struct ptag_obj *p = vd_container_of(l, struct ptag_obj, link);

		if (p->pub.nic != nic)
			continue;
		n++;
		if (p->pub.id == id)
			*taken = true;
	}
	return n;
}

/* A random id, nonzero and unique within the NIC.  Lock held. */
static int pick_id(const struct vd_nic *nic, uint32_t *id)
{
	bool taken;

	if (count_nic(nic, 0, &taken) >= MAX_PTAGS_PER_NIC)
		return -ENOMEM;
	do {
		*id = vd_random32();
		count_nic(nic, *id, &taken);
	} while (*id == 0 || taken);
	return 0;
}

int vd_ptag_create(struct vd_nic *nic, struct vd_ptag **out)
{
	struct ptag_obj *p;
	uint32_t id;
	int err;

	pthread_once(&g_atfork_once, atfork_init);
	pthread_mutex_lock(&g_ptag_lock);
	err = pick_id(nic, &id);
	p = err ? NULL : vd_obj_new(VD_OBJ_PTAG, sizeof(*p));
	if (!err && !p)
		err = -ENOMEM;
	if (!err) {
		p->pub.nic = nic;
		p->pub.id = id;
		vd_list_add(&g_ptags, &p->link);
		*out = &p->pub;
	}
	pthread_mutex_unlock(&g_ptag_lock);
	return err;
}

/* The live ptag of `nic` named by h, or NULL.  Lock held. */
static struct ptag_obj *find_locked(struct vd_nic *nic, VIP_PROTECTION_HANDLE h)
{
	struct ptag_obj *p = vd_obj_lookup(h, VD_OBJ_PTAG);

	return p && p->pub.nic == nic ? p : NULL;
}

int vd_ptag_get(struct vd_nic *nic, VIP_PROTECTION_HANDLE h, struct vd_ptag **out)
{
	struct ptag_obj *p;

	if (!h) {
		*out = NULL;
		return 0;
	}
	pthread_mutex_lock(&g_ptag_lock);
	p = find_locked(nic, h);
	if (p)
		vd_ptag_hold(&p->pub);
	pthread_mutex_unlock(&g_ptag_lock);
	if (!p)
		return -EACCES;
	*out = &p->pub;
	return 0;
}

static void free_locked(struct ptag_obj *p)
{
	vd_list_del(&p->link);
	vd_obj_free(p);
}

void vd_ptag_destroy_all(struct vd_nic *nic)
{
	struct vd_list *l, *next;

	pthread_mutex_lock(&g_ptag_lock);
	for (l = g_ptags.next; l != &g_ptags; l = next) {
		struct ptag_obj *p = vd_container_of(l, struct ptag_obj, link);

		next = l->next;
		if (p->pub.nic == nic)
			free_locked(p);
	}
	pthread_mutex_unlock(&g_ptag_lock);
}

/* ---- API ----------------------------------------------------------------------- */

VIP_RETURN VipCreatePtag(VIP_NIC_HANDLE NicHandle, VIP_PROTECTION_HANDLE *Ptag)
{
	struct vd_nic *nic = vd_obj_lookup(NicHandle, VD_OBJ_NIC);
	struct vd_ptag *p;
	int err;

	if (!nic || !Ptag)
		return VIP_INVALID_PARAMETER;
	err = vd_ptag_create(nic, &p);
	if (!err)
		*Ptag = vd_obj_handle(p);
	return vd_ret(err);
}

/* A foreign, stale or garbage ptag, or the NIC's default ptag (it lives as
 * long as the NIC): VIP_INVALID_PTAG.  Still named by a VI or a
 * registration: VIP_INVALID_STATE. */
VIP_RETURN VipDestroyPtag(VIP_NIC_HANDLE NicHandle, VIP_PROTECTION_HANDLE Ptag)
{
	struct vd_nic *nic = vd_obj_lookup(NicHandle, VD_OBJ_NIC);
	struct ptag_obj *p;
	int err = 0;

	if (!nic)
		return VIP_INVALID_PARAMETER;
	pthread_mutex_lock(&g_ptag_lock);
	p = find_locked(nic, Ptag);
	if (!p || &p->pub == nic->default_ptag)
		err = -EACCES;
	else if (atomic_load_explicit(&p->pub.users, memory_order_relaxed))
		err = -EBUSY;
	else
		free_locked(p);
	pthread_mutex_unlock(&g_ptag_lock);
	return vd_ret(err);
}
