/* SPDX-License-Identifier: MIT */
/*
 * Translation and protection table: memory registration.
 *
 * Shared part: a sealed memfd (struct vd_tpt_shared) that connected peers
 * map read-only and consult before every RDMA into or out of our memory.
 * Private part: struct vd_mr per entry (lmm handle, ptag), followed in the
 * same mapping by struct tpt_priv (free-list tail, each slot's previous
 * key).
 *
 * Entry protocol (every field of a shared entry is accessed atomically;
 * peers read it from another process):
 *   publish (register):  seq odd; fields; key; seq even
 *   revoke (deregister): seq odd; key = 0; seq even
 *   update (attributes): seq odd; ptag_id, flags; seq even
 * Only the owner writes, always under nic->lock.  Readers:
 *   vd_tpt_check_remote: the seqlock (seq, fields, seq again).
 *   vd_tpt_check_local:  the key itself as the sequence -- addr and len
 *     only change together with the key, and the key always passes through
 *     0 between two registrations of a slot.
 * Every access to an entry is seq_cst: then the seqlock needs no fences
 * (a reader that saw any store of an update sees that update's odd seq,
 * or a later value, on its second read), TSan can check it, and the cost
 * stays with the rare writer (loads are plain moves on x86).
 *
 * Internal interface (declared here until vipl_internal.h carries it; the
 * prototypes are repeated in nic.c):
 *   int vd_tpt_init(struct vd_nic *nic);         0 or -errno
 *   void vd_tpt_release_all(struct vd_nic *nic); deregister everything
 *   void vd_tpt_fini(struct vd_nic *nic);        unmap and close
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vipl/vipl_internal.h"

int vd_tpt_init(struct vd_nic *nic);
void vd_tpt_release_all(struct vd_nic *nic);
void vd_tpt_fini(struct vd_nic *nic);

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

#define IDX_MASK (VD_TPT_MAX - 1u)
#define KEY_MASK ((1u << (32 - VD_TPT_IDX_BITS)) - 1u)
/* check_remote gives up on an entry whose seq stays odd (a writer that
 * died mid-update cannot happen -- the owner's writes never block -- but
 * the table is another process's memory: never spin forever on it). */
#define REMOTE_RETRIES 4096

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

struct tpt_priv {
	uint32_t tail;                  /* free list tail, index + 1 */
	uint32_t prev_key[VD_TPT_MAX];  /* last key each slot had */
};

#define PRIVATE_BYTES \
	(VD_TPT_MAX * sizeof(struct vd_mr) + sizeof(struct tpt_priv))

static struct tpt_priv *priv_of(struct vd_tpt *t)
{
	return (struct tpt_priv *)(t->mr + VD_TPT_MAX);
}

/* ---- shared entries ------------------------------------------------------- */

/* Seq_cst loads and stores of entry fields (see the top of the file). */
#define LD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define ST(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)

/* Writer side of the seqlock: seq odd before any field changes, even
 * after; pairs with the two seq loads in vd_tpt_check_remote(). */
static void seq_begin(struct vd_tpt_entry *e)
{
	atomic_store(&e->seq, atomic_load(&e->seq) + 1);
}

static void seq_end(struct vd_tpt_entry *e)
{
	atomic_store(&e->seq, atomic_load(&e->seq) + 1);
}

static void entry_publish(struct vd_tpt_entry *e, uint32_t key, uint64_t addr,
			  uint64_t len, uint32_t ptag_id, uint32_t flags)
{
	seq_begin(e);
	ST(&e->addr, addr);
	ST(&e->len, len);
	ST(&e->ptag_id, ptag_id);
	ST(&e->flags, flags);
	/* Last: vd_tpt_check_local() reads the key first, so it sees these
	 * fields once it sees the key. */
	ST(&e->key, key);
	seq_end(e);
}

static void entry_revoke(struct vd_tpt_entry *e)
{
	seq_begin(e);
	ST(&e->key, 0u);
	seq_end(e);
}

static void entry_update(struct vd_tpt_entry *e, uint32_t ptag_id, uint32_t flags)
{
	seq_begin(e);
	ST(&e->ptag_id, ptag_id);
	ST(&e->flags, flags);
	seq_end(e);
}

/* Store-load barrier after the revoke.  TSan does not model fences (GCC
 * rejects them under -fsanitize=thread); there the seq_cst store of key 0
 * and the seq_cst loads in mr_quiesce already order the two sides. */
