/* SPDX-License-Identifier: MIT */
/*
 * Two VIPL processes on two hosts (network namespaces in the tests):
 *   netpair server DISC          waits for one connection on DISC
 *   netpair client HOST DISC     connects to HOST's DISC
 *   netpair probe HOST DISC MS   connecting must fail within MS
 *   netpair watch DISC           reports when the connection breaks
 *   netpair hold HOST DISC       connects, sends once, stays
 *   netpair hostile HOST DISC    garbage and forgeries at DISC's listener
 * Over the connection: sends of every size class (checked byte for byte
 * by the server), an RDMA write into and an RDMA read out of the server's
 * registered buffer, then an RDMA write with a forged handle that must
 * complete with VIP_STATUS_RDMA_PROT_ERROR and change nothing.
 * Exit 0 on success; a message and 1 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_eq.h>

#include <vipl.h>

#include "prov/ofi/ofi.h"

#define BUF (4u << 20)
#define TIMEOUT 20000

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: %s failed\n", \
	__FILE__, __LINE__, #c); exit(1); } } while (0)
#define OK(call) do { VIP_RETURN r_ = (call); if (r_ != VIP_SUCCESS) { \
	fprintf(stderr, "%s:%d: %s returned %d\n", __FILE__, __LINE__, #call, \
		(int)r_); exit(1); } } while (0)

static const size_t sizes[] = { 0, 1, 40, 4096, 32768, 100000, 1u << 20, BUF };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

struct side {
	VIP_NIC_HANDLE nic;
	VIP_VI_HANDLE vi;
	uint8_t *buf;
	VIP_MEM_HANDLE mh;
	VIP_DESCRIPTOR *d;          /* two descriptors */
	VIP_MEM_HANDLE dh;
};

static VIP_NET_ADDRESS *addr(struct side *s, const char *host, const char *disc)
{
	VIP_NET_ADDRESS *a = calloc(1, sizeof(*a) + 64);

	OK(VipNSGetHostByName(s->nic, (VIP_CHAR *)host, a, 0));
	a->DiscriminatorLen = (VIP_UINT16)strlen(disc);
	memcpy(a->HostAddress + a->HostAddressLen, disc, strlen(disc));
	return a;
}

static void setup(struct side *s)
{
	VIP_VI_ATTRIBUTES va = { .ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY,
				 .MaxTransferSize = BUF, .EnableRdmaWrite = VIP_TRUE,
				 .EnableRdmaRead = VIP_TRUE };
	VIP_MEM_ATTRIBUTES ma = { .EnableRdmaWrite = VIP_TRUE, .EnableRdmaRead = VIP_TRUE };

	OK(VipOpenNic((VIP_CHAR *)"ofi", &s->nic));
	OK(VipNSInit(s->nic, NULL));
	OK(VipCreateVi(s->nic, &va, NULL, NULL, &s->vi));
	s->buf = aligned_alloc(4096, BUF);
	s->d = aligned_alloc(64, 4096);
	CHECK(s->buf && s->d);
	memset(s->buf, 0, BUF);
	OK(VipRegisterMem(s->nic, s->buf, BUF, &ma, &s->mh));
	OK(VipRegisterMem(s->nic, s->d, 4096, &ma, &s->dh));
}

static VIP_DESCRIPTOR *desc(struct side *s, int i, uint32_t op, void *p, size_t n)
{
	VIP_DESCRIPTOR *d = (VIP_DESCRIPTOR *)((uint8_t *)s->d + 1024 * i);

	memset(d, 0, 1024);
	d->CS.Control = op;
	d->CS.SegCount = 1;
	d->CS.Length = (VIP_UINT32)n;
	d->DS[0].Local.Data.Address = p;
	d->DS[0].Local.Handle = s->mh;
	d->DS[0].Local.Length = (VIP_UINT32)n;
	return d;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7 + seed);
}

static int same(const uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)(i * 7 + seed))
			return 0;
	return 1;
}

static void send_wait(struct side *s, VIP_DESCRIPTOR *d, uint32_t want)
{
	VIP_DESCRIPTOR *o;
	VIP_RETURN r;

	OK(VipPostSend(s->vi, d, s->dh));
	r = VipSendWait(s->vi, TIMEOUT, &o);
	CHECK(r == VIP_SUCCESS || r == VIP_DESCRIPTOR_ERROR);
	if ((o->CS.Status & VIP_STATUS_ERROR_MASK) != want) {
		fprintf(stderr, "send status 0x%x, expected error 0x%x\n", o->CS.Status, want);
		exit(1);
	}
}

