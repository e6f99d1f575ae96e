/* SPDX-License-Identifier: MIT */
/*
 * A peer that dies while a long copy into or out of it is under way: the
 * descriptor must complete with an error, never with success.  The
 * initiator RDMA-writes, RDMA-reads and sends (DMA) 128 MiB to a target
 * that is killed a few milliseconds after the copy started.  (A 512 MiB
 * RDMA used to report success: the one process_vm_writev kept the dead
 * process's memory alive to the end, and the service thread waited for
 * the send queue's lock meanwhile.)
 */
#include <pthread.h>
#include <stdbool.h>
#include <time.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "viptest.h"

#define BIG (128ull << 20)
enum { OP_WRITE, OP_READ, OP_SEND, NOPS };
static const char *const op_name[NOPS] = { "RDMA write", "RDMA read", "send (DMA)" };
static char disc[32];

static void *big_buffer(void)
{
	void *p = mmap(NULL, BIG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	VDT_CHECK(p != MAP_FAILED);
	memset(p, 0x5a, BIG);   /* fault it in: the copy, not page faults, takes time */
	return p;
}

/* The target: registers a big buffer, posts a big receive, tells the
 * initiator where, then waits to be killed. */
static int target(void *arg)
{
	VIP_MEM_ATTRIBUTES ma = { .EnableRdmaWrite = VIP_TRUE, .EnableRdmaRead = VIP_TRUE };
	struct vt_side s;
	struct vt_mem dm;
	VIP_MEM_HANDLE mh;
	void *buf = big_buffer();

	(void)arg;
	vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	VT_OK(VipRegisterMem(s.nic, buf, BIG, &ma, &mh));
	VT_OK(vt_mem_get(s.nic, VT_DESC_STRIDE, NULL, &dm));
	vt_desc_recv(vt_desc_at(&dm, 0), mh, buf, (uint32_t)BIG);
	VT_OK(VipPostRecv(s.vi, vt_desc_at(&dm, 0), dm.mh));
	VT_OK(vt_server_accept(s.nic, s.vi, disc, 60000));
	VDT_CHECK(vt_put_u64(vt_fd, (uint64_t)(uintptr_t)mh) == 0);
	VDT_CHECK(vt_put_u64(vt_fd, (uint64_t)(uintptr_t)buf) == 0);
	VDT_CHECK(vt_put_u64(vt_fd, (uint64_t)getpid()) == 0);
	for (;;)
		pause();
}

struct killer {
	pid_t pid;
	unsigned delay_us;
	uint64_t killed_ns;     /* when kill() was called */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *kill_later(void *arg)
{
	struct killer *k = arg;

	usleep(k->delay_us);
	k->killed_ns = now_ns();
	kill(k->pid, SIGKILL);
	return NULL;
}

/* The copy happens inside VipPostSend: how long it went on after the
 * kill tells whether a success was wrong (a loaded machine may run the
 * killer late, after the copy, when success is right). */
static uint64_t copied_after_kill_ns;

static uint32_t one_op(int op, unsigned delay_us)
{
	struct vt_side s;
	struct vt_mem dm;
	VIP_MEM_HANDLE lmh, rmh;
	VIP_DESCRIPTOR *d, *o;
	struct killer k;
	pthread_t th;
	uint64_t v, raddr, posted;
	uint32_t status;
	void *buf = big_buffer();
	int sv[2];
	pid_t pid;

	/* A fresh target per operation: its own child of ours. */
	VDT_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	fflush(NULL);
	pid = fork();
	VDT_CHECK(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		vt_fd = sv[1];
		vt_as_child();
		_exit(target(NULL));
	}
	close(sv[1]);
	vt_fd = sv[0];
	vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	VT_OK(VipRegisterMem(s.nic, buf, BIG, NULL, &lmh));
	VT_OK(vt_mem_get(s.nic, VT_DESC_STRIDE, NULL, &dm));
	VT_OK(vt_client_connect(s.nic, s.vi, disc, 60000));
	VDT_CHECK(vt_get_u64(vt_fd, &v) == 0);
	rmh = (VIP_MEM_HANDLE)(uintptr_t)v;
	VDT_CHECK(vt_get_u64(vt_fd, &raddr) == 0);
	VDT_CHECK(vt_get_u64(vt_fd, &v) == 0);
	k = (struct killer){ (pid_t)v, delay_us, 0 };
	d = vt_desc_at(&dm, 0);
	if (op == OP_SEND) {
		struct viaduct_vi_ext e = { 0, VIADUCT_XFER_DMA };

		VT_OK(viaduct_vi_set_ext(s.vi, &e));
		vt_desc_send(d, lmh, buf, (uint32_t)BIG);
	} else {
		vt_desc_rdma(d, op == OP_WRITE ? VIP_CONTROL_OP_RDMAWRITE : VIP_CONTROL_OP_RDMAREAD,
			     raddr, rmh, lmh, buf, (uint32_t)BIG);
	}
	VDT_CHECK(pthread_create(&th, NULL, kill_later, &k) == 0);
	VT_OK(VipPostSend(s.vi, d, dm.mh));
	posted = now_ns();
	(void)VipSendWait(s.vi, 30000, &o);
	pthread_join(th, NULL);
	copied_after_kill_ns = posted > k.killed_ns ? posted - k.killed_ns : 0;
	waitpid(pid, NULL, 0);
	close(vt_fd);
	vt_fd = -1;
	VDT_CHECK(o == d);
	status = d->CS.Status;
	VipDisconnect(s.vi);
	VipDestroyVi(s.vi);
	s.vi = NULL;
	vt_mem_put(&dm);
	VipDeregisterMem(s.nic, buf, lmh);
	vt_side_close(&s);
	munmap(buf, BIG);
	return status;
}

int main(void)
{
	int fails = 0;

	alarm(240);
	vt_disc(disc, "rdma-death");
	for (int op = 0; op < NOPS; op++) {
		for (int attempt = 1;; attempt++) {
			uint32_t st = one_op(op, 2000);
			bool error = (st & VIP_STATUS_DONE) && (st & VIP_STATUS_ERROR_MASK);

			printf("%s, target killed 2 ms in: status 0x%x, copying went on %.1f ms "
			       "after the kill\n", op_name[op], st, copied_after_kill_ns / 1e6);
			if (error)
				break;
			if (copied_after_kill_ns > 1000000) {   /* the peer was dead */
				fprintf(stderr, "%s into a dead peer completed without an error\n",
					op_name[op]);
				fails++;
				break;
			}
			if (attempt == 5) {     /* the killer always came too late */
				printf("note: %s: the kill never landed during the copy\n",
				       op_name[op]);
				break;
			}
		}
	}
	return fails ? 1 : 0;
}