static inline void full_fence(void)
{
#ifndef __SANITIZE_THREAD__
	atomic_thread_fence(memory_order_seq_cst);
#endif
}

/* ---- checks ---------------------------------------------------------------- */

/* [addr, addr+len) inside [base, base+size), without overflow. */
static bool range_inside(uint64_t base, uint64_t size, uint64_t addr, uint64_t len)
{
	if (addr + len < addr)
		return false;
	return addr >= base && len <= size && addr - base <= size - len;
}

static int entry_verdict(uint32_t key, uint64_t base, uint64_t size,
			 uint32_t eptag, VIP_MEM_HANDLE h, uint64_t addr,
			 uint64_t len, uint32_t ptag_id)
{
	if (!key || key != h >> VD_TPT_IDX_BITS)
		return -EBADF;
	if (!range_inside(base, size, addr, len))
		return -ERANGE;
	if (ptag_id && eptag != ptag_id)
		return -EACCES;
	return 0;
}

/* A consistent copy of the entry h names: 0, or -EBADF. */
static int entry_snapshot(struct vd_nic *nic, VIP_MEM_HANDLE h, uint32_t *key,
			  uint64_t *base, uint64_t *size, uint32_t *eptag)
{
	uint32_t idx = h & IDX_MASK;
	struct vd_tpt_entry *e;

	if (!idx)
		return -EBADF;
	e = &nic->tpt.shared->e[idx];
	/* The key is this reader's sequence (pairs with entry_publish and
	 * entry_revoke): if it changed, the fields may belong to a later
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

	return err ? err : entry_verdict(key, base, size, eptag, h, addr, len, ptag_id);
}

int vd_tpt_local_room(struct vd_nic *nic, VIP_MEM_HANDLE h, uint64_t addr,
		      uint32_t ptag_id, uint64_t *room)
{
	uint32_t key, eptag;
	uint64_t base, size;
	int err = entry_snapshot(nic, h, &key, &base, &size, &eptag);

	if (!err)
		err = entry_verdict(key, base, size, eptag, h, addr, 1, ptag_id);
	if (!err)
		*room = base + size - addr;
	return err;
}

int vd_tpt_check_remote(const struct vd_tpt_shared *t, VIP_MEM_HANDLE h,
			uint64_t addr, uint64_t len, uint32_t vi_ptag_id,
			uint32_t need)
{
	uint32_t idx = h & IDX_MASK, s1, key, eptag, flags;
	const struct vd_tpt_entry *e;
	uint64_t base, size;
	int err, tries;

	/* The provider validated magic, version and the mapping's size
	 * (VD_TPT_SHARED_BYTES) when it mapped the table; idx < VD_TPT_MAX
	 * by construction. */
	if (!idx)
		return -EBADF;
	e = &t->e[idx];
	for (tries = 0; tries < REMOTE_RETRIES; tries++) {
		/* Pairs with seq_begin()/seq_end(). */
		s1 = atomic_load(&e->seq);
		if (s1 & 1) {
			cpu_relax();
			continue;
		}
		key = LD(&e->key);
		base = LD(&e->addr);
		size = LD(&e->len);
		eptag = LD(&e->ptag_id);
		flags = LD(&e->flags);
		/* If any field came from a newer update, seq has moved on. */
		if (atomic_load(&e->seq) != s1)
			continue;
		err = entry_verdict(key, base, size, eptag, h, addr, len,
				    vi_ptag_id);
		if (!err && (flags & need) != need)
			err = -EACCES;
		return err;
	}
	return -EBADF;
}

/* ---- table setup ------------------------------------------------------------ */

static int seal_table(int fd)
{
	int seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

	/* FUTURE_WRITE: no new writable mapping or write(2); ours (made
	 * before) keeps working.  Peers can only map the table read-only. */
	if (fcntl(fd, F_ADD_SEALS, seals | F_SEAL_FUTURE_WRITE) == 0)
		return 0;
	if (errno != EINVAL)
		return -errno;
	vd_log("tpt: kernel lacks F_SEAL_FUTURE_WRITE; peers could write the TPT");
	return fcntl(fd, F_ADD_SEALS, seals) ? -errno : 0;
}

