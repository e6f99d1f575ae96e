/* SPDX-License-Identifier: MIT */
/*
 * The shm provider's view of memory registration: a copy of the core's
 * translation and protection table in a sealed memfd that connected peers
 * map read-only and consult before every RDMA into or out of our memory
 * (the initiator moves the bytes, so it must check; the seal makes the
 * table the owner's word).
 *
 * Entry protocol (every field of a shared entry is accessed atomically;
 * peers read it from another process):
 *   publish (mr_reg):     seq odd; fields; key; seq even
 *   revoke (mr_dereg):    seq odd; key = 0; seq even
 *   update (mr_update):   seq odd; ptag_id, flags; seq even
 * Only the owner writes, one registration at a time per slot (the core
 * orders register, update and deregister of a slot).  Peers read with
 * the seqlock (seq, fields, seq again).  Every access is seq_cst: then
 * the seqlock needs no fences (a reader that saw any store of an update
 * sees that update's odd seq, or a later value, on its second read), TSan
 * can check it, and the cost stays with the rare writer.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "prov/shm/shm.h"

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

#define IDX_MASK (VD_TPT_MAX - 1u)
/* check_remote gives up on an entry whose seq stays odd (a writer that
 * died mid-update cannot happen -- the owner's writes never block -- but
 * the table is another process's memory: never spin forever on it). */
#define REMOTE_RETRIES 4096

#define LD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define ST(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)

/* Writer side of the seqlock: seq odd before any field changes, even
 * after; pairs with the two seq loads in vd_shm_tpt_check(). */
static void seq_bump(struct vd_shm_tpt_entry *e)
{
	atomic_store(&e->seq, atomic_load(&e->seq) + 1);
}

static struct vd_shm_tpt_entry *entry(struct vd_nic *nic, uint32_t idx)
{
	return &vd_shm_nic(nic)->tpt->e[idx & IDX_MASK];
}

int vd_shm_mr_reg(struct vd_nic *nic, uint32_t idx, const struct vd_mr_info *m)
{
	struct vd_shm_tpt_entry *e = entry(nic, idx);

	seq_bump(e);
	ST(&e->addr, m->addr);
	ST(&e->len, m->len);
	ST(&e->ptag_id, m->ptag_id);
	ST(&e->flags, m->flags);
	ST(&e->key, m->key);
	seq_bump(e);
	return 0;
}

void vd_shm_mr_update(struct vd_nic *nic, uint32_t idx, const struct vd_mr_info *m)
{
	struct vd_shm_tpt_entry *e = entry(nic, idx);

	seq_bump(e);
	ST(&e->ptag_id, m->ptag_id);
	ST(&e->flags, m->flags);
	seq_bump(e);
}

/* Store-load barrier after the revoke.  TSan does not model fences (GCC
 * rejects them under -fsanitize=thread); there the seq_cst store of key 0
 * and the seq_cst loads in the quiesce already order the two sides. */
static inline void full_fence(void)
{
#ifndef __SANITIZE_THREAD__
	atomic_thread_fence(memory_order_seq_cst);
#endif
}

int vd_shm_mr_dereg(struct vd_nic *nic, uint32_t idx)
{
	struct vd_shm_tpt_entry *e = entry(nic, idx);

	seq_bump(e);
	ST(&e->key, 0u);
	seq_bump(e);
	/* Pairs with the initiator's seq_cst fence between its store of
	 * vd_shm_dir.s2.rdma_active and its vd_shm_tpt_check(): either it
	 * sees key 0, or the quiesce sees its rdma_active. */
	full_fence();
	return vd_shm_mr_quiesce(nic, idx);
}

int vd_shm_tpt_check(const struct vd_shm_tpt_shared *t, VIP_MEM_HANDLE h,
		     uint64_t addr, uint64_t len, uint32_t vi_ptag_id, uint32_t need)
{
	uint32_t idx = h & IDX_MASK, s1, key, eptag, flags;
	const struct vd_shm_tpt_entry *e;
	uint64_t base, size;
	int err;

	/* The connection validated magic, version and the mapping's size
	 * when it mapped the table; idx < VD_TPT_MAX by construction. */
	if (!idx)
		return -EBADF;
	e = &t->e[idx];
	for (int tries = 0; tries < REMOTE_RETRIES; tries++) {
		/* Pairs with seq_bump(). */
		s1 = atomic_load(&e->seq);
		if (s1 & 1) {
			vd_cpu_relax();
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
		err = vd_tpt_verdict(key, base, size, eptag, h, addr, len, vi_ptag_id);
		if (!err && (flags & need) != need)
			err = -EACCES;
		return err;
	}
	return -EBADF;
}

/* ---- the table's memfd ----------------------------------------------------------- */

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

int vd_shm_tpt_open(struct vd_shm_nic *sn)
{
	void *p;

	sn->tpt_fd = memfd_create("viaduct-tpt", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (sn->tpt_fd < 0)
		return -errno;
	if (ftruncate(sn->tpt_fd, (off_t)VD_SHM_TPT_BYTES))
		return -errno;
	p = mmap(NULL, VD_SHM_TPT_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
		 sn->tpt_fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	sn->tpt = p;
	sn->tpt->magic = VD_SHM_TPT_MAGIC;
	sn->tpt->version = VD_SHM_TPT_VERSION;
	sn->tpt->nentries = VD_TPT_MAX;
	return seal_table(sn->tpt_fd);
}

void vd_shm_tpt_close(struct vd_shm_nic *sn)
{
	if (sn->tpt)
		munmap(sn->tpt, VD_SHM_TPT_BYTES);
	if (sn->tpt_fd >= 0)
		close(sn->tpt_fd);
	sn->tpt = NULL;
	sn->tpt_fd = -1;
}
