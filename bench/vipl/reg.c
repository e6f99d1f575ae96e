// SPDX-License-Identifier: MIT
/*
 * reg.c -- the SCI user-memory paper's figures 6 and 7, for VIA: what it
 * costs to make an arbitrary user buffer an RDMA source, and what is left
 * of the bandwidth of one RDMA write when that cost -- and a connection --
 * is paid for every transfer.
 *   register        VipRegisterMem + VipDeregisterMem of the buffer (lock,
 *                   translation, table entry; the provider's registration)
 *   connect         VipCreateVi + VipConnectRequest + VipDisconnect +
 *                   VipDestroyVi
 *   cached          the buffer registered and the VI connected once, as a
 *                   pin-down cache and a connection cache leave them: one
 *                   RDMA write, posted and polled to completion
 *   reg+xfer        register, write, complete, deregister, every time
 *   reg+conn+xfer   also a fresh VI connected before and torn down after
 * The target is one 4 MiB buffer at the server, registered once with RDMA
 * write enabled; every write lands at its start.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_vipl.h"

#define REG_MAX (4 * MIB)
#define REG_SIZES 6             /* 4 KiB .. 4 MiB, powers of four */
#define REG_MAX_VIS 256         /* server VIs of one job */
#define REG_LIMIT_S 300

enum reg_case { RC_CACHED, RC_REG, RC_REG_CONN, NR_RC };

struct reg_shared {
	_Atomic uint32_t ready;     /* server -> client: target published */
	_Atomic uint32_t done;      /* client -> server: no more connects */
	uint64_t target_addr;
	VIP_MEM_HANDLE target_mh;
	double reg_us[REG_SIZES], conn_us[REG_SIZES];
	double mbs[NR_RC][REG_SIZES];
};
_Static_assert(sizeof(struct reg_shared) <= RESULT_BYTES, "reg results fit");

static struct reg_shared *rs(void)
{
	return (struct reg_shared *)sh->result;
}

static size_t reg_size(int i)
{
	return (size_t)4096 << (2 * i);
}

static int reps(void)
{
	return opt.quick ? 3 : 7;
}

static int vi_make(struct ep *e, bool rdma_target, VIP_VI_HANDLE *vi)
{
	VIP_VI_ATTRIBUTES va = {
		.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY,
		.MaxTransferSize = e->attrs.MaxTransferSize,
		.Ptag = e->ptag,
		.EnableRdmaWrite = rdma_target ? VIP_TRUE : VIP_FALSE,
	};
	VIP_RETURN r = VipCreateVi(e->nic, &va, NULL, NULL, vi);

	return r == VIP_SUCCESS ? 0 : vip_fail("VipCreateVi", r);
}

/* ---- server: publish the target, accept until the client is done ---------- */

static int accept_one(struct ep *e, VIP_VI_HANDLE vi)
{
	_Alignas(8) unsigned char remote[ADDR_BYTES];
	VIP_VI_ATTRIBUTES ra;
	VIP_CONN_HANDLE conn;
	VIP_RETURN r;

	for (;;) {
		r = VipConnectWait(e->nic, e->self, 100, (VIP_NET_ADDRESS *)remote, &ra, &conn);
		if (r == VIP_SUCCESS)
			break;
		if (r != VIP_TIMEOUT)
			return vip_fail("VipConnectWait", r);
		/* Acquire: pairs with the client's release of `done`. */
		if (atomic_load_explicit(&rs()->done, memory_order_acquire) || should_stop())
			return 1;
	}
	r = VipConnectAccept(conn, vi);
	return r == VIP_SUCCESS ? 0 : vip_fail("VipConnectAccept", r);
}

static int target_publish(struct ep *e, char **buf)
{
	VIP_MEM_ATTRIBUTES ma = { .Ptag = e->ptag, .EnableRdmaWrite = VIP_TRUE };
	VIP_RETURN r;

	*buf = aligned_alloc(4096, REG_MAX);
	if (!*buf)
		return fail("out of memory for the RDMA target");
	memset(*buf, 0, REG_MAX);
	r = VipRegisterMem(e->nic, *buf, REG_MAX, &ma, &rs()->target_mh);
	if (r != VIP_SUCCESS)
		return vip_fail("VipRegisterMem (target)", r);
	rs()->target_addr = (uint64_t)(uintptr_t)*buf;
	/* Release: the handle and address above before the flag. */
	atomic_store_explicit(&rs()->ready, 1, memory_order_release);
	return 0;
}

static int reg_server(void *arg)
{
	uint32_t job = *(uint32_t *)arg;
	VIP_VI_HANDLE vis[REG_MAX_VIS];
	int nvis = 0, err;
	struct ep e;
	char *buf = NULL;

	if (ep_open(&e, ROLE_SERVER, job) != 0)
		return -1;
	err = target_publish(&e, &buf);
	while (!err && nvis < REG_MAX_VIS) {
		err = vi_make(&e, true, &vis[nvis]);
		if (err)
			break;
		err = accept_one(&e, vis[nvis]);
		nvis++;
	}
	err = err > 0 ? 0 : err;        /* 1: the client is done */
	for (int i = 0; i < nvis; i++) {
		VipDisconnect(vis[i]);
		VipDestroyVi(vis[i]);
	}
	if (buf && rs()->target_mh)
		VipDeregisterMem(e.nic, buf, rs()->target_mh);
	free(buf);
	ep_close(&e);
	return err;
}