static int map_shared(struct vd_tpt *t)
{
	void *p;

	t->memfd = memfd_create("viaduct-tpt", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (t->memfd < 0)
		return -errno;
	if (ftruncate(t->memfd, (off_t)VD_TPT_SHARED_BYTES))
		return -errno;
	p = mmap(NULL, VD_TPT_SHARED_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
		 t->memfd, 0);
	if (p == MAP_FAILED)
		return -errno;
	t->shared = p;
	t->shared->magic = VD_TPT_MAGIC;
	t->shared->version = VD_TPT_VERSION;
	t->shared->nentries = VD_TPT_MAX;
	return seal_table(t->memfd);
}

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
	int err;

	memset(t, 0, sizeof(*t));
	t->memfd = -1;
	p = mmap(NULL, PRIVATE_BYTES, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	t->mr = p;
	init_free_list(t);
	err = map_shared(t);
	if (err)
		vd_tpt_fini(nic);
	return err;
}

void vd_tpt_fini(struct vd_nic *nic)
{
	struct vd_tpt *t = &nic->tpt;

	if (t->shared)
		munmap(t->shared, VD_TPT_SHARED_BYTES);
	if (t->memfd >= 0)
		close(t->memfd);
	if (t->mr)
		munmap(t->mr, PRIVATE_BYTES);
	t->shared = NULL;
	t->mr = NULL;
	t->memfd = -1;
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
	struct vd_tpt_entry *e = &t->shared->e[idx];

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

/* Pick a slot and publish the entry.  Returns the handle, 0 when full. */
static VIP_MEM_HANDLE publish(struct vd_nic *nic, void *addr, VIP_ULONG len,
			      struct vd_ptag *ptag, uint32_t flags, lmm_handle_t lh)
{
	struct vd_tpt *t = &nic->tpt;
	uint32_t idx, key = 0;

	pthread_mutex_lock(&nic->lock);
	idx = slot_get(t);
	if (idx) {
		key = new_key(t, idx);
		t->mr[idx].lmm = lh;
		t->mr[idx].ptag = ptag;
		entry_publish(&t->shared->e[idx], key, (uint64_t)(uintptr_t)addr,
			      len, ptag->id, flags);
	}
	pthread_mutex_unlock(&nic->lock);
	return idx ? key << VD_TPT_IDX_BITS | idx : 0;
}

/* An lmm handle that stands for "not pinned" (never a real handle: its
 * slot index would be 2^32 - 1 with generation 2^32 - 1). */
#define VD_LMM_UNPINNED (~(lmm_handle_t)0)

static void unpin(lmm_handle_t lh)
{
	if (lh != VD_LMM_UNPINNED)
		lmm_unlock_area(lh);
}

static VIP_RETURN register_mem(VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress,
			       VIP_ULONG Length, const VIP_MEM_ATTRIBUTES *MemAttrs,
			       VIP_MEM_HANDLE *MemHandle, bool pin)
{
	struct vd_nic *nic = vd_obj_lookup(NicHandle, VD_OBJ_NIC);
	lmm_handle_t lh = VD_LMM_UNPINNED;
	struct vd_ptag *ptag;
	VIP_MEM_HANDLE mh;
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
	mh = publish(nic, VirtualAddress, Length, ptag, attr_flags((VIP_MEM_ATTRIBUTES *)MemAttrs), lh);
	if (!mh) {
		unpin(lh);
		vd_ptag_release(ptag);
		return VIP_ERROR_RESOURCE;      /* VD_TPT_MAX - 1 regions */
	}
	*MemHandle = mh;
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

	if (nic && !(nic->ops->caps & VD_PROV_MOVES_BY_ADDRESS)) {
		vd_log("vipl: provider %s needs pinned memory: use VipRegisterMem",
		       nic->ops->name);
		return VIP_INVALID_PARAMETER;
	}
	return register_mem(NicHandle, VirtualAddress, Length, MemAttrs, MemHandle, false);
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
	entry_revoke(&t->shared->e[idx]);
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
	/* Pairs with the initiator's seq_cst fence between its store of
	 * vd_shm_dir.s2.rdma_active and its vd_tpt_check_remote(): either it
	 * sees key 0, or mr_quiesce sees its rdma_active. */
	full_fence();
	if (nic->ops && nic->ops->mr_quiesce && nic->ops->mr_quiesce(nic, idx)) {
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
		flags = LD(&nic->tpt.shared->e[idx].flags);
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
		entry_update(&nic->tpt.shared->e[idx], ptag->id,
			     attr_flags(MemAttrs));
	}
	pthread_mutex_unlock(&nic->lock);
	vd_ptag_release(idx ? old : ptag);
	return idx ? VIP_SUCCESS : VIP_INVALID_PARAMETER;
}
