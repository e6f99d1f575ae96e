/* SPDX-License-Identifier: MIT */
/*
 * A peer that parks its "inside an RDMA" word on one of our regions (a
 * hostile peer, or one stopped in the middle of a copy, look the same).
 * VipDeregisterMem of that region must not report success while the peer
 * lives and stays in: it breaks the peer's connection and fails with
 * VIP_ERROR_RESOURCE within a bound, the memory still registered.  It
 * must not hold the NIC meanwhile: VipRegisterMem/VipDeregisterMem of
 * other regions in another thread stay fast.  Once the peer is gone, the
 * same call succeeds.  (It used to give up after 5 s with success,
 * holding the NIC lock all along.)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "viptest.h"
#include "prov/shm/shm.h"
#include "vipl/vipl_internal.h"

#define LEN (64u * 1024)
static char disc[32];

struct other {
	VIP_NIC_HANDLE nic;
	_Atomic bool stop;
	uint64_t worst_ms, rounds;
};

/* Register and deregister another buffer again and again. */
static void *other_regions(void *arg)
{
	struct other *o = arg;
	char *buf = malloc(LEN);

	while (!atomic_load(&o->stop)) {
		VIP_MEM_HANDLE mh;
		uint64_t t0 = vt_now_ms(), dt;

		VT_OK(VipRegisterMem(o->nic, buf, LEN, NULL, &mh));
		VT_OK(VipDeregisterMem(o->nic, buf, mh));
		dt = vt_now_ms() - t0;
		if (dt > o->worst_ms)
			o->worst_ms = dt;
		o->rounds++;
		usleep(1000);
	}
	free(buf);
	return NULL;
}

static int target(void *arg)
{
	struct vt_side s;
	struct other o = { 0 };
	VIP_MEM_ATTRIBUTES ma = { .EnableRdmaWrite = VIP_TRUE };
	VIP_MEM_HANDLE mh;
	pthread_t th;
	uint64_t t0, dt, peer;
	char *buf = calloc(1, LEN);
	int r;

	(void)arg;
	vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	VT_OK(VipRegisterMem(s.nic, buf, LEN, &ma, &mh));
	vt_side_connect(&s, disc);
	VDT_CHECK(vt_put_u64(vt_fd, (uint64_t)(uintptr_t)mh) == 0);
	VDT_CHECK(vt_get_u64(vt_fd, &peer) == 0);       /* parked */
	o.nic = s.nic;
	VDT_CHECK(pthread_create(&th, NULL, other_regions, &o) == 0);
	t0 = vt_now_ms();
	r = VipDeregisterMem(s.nic, buf, mh);
	dt = vt_now_ms() - t0;
	atomic_store(&o.stop, true);
	pthread_join(th, NULL);
	printf("deregistration with the peer inside: %s after %llu ms; other regions: "
	       "%llu rounds, worst %llu ms\n", vt_ret_str(r), (unsigned long long)dt,
	       (unsigned long long)o.rounds, (unsigned long long)o.worst_ms);
	VT_EXPECT(r, VIP_ERROR_RESOURCE);
	VDT_CHECK(dt < 10000);
	VDT_CHECK(o.rounds > 10 && o.worst_ms < 500);
	VDT_CHECK(vt_state(s.vi) == VIP_STATE_ERROR);   /* its connection broke */
	/* The peer goes (still "inside"); the same call now succeeds. */
	(void)peer;
	VDT_CHECK(vt_put_u64(vt_fd, 1) == 0);
	t0 = vt_now_ms();
	while ((r = VipDeregisterMem(s.nic, buf, mh)) == VIP_ERROR_RESOURCE &&
	       vt_now_ms() - t0 < 10000)
		usleep(10000);
	VT_OK(r);
	VT_EXPECT(VipDeregisterMem(s.nic, buf, mh), VIP_INVALID_PARAMETER);
	vt_side_close(&s);
	free(buf);
	return 0;
}

static int parker(void *arg)
{
	struct vt_side s;
	struct vd_vi *vi;
	uint64_t mh;

	(void)arg;
	vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	vt_side_connect(&s, disc);
	VDT_CHECK(vt_get_u64(vt_fd, &mh) == 0);
	vi = vd_obj_lookup(s.vi, VD_OBJ_VI);
	VDT_CHECK(vi && vi->conn);
	/* As an initiator does before it checks the table, and then never
	 * leaves. */
	atomic_store(&((struct vd_shm_conn *)vi->conn)->tx->s2.rdma_active, (uint32_t)mh);
	VDT_CHECK(vt_put_u64(vt_fd, (uint64_t)getpid()) == 0);
	VDT_CHECK(vt_get_u64(vt_fd, &mh) == 0);        /* go now */
	_exit(0);               /* no clean-up: the word stays set */
}

int main(void)
{
	vt_disc(disc, "revoke-park");
	return vt_fork2(target, parker, NULL, 60);
}