static void recv_wait(struct side *s, size_t n, unsigned seed)
{
	VIP_DESCRIPTOR *o;

	VIP_RETURN r = VipRecvWait(s->vi, TIMEOUT, &o);

	if (r != VIP_SUCCESS) {
		fprintf(stderr, "receive of %zu bytes: %d, status 0x%x\n", n, (int)r,
			o ? o->CS.Status : 0);
		exit(1);
	}
	CHECK(o->CS.Length == n && same(s->buf, n, seed));
}

/* Server: receives, then tells the client its buffer's handle and waits
 * for the RDMA phase to end, then checks what RDMA left in its buffer. */
static int server(const char *disc)
{
	struct side s;
	VIP_NET_ADDRESS *l, *rem = calloc(1, sizeof(*rem) + 64);
	VIP_VI_ATTRIBUTES ra;
	VIP_CONN_HANDLE ch;
	VIP_DESCRIPTOR *o;

	setup(&s);
	l = addr(&s, "localhost", disc);
	/* Posted before the accept: the client sends at once. */
	OK(VipPostRecv(s.vi, desc(&s, 0, VIP_CONTROL_OP_SENDRECV, s.buf, BUF), s.dh));
	OK(VipConnectWait(s.nic, l, 60000, rem, &ra, &ch));
	OK(VipConnectAccept(ch, s.vi));
	for (unsigned i = 0; i < NSIZES; i++) {
		recv_wait(&s, sizes[i], i);
		/* Re-posted before the ack: the next message has a receive. */
		OK(VipPostRecv(s.vi, desc(&s, 0, VIP_CONTROL_OP_SENDRECV, s.buf, BUF), s.dh));
		send_wait(&s, desc(&s, 1, VIP_CONTROL_OP_SENDRECV, s.buf, 0), 0);
	}
	/* Our handle and address, for the client's RDMA (the receive for
	 * its "done" is already posted). */
	memset(s.buf, 0, BUF);
	memcpy(s.buf + BUF - 64, &s.mh, sizeof(s.mh));
	*(uint64_t *)(s.buf + BUF - 56) = (uint64_t)(uintptr_t)s.buf;
	fill(s.buf + 8192, 65536, 9);           /* what the client reads */
	send_wait(&s, desc(&s, 1, VIP_CONTROL_OP_SENDRECV, s.buf + BUF - 64, 16), 0);
	OK(VipRecvWait(s.vi, TIMEOUT, &o));     /* "RDMA done" */
	CHECK(same(s.buf, 4096, 3));            /* the RDMA write */
	/* The forged write breaks the connection (reliable delivery): our
	 * next receive is flushed, and nothing was written. */
	OK(VipPostRecv(s.vi, desc(&s, 0, VIP_CONTROL_OP_SENDRECV, s.buf + BUF / 2, 64), s.dh));
	CHECK(VipRecvWait(s.vi, TIMEOUT, &o) == VIP_DESCRIPTOR_ERROR);
	CHECK(o->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR);
	for (size_t i = 4096; i < 8192; i++)
		CHECK(s.buf[i] == 0);
	printf("server: ok\n");
	return 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Connect within 60 s.  The server may not listen yet -- a loaded
 * machine takes seconds to start a process -- and nobody there is
 * VIP_NO_MATCH at once: try again. */
static VIP_RETURN connect_retry(struct side *s, VIP_NET_ADDRESS *l, VIP_NET_ADDRESS *r,
				VIP_VI_ATTRIBUTES *ra)
{
	uint64_t give_up = now_ms() + 60000;
	VIP_RETURN rc;

	while ((rc = VipConnectRequest(s->vi, l, r, 60000, ra)) == VIP_NO_MATCH &&
	       now_ms() < give_up)
		usleep(100000);
	return rc;
}

static int client(const char *host, const char *disc)
{
	struct side s;
	VIP_NET_ADDRESS *l, *r;
	VIP_VI_ATTRIBUTES ra;
	VIP_MEM_HANDLE rh;
	uint64_t raddr;
	VIP_DESCRIPTOR *d, *o;

	setup(&s);
	l = addr(&s, "localhost", "client");
	r = addr(&s, host, disc);
	OK(connect_retry(&s, l, r, &ra));
	for (unsigned i = 0; i < NSIZES; i++) {
		fill(s.buf, sizes[i], i);
		OK(VipPostRecv(s.vi, desc(&s, 0, VIP_CONTROL_OP_SENDRECV, s.buf + BUF / 2, 64), s.dh));
		/* The server sends its handle right after the last ack: the
		 * receive for it must be there first (reliable delivery). */
		if (i == NSIZES - 1)
			OK(VipPostRecv(s.vi, desc(&s, 2, VIP_CONTROL_OP_SENDRECV, s.buf + BUF - 64,
						 64), s.dh));
		send_wait(&s, desc(&s, 1, VIP_CONTROL_OP_SENDRECV, s.buf, sizes[i]), 0);
		VIP_RETURN r_ = VipRecvWait(s.vi, TIMEOUT, &o);     /* the ack */
		if (r_ != VIP_SUCCESS) {
			fprintf(stderr, "ack %u: %d status 0x%x\n", i, (int)r_, o ? o->CS.Status : 0);
			exit(1);
		}
	}
	OK(VipRecvWait(s.vi, TIMEOUT, &o));     /* the handle */
	memcpy(&rh, s.buf + BUF - 64, sizeof(rh));
	memcpy(&raddr, s.buf + BUF - 56, sizeof(raddr));
	/* RDMA write 4 KiB to the start of its buffer. */
	fill(s.buf, 4096, 3);
	d = desc(&s, 1, VIP_CONTROL_OP_RDMAWRITE, NULL, 0);
	d->CS.SegCount = 2;
	d->DS[0].Remote.Data.Address = (void *)(uintptr_t)raddr;
	d->DS[0].Remote.Handle = rh;
	d->DS[1].Local.Data.Address = s.buf;
	d->DS[1].Local.Handle = s.mh;
	d->DS[1].Local.Length = 4096;
	d->CS.Length = 4096;
	send_wait(&s, d, 0);
	/* RDMA read 64 KiB from offset 8192. */
	d = desc(&s, 1, VIP_CONTROL_OP_RDMAREAD, NULL, 0);
	d->CS.SegCount = 2;
	d->DS[0].Remote.Data.Address = (void *)(uintptr_t)(raddr + 8192);
	d->DS[0].Remote.Handle = rh;
	d->DS[1].Local.Data.Address = s.buf + 65536;
	d->DS[1].Local.Handle = s.mh;
	d->DS[1].Local.Length = 65536;
	d->CS.Length = 65536;
	send_wait(&s, d, 0);
	CHECK(same(s.buf + 65536, 65536, 9));
	/* Then "done", and last a forged handle: refused, nothing written. */
	send_wait(&s, desc(&s, 1, VIP_CONTROL_OP_SENDRECV, s.buf, 0), 0);
	d = desc(&s, 1, VIP_CONTROL_OP_RDMAWRITE, NULL, 0);
	d->CS.SegCount = 2;
	d->DS[0].Remote.Data.Address = (void *)(uintptr_t)(raddr + 4096);
	d->DS[0].Remote.Handle = rh ^ 0x10000;
	d->DS[1].Local.Data.Address = s.buf;
	d->DS[1].Local.Handle = s.mh;
	d->DS[1].Local.Length = 4096;
	d->CS.Length = 4096;
	send_wait(&s, d, VIP_STATUS_RDMA_PROT_ERROR);
	printf("client: ok\n");
	return 0;
}

/* Connecting must fail within timeout_ms (e.g. without the job key). */
static int probe(const char *host, const char *disc, unsigned timeout_ms)
{
	struct side s;
	VIP_VI_ATTRIBUTES ra;
	VIP_RETURN r;

	setup(&s);
	r = VipConnectRequest(s.vi, addr(&s, "localhost", "probe"), addr(&s, host, disc),
			      timeout_ms, &ra);
	printf("probe: %d\n", (int)r);
	return r == VIP_SUCCESS;
}

/* Accept, take one message, then wait for the connection to break and
 * say how long after that message it did. */
static int watch(const char *disc)
{
	struct side s;
	VIP_NET_ADDRESS *rem = calloc(1, sizeof(*rem) + 64);
	VIP_VI_ATTRIBUTES ra;
	VIP_CONN_HANDLE ch;
	VIP_DESCRIPTOR *o;
	uint64_t t0;

	setup(&s);
	OK(VipPostRecv(s.vi, desc(&s, 0, VIP_CONTROL_OP_SENDRECV, s.buf, 64), s.dh));
	OK(VipPostRecv(s.vi, desc(&s, 1, VIP_CONTROL_OP_SENDRECV, s.buf + 64, 64), s.dh));
	OK(VipConnectWait(s.nic, addr(&s, "localhost", disc), 60000, rem, &ra, &ch));
	OK(VipConnectAccept(ch, s.vi));
	OK(VipRecvWait(s.vi, TIMEOUT, &o));
	t0 = now_ms();
	printf("connected\n");         /* the test cuts the peer off now */
	fflush(stdout);
	if (VipRecvWait(s.vi, 30000, &o) != VIP_DESCRIPTOR_ERROR)
		return 1;
	printf("broken after %llu ms\n", (unsigned long long)(now_ms() - t0));
	return 0;
}

/* Connect, send one message, then stay (the test kills us or cuts the
 * link). */
static int hold(const char *host, const char *disc)
{
	struct side s;
	VIP_VI_ATTRIBUTES ra;

	setup(&s);
	OK(connect_retry(&s, addr(&s, "localhost", "hold"), addr(&s, host, disc), &ra));
	send_wait(&s, desc(&s, 1, VIP_CONTROL_OP_SENDRECV, s.buf, 8), 0);
	for (;;)
		pause();
}

/* A hostile process on the network, without the job key: garbage, then
 * well-formed headers with guessed connections and forged requests, all
 * at the listener of DISC.  The server must drop them all and serve the
 * honest client afterwards.  The port is the provider's: base + FNV-1a
 * of the discriminator mod 4096 (ofi_conn.c). */
struct hostile {
	struct fi_info *hints, *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	fi_addr_t to;
	int done;                       /* sends completed */
	bool failed;                    /* one completed with an error */
};

static void hostile_open(struct hostile *x, const char *host, const char *port)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_CONTEXT, .size = 1024 };
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	char limit[16];

	/* rxm refuses a connection whose eager limit differs from its own:
	 * the provider's (ofi_nic.c, which also leaves a user's setting). */
	snprintf(limit, sizeof(limit), "%u", (unsigned)VD_OFI_MSG_MAX);
	setenv("FI_OFI_RXM_EAGER_LIMIT", limit, 0);
	x->hints = fi_allocinfo();
	CHECK(x->hints);
	x->hints->ep_attr->type = FI_EP_RDM;
	x->hints->caps = FI_MSG;
	/* The listener's family: an IPv6 endpoint's connects to it fail at
	 * once (EINVAL). */
	x->hints->addr_format = FI_SOCKADDR_IN;
	x->hints->fabric_attr->prov_name = strdup("tcp");
	/* Asked for the destination, libfabric picks the interface that
	 * routes there; asked for nothing, it may pick the loopback one,
	 * from which connects to another host fail at once (EINVAL). */
	CHECK(fi_getinfo(FI_VERSION(1, 17), host, port, 0, x->hints, &x->info) == 0);
	CHECK(fi_fabric(x->info->fabric_attr, &x->fab, NULL) == 0);
	CHECK(fi_domain(x->fab, x->info, &x->dom, NULL) == 0);
	CHECK(fi_av_open(x->dom, &aa, &x->av, NULL) == 0 &&
	      fi_cq_open(x->dom, &ca, &x->cq, NULL) == 0);
	CHECK(fi_endpoint(x->dom, x->info, &x->ep, NULL) == 0);
	CHECK(fi_ep_bind(x->ep, &x->av->fid, 0) == 0 &&
	      fi_ep_bind(x->ep, &x->cq->fid, FI_TRANSMIT | FI_RECV) == 0);
	CHECK(fi_enable(x->ep) == 0);
	CHECK(fi_av_insertsvc(x->av, host, port, &x->to, 0, NULL) == 1);
}