/* ---- client ----------------------------------------------------------------- */

struct reg_client {
	struct ep e;
	struct area descs;
	char *src;                      /* registered for each transfer */
	char *src_cached;               /* registered once (what a pin-down
	                                 * cache keeps): a separate buffer, so
	                                 * that registering `src` really locks
	                                 * pages instead of stacking on it */
	VIP_VI_HANDLE vi;               /* the cached connection */
};

/* One RDMA write of len bytes from src (handle mh) on vi, to completion. */
static int write_once(struct reg_client *c, VIP_VI_HANDLE vi, char *src, VIP_MEM_HANDLE mh,
		      size_t len)
{
	VIP_DESCRIPTOR *d = area_desc(&c->descs, 0), *done;

	memset(d, 0, sizeof(VIP_CONTROL_SEGMENT) + 2 * sizeof(VIP_DATA_SEGMENT));
	d->CS.Control = VIP_CONTROL_OP_RDMAWRITE;
	d->CS.SegCount = 2;
	d->CS.Length = (VIP_UINT32)len;
	d->DS[0].Remote.Data.AddressBits = rs()->target_addr;
	d->DS[0].Remote.Handle = rs()->target_mh;
	d->DS[1].Local.Data.Address = src;
	d->DS[1].Local.Handle = mh;
	d->DS[1].Local.Length = (VIP_UINT32)len;
	if (post_send(vi, d, c->descs.mh) != 0 || send_poll(vi, &done) != 0)
		return -1;
	if (done->CS.Status & VIP_STATUS_ERROR_MASK)
		return fail("RDMA write completed with status %#x", done->CS.Status);
	return 0;
}

static int reg(struct reg_client *c, char *buf, size_t len, VIP_MEM_HANDLE *mh)
{
	VIP_MEM_ATTRIBUTES ma = { .Ptag = c->e.ptag };
	VIP_RETURN r = VipRegisterMem(c->e.nic, buf, len, &ma, mh);

	return r == VIP_SUCCESS ? 0 : vip_fail("VipRegisterMem", r);
}

static int dereg(struct reg_client *c, char *buf, VIP_MEM_HANDLE mh)
{
	VIP_RETURN r = VipDeregisterMem(c->e.nic, buf, mh);

	return r == VIP_SUCCESS ? 0 : vip_fail("VipDeregisterMem", r);
}

static int connect_fresh(struct reg_client *c, VIP_VI_HANDLE *vi)
{
	return vi_make(&c->e, false, vi) || ep_connect(&c->e, *vi) ? -1 : 0;
}

static void teardown(VIP_VI_HANDLE vi)
{
	VipDisconnect(vi);
	VipDestroyVi(vi);
}

/* Transfers per timed repetition: one when a connection is made for it,
 * else enough to last about a megabyte (at most 16). */
static int ops_per_rep(enum reg_case rc, size_t len)
{
	size_t k = MIB / len;

	return rc == RC_REG_CONN ? 1 : k < 1 ? 1 : k > 16 ? 16 : (int)k;
}

/* One transfer of case rc; *conn_ns gets the connection's share. */
static int op_once(struct reg_client *c, enum reg_case rc, size_t len, VIP_MEM_HANDLE cached,
		   uint64_t *conn_ns)
{
	VIP_VI_HANDLE vi = c->vi;
	char *src = rc == RC_CACHED ? c->src_cached : c->src;
	VIP_MEM_HANDLE mh = cached;
	uint64_t t0 = now_ns(), tc;

	if (rc == RC_REG_CONN && connect_fresh(c, &vi) != 0)
		return -1;
	tc = now_ns();
	if (rc != RC_CACHED && reg(c, src, len, &mh) != 0)
		return -1;
	if (write_once(c, vi, src, mh, len) != 0)
		return -1;
	if (rc != RC_CACHED && dereg(c, src, mh) != 0)
		return -1;
	if (rc == RC_REG_CONN) {
		uint64_t td = now_ns();
		teardown(vi);
		*conn_ns = tc - t0 + now_ns() - td;
	}
	return 0;
}

/* One timed repetition of case rc at size len: seconds per transfer, or
 * NAN. */
static double rep_once(struct reg_client *c, enum reg_case rc, size_t len, VIP_MEM_HANDLE cached,
		       double *conn_s)
{
	int k = ops_per_rep(rc, len);
	uint64_t t0 = now_ns(), conn_ns = 0;

	for (int i = 0; i < k; i++)
		if (op_once(c, rc, len, cached, &conn_ns) != 0)
			return NAN;
	if (rc == RC_REG_CONN)
		*conn_s = (double)conn_ns / 1e9;
	return (double)(now_ns() - t0) / 1e9 / k;
}

