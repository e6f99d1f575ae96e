// SPDX-License-Identifier: MIT
/*
 * tcp_align -- how fast the kernel's TCP receive copy runs depending on
 * where the receive buffer starts within a 64-byte line (docs/bench-mpi.md,
 * "Receives that crawl").  Two processes on loopback, pinned to CPUs 0
 * and 1, ping-pong messages of BYTES with blocking calls; the sender's
 * buffer is page aligned, the receiver's starts DIST bytes past a page.
 *
 *   tcp_align [BYTES]     (default 1048576; at most 4 MiB)
 * Prints the median half round trip in us at each DIST of 0 8 16 24 32
 * 40 48 56.  Exit 1 when it cannot connect, fork or pin.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "benchlib.h"

#define MAX_BYTES (4u << 20)
#define TRIPS 60
#define RUNS 5

static const unsigned dists[] = { 0, 8, 16, 24, 32, 40, 48, 56 };
#define NDIST (sizeof(dists) / sizeof(dists[0]))

/* Move n bytes through fd (recv when rd, send otherwise); -1 on EOF or error. */
static int full(int fd, char *p, size_t n, int rd)
{
	while (n) {
		ssize_t k = rd ? recv(fd, p, n, 0) : send(fd, p, n, MSG_NOSIGNAL);

		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* One side's round trips: the starter sends first. */
static int trips(int fd, char *out, char *in, size_t bytes, int n, int starter)
{
	for (int i = 0; i < n; i++) {
		if (starter && full(fd, out, bytes, 0))
			return -1;
		if (full(fd, in, bytes, 1))
			return -1;
		if (!starter && full(fd, out, bytes, 0))
			return -1;
	}
	return 0;
}

/* A connected pair of TCP sockets on loopback, Nagle off on both. */
static int tcp_pair(int fds[2])
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0);

	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &len))
		return -1;
	fds[0] = socket(AF_INET, SOCK_STREAM, 0);
	if (fds[0] < 0 || connect(fds[0], (struct sockaddr *)&a, sizeof(a)))
		return -1;
	fds[1] = accept(l, NULL, NULL);
	close(l);
	if (fds[1] < 0)
		return -1;
	for (int i = 0; i < 2; i++)
		setsockopt(fds[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

/* The child echoes every round of every distance; both ends know the plan. */
static int echo_side(int fd, char *out, char *in, size_t bytes)
{
	for (unsigned d = 0; d < NDIST; d++)
		for (int r = -1; r < RUNS; r++)         /* run -1: the warm-up */
			if (trips(fd, out, in + dists[d], bytes, TRIPS, 0))
				return -1;
	return 0;
}

static int measure_side(int fd, char *out, char *in, size_t bytes)
{
	printf("tcp_align: %zu bytes over loopback, receive buffer DIST bytes past a page; "
	       "median half round trip (us) at DIST of", bytes);
	for (unsigned d = 0; d < NDIST; d++)
		printf(" %u", dists[d]);
	printf("\n ");
	for (unsigned d = 0; d < NDIST; d++) {
		struct samples half = { .n = 0 };

		for (int r = -1; r < RUNS; r++) {
			uint64_t t0 = now_ns();

			if (trips(fd, out, in + dists[d], bytes, TRIPS, 1))
				return -1;
			if (r >= 0)
				samples_add(&half, (double)(now_ns() - t0) / TRIPS / 2 / 1000);
		}
		printf(" %7.1f", samples_median(&half));
	}
	printf("\n");
	return 0;
}

/* Bytes from the send buffer's start to the receive buffer's: whole
 * pages, with room for the message. */
static size_t buffer_span(size_t bytes)
{
	return (bytes + 4095) / 4096 * 4096 + 4096;
}

/* Page-aligned send and receive buffers, the receive one with room for
 * the largest distance. */
static char *map_buffers(size_t bytes)
{
	size_t len = 2 * buffer_span(bytes);
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, 0x5a, len);                   /* fault every page in now */
	return p;
}

int main(int argc, char **argv)
{
	char *end = NULL;
	size_t bytes = argc > 1 ? strtoul(argv[1], &end, 0) : 1u << 20;
	int fds[2], status, rc;
	char *out, *in;
	pid_t pid;

	if (argc > 2 || (end && *end) || bytes == 0 || bytes > MAX_BYTES) {
		fprintf(stderr, "usage: tcp_align [BYTES]   (1 to %u)\n", MAX_BYTES);
		return 2;
	}
	if (!(out = map_buffers(bytes)) || tcp_pair(fds)) {
		perror("tcp_align");
		return 1;
	}
	in = out + buffer_span(bytes);
	if ((pid = fork()) < 0) {
		perror("tcp_align: fork");
		return 1;
	}
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);       /* never outlive the parent */
		close(fds[0]);
		_exit(pin_to_cpu(1) || echo_side(fds[1], out, in, bytes) ? 1 : 0);
	}
	close(fds[1]);
	rc = pin_to_cpu(0) ? -1 : measure_side(fds[0], out, in, bytes);
	if (rc)
		fprintf(stderr, "tcp_align: pinning to CPU 0 or the round trips failed\n");
	close(fds[0]);                          /* a child still echoing sees EOF */
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "tcp_align: the side on CPU 1 failed (could it be pinned there?)\n");
		return 1;
	}
	return rc ? 1 : 0;
}
