/* SPDX-License-Identifier: MIT */
/*
 * vipl_pingpong: a VIA ping-pong written the way classic VIA programs
 * (M-VIA's and cLAN's test programs, MPI devices of the time) are written,
 * to show that such code compiles and runs unchanged against viaduct:
 * open the NIC by device name, look up host addresses with the name
 * service, append a discriminator, pre-post receives, connect with
 * VipConnectWait/VipConnectAccept on the server and VipConnectRequest on
 * the client, exchange messages, disconnect.
 *
 *   vipl_pingpong                      server and client in two processes
 *   vipl_pingpong server [DISC]        wait for one client
 *   vipl_pingpong client [HOST [DISC]] connect to HOST (default localhost)
 *
 *   cc vipl_pingpong.c $(pkg-config --cflags --libs viaduct) -o vipl_pingpong
 *   cc vipl_pingpong.c -I$PREFIX/include -L$PREFIX/lib -lvipl -o vipl_pingpong
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* gethostname, fork, clock_gettime */
#endif

#include <vipl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEVICE "/dev/via_lo"
#define NUM_RECVS 4              /* receives kept posted */
#define MSG_SIZE 64
#define ROUNDS 1000
#define TIMEOUT 5000             /* ms */
#define CONNECT_RETRIES 10
#define DEFAULT_DISC 4711

/* Stop at the first failed call, saying which one: VIA programs of the
 * time did exactly this. */
#define CHECK(call)                                                          \
	do {                                                                 \
		VIP_RETURN status_ = (call);                                 \
		if (status_ != VIP_SUCCESS) {                                \
			fprintf(stderr, "%s: %s failed: %d\n", role, #call,   \
				(int)status_);                               \
			exit(1);                                             \
		}                                                            \
	} while (0)

static const char *role = "vipl_pingpong";

static VIP_NIC_HANDLE nic;
static VIP_NIC_ATTRIBUTES nic_attrs;
static VIP_PROTECTION_HANDLE ptag;
static VIP_VI_HANDLE vi;
static VIP_MEM_HANDLE mem_handle;
static char *mem;                 /* descriptors, then buffers */
static size_t mem_len;
static VIP_DESCRIPTOR *send_desc;
static char *send_buf;
static VIP_NET_ADDRESS *local_addr, *remote_addr;

static VIP_DESCRIPTOR *desc_at(int i)
{
	return (VIP_DESCRIPTOR *)(mem + i * sizeof(VIP_DESCRIPTOR));
}

static char *buf_at(int i)
{
	return mem + (NUM_RECVS + 1) * sizeof(VIP_DESCRIPTOR) + i * MSG_SIZE;
}

/* Host address from the name service, then the discriminator. */
static VIP_NET_ADDRESS *make_address(const char *host, int disc)
{
	VIP_NET_ADDRESS *a = malloc(sizeof(VIP_NET_ADDRESS) +
				    nic_attrs.NicAddressLen + sizeof(disc));
	char name[256];

	if (!a) {
		fprintf(stderr, "%s: out of memory\n", role);
		exit(1);
	}
	snprintf(name, sizeof(name), "%s", host);
	a->HostAddressLen = nic_attrs.NicAddressLen;
	a->DiscriminatorLen = sizeof(disc);
	CHECK(VipNSGetHostByName(nic, name, a, 0));
	memcpy(a->HostAddress + a->HostAddressLen, &disc, sizeof(disc));
	return a;
}

static void post_recv(VIP_DESCRIPTOR *d, char *buf)
{
	memset(d, 0, sizeof(*d));
	d->CS.Control = VIP_CONTROL_OP_SENDRECV;
	d->CS.SegCount = 1;
	d->CS.Length = MSG_SIZE;
	d->DS[0].Local.Data.Address = buf;
	d->DS[0].Local.Handle = mem_handle;
	d->DS[0].Local.Length = MSG_SIZE;
	CHECK(VipPostRecv(vi, d, mem_handle));
}

static void setup(void)
{
	VIP_MEM_ATTRIBUTES mem_attrs;
	VIP_VI_ATTRIBUTES vi_attrs;
	int i;

	CHECK(VipOpenNic(DEVICE, &nic));
	CHECK(VipQueryNic(nic, &nic_attrs));
	CHECK(VipCreatePtag(nic, &ptag));

	/* Descriptors must be 64-byte aligned and in registered memory. */
	mem_len = (NUM_RECVS + 1) * (sizeof(VIP_DESCRIPTOR) + MSG_SIZE);
	if (posix_memalign((void **)&mem, VIP_DESCRIPTOR_ALIGNMENT, mem_len)) {
		fprintf(stderr, "%s: out of memory\n", role);
		exit(1);
	}
	memset(mem, 0, mem_len);
	mem_attrs.Ptag = ptag;
	mem_attrs.EnableRdmaWrite = VIP_FALSE;
	mem_attrs.EnableRdmaRead = VIP_FALSE;
	CHECK(VipRegisterMem(nic, mem, mem_len, &mem_attrs, &mem_handle));

	vi_attrs.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
	vi_attrs.MaxTransferSize = nic_attrs.MaxTransferSize;
	vi_attrs.QoS = 0;
	vi_attrs.Ptag = ptag;
	vi_attrs.EnableRdmaWrite = VIP_FALSE;
	vi_attrs.EnableRdmaRead = VIP_FALSE;
	CHECK(VipCreateVi(nic, &vi_attrs, NULL, NULL, &vi));

	/* Receives are posted before the connection exists. */
	for (i = 0; i < NUM_RECVS; i++)
		post_recv(desc_at(i), buf_at(i));
	send_desc = desc_at(NUM_RECVS);
	send_buf = buf_at(NUM_RECVS);
}

