// SPDX-License-Identifier: MIT
/*
 * endpoint.c -- the VIPL calls every experiment makes, written the way a
 * classic VIA client writes them: open the NIC by device name, find the
 * host address with the name service, append a discriminator, create a
 * reliable-delivery VI, connect with ConnectWait/Accept on one side and a
 * ConnectRequest loop on the other, pre-post receives, poll or wait.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_vipl.h"

#define CONNECT_TIMEOUT_MS 10000
#define RETRY_TIMEOUT_MS 1000
#define WAIT_TIMEOUT_MS 1000
#define POLLS_PER_CHECK 4096
#define DISC_WORDS 3

static uint32_t bench_pid;
static uint32_t job_counter;

uint32_t next_job(void)
{
	if (!bench_pid)
		bench_pid = (uint32_t)getpid();
	return ++job_counter;
}

/* Three 32-bit words (bench pid, job, role), as one real client uses
 * three ints: concurrent bench runs and successive jobs never match each
 * other's listeners. */
static void set_discriminator(VIP_NET_ADDRESS *a, uint32_t job, enum role r)
{
	uint32_t words[DISC_WORDS] = { bench_pid, job, (uint32_t)r + 1 };

	a->DiscriminatorLen = sizeof(words);
	memcpy(a->HostAddress + a->HostAddressLen, words, sizeof(words));
}

static int ep_addresses(struct ep *e, enum role role, uint32_t job)
{
	VIP_RETURN r;
	char host[] = "localhost";

	e->self = (VIP_NET_ADDRESS *)e->addr[0];
	e->peer = (VIP_NET_ADDRESS *)e->addr[1];
	if (sizeof(VIP_NET_ADDRESS) + e->attrs.NicAddressLen +
	    DISC_WORDS * 4 > ADDR_BYTES)
		return fail("NicAddressLen %u too large",
			    (unsigned)e->attrs.NicAddressLen);
	e->self->HostAddressLen = e->attrs.NicAddressLen;
	e->self->DiscriminatorLen = 0;
	r = VipNSGetHostByName(e->nic, host, e->self, 0);
	if (r != VIP_SUCCESS)
		return vip_fail("VipNSGetHostByName(localhost)", r);
	memcpy(e->peer, e->self, sizeof(VIP_NET_ADDRESS) +
	       e->self->HostAddressLen);
	/* The server on another host (BENCH_SERVER_HOST, with
	 * BENCH_NETNS_CLIENT): the client asks the name service for it. */
	if (role == ROLE_CLIENT && getenv("BENCH_SERVER_HOST")) {
		r = VipNSGetHostByName(e->nic, getenv("BENCH_SERVER_HOST"), e->peer, 0);
		if (r != VIP_SUCCESS)
			return vip_fail("VipNSGetHostByName(BENCH_SERVER_HOST)", r);
	}
	set_discriminator(e->self, job, role);
	set_discriminator(e->peer, job, role == ROLE_SERVER ? ROLE_CLIENT
							    : ROLE_SERVER);
	return 0;
}

int ep_open(struct ep *e, enum role role, uint32_t job)
{
	VIP_RETURN r;

	memset(e, 0, sizeof(*e));
	r = VipOpenNic(opt.device, &e->nic);
	if (r != VIP_SUCCESS)
		return vip_fail("VipOpenNic", r);
	r = VipQueryNic(e->nic, &e->attrs);
	if (r != VIP_SUCCESS)
		return vip_fail("VipQueryNic", r);
	r = VipCreatePtag(e->nic, &e->ptag);
	if (r != VIP_SUCCESS)
		return vip_fail("VipCreatePtag", r);
	return ep_addresses(e, role, job);
}

void ep_close(struct ep *e)
{
	if (!e->nic)
		return;
	if (e->ptag)
		VipDestroyPtag(e->nic, e->ptag);
	VipCloseNic(e->nic);
	e->nic = NULL;
}