/* Count finished sends; false on a send that failed (nothing arrived). */
static bool hostile_reap(struct hostile *x)
{
	struct fi_cq_entry e[16];
	struct fi_cq_err_entry err = { 0 };
	ssize_t n = fi_cq_read(x->cq, e, 16);

	if (n > 0)
		x->done += (int)n;
	if (n != -FI_EAVAIL)
		return true;
	(void)fi_cq_readerr(x->cq, &err, 0);
	fprintf(stderr, "hostile: a send failed: %s\n", fi_strerror(err.err));
	x->failed = true;
	return false;
}

/* Message i: random bytes, from the 200th on with a header that parses
 * (every type, a guessed connection and token). */
static size_t hostile_msg(uint8_t *msg, size_t cap, int i)
{
	size_t n = (size_t)rand() % cap;

	for (size_t k = 0; k < n; k++)
		msg[k] = (uint8_t)rand();
	if (i >= 200 && n >= sizeof(struct vd_ofi_hdr)) {
		struct vd_ofi_hdr fh = { .magic = VD_OFI_MAGIC, .version = VD_OFI_VERSION,
					 .type = (uint8_t)(1 + i % (VD_OFI_TYPE_MAX - 1)),
					 .len = (uint32_t)(n - sizeof(fh)) };

		memcpy(&fh.conn, msg + 4, sizeof(fh.conn));
		memcpy(&fh.token, msg + 8, sizeof(fh.token));
		memcpy(msg, &fh, sizeof(fh));
	}
	return n;
}