static int measure_size(struct reg_client *c, int si, VIP_MEM_HANDLE cached)
{
	size_t len = reg_size(si);
	struct samples reg_s, conn_s, t[NR_RC];

	memset(&reg_s, 0, sizeof(reg_s));
	memset(&conn_s, 0, sizeof(conn_s));
	memset(t, 0, sizeof(t));
	for (int r = 0; r < reps(); r++) {
		VIP_MEM_HANDLE mh;
		uint64_t t0 = now_ns();
		if (reg(c, c->src, len, &mh) != 0 || dereg(c, c->src, mh) != 0)
			return -1;
		samples_add(&reg_s, (double)(now_ns() - t0) / 1e3);
		for (int rc = 0; rc < NR_RC; rc++) {
			double cs = NAN, s = rep_once(c, (enum reg_case)rc, len, cached, &cs);
			if (isnan(s))
				return -1;
			samples_add(&t[rc], s);
			if (!isnan(cs))
				samples_add(&conn_s, cs * 1e6);
		}
	}
	rs()->reg_us[si] = samples_median(&reg_s);
	rs()->conn_us[si] = samples_median(&conn_s);
	for (int rc = 0; rc < NR_RC; rc++)
		rs()->mbs[rc][si] = (double)len / samples_median(&t[rc]) / 1e6;
	return 0;
}

static int client_open(struct reg_client *c, uint32_t job)
{
	if (ep_open(&c->e, ROLE_CLIENT, job) != 0 || area_alloc(&c->e, &c->descs, 4096) != 0)
		return -1;
	c->src = aligned_alloc(4096, REG_MAX);
	c->src_cached = aligned_alloc(4096, REG_MAX);
	if (!c->src || !c->src_cached)
		return fail("out of memory for the source buffers");
	memset(c->src, 0x5a, REG_MAX);     /* mapped: no page fault timed */
	memset(c->src_cached, 0xa5, REG_MAX);
	/* Acquire: pairs with target_publish's release. */
	while (!atomic_load_explicit(&rs()->ready, memory_order_acquire))
		if (should_stop())
			return -1;
	return connect_fresh(c, &c->vi);
}

static int reg_client(void *arg)
{
	struct reg_client c;
	VIP_MEM_HANDLE cached = 0;
	int err;

	memset(&c, 0, sizeof(c));
	err = client_open(&c, *(uint32_t *)arg);

	if (!err)
		err = reg(&c, c.src_cached, REG_MAX, &cached);
	for (int si = 0; !err && si < REG_SIZES; si++)
		err = measure_size(&c, si, cached);
	/* Release: pairs with accept_one's acquire. */
	atomic_store_explicit(&rs()->done, 1, memory_order_release);
	if (cached)
		dereg(&c, c.src_cached, cached);
	if (c.vi)
		teardown(c.vi);
	free(c.src);
	free(c.src_cached);
	area_free(&c.e, &c.descs);
	ep_close(&c.e);
	return err;
}

/* ---- the section -------------------------------------------------------------- */

static void print_reg(void)
{
	static const char *const names[NR_RC] = { "cached", "reg_xfer", "reg_conn_xfer" };

	printf("  %8s %12s %12s %14s %14s %16s\n", "size", "register us", "connect us",
	       "cached MB/s", "reg+xfer MB/s", "reg+conn+xfer MB/s");
	for (int si = 0; si < REG_SIZES; si++) {
		char lab[16];
		printf("  %8s %12.1f %12.1f %14.0f %14.0f %16.0f\n",
		       size_label(reg_size(si), lab, sizeof(lab)),
		       rs()->reg_us[si], rs()->conn_us[si], rs()->mbs[RC_CACHED][si],
		       rs()->mbs[RC_REG][si], rs()->mbs[RC_REG_CONN][si]);
		csv_row("reg", "register", reg_size(si), "us", rs()->reg_us[si]);
		csv_row("reg", "connect", reg_size(si), "us", rs()->conn_us[si]);
		for (int rc = 0; rc < NR_RC; rc++)
			csv_row("reg", names[rc], reg_size(si), "mb_per_s", rs()->mbs[rc][si]);
	}
}

void section_reg(void)
{
	uint32_t job = next_job();

	printf("\n[5] the SCI user-memory paper's figures 6 and 7: a user buffer as RDMA source --\n"
	       "    VipRegisterMem+VipDeregisterMem, a connection (create, connect, disconnect,\n"
	       "    destroy), and the effective bandwidth of one polled RDMA write: cached\n"
	       "    (registered and connected once, as a pin-down cache leaves it), register\n"
	       "    each time, register and connect each time; median of %d\n", reps());
	memset(rs(), 0, sizeof(*rs()));
	if (pair_run(reg_server, reg_client, &job, REG_LIMIT_S) != 0) {
		printf("  failed (see above)\n");
		return;
	}
	print_reg();
}