int ep_vi(struct ep *e, VIP_CQ_HANDLE scq, VIP_CQ_HANDLE rcq,
	  const struct viaduct_vi_ext *ext, VIP_VI_HANDLE *vi)
{
	VIP_VI_ATTRIBUTES va = {
		.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY,
		/* As clients do: the NIC's limit; both sides then agree. */
		.MaxTransferSize = e->attrs.MaxTransferSize,
		.QoS = 0,
		.Ptag = e->ptag,
		.EnableRdmaWrite = VIP_FALSE,
		.EnableRdmaRead = VIP_FALSE,
	};
	VIP_RETURN r = VipCreateVi(e->nic, &va, scq, rcq, vi);

	if (r != VIP_SUCCESS)
		return vip_fail("VipCreateVi", r);
	if (ext && (r = viaduct_vi_set_ext(*vi, ext)) != VIP_SUCCESS)
		return vip_fail("viaduct_vi_set_ext", r);
	return 0;
}

int ep_accept(struct ep *e, VIP_VI_HANDLE vi)
{
	_Alignas(8) unsigned char remote[ADDR_BYTES];
	VIP_VI_ATTRIBUTES rattrs;
	VIP_CONN_HANDLE conn;
	VIP_RETURN r;

	do {
		r = VipConnectWait(e->nic, e->self, RETRY_TIMEOUT_MS,
				   (VIP_NET_ADDRESS *)remote, &rattrs, &conn);
	} while (r == VIP_TIMEOUT && !should_stop());
	if (r != VIP_SUCCESS)
		return vip_fail("VipConnectWait", r);
	r = VipConnectAccept(conn, vi);
	if (r != VIP_SUCCESS)
		return vip_fail("VipConnectAccept", r);
	return 0;
}

/* M-VIA clients loop while the server has no matching ConnectWait yet. */
int ep_connect(struct ep *e, VIP_VI_HANDLE vi)
{
	VIP_VI_ATTRIBUTES rattrs;
	VIP_RETURN r;
	uint64_t give_up = now_ns() + CONNECT_TIMEOUT_MS * UINT64_C(1000000);

	for (;;) {
		r = VipConnectRequest(vi, e->self, e->peer, RETRY_TIMEOUT_MS,
				      &rattrs);
		if (r == VIP_SUCCESS)
			return 0;
		if (r != VIP_NO_MATCH && r != VIP_TIMEOUT)
			break;
		if (should_stop())
			return -1; /* the server failed and said why */
		if (now_ns() > give_up)
			break;
	}
	return vip_fail("VipConnectRequest", r);
}

int area_alloc(struct ep *e, struct area *a, size_t len)
{
	VIP_MEM_ATTRIBUTES ma = { .Ptag = e->ptag };
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	VIP_RETURN r;

	a->len = (len + page - 1) / page * page;
	a->base = aligned_alloc(page, a->len);
	if (!a->base)
		return fail("out of memory for a %zu-byte area", a->len);
	memset(a->base, 0, a->len); /* no page fault inside a timing */
	r = VipRegisterMem(e->nic, a->base, a->len, &ma, &a->mh);
	if (r != VIP_SUCCESS) {
		free(a->base);
		a->base = NULL;
		return fail("VipRegisterMem(%zu bytes): %s%s", a->len,
			    vip_text(r), r == VIP_ERROR_RESOURCE ?
			    " (RLIMIT_MEMLOCK too small?)" : "");
	}
	return 0;
}

void area_free(struct ep *e, struct area *a)
{
	if (!a->base)
		return;
	VipDeregisterMem(e->nic, a->base, a->mh);
	free(a->base);
	a->base = NULL;
}

void desc_fill(VIP_DESCRIPTOR *d, void *buf, VIP_MEM_HANDLE mh, uint32_t len)
{
	memset(d, 0, sizeof(*d));
	d->CS.Control = VIP_CONTROL_OP_SENDRECV;
	d->CS.Length = len;
	if (!buf)
		return; /* no data segment: a zero-byte message */
	d->CS.SegCount = 1;
	d->DS[0].Local.Data.Address = buf;
	d->DS[0].Local.Handle = mh;
	d->DS[0].Local.Length = len;
}

