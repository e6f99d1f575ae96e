/* SPDX-License-Identifier: MIT */
/*
 * Lazy connections: a pair of ranks gets its VI when one of them first
 * has something for the other, so a job whose ranks talk to few peers
 * makes few VIs, and MPI_Init does not grow with the square of the job.
 *
 * Every rank listens on one discriminator per transport (job, -1, rank)
 * in a thread of its own, so it accepts while its main thread computes or
 * sleeps in a wait; a second thread makes this rank's requests one after
 * the other (VipConnectRequest blocks until the peer's listener answers,
 * which never waits on anything else, so no cycle of requests can hang).
 * When both ranks of a pair ask at once, the lower rank's request wins:
 * the lower rank refuses the higher one's while it wants the pair itself,
 * the higher accepts the lower one's.  One VI per pair either way.
 *
 * The threads only make VIs; the engine (wire.c, one thread) adopts them
 * through vd_conn_take, posts its receives and sends what waited.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wire_conn.h"
#include "util/sys.h"

#define CONNECT_TIMEOUT_MS 60000u       /* as long as eager start-up waits */
#define LISTEN_MS 200u                  /* a listener looks at `stop` this often */
#define ATTEMPT_MS 2000u                /* a request looks at its pair this often */
#define NO_MATCH_NAP_MAX_MS 16u         /* the longest pause between knocks */

enum conn_state {
	C_NONE = 0,
	C_WANT,                 /* queued for the connector */
	C_REQUESTING,           /* our request is out (or was refused: the
	                         * peer's own request is coming) */
	C_ACCEPTING,            /* the listener is accepting the peer's */
	C_UP,
};

struct conn {
	enum conn_state state;
	bool failed;            /* our request failed: the job ends */
	uint64_t since_ns;      /* when this rank first wanted it */
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake;            /* the connector's queue */
	struct conn *c;                 /* [world rank] */
	int *queue;                     /* ranks to request: each at most once */
	unsigned qhead, qtail;
	int *ready;                     /* connections not yet taken */
	VIP_VI_HANDLE *ready_vi;
	unsigned nready;                /* read without the lock as a hint */
	bool stop;
	VIP_NIC_HANDLE nic[VD_T_N];
	VIP_CQ_HANDLE cq[VD_T_N];
	VIP_VI_HANDLE inflight;         /* the connector's request, to cancel */
	pthread_t listener[VD_T_N], connector;
	bool listening[VD_T_N], connecting;
} C = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER };

static void nap_ms(unsigned ms)
{
	struct timespec ts = { 0, (long)ms * 1000000 };

	nanosleep(&ts, NULL);
}

static bool stopping(void)
{
	return __atomic_load_n(&C.stop, __ATOMIC_ACQUIRE);
}

/* ---- addresses and VIs ----------------------------------------------------------- */

