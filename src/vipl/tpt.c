/* SPDX-License-Identifier: MIT */
/*
 * Translation and protection table: memory registration.
 *
 * The table lives in this process's private memory: struct vd_tpt_entry
 * per slot (what checks read, without a lock), struct vd_mr per slot (lmm
 * handle, ptag), and struct tpt_priv (free-list tail, each slot's previous
 * key).  Providers hear of every change through mr_reg / mr_update /
 * mr_dereg (prov.h) and make it visible to their peers their own way.
 *
 * Entry protocol (only the owner writes, under nic->lock):
 *   publish (register):  fields; key last
 *   revoke (deregister): key = 0
 *   update (attributes): ptag_id, flags
 * Readers use the key as their sequence: addr and len only change
 * together with the key, and the key always passes through 0 between two
 * registrations of a slot.  Every access to an entry is seq_cst, so TSan
 * can check it and the cost stays with the rare writer (loads are plain
 * moves on x86).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "vipl/vipl_internal.h"

#define IDX_MASK (VD_TPT_MAX - 1u)
#define KEY_MASK ((1u << (32 - VD_TPT_IDX_BITS)) - 1u)
struct tpt_priv {
	uint32_t tail;                  /* free list tail, index + 1 */
	uint32_t prev_key[VD_TPT_MAX];  /* last key each slot had */
};

#define PRIVATE_BYTES \
	(VD_TPT_MAX * (sizeof(struct vd_tpt_entry) + sizeof(struct vd_mr)) + \
	 sizeof(struct tpt_priv))

static struct tpt_priv *priv_of(struct vd_tpt *t)
{
	return (struct tpt_priv *)(t->mr + VD_TPT_MAX);
}

/* ---- entries ------------------------------------------------------------------ */

/* Seq_cst loads and stores of entry fields (see the top of the file). */
#define LD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define ST(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)

static void entry_publish(struct vd_tpt_entry *e, const struct vd_mr_info *m)
{
	ST(&e->addr, m->addr);
	ST(&e->len, m->len);
	ST(&e->ptag_id, m->ptag_id);
	ST(&e->flags, m->flags);
	/* Last: entry_snapshot() reads the key first, so it sees these
	 * fields once it sees the key. */
	ST(&e->key, m->key);
}

static void entry_info(struct vd_tpt_entry *e, struct vd_mr_info *m)
{
	m->key = LD(&e->key);
	m->addr = LD(&e->addr);
	m->len = LD(&e->len);
	m->ptag_id = LD(&e->ptag_id);
	m->flags = LD(&e->flags);
}

/* ---- checks ---------------------------------------------------------------- */

/* A consistent copy of the entry h names: 0, or -EBADF. */
static int entry_snapshot(struct vd_nic *nic, VIP_MEM_HANDLE h, uint32_t *key,
			  uint64_t *base, uint64_t *size, uint32_t *eptag)
{
	uint32_t idx = h & IDX_MASK;
	struct vd_tpt_entry *e;

	if (!idx)
		return -EBADF;
	e = &nic->tpt.e[idx];
	/* The key is this reader's sequence (pairs with entry_publish and
	 * revoke_locked): if it changed, the fields may belong to a later
	 * registration of the slot. */
	*key = LD(&e->key);
	if (!*key || *key != h >> VD_TPT_IDX_BITS)
		return -EBADF;
	*base = LD(&e->addr);
	*size = LD(&e->len);
	*eptag = LD(&e->ptag_id);
	return LD(&e->key) == *key ? 0 : -EBADF;
}

int vd_tpt_check_local(struct vd_nic *nic, VIP_MEM_HANDLE h, uint64_t addr,
		       uint64_t len, uint32_t ptag_id)
{
	uint32_t key, eptag;
	uint64_t base, size;
	int err = entry_snapshot(nic, h, &key, &base, &size, &eptag);

	return err ? err : vd_tpt_verdict(key, base, size, eptag, h, addr, len, ptag_id);
}

int vd_tpt_local_room(struct vd_nic *nic, VIP_MEM_HANDLE h, uint64_t addr,
		      uint32_t ptag_id, uint64_t *room)
{
	uint32_t key, eptag;
	uint64_t base, size;
	int err = entry_snapshot(nic, h, &key, &base, &size, &eptag);

	if (!err)
		err = vd_tpt_verdict(key, base, size, eptag, h, addr, 1, ptag_id);
	if (!err)
		*room = base + size - addr;
	return err;
}