void desc_imm(VIP_DESCRIPTOR *d, uint32_t imm)
{
	d->CS.Control |= VIP_CONTROL_IMMEDIATE;
	d->CS.ImmediateData = imm;
}

void desc_rearm(VIP_DESCRIPTOR *d)
{
	d->CS.Status = 0;
	d->CS.Length = d->CS.SegCount ? d->DS[0].Local.Length : 0;
}

/* A descriptor that completed in error says why in its Status. */
static int completion_fail(const char *call, VIP_RETURN r, VIP_DESCRIPTOR *d)
{
	if (r == VIP_DESCRIPTOR_ERROR && d)
		return fail("%s: descriptor completed with Status 0x%x", call,
			    (unsigned)d->CS.Status);
	return vip_fail(call, r);
}

int recv_poll(VIP_VI_HANDLE vi, VIP_DESCRIPTOR **d)
{
	for (unsigned n = 1;; n++) {
		VIP_RETURN r = VipRecvDone(vi, d);

		if (r == VIP_SUCCESS)
			return 0;
		if (r != VIP_NOT_DONE)
			return completion_fail("VipRecvDone", r, *d);
		if (n % POLLS_PER_CHECK == 0 && should_stop())
			return -1;
	}
}

int send_poll(VIP_VI_HANDLE vi, VIP_DESCRIPTOR **d)
{
	for (unsigned n = 1;; n++) {
		VIP_RETURN r = VipSendDone(vi, d);

		if (r == VIP_SUCCESS)
			return 0;
		if (r != VIP_NOT_DONE)
			return completion_fail("VipSendDone", r, *d);
		if (n % POLLS_PER_CHECK == 0 && should_stop())
			return -1;
	}
}

int recv_wait(VIP_VI_HANDLE vi, VIP_DESCRIPTOR **d)
{
	for (;;) {
		VIP_RETURN r = VipRecvWait(vi, WAIT_TIMEOUT_MS, d);

		if (r == VIP_SUCCESS)
			return 0;
		if (r != VIP_TIMEOUT)
			return completion_fail("VipRecvWait", r, *d);
		if (should_stop())
			return -1;
	}
}

int send_wait(VIP_VI_HANDLE vi, VIP_DESCRIPTOR **d)
{
	for (;;) {
		VIP_RETURN r = VipSendWait(vi, WAIT_TIMEOUT_MS, d);

		if (r == VIP_SUCCESS)
			return 0;
		if (r != VIP_TIMEOUT)
			return completion_fail("VipSendWait", r, *d);
		if (should_stop())
			return -1;
	}
}

int post_recv(VIP_VI_HANDLE vi, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh)
{
	VIP_RETURN r = VipPostRecv(vi, d, mh);

	return r == VIP_SUCCESS ? 0 : vip_fail("VipPostRecv", r);
}

int post_send(VIP_VI_HANDLE vi, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh)
{
	VIP_RETURN r = VipPostSend(vi, d, mh);

	return r == VIP_SUCCESS ? 0 : vip_fail("VipPostSend", r);
}

/* ---- NIC probe ----------------------------------------------------------- */

static int probe_server(void *arg)
{
	(void)arg;
	return 0;
}

/* In a child, so that the parent never has a NIC open when it forks. */
static int probe_client(void *arg)
{
	struct ep e;
	char *out = (char *)sh->result;
	int rc = ep_open(&e, ROLE_CLIENT, *(uint32_t *)arg);

	if (rc == 0)
		snprintf(out, 256, "%s, MaxTransferSize %lu, host address %u "
			 "bytes, ThreadSafe %d", e.attrs.Name,
			 (unsigned long)e.attrs.MaxTransferSize,
			 (unsigned)e.attrs.NicAddressLen, e.attrs.ThreadSafe);
	ep_close(&e);
	return rc;
}

int probe_nic(char *desc, size_t len)
{
	uint32_t job = next_job();
	int rc;

	sh->result[0] = 0;
	rc = pair_run(probe_server, probe_client, &job, 30);
	snprintf(desc, len, "%s", rc == 0 ? (char *)sh->result :
		 "VipOpenNic failed (see above)");
	return rc;
}