static uint64_t fnv64(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

static uint64_t job_tag(void)
{
	return fnv64(vd_mpi.jobid) ^ vd_place_nonce();
}

/* Host bytes, then a 16-byte discriminator (job, from, to): the two
 * sides of a pair mirror each other. */
VIP_NET_ADDRESS *vd_conn_addr(uint8_t *room, enum vd_transport k, int host_rank, int from,
			      int to)
{
	VIP_NET_ADDRESS *a = (VIP_NET_ADDRESS *)room;
	uint64_t job = job_tag();
	int32_t f = from, t = to;
	unsigned alen;
	const uint8_t *host = vd_place_host(k, host_rank, &alen);

	a->HostAddressLen = (VIP_UINT16)alen;
	a->DiscriminatorLen = 16;
	memcpy(a->HostAddress, host, alen);
	memcpy(a->HostAddress + alen, &job, 8);
	memcpy(a->HostAddress + alen + 8, &f, 4);
	memcpy(a->HostAddress + alen + 12, &t, 4);
	return a;
}

/* Written before the threads that read them are created. */
static uint32_t deep_local, deep_remote;

void vd_conn_deep_rings(bool local, bool remote)
{
	deep_local = local ? VIADUCT_VI_DEEP_RING : 0;
	deep_remote = remote ? VIADUCT_VI_DEEP_RING : 0;
}

int vd_conn_vi_open(enum vd_transport k, VIP_NIC_HANDLE nic, VIP_CQ_HANDLE cq, int rank,
		    VIP_VI_HANDLE *vi)
{
	VIP_VI_ATTRIBUTES va = { 0 };
	/* SOLO: once adopted, only the engine's thread touches the VI. */
	uint32_t deep = k == VD_T_SHM ? deep_local : deep_remote;
	struct viaduct_vi_ext ext = { VIADUCT_VI_FLOW_CONTROL | VIADUCT_VI_RING_SOLO | deep,
				      VIADUCT_XFER_AUTO };

	va.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
	va.MaxTransferSize = 1u << 30;
	va.EnableRdmaWrite = VIP_TRUE;
	va.EnableRdmaRead = VIP_TRUE;
	*vi = NULL;
	if (VipCreateVi(nic, &va, NULL, cq, vi) != VIP_SUCCESS)
		return -ENOMEM;
	if (viaduct_vi_set_ext(*vi, &ext) != VIP_SUCCESS) {
		VipDestroyVi(*vi);
		*vi = NULL;
		return -ENOMEM;
	}
	VipSetUserData(*vi, (void *)(intptr_t)(rank + 1));
	return 0;
}

/* The rank whose request reached our listener on transport k, or -1 if
 * it is none of this job's (or ourselves: the knock of vd_conn_stop). */
static int caller_of(enum vd_transport k, const VIP_NET_ADDRESS *a)
{
	const uint8_t *d = a->HostAddress + a->HostAddressLen;
	uint64_t job;
	int32_t from, to;

	if (a->DiscriminatorLen != 16)
		return -1;
	memcpy(&job, d, 8);
	memcpy(&from, d + 8, 4);
	memcpy(&to, d + 12, 4);
	if (job != job_tag() || to != vd_mpi.rank || from < 0 || from >= vd_mpi.size ||
	    from == vd_mpi.rank || vd_place_via(from) != k)
		return -1;
	return from;
}

/* ---- state (C.lock held) ----------------------------------------------------------- */

static void mark_up(int r, VIP_VI_HANDLE vi)
{
	C.c[r].state = C_UP;
	C.ready[C.nready] = r;
	C.ready_vi[C.nready] = vi;
	__atomic_store_n(&C.nready, C.nready + 1, __ATOMIC_RELEASE);
}

/* Whether our listener takes r's request: always when we do not want
 * the pair ourselves; when we do, only if r is the lower rank (our own
 * request then meets a refusal). */
static bool accepts(enum conn_state s, int r)
{
	if (s == C_NONE)
		return true;
	return (s == C_WANT || s == C_REQUESTING) && vd_mpi.rank > r;
}

/* ---- the listeners ------------------------------------------------------------------ */

static void answer(enum vd_transport k, const VIP_NET_ADDRESS *remote, VIP_CONN_HANDLE ch)
{
	int r = caller_of(k, remote);
	enum conn_state was = C_NONE;
	VIP_VI_HANDLE vi = NULL;
	VIP_RETURN rc = VIP_REJECT;

	if (r >= 0) {
		pthread_mutex_lock(&C.lock);
		was = C.c[r].state;
		if (accepts(was, r))
			C.c[r].state = C_ACCEPTING;
		else
			r = -1;
		pthread_mutex_unlock(&C.lock);
	}
	if (r < 0 || vd_conn_vi_open(k, C.nic[k], C.cq[k], r, &vi)) {
		VipConnectReject(ch);
	} else {
		rc = VipConnectAccept(ch, vi);
	}
	if (r < 0)
		return;
	pthread_mutex_lock(&C.lock);
	if (rc == VIP_SUCCESS)
		mark_up(r, vi);
	else
		C.c[r].state = was;     /* the requester gave up: it says so */
	pthread_mutex_unlock(&C.lock);
	if (rc != VIP_SUCCESS && vi)
		VipDestroyVi(vi);
}

static void *listener_main(void *arg)
{
	enum vd_transport k = (enum vd_transport)(intptr_t)arg;
	uint8_t la[128], ra[128];
	VIP_NET_ADDRESS *local = vd_conn_addr(la, k, vd_mpi.rank, -1, vd_mpi.rank);

	while (!stopping()) {
		VIP_VI_ATTRIBUTES attrs;
		VIP_CONN_HANDLE ch;
		VIP_RETURN rc = VipConnectWait(C.nic[k], local, LISTEN_MS, (VIP_NET_ADDRESS *)ra,
					       &attrs, &ch);
		if (rc == VIP_SUCCESS)
			answer(k, (VIP_NET_ADDRESS *)ra, ch);
		else if (rc != VIP_TIMEOUT)
			nap_ms(10);     /* not a busy loop if the NIC refuses */
	}
	return NULL;
}

/* ---- the connector ------------------------------------------------------------------ */

static bool still_requesting(int r)
{
	bool yes;

	pthread_mutex_lock(&C.lock);
	yes = C.c[r].state == C_REQUESTING;
	pthread_mutex_unlock(&C.lock);
	return yes;
}

/* Request until the peer's listener answers: over a fabric a request
 * that falls between two of its waits is told NO_MATCH at once.  In
 * slices, so that a request that lost its purpose (the peer's own came
 * in first and the pair is up, or MPI_Finalize) ends.  The pause after
 * a NO_MATCH doubles up to NO_MATCH_NAP_MAX_MS: a peer still starting,
 * or busy accepting another rank, is not knocked on a thousand times a
 * second (each knock is a handshake the provider keeps a slot for). */
static VIP_RETURN request(enum vd_transport k, int r, VIP_VI_HANDLE vi)
{
	uint64_t deadline = vd_now_ns() + CONNECT_TIMEOUT_MS * 1000000ull;
	uint8_t la[128], ra[128];
	VIP_VI_ATTRIBUTES attrs;
	unsigned nap = 1;
	VIP_RETURN rc;

	for (;;) {
		uint64_t now = vd_now_ns();
		VIP_ULONG left = now < deadline ? (VIP_ULONG)((deadline - now) / 1000000u) : 0;
		if (!left || stopping())
			return VIP_TIMEOUT;
		if (!still_requesting(r))
			return VIP_REJECT;
		rc = VipConnectRequest(vi, vd_conn_addr(la, k, vd_mpi.rank, vd_mpi.rank, r),
				       vd_conn_addr(ra, k, r, -1, r),
				       left < ATTEMPT_MS ? left : ATTEMPT_MS, &attrs);
		/* A higher rank refuses us while it still answers an earlier
		 * request of ours (one whose slice ran out here): ask again
		 * once it is done, since nobody else will.  (It also refuses
		 * when it takes the pair for up, or cannot open a VI: then
		 * the 60 s bound ends the job, as it did.) */
		if (rc == VIP_REJECT && r > vd_mpi.rank)
			rc = VIP_NO_MATCH;
		if (rc != VIP_NO_MATCH && rc != VIP_TIMEOUT)
			return rc;
		if (rc == VIP_NO_MATCH) {
			nap_ms(nap);
			if (nap < NO_MATCH_NAP_MAX_MS)
				nap *= 2;
		}
	}
}

static void connect_to(int r)
{
	enum vd_transport k = vd_place_via(r);
	VIP_VI_HANDLE vi;
	VIP_RETURN rc = VIP_ERROR_RESOURCE;

	if (!vd_conn_vi_open(k, C.nic[k], C.cq[k], r, &vi)) {
		pthread_mutex_lock(&C.lock);
		C.inflight = vi;
		pthread_mutex_unlock(&C.lock);
		rc = request(k, r, vi);
	}
	pthread_mutex_lock(&C.lock);
	C.inflight = NULL;
	if (rc == VIP_SUCCESS)
		mark_up(r, vi);
	else if (rc != VIP_REJECT && C.c[r].state == C_REQUESTING)
		C.c[r].failed = true;
	/* VIP_REJECT: the lower rank wants the pair too; its request comes. */
	pthread_mutex_unlock(&C.lock);
	if (rc != VIP_SUCCESS && vi)
		VipDestroyVi(vi);
}

static void *connector_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&C.lock);
	for (;;) {
		while (!C.stop && C.qhead == C.qtail)
			pthread_cond_wait(&C.wake, &C.lock);
		if (C.stop)
			break;
		int r = C.queue[C.qhead++];
		if (C.c[r].state != C_WANT)
			continue;       /* the peer's request came first */
		C.c[r].state = C_REQUESTING;
		pthread_mutex_unlock(&C.lock);
		connect_to(r);
		pthread_mutex_lock(&C.lock);
	}
	pthread_mutex_unlock(&C.lock);
	return NULL;
}