int vd_tpt_check_rdma(struct vd_nic *nic, VIP_MEM_HANDLE h, uint64_t addr,
		      uint64_t len, uint32_t vi_ptag_id, uint32_t need)
{
	uint32_t key, eptag;
	uint64_t base, size;
	int err = entry_snapshot(nic, h, &key, &base, &size, &eptag);

	if (!err)
		err = vd_tpt_verdict(key, base, size, eptag, h, addr, len, vi_ptag_id);
	if (!err && (LD(&nic->tpt.e[h & IDX_MASK].flags) & need) != need)
		err = -EACCES;
	/* The key again: the flags read belong to this registration. */
	if (!err && LD(&nic->tpt.e[h & IDX_MASK].key) != key)
		err = -EBADF;
	return err;
}

/* ---- table setup ------------------------------------------------------------ */

/* Free list of every index but 0 (so memory handle 0 is never valid). */
static void init_free_list(struct vd_tpt *t)
{
	uint32_t i;

	for (i = 1; i < VD_TPT_MAX; i++)
		t->mr[i].next_free = i + 1 < VD_TPT_MAX ? i + 2 : 0;
	t->free_head = 2;            /* index 1 */
	priv_of(t)->tail = VD_TPT_MAX;
	t->used = 0;
}

int vd_tpt_init(struct vd_nic *nic)
{
	struct vd_tpt *t = &nic->tpt;
	void *p;

	memset(t, 0, sizeof(*t));
	p = mmap(NULL, PRIVATE_BYTES, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	t->e = p;
	t->mr = (struct vd_mr *)(t->e + VD_TPT_MAX);
	init_free_list(t);
	return 0;
}

void vd_tpt_fini(struct vd_nic *nic)
{
	struct vd_tpt *t = &nic->tpt;

	if (t->e)
		munmap(t->e, PRIVATE_BYTES);
	t->e = NULL;
	t->mr = NULL;
}

/* ---- slots (nic->lock held) -------------------------------------------------- */

/* FIFO: a freed slot is reused last, so a stale handle meets its slot
 * reused as late as possible (and then its key differs anyway). */
static uint32_t slot_get(struct vd_tpt *t)
{
	uint32_t idx;

	if (!t->free_head)
		return 0;
	idx = t->free_head - 1;
	t->free_head = t->mr[idx].next_free;
	if (!t->free_head)
		priv_of(t)->tail = 0;
	t->used++;
	return idx;
}

static void slot_put(struct vd_tpt *t, uint32_t idx)
{
	struct tpt_priv *pv = priv_of(t);

	t->mr[idx].next_free = 0;
	if (pv->tail)
		t->mr[pv->tail - 1].next_free = idx + 1;
	else
		t->free_head = idx + 1;
	pv->tail = idx + 1;
	t->used--;
}

/* A random key for slot idx: nonzero, not the slot's previous key. */
static uint32_t new_key(struct vd_tpt *t, uint32_t idx)
{
	uint32_t key;

	do
		key = vd_random32() & KEY_MASK;
	while (!key || key == priv_of(t)->prev_key[idx]);
	priv_of(t)->prev_key[idx] = key;
	return key;
}

/* The live registration named by (addr, h): its index, or 0. */
static uint32_t mr_find(struct vd_tpt *t, const void *addr, VIP_MEM_HANDLE h)
{
	uint32_t idx = h & IDX_MASK;
	struct vd_tpt_entry *e = &t->e[idx];

	if (!idx || t->mr[idx].lmm == LMM_HANDLE_INVALID)
		return 0;
	if (LD(&e->key) != h >> VD_TPT_IDX_BITS ||
	    LD(&e->addr) != (uint64_t)(uintptr_t)addr)
		return 0;
	return idx;
}

static uint32_t attr_flags(const VIP_MEM_ATTRIBUTES *a)
{
	if (!a)
		return 0;
	return (a->EnableRdmaWrite ? VD_TPT_RDMA_WRITE : 0) |
	       (a->EnableRdmaRead ? VD_TPT_RDMA_READ : 0);
}

/* The ptag the attributes name, held; NULL attrs or Ptag: the default. */
static int attr_ptag(struct vd_nic *nic, const VIP_MEM_ATTRIBUTES *a,
		     struct vd_ptag **out)
{
	int err = vd_ptag_get(nic, a ? a->Ptag : NULL, out);

	if (!err && !*out) {
		*out = nic->default_ptag;
		vd_ptag_hold(*out);
	}
	return err;
}

/* ---- registration ------------------------------------------------------------ */

/* An lmm handle that stands for "not pinned" (never a real handle: its
 * slot index would be 2^32 - 1 with generation 2^32 - 1). */
#define VD_LMM_UNPINNED (~(lmm_handle_t)0)

/* Pick a slot and publish the entry in the core table.  Returns its
 * index, 0 when full; *info is what was published. */
static uint32_t publish(struct vd_nic *nic, void *addr, VIP_ULONG len,
			struct vd_ptag *ptag, uint32_t flags, lmm_handle_t lh,
			struct vd_mr_info *info)
{
	struct vd_tpt *t = &nic->tpt;
	uint32_t idx;

	pthread_mutex_lock(&nic->lock);
	idx = slot_get(t);
	if (idx) {
		*info = (struct vd_mr_info){
			.key = new_key(t, idx), .ptag_id = ptag->id,
			.addr = (uint64_t)(uintptr_t)addr, .len = len,
			.flags = flags, .pinned = lh != VD_LMM_UNPINNED,
		};
		t->mr[idx].lmm = lh;
		t->mr[idx].ptag = ptag;
		entry_publish(&t->e[idx], info);
	}
	pthread_mutex_unlock(&nic->lock);
	return idx;
}

static void unpin(lmm_handle_t lh)
{
	if (lh != VD_LMM_UNPINNED)
		lmm_unlock_area(lh);
}

/* Revoke slot idx (nic->lock held): peers and local checks fail from now
 * on.  Returns what the caller must release outside the lock. */
static void revoke_locked(struct vd_tpt *t, uint32_t idx, lmm_handle_t *lh,
			  struct vd_ptag **ptag)
{
	*lh = t->mr[idx].lmm;
	*ptag = t->mr[idx].ptag;
	t->mr[idx].lmm = LMM_HANDLE_INVALID;   /* not live, not yet free */
	t->mr[idx].ptag = NULL;
	ST(&t->e[idx].key, 0u);     /* pairs with entry_snapshot's key loads */
}

static VIP_RETURN register_mem(VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress,
			       VIP_ULONG Length, const VIP_MEM_ATTRIBUTES *MemAttrs,
			       VIP_MEM_HANDLE *MemHandle, bool pin)
{
	struct vd_nic *nic = vd_obj_lookup(NicHandle, VD_OBJ_NIC);
	lmm_handle_t lh = VD_LMM_UNPINNED;
	struct vd_mr_info info;
	struct vd_ptag *ptag;
	uint32_t idx;
	int err;

	if (!nic || !VirtualAddress || !Length || !MemHandle ||
	    (uintptr_t)VirtualAddress + Length < (uintptr_t)VirtualAddress)
		return VIP_INVALID_PARAMETER;
	err = attr_ptag(nic, (VIP_MEM_ATTRIBUTES *)MemAttrs, &ptag);
	if (err)
		return vd_ret(err);
	/* Pin outside nic->lock: mlock can take long. */
	err = pin ? lmm_lock_area(VirtualAddress, Length, &lh) : 0;
	if (err) {
		vd_ptag_release(ptag);
		/* -EOVERFLOW (range wraps) is a bad parameter; -ENOMEM and
		 * -EPERM (memlock limit) are resources; -EFAULT unmapped. */
		return vd_ret(err == -EOVERFLOW ? -EINVAL : err);
	}
	idx = publish(nic, VirtualAddress, Length, ptag,
		      attr_flags((VIP_MEM_ATTRIBUTES *)MemAttrs), lh, &info);
	if (!idx) {
		unpin(lh);
		vd_ptag_release(ptag);
		return VIP_ERROR_RESOURCE;      /* VD_TPT_MAX - 1 regions */
	}
	/* The handle is nobody's yet: the provider may take its time. */
	err = nic->ops->mr_reg(nic, idx, &info);
	if (err) {
		pthread_mutex_lock(&nic->lock);
		revoke_locked(&nic->tpt, idx, &lh, &ptag);
		slot_put(&nic->tpt, idx);
		pthread_mutex_unlock(&nic->lock);
		unpin(lh);
		vd_ptag_release(ptag);
		return vd_ret(err);
	}
	*MemHandle = (VIP_MEM_HANDLE)info.key << VD_TPT_IDX_BITS | idx;
	return VIP_SUCCESS;
}

VIP_RETURN VipRegisterMem(VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress,
			  VIP_ULONG Length, VIP_MEM_ATTRIBUTES *MemAttrs,
			  VIP_MEM_HANDLE *MemHandle)
{
	return register_mem(NicHandle, VirtualAddress, Length, MemAttrs, MemHandle, true);
}

VIP_RETURN viaduct_register_mem_unpinned(VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress,
					 VIP_ULONG Length, const VIP_MEM_ATTRIBUTES *MemAttrs,
					 VIP_MEM_HANDLE *MemHandle)
{
	struct vd_nic *nic = vd_obj_lookup(NicHandle, VD_OBJ_NIC);

	if (nic && !(nic->caps->flags & VD_PROV_MOVES_BY_ADDRESS)) {
		vd_log("vipl: provider %s needs pinned memory: use VipRegisterMem",
		       nic->ops->name);
		return VIP_INVALID_PARAMETER;
	}
	return register_mem(NicHandle, VirtualAddress, Length, MemAttrs, MemHandle, false);
}

/* A registration whose peers would not leave: keep it pinned and its
 * slot taken, findable by find_draining() for another try. */
static void keep_draining(struct vd_nic *nic, uint32_t idx, lmm_handle_t lh,
			  struct vd_ptag *ptag, VIP_MEM_HANDLE h, const void *addr)
{
	pthread_mutex_lock(&nic->lock);
	nic->tpt.mr[idx].lmm = lh;
	nic->tpt.mr[idx].ptag = ptag;
	nic->tpt.mr[idx].draining = h;
	nic->tpt.mr[idx].draining_addr = addr;
	pthread_mutex_unlock(&nic->lock);
}

/* After revoke_locked, with no lock held: wait out peers' RDMAs, unpin,
 * recycle the slot.  -EBUSY: a live peer stayed inside (h and addr name
 * the registration for the retry). */
static int release_revoked(struct vd_nic *nic, uint32_t idx, lmm_handle_t lh,
			   struct vd_ptag *ptag, VIP_MEM_HANDLE h, const void *addr)
{
	if (nic->ops->mr_dereg(nic, idx)) {
		keep_draining(nic, idx, lh, ptag, h, addr);
		return -EBUSY;
	}
	unpin(lh);
	pthread_mutex_lock(&nic->lock);
	slot_put(&nic->tpt, idx);
	pthread_mutex_unlock(&nic->lock);
	vd_ptag_release(ptag);
	return 0;
}

/* A registration an earlier VipDeregisterMem left draining. */
static uint32_t find_draining(struct vd_tpt *t, const void *addr, VIP_MEM_HANDLE h)
{
	uint32_t idx = h & IDX_MASK;

	if (!idx || !t->mr[idx].draining || t->mr[idx].draining != h ||
	    t->mr[idx].draining_addr != addr)
		return 0;
	t->mr[idx].draining = 0;
	return idx;
}

VIP_RETURN VipDeregisterMem(VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress,
			    VIP_MEM_HANDLE MemHandle)
{
	struct vd_nic *nic = vd_obj_lookup(NicHandle, VD_OBJ_NIC);
	struct vd_ptag *ptag = NULL;
	lmm_handle_t lh = LMM_HANDLE_INVALID;
	uint32_t idx;

	if (!nic)
		return VIP_INVALID_PARAMETER;
	pthread_mutex_lock(&nic->lock);
	idx = mr_find(&nic->tpt, VirtualAddress, MemHandle);
	if (!idx)
		idx = find_draining(&nic->tpt, VirtualAddress, MemHandle);
	if (idx)
		revoke_locked(&nic->tpt, idx, &lh, &ptag);
	pthread_mutex_unlock(&nic->lock);
	if (!idx)
		return VIP_INVALID_PARAMETER;
	/* Never success while a peer may still copy: the memory stays
	 * registered (pinned), and a later call tries again. */
	if (release_revoked(nic, idx, lh, ptag, MemHandle, VirtualAddress))
		return VIP_ERROR_RESOURCE;
	return VIP_SUCCESS;
}

void vd_tpt_release_all(struct vd_nic *nic)
{
	lmm_handle_t lh = LMM_HANDLE_INVALID;
	struct vd_ptag *ptag;
	uint32_t idx;
	bool more = true;

	for (idx = 1; idx < VD_TPT_MAX && more; idx++) {
		pthread_mutex_lock(&nic->lock);
		more = nic->tpt.used > 0;
		lh = nic->tpt.mr[idx].lmm;
		nic->tpt.mr[idx].draining = 0;
		if (lh != LMM_HANDLE_INVALID)
			revoke_locked(&nic->tpt, idx, &lh, &ptag);
		pthread_mutex_unlock(&nic->lock);
		/* At close every connection is gone: nobody can hold it. */
		if (lh != LMM_HANDLE_INVALID &&
		    release_revoked(nic, idx, lh, ptag, 0, NULL) == -EBUSY)
			vd_log("vipl: a region stays pinned at VipCloseNic");
	}
}

VIP_RETURN VipQueryMem(VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress,
		       VIP_MEM_HANDLE MemHandle, VIP_MEM_ATTRIBUTES *MemAttrs)
{
	struct vd_nic *nic = vd_obj_lookup(NicHandle, VD_OBJ_NIC);
	uint32_t idx, flags = 0;
	void *ptag = NULL;

	if (!nic || !MemAttrs)
		return VIP_INVALID_PARAMETER;
	pthread_mutex_lock(&nic->lock);
	idx = mr_find(&nic->tpt, VirtualAddress, MemHandle);
	if (idx) {
		ptag = vd_obj_handle(nic->tpt.mr[idx].ptag);
		flags = LD(&nic->tpt.e[idx].flags);
	}
	pthread_mutex_unlock(&nic->lock);
	if (!idx)
		return VIP_INVALID_PARAMETER;
	MemAttrs->Ptag = ptag;
	MemAttrs->EnableRdmaWrite = (flags & VD_TPT_RDMA_WRITE) ? VIP_TRUE : VIP_FALSE;
	MemAttrs->EnableRdmaRead = (flags & VD_TPT_RDMA_READ) ? VIP_TRUE : VIP_FALSE;
	return VIP_SUCCESS;
}

/* A NULL Ptag in the attributes means the NIC's default ptag. */
VIP_RETURN VipSetMemAttributes(VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress,
			       VIP_MEM_HANDLE MemHandle, VIP_MEM_ATTRIBUTES *MemAttrs)
{
	struct vd_nic *nic = vd_obj_lookup(NicHandle, VD_OBJ_NIC);
	struct vd_ptag *ptag, *old = NULL;
	uint32_t idx;
	int err;

	if (!nic || !MemAttrs)
		return VIP_INVALID_PARAMETER;
	err = attr_ptag(nic, MemAttrs, &ptag);
	if (err)
		return vd_ret(err);
	pthread_mutex_lock(&nic->lock);
	idx = mr_find(&nic->tpt, VirtualAddress, MemHandle);
	if (idx) {
		old = nic->tpt.mr[idx].ptag;
		nic->tpt.mr[idx].ptag = ptag;
		struct vd_mr_info info;

		ST(&nic->tpt.e[idx].ptag_id, ptag->id);
		ST(&nic->tpt.e[idx].flags, attr_flags(MemAttrs));
		entry_info(&nic->tpt.e[idx], &info);
		info.pinned = nic->tpt.mr[idx].lmm != VD_LMM_UNPINNED;
		nic->ops->mr_update(nic, idx, &info);
	}
	pthread_mutex_unlock(&nic->lock);
	vd_ptag_release(idx ? old : ptag);
	return idx ? VIP_SUCCESS : VIP_INVALID_PARAMETER;
}
