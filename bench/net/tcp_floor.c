// SPDX-License-Identifier: MIT
/*
 * tcp_floor -- what a plain TCP socket does between the same two hosts,
 * the floor the ofi provider is measured against (bench/vipl/hosts.sh):
 *   tcp_floor server PORT
 *   tcp_floor client HOST PORT
 * The client prints "latency BYTES NS" (half round trip, median of 5 runs
 * of 5000 ping-pongs, TCP_NODELAY, recv busy-polled with MSG_DONTWAIT on
 * both sides, as sockperf --nonblocked does: the floor for a busy-polled
 * VipRecvDone) and "bandwidth BYTES MBPS" (one-way stream of 256 MiB in
 * messages of BYTES, blocking calls).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAXMSG (4u << 20)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* rd: 1 blocking recv, 2 busy-polled recv; 0 send. */
static void full(int fd, void *p, size_t n, int rd)
{
	while (n) {
		ssize_t k = rd ? recv(fd, p, n, rd == 2 ? MSG_DONTWAIT : 0) :
			    send(fd, p, n, MSG_NOSIGNAL);
		if (k < 0 && rd == 2 && (errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		if (k <= 0)
			die(rd ? "recv" : "send");
		p = (char *)p + k;
		n -= (size_t)k;
	}
}

static void nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Server: echo ping-pongs; swallow streams.  Protocol: 8-byte header
 * (size, count, mode), then the traffic, then a 1-byte ack for streams. */
static int server(const char *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port)) };
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0), fd;
	uint32_t h[3];
	char *buf = malloc(MAXMSG);

	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1))
		die("bind");
	fd = accept(l, NULL, NULL);
	if (fd < 0)
		die("accept");
	nodelay(fd);
	for (;;) {
		if (recv(fd, h, sizeof(h), MSG_WAITALL) != sizeof(h))
			return 0;
		for (uint32_t i = 0; i < h[1]; i++) {
			full(fd, buf, h[0], h[2] == 0 ? 2 : 1);
			if (h[2] == 0)
				full(fd, buf, h[0], 0);
		}
		if (h[2] == 1)
			full(fd, buf, 1, 0);
	}
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int client(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res;
	static const uint32_t lat[] = { 0, 4, 40, 1024 }, bw[] = { 65536, 1u << 20, 4u << 20 };
	char *buf = calloc(1, MAXMSG);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (getaddrinfo(host, port, &hints, &res) || connect(fd, res->ai_addr, res->ai_addrlen))
		die("connect");
	nodelay(fd);
	for (unsigned s = 0; s < sizeof(lat) / sizeof(lat[0]); s++) {
		uint64_t runs[5];
		uint32_t n = lat[s] ? lat[s] : 1;      /* TCP has no empty message */

		for (int r = 0; r < 5; r++) {
			uint32_t h[3] = { n, 5000, 0 };
			uint64_t t0;

			full(fd, h, sizeof(h), 0);
			t0 = now_ns();
			for (int i = 0; i < 5000; i++) {
				full(fd, buf, n, 0);
				full(fd, buf, n, 2);
			}
			runs[r] = (now_ns() - t0) / 10000;
		}
		qsort(runs, 5, sizeof(runs[0]), cmp);
		printf("latency %u %llu\n", lat[s], (unsigned long long)runs[2]);
	}
	for (unsigned s = 0; s < sizeof(bw) / sizeof(bw[0]); s++) {
		uint32_t count = (256u << 20) / bw[s], h[3] = { bw[s], count, 1 };
		uint64_t t0 = now_ns();

		full(fd, h, sizeof(h), 0);
		for (uint32_t i = 0; i < count; i++)
			full(fd, buf, bw[s], 0);
		full(fd, buf, 1, 1);
		printf("bandwidth %u %.0f\n", bw[s], (256.0 * 1048576) / ((now_ns() - t0) / 1e9) / 1e6);
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "server"))
		return server(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3]);
	fprintf(stderr, "usage: tcp_floor server PORT | tcp_floor client HOST PORT\n");
	return 2;
}