/* ---- the engine's side ------------------------------------------------------------------ */

int vd_conn_start(VIP_NIC_HANDLE const nic[VD_T_N], VIP_CQ_HANDLE const cq[VD_T_N])
{
	size_t n = (size_t)vd_mpi.size;

	C.c = calloc(n, sizeof(*C.c));
	C.queue = calloc(n, sizeof(*C.queue));
	C.ready = calloc(n, sizeof(*C.ready));
	C.ready_vi = calloc(n, sizeof(*C.ready_vi));
	if (!C.c || !C.queue || !C.ready || !C.ready_vi)
		return -ENOMEM;
	C.stop = false;
	for (int k = 0; k < VD_T_N; k++) {
		C.nic[k] = nic[k];
		C.cq[k] = cq[k];
		if (!nic[k] || !cq[k])
			continue;
		if (pthread_create(&C.listener[k], NULL, listener_main, (void *)(intptr_t)k))
			return -EAGAIN;
		C.listening[k] = true;
	}
	if (pthread_create(&C.connector, NULL, connector_main, NULL))
		return -EAGAIN;
	C.connecting = true;
	return 0;
}

void vd_conn_want(int peer)
{
	pthread_mutex_lock(&C.lock);
	if (C.c[peer].state == C_NONE) {
		C.c[peer].state = C_WANT;
		C.c[peer].since_ns = vd_now_ns();
		C.queue[C.qtail++] = peer;
		pthread_cond_signal(&C.wake);
	}
	pthread_mutex_unlock(&C.lock);
}

