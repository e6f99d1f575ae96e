/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by every VIPL test (tests/test_vipl_*.c).  Public API
 * only: <vipl.h> and <viaduct/viaduct.h>.
 *
 * Two-process tests: vt_fork2(a, b, arg, timeout) runs a() in this process
 * and b() in a forked child.  Open NICs INSIDE a() and b() (never before
 * vt_fork2): each process must have its own library state.  Inside a() and
 * b(), vt_fd is this side's end of a socket pair to the other side, for
 * vt_sync() (a barrier) and vt_put_u64()/vt_get_u64() (exchanging RDMA
 * addresses and memory handles).  VDT_CHECK / VT_OK may be used on either
 * side: a failing check exit()s, and vt_fork2's exit handler kills and
 * reaps the child, so nothing is left behind.
 */
#ifndef VIADUCT_TESTS_VIPTEST_H
#define VIADUCT_TESTS_VIPTEST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vipl.h>
#include <viaduct/viaduct.h>

#include "vdtest.h"

/* ---- return codes ------------------------------------------------------- */
/* "VIP_SUCCESS", ... or "VIP_?(n)" (static buffer for unknown values). */
const char *vt_ret_str(int r);

/* Check that a VIPL call returns `want`, printing both names otherwise. */
#define VT_EXPECT(call, want)                                                \
	do {                                                                 \
		int vt_r_ = (int)(call), vt_w_ = (int)(want);                \
		if (vt_r_ != vt_w_) {                                        \
			fprintf(stderr, "%s:%d: %s returned %s, expected %s\n", \
				__FILE__, __LINE__, #call, vt_ret_str(vt_r_), \
				vt_ret_str(vt_w_));                          \
			exit(VDT_FAIL);                                      \
		}                                                            \
	} while (0)
#define VT_OK(call) VT_EXPECT(call, VIP_SUCCESS)

/* ---- processes ------------------------------------------------------------- */
/* Run a(arg) here and b(arg) in a forked child (which _exit()s with b's
 * result), both under an alarm of timeout_s seconds.  Returns 0 when both
 * returned 0, VDT_SKIP when one skipped and none failed, else VDT_FAIL.
 * The child is killed on any failure or timeout and always reaped. */
int vt_fork2(int (*a)(void *), int (*b)(void *), void *arg, unsigned timeout_s);
/* This side's end of the barrier socket, valid inside a() and b(). */
extern int vt_fd;
/* 1 in the child of vt_fork2, 0 otherwise. */
extern int vt_is_child;
/* For a test that forks its peer itself: make this process the child
 * side (on VT_NETNS_CHILD's host when set; vt_peer_addr then names the
 * parent's). */
void vt_as_child(void);
/* Barrier: write one byte to the peer and read one (10 s limit).  0 or -1
 * (peer died, timeout).  It returns once BOTH sides have reached it; after
 * it both run concurrently, so "A checks, then B acts" needs a second
 * vt_sync between A's check and B's action. */
int vt_sync(int fd);
/* Pass a 64-bit value to the other side.  0 or -1. */
int vt_put_u64(int fd, uint64_t v);
int vt_get_u64(int fd, uint64_t *v);

/* ---- addresses ------------------------------------------------------------- */
/* A discriminator unique to this test run: "<tag>.<pid of the original
 * test process>" (same string in parent and child).  tag <= 8 chars; the
 * result (<= 16 bytes) lives in buf. */
const char *vt_disc(char buf[32], const char *tag);
/* malloc'ed address: VipNSGetHostByName(nic, "localhost") host part
 * (HostAddressLen preset to NicAddressLen, as clients do), followed by
 * the bytes of disc (no NUL).  NULL on failure (reason on stderr). */
VIP_NET_ADDRESS *vt_addr(VIP_NIC_HANDLE nic, const char *disc);
/* The other side of a vt_fork2 pair (VT_HOST_PARENT / VT_HOST_CHILD when
 * the two run on different hosts; else this host). */
VIP_NET_ADDRESS *vt_peer_addr(VIP_NIC_HANDLE nic, const char *disc);
/* Bytes an address occupies (header + host + discriminator). */
size_t vt_addr_size(const VIP_NET_ADDRESS *a);

/* ---- registered memory ------------------------------------------------------ */
struct vt_mem {
	void *p;
	size_t len;
	VIP_MEM_HANDLE mh;
	VIP_NIC_HANDLE nic;
};
/* 64-byte aligned, zeroed, registered buffer (attrs NULL: the defaults).
 * Returns the VipRegisterMem result (VIP_ERROR_RESOURCE if out of memory). */
int vt_mem_get(VIP_NIC_HANDLE nic, size_t len, VIP_MEM_ATTRIBUTES *attrs,
	       struct vt_mem *m);
/* Deregister and free; harmless on a zeroed struct. */
void vt_mem_put(struct vt_mem *m);

