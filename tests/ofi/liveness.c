/* SPDX-License-Identifier: MIT */
/*
 * White-box: the ofi provider's liveness check must not take a peer for
 * dead when the peer was heard *after* the checker read the clock (the
 * checking thread was descheduled in between, as on a loaded machine).
 * Unsigned "now - last_heard" wrapped to centuries there and broke live
 * connections now and then.
 */
#include <pthread.h>
#include <string.h>

#include "vdtest.h"
#include "prov/ofi/ofi.h"

int main(void)
{
	struct vd_ofi_nic on;
	struct vd_ofi_conn c, *table[1] = { &c };
	uint64_t later = vd_now_ns() + 3000000000ull;

	memset(&on, 0, sizeof(on));
	memset(&c, 0, sizeof(c));
	pthread_mutex_init(&on.lock, NULL);
	pthread_mutex_init(&on.fab_lock, NULL);
	pthread_cond_init(&on.cond, NULL);
	on.conns = table;
	on.nconns = on.conns_hwm = 1;
	c.on = &on;
	c.hs_state = 4;                 /* connected */
	/* Heard from (and sent to) "after" the checker's clock read. */
	atomic_store(&c.last_rx_ns, later);
	atomic_store(&c.last_tx_ns, later);
	vd_ofi_keepalive(&on);
	VDT_CHECK(!atomic_load(&c.broken));

	/* A really silent peer is still cut off. */
	atomic_store(&c.last_rx_ns, 1);
	vd_ofi_keepalive(&on);
	VDT_CHECK(atomic_load(&c.broken));
	printf("ok: a peer heard after the clock read is alive, a silent one is not\n");
	return 0;
}