int vd_conn_take(int *ranks, VIP_VI_HANDLE *vis, int max)
{
	int n = 0;

	if (!C.c || !__atomic_load_n(&C.nready, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&C.lock);
	while (n < max && C.nready) {
		unsigned i = C.nready - 1;
		ranks[n] = C.ready[i];
		vis[n] = C.ready_vi[i];
		__atomic_store_n(&C.nready, i, __ATOMIC_RELAXED);
		n++;
	}
	pthread_mutex_unlock(&C.lock);
	return n;
}

static void connect_failed(int r, const char *why)
{
	char msg[128];

	snprintf(msg, sizeof(msg), "cannot connect to rank %d (%s)", r, why);
	fprintf(stderr, "viaduct MPI: rank %d: %s\n", vd_mpi.rank, msg);
	vd_pmi_abort(MPI_ERR_OTHER, msg);
}

void vd_conn_check(void)
{
	uint64_t now = vd_now_ns(), limit = CONNECT_TIMEOUT_MS * 1000000ull;
	int bad = -1;
	bool failed = false;

	if (!C.c)
		return;
	pthread_mutex_lock(&C.lock);
	for (int r = 0; r < vd_mpi.size && bad < 0; r++) {
		const struct conn *c = &C.c[r];
		if (c->failed || ((c->state == C_WANT || c->state == C_REQUESTING) &&
				  now - c->since_ns > limit)) {
			bad = r;
			failed = c->failed;
		}
	}
	pthread_mutex_unlock(&C.lock);
	if (bad >= 0)
		connect_failed(bad, failed ? "it does not answer: did it die or finish?"
					   : "timed out");
}

/* Wake our own listener now rather than within LISTEN_MS: it refuses a
 * request from this rank, and looks at `stop` again. */
static void knock(enum vd_transport k)
{
	uint8_t la[128], ra[128];
	VIP_VI_ATTRIBUTES attrs;
	VIP_VI_HANDLE vi;

	if (vd_conn_vi_open(k, C.nic[k], C.cq[k], vd_mpi.rank, &vi))
		return;
	(void)VipConnectRequest(vi, vd_conn_addr(la, k, vd_mpi.rank, vd_mpi.rank, vd_mpi.rank),
				vd_conn_addr(ra, k, vd_mpi.rank, -1, vd_mpi.rank), LISTEN_MS,
				&attrs);
	VipDestroyVi(vi);
}

void vd_conn_stop(void)
{
	pthread_mutex_lock(&C.lock);
	__atomic_store_n(&C.stop, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&C.wake);
	/* A request still out has lost its purpose (every message went out
	 * before MPI_Finalize came here): disconnecting its VI cancels it,
	 * rather than wait for a listener that may have left. */
	if (C.inflight)
		VipDisconnect(C.inflight);
	pthread_mutex_unlock(&C.lock);
	for (int k = 0; k < VD_T_N; k++) {
		if (!C.listening[k])
			continue;
		knock((enum vd_transport)k);
		pthread_join(C.listener[k], NULL);
		C.listening[k] = false;
	}
	if (C.connecting)
		pthread_join(C.connector, NULL);
	C.connecting = false;
	/* Made after the engine last looked: nobody ever used them. */
	for (unsigned i = 0; C.c && i < C.nready; i++) {
		VipDisconnect(C.ready_vi[i]);
		VipDestroyVi(C.ready_vi[i]);
	}
	free(C.c);
	free(C.queue);
	free(C.ready);
	free(C.ready_vi);
	C.c = NULL;
	C.queue = C.ready = NULL;
	C.ready_vi = NULL;
	C.qhead = C.qtail = C.nready = 0;
}