/* ---- descriptors ------------------------------------------------------------ */
/* Room for a descriptor with VD's maximum of 16 segments, 64-aligned. */
#define VT_DESC_STRIDE 320
/* Descriptor slot i of a region used as a descriptor array. */
static inline VIP_DESCRIPTOR *vt_desc_at(struct vt_mem *m, unsigned i)
{
	return (VIP_DESCRIPTOR *)((char *)m->p + (size_t)i * VT_DESC_STRIDE);
}
/* Data segment i (0 = right after the control segment), any SegCount. */
static inline VIP_DATA_SEGMENT *vt_seg(VIP_DESCRIPTOR *d, unsigned i)
{
	return (VIP_DATA_SEGMENT *)((char *)d + sizeof(VIP_CONTROL_SEGMENT)) + i;
}
/* One-segment send / receive of len bytes at buf (control segment zeroed:
 * Status 0, no immediate). */
void vt_desc_send(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh, void *buf, uint32_t len);
void vt_desc_recv(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh, void *buf, uint32_t len);
/* RDMA (op VIP_CONTROL_OP_RDMAWRITE or _RDMAREAD): segment 0 = address
 * segment (raddr, rmh), segment 1 = local data (lbuf, lmh, len); SegCount 2. */
void vt_desc_rdma(VIP_DESCRIPTOR *d, unsigned op, uint64_t raddr,
		  VIP_MEM_HANDLE rmh, VIP_MEM_HANDLE lmh, void *lbuf, uint32_t len);

/* ---- connections ------------------------------------------------------------ */
/* Server: VipConnectWait on localhost+disc, then VipConnectAccept(vi).
 * Returns the first failing VIP_RETURN, or VIP_SUCCESS. */
int vt_server_accept(VIP_NIC_HANDLE nic, VIP_VI_HANDLE vi, const char *disc,
		     VIP_ULONG timeout_ms);
/* Client: VipConnectRequest(vi, localhost+disc, localhost+disc), retrying
 * on VIP_NO_MATCH until timeout_ms (VIP_INFINITE allowed) has passed. */
int vt_client_connect(VIP_NIC_HANDLE nic, VIP_VI_HANDLE vi, const char *disc,
		      VIP_ULONG timeout_ms);
/* Default VI attributes: the given level, NIC MaxTransferSize, RDMA write
 * and read enabled, NULL ptag. */
VIP_VI_ATTRIBUTES vt_vi_attrs(VIP_NIC_HANDLE nic, VIP_RELIABILITY_LEVEL level);

/* One side of a test connection: NIC, VI (no CQs unless set before
 * vt_side_connect), both torn down by vt_side_close. */
struct vt_side {
	VIP_NIC_HANDLE nic;
	VIP_VI_HANDLE vi;
	VIP_NIC_ATTRIBUTES na;
};
/* Open /dev/via_lo and create a VI with vt_vi_attrs(level) (va NULL) or
 * *va.  VDT_CHECKs on failure. */
void vt_side_open(struct vt_side *s, VIP_RELIABILITY_LEVEL level,
		  const VIP_VI_ATTRIBUTES *va);
/* Connect: the parent of vt_fork2 accepts, the child requests (10 s). */
void vt_side_connect(struct vt_side *s, const char *disc);
/* Disconnect, destroy the VI, close the NIC (lenient: ignores errors).
 * Call it BEFORE vt_mem_put of descriptor or buffer memory: the provider
 * owns posted descriptors until the VI is gone. */
void vt_side_close(struct vt_side *s);
/* VipQueryVi state. */
VIP_VI_STATE vt_state(VIP_VI_HANDLE vi);

/* ---- environment ------------------------------------------------------------ */
/* Exit 77 (skip) when this process may not lock `need` bytes (unprivileged
 * with a small RLIMIT_MEMLOCK): registration would fail with
 * VIP_ERROR_RESOURCE, which says nothing about what the test checks. */
void vt_skip_without_memlock(size_t need);
/* main() of a two-process test: skip check, vt_fork2(a, b), PASS/FAIL
 * line; returns the exit status. */
int vt_run_main(int (*a)(void *), int (*b)(void *), size_t memlock, unsigned timeout_s);
/* main() of a two-process test over the ofi provider (libfabric's tcp,
 * a fixed job key; vt_side_open then opens it): skip (77) where it does
 * not open, else vt_fork2(a, b), and "ok: OK" when both passed; returns
 * the exit status. */
int vt_ofi_run_main(int (*a)(void *), int (*b)(void *), unsigned timeout_s, const char *ok);

/* ---- leak checks --------------------------------------------------------- */
/* Open file descriptors of this process. */
int vt_count_fds(void);
/* Entries of /dev/shm and /tmp whose name contains "viaduct". */
int vt_count_viaduct_files(void);

/* ---- misc ---------------------------------------------------------------- */
uint64_t vt_now_ms(void);
/* White-box tests of wake-ups: wait (10 s at most) until a peer's
 * shared waiter count is non-zero, then 2 ms more for the waiter to
 * reach its futex.  True if it is still armed. */
bool vt_await_sleeper(_Atomic uint32_t *count);
/* Fill / check a pattern that depends on (seed, offset); check returns the
 * first bad offset or -1. */
void vt_fill(void *p, size_t len, uint32_t seed);
long vt_check(const void *p, size_t len, uint32_t seed);

#endif