static void send_msg(const char *payload)
{
	VIP_DESCRIPTOR *done;

	memset(send_buf, 0, MSG_SIZE);
	snprintf(send_buf, MSG_SIZE, "%s", payload);
	memset(send_desc, 0, sizeof(*send_desc));
	send_desc->CS.Control = VIP_CONTROL_OP_SENDRECV;
	send_desc->CS.SegCount = 1;
	send_desc->CS.Length = MSG_SIZE;
	send_desc->DS[0].Local.Data.Address = send_buf;
	send_desc->DS[0].Local.Handle = mem_handle;
	send_desc->DS[0].Local.Length = MSG_SIZE;
	CHECK(VipPostSend(vi, send_desc, mem_handle));
	CHECK(VipSendWait(vi, TIMEOUT, &done));
}

/* Wait for a message, copy it out, and post the receive again. */
static void recv_msg(char *out)
{
	VIP_DESCRIPTOR *d;

	CHECK(VipRecvWait(vi, TIMEOUT, &d));
	if (d->CS.Length != MSG_SIZE) {
		fprintf(stderr, "%s: got %u bytes, expected %d\n", role,
			(unsigned)d->CS.Length, MSG_SIZE);
		exit(1);
	}
	memcpy(out, d->DS[0].Local.Data.Address, MSG_SIZE);
	post_recv(d, d->DS[0].Local.Data.Address);
}

static void teardown(void)
{
	VIP_DESCRIPTOR *d;
	VIP_RETURN status;

	VipDisconnect(vi);
	/* Disconnect flushes the posted receives (they complete in error);
	 * reap them until the queue is empty, then destroy. */
	do {
		d = NULL;
		status = VipRecvDone(vi, &d);
	} while (status == VIP_SUCCESS ||
		 (status == VIP_DESCRIPTOR_ERROR && d != NULL));
	CHECK(VipDestroyVi(vi));
	CHECK(VipDeregisterMem(nic, mem, mem_handle));
	CHECK(VipDestroyPtag(nic, ptag));
	CHECK(VipCloseNic(nic));
	free(mem);
	free(local_addr);
	free(remote_addr);
}

static int run_server(int disc)
{
	VIP_VI_ATTRIBUTES remote_attrs;
	VIP_CONN_HANDLE conn;
	char host[256], msg[MSG_SIZE];
	int i;

	role = "server";
	setup();
	if (gethostname(host, sizeof(host)) != 0)
		snprintf(host, sizeof(host), "localhost");
	local_addr = make_address(host, disc);
	remote_addr = malloc(sizeof(VIP_NET_ADDRESS) + nic_attrs.NicAddressLen +
			     nic_attrs.MaxDiscriminatorLen);
	if (!remote_addr)
		return 1;
	CHECK(VipConnectWait(nic, local_addr, 10 * TIMEOUT, remote_addr,
			     &remote_attrs, &conn));
	CHECK(VipConnectAccept(conn, vi));
	for (i = 0; i < ROUNDS; i++) {
		recv_msg(msg);
		send_msg(msg); /* echo */
	}
	teardown();
	printf("server: echoed %d messages\n", ROUNDS);
	return 0;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void connect_to_server(void)
{
	VIP_VI_ATTRIBUTES remote_attrs;
	VIP_RETURN status;
	int tries = 0;

	/* VIP_NO_MATCH: the server is not waiting yet; try again. */
	do {
		status = VipConnectRequest(vi, local_addr, remote_addr, TIMEOUT,
					   &remote_attrs);
	} while (status == VIP_NO_MATCH && ++tries < CONNECT_RETRIES);
	CHECK(status);
}

static int run_client(const char *server, int disc)
{
	char host[256], msg[MSG_SIZE], expect[MSG_SIZE];
	double start;
	int i;

	role = "client";
	setup();
	if (gethostname(host, sizeof(host)) != 0)
		snprintf(host, sizeof(host), "localhost");
	local_addr = make_address(host, disc + 1);
	remote_addr = make_address(server, disc);
	connect_to_server();
	start = now_us();
	for (i = 0; i < ROUNDS; i++) {
		snprintf(expect, sizeof(expect), "ping %d", i);
		send_msg(expect);
		recv_msg(msg);
		if (strcmp(msg, expect) != 0) {
			fprintf(stderr, "client: got \"%.*s\", expected \"%s\"\n",
				MSG_SIZE, msg, expect);
			return 1;
		}
	}
	printf("client: %d round trips of %d bytes, %.2f us per round trip\n",
	       ROUNDS, MSG_SIZE, (now_us() - start) / ROUNDS);
	teardown();
	return 0;
}

/* No arguments: both sides, the client in a child process. */
static int run_both(void)
{
	int disc = (int)getpid(), status, rc;
	pid_t child;

	printf("viaduct %s, VIPL device %s\n", viaduct_version(), DEVICE);
	fflush(stdout);
	child = fork();
	if (child < 0) {
		perror("fork");
		return 1;
	}
	if (child == 0) {
		rc = run_client("localhost", disc);
		fflush(stdout);
		_exit(rc);
	}
	rc = run_server(disc);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		rc = 1;
	return rc;
}

int main(int argc, char **argv)
{
	if (argc == 1)
		return run_both();
	if (strcmp(argv[1], "server") == 0)
		return run_server(argc > 2 ? atoi(argv[2]) : DEFAULT_DISC);
	if (strcmp(argv[1], "client") == 0)
		return run_client(argc > 2 ? argv[2] : "localhost",
				  argc > 3 ? atoi(argv[3]) : DEFAULT_DISC);
	fprintf(stderr, "usage: %s [server [DISC] | client [HOST [DISC]]]\n",
		argv[0]);
	return 2;
}