static void hostile_close(struct hostile *x)
{
	fi_close(&x->ep->fid);
	fi_close(&x->cq->fid);
	fi_close(&x->av->fid);
	fi_close(&x->dom->fid);
	fi_close(&x->fab->fid);
	fi_freeinfo(x->info);
	fi_freeinfo(x->hints);
}

/* All 600 must be sent and complete within 20 s: a send that cannot go
 * out (no listener, a refused connection) fails the run instead of
 * passing it with nothing delivered. */
static int hostile(const char *host, const char *disc)
{
	enum { COUNT = 600 };
	struct hostile x = { 0 };
	uint32_t h = 2166136261u;
	char port[16];
	uint8_t msg[512];
	uint64_t give_up = now_ms() + 20000;
	int sent = 0, last_err = 0;
	ssize_t r;

	for (const char *p = disc; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	snprintf(port, sizeof(port), "%u", VD_OFI_PORT_BASE + h % 4096);
	hostile_open(&x, host, port);
	srand(7);
	while (x.done < COUNT && !x.failed && now_ms() < give_up) {
		if (sent < COUNT) {
			size_t n = hostile_msg(msg, sizeof(msg), sent);

			while ((r = fi_send(x.ep, msg, n, NULL, x.to, NULL)) == -FI_EAGAIN &&
			       hostile_reap(&x) && now_ms() < give_up)
				;
			if (r == 0) {
				sent++;
			} else if (r != -FI_EAGAIN) {
				/* A listener that is up may not take connections
				 * yet (the server is still starting): again. */
				last_err = (int)-r;
				usleep(10000);
			}
		}
		if (!hostile_reap(&x))
			break;
	}
	hostile_close(&x);
	if (x.done < COUNT) {
		fprintf(stderr, "hostile: %s port %s: %d of %d messages sent, %d completed%s%s\n",
			host, port, sent, COUNT, x.done, last_err ? "; last error: " : "",
			last_err ? fi_strerror(last_err) : "");
		return 1;
	}
	printf("hostile: %d messages sent\n", COUNT);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "hostile"))
		return hostile(argv[2], argv[3]);
	if (argc == 5 && !strcmp(argv[1], "probe"))
		return probe(argv[2], argv[3], (unsigned)atoi(argv[4]));
	if (argc == 3 && !strcmp(argv[1], "watch"))
		return watch(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "hold"))
		return hold(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "server"))
		return server(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3]);
	fprintf(stderr, "usage: netpair server DISC | netpair client HOST DISC\n");
	return 2;
}

/* A driver that exits with its NIC, VI and buffers open on purpose (the
 * library's own cleanup at exit is what the VIPL tests check): no leak
 * report for it under ASan. */
const char *__lsan_default_options(void);
const char *__lsan_default_options(void)
{
	return "detect_leaks=0";
}
