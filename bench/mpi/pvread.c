/* SPDX-License-Identifier: MIT */
/*
 * mpi_pvread -- the MPICH-PM/CLUMP paper's figure 5 on this machine: the bandwidth of the
 * one-copy primitive against memcpy.  The paper's primitive is
 * _pmVmRead (an ioctl on /dev/pmvm, ~5 us per call); today's is
 * process_vm_readv(2), what viaduct's get protocol uses.
 *
 * The program forks.  The child (pinned to the second CPU it may run on)
 * maps and fills a buffer, tells the parent its address through a pipe,
 * and waits.  The parent (pinned to the first CPU) reads size bytes from
 * that buffer into its own with process_vm_readv, again and again, and
 * does the same number of memcpy calls between two of its own buffers.
 * Sizes 8 B .. 16 MiB; each point is the median of --runs runs of about
 * --time seconds; MB/s = 10^6 bytes/s; us per call is printed as well.
 * The first read of every size is checked against the child's pattern.
 *
 * A last column is what a both-ways exchange (mpi_bibw) can reach here:
 * the child and the parent each read size bytes from the other's buffer
 * the same number of times, started together; MB/s counts both
 * directions over the slower side's time.
 *
 * Not an MPI program: plain C, `cc -O2 pvread.c -o mpi_pvread`.
 * Usage: mpi_pvread [--csv FILE] [--quick] [--max-size B] [--time S] [--runs N]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* process_vm_readv, sched_setaffinity */
#endif
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_RUNS 31
#define MB 1e6

struct opts {
	const char *csv_path;
	bool quick;
	size_t max_size;
	double run_time;
	int runs;
};

struct peer {
	pid_t pid;
	uintptr_t addr;         /* the child's buffer */
	int hold_fd;            /* commands to the child; closing it ends it */
	int res_fd;             /* the child's answers */
};

/* What the child reads from the parent in a both-ways run. */
struct both_cmd {
	uintptr_t from;         /* the parent's buffer */
	size_t size;
	long reps;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static unsigned char pat(size_t i)
{
	return (unsigned char)((i * 2654435761u) >> 11);
}

static void *map_touched(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mpi_pvread: mmap");
		exit(1);
	}
	memset(p, 1, len);
	return p;
}

/* The n-th CPU this process may run on, or -1. */
static int nth_cpu(int n)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return -1;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set) && n-- == 0)
			return c;
	return -1;
}

static int pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return cpu < 0 ? -1 : sched_setaffinity(0, sizeof(set), &set);
}

/* reps reads of size bytes at `from` in process pid; seconds, or -1. */
static double read_loop(pid_t pid, uintptr_t from, void *dst, size_t size, long reps)
{
	struct iovec local = { dst, size };
	struct iovec remote = { (void *)from, size };
	double t0 = now();
	for (long i = 0; i < reps; i++)
		if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t)size)
			return -1;
	return now() - t0;
}

/* Child: fill, publish the address, then answer each both-ways command
 * with the seconds its own reads from the parent took, until the parent
 * closes. */
static void child_main(size_t len, int cpu, int addr_fd, int hold_fd)
{
	pin(cpu);
	unsigned char *buf = map_touched(len), *dst = map_touched(len);
	for (size_t i = 0; i < len; i++)
		buf[i] = pat(i);
	uintptr_t a = (uintptr_t)buf;
	if (write(addr_fd, &a, sizeof(a)) != sizeof(a))
		_exit(1);
	struct both_cmd c;
	while (read(hold_fd, &c, sizeof(c)) == sizeof(c)) {
		double t = c.size <= len ? read_loop(getppid(), c.from, dst, c.size, c.reps) : -1;
		if (write(addr_fd, &t, sizeof(t)) != sizeof(t))
			_exit(1);
	}
	_exit(0);
}

static int start_child(struct peer *p, size_t len, int cpu)
{
	int addr[2], hold[2];
	if (pipe(addr) != 0 || pipe(hold) != 0)
		return -1;
	p->pid = fork();
	if (p->pid < 0)
		return -1;
	if (p->pid == 0) {
		close(addr[0]);
		close(hold[1]);
		child_main(len, cpu, addr[1], hold[0]);
	}
	close(addr[1]);
	close(hold[0]);
	p->hold_fd = hold[1];
	p->res_fd = addr[0];
	ssize_t n = read(addr[0], &p->addr, sizeof(p->addr));
	return n == sizeof(p->addr) ? 0 : -1;
}

static int remote_read(const struct peer *p, void *dst, size_t size)
{
	struct iovec local = { dst, size };
	struct iovec remote = { (void *)p->addr, size };
	ssize_t n = process_vm_readv(p->pid, &local, 1, &remote, 1, 0);
	return n == (ssize_t)size ? 0 : -1;
}

/* reps process_vm_readv calls of size bytes; seconds, or -1. */
static double time_pvread(const struct peer *p, void *dst, size_t size, long reps)
{
	return read_loop(p->pid, p->addr, dst, size, reps);
}

/* The child reads src from us while we read its buffer into dst, reps
 * times each; the slower side's seconds, or -1. */
static double time_both(const struct peer *p, void *dst, const void *src, size_t size,
			long reps)
{
	struct both_cmd c = { (uintptr_t)src, size, reps };
	double mine, theirs;
	if (write(p->hold_fd, &c, sizeof(c)) != sizeof(c))
		return -1;
	mine = time_pvread(p, dst, size, reps);
	if (read(p->res_fd, &theirs, sizeof(theirs)) != sizeof(theirs) || mine < 0 || theirs < 0)
		return -1;
	return mine > theirs ? mine : theirs;
}

/* A volatile pointer: the compiler can neither drop nor merge the copies. */
static void *(*volatile copy_fn)(void *, const void *, size_t) = memcpy;

static double time_memcpy(void *dst, const void *src, size_t size, long reps)
{
	double t0 = now();
	for (long i = 0; i < reps; i++)
		copy_fn(dst, src, size);
	return now() - t0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [--csv FILE] [--quick] [--max-size BYTES] [--time SEC] "
		"[--runs N]\n", prog);
	exit(2);
}

static struct opts parse(int argc, char **argv)
{
	struct opts o = { NULL, false, 16u << 20, 0.02, 5 };
	bool time_set = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--quick") == 0) {
			o.quick = true;
			continue;
		}
		if (!v)
			usage(argv[0]);
		i++;
		if (strcmp(a, "--csv") == 0)
			o.csv_path = v;
		else if (strcmp(a, "--max-size") == 0 && atol(v) >= 8)
			o.max_size = (size_t)atol(v);
		else if (strcmp(a, "--time") == 0 && atof(v) > 0)
			o.run_time = atof(v), time_set = true;
		else if (strcmp(a, "--runs") == 0 && atoi(v) > 0 && atoi(v) <= MAX_RUNS)
			o.runs = atoi(v);
		else
			usage(argv[0]);
	}
	if (o.quick && !time_set)
		o.run_time /= 4;
	if (o.quick && o.runs > 3)
		o.runs = 3;
	return o;
}

struct point {
	double pv_mbs, pv_us, mc_mbs, mc_us, both_mbs;
};

/* Calls per run: one untimed-but-measured call estimates the cost. */
static long reps_for(double secs_per_call, double run_time)
{
	double r = secs_per_call > 0 ? run_time / secs_per_call : 1e6;
	return r < 4 ? 4 : r > 1e7 ? 10000000 : (long)r;
}

static int measure(const struct opts *o, const struct peer *p, unsigned char *dst,
		   const unsigned char *src, size_t size, struct point *pt)
{
	double pv[MAX_RUNS], mc[MAX_RUNS], both[MAX_RUNS];
	memset(dst, 0, size);
	if (remote_read(p, dst, size) != 0)
		return -1;
	for (size_t i = 0; i < size; i += 1 + size / 97)
		if (dst[i] != pat(i) || dst[size - 1] != pat(size - 1))
			return -2;
	long reps = reps_for(time_pvread(p, dst, size, 16) / 16, o->run_time);
	for (int r = 0; r < o->runs; r++) {
		pv[r] = time_pvread(p, dst, size, reps) / (double)reps;
		mc[r] = time_memcpy(dst, src, size, reps) / (double)reps;
		both[r] = time_both(p, dst, src, size, reps) / (double)reps;
		if (pv[r] < 0 || both[r] < 0)
			return -1;
	}
	double tpv = median(pv, o->runs), tmc = median(mc, o->runs);
	double tboth = median(both, o->runs);
	*pt = (struct point){ (double)size / tpv / MB, tpv * 1e6, (double)size / tmc / MB,
			      tmc * 1e6, 2.0 * (double)size / tboth / MB };
	return 0;
}

static void emit(FILE *csv, size_t size, const struct point *pt)
{
	printf("%10zu %14.1f %10.3f %14.1f %10.3f %8.2f %14.1f\n", size, pt->pv_mbs, pt->pv_us,
	       pt->mc_mbs, pt->mc_us, pt->pv_mbs / pt->mc_mbs, pt->both_mbs);
	fflush(stdout);
	if (!csv)
		return;
	fprintf(csv, "pvread,process_vm_readv,%zu,mb_per_s,%.9g\n", size, pt->pv_mbs);
	fprintf(csv, "pvread,process_vm_readv,%zu,usec_per_call,%.9g\n", size, pt->pv_us);
	fprintf(csv, "pvread,memcpy,%zu,mb_per_s,%.9g\n", size, pt->mc_mbs);
	fprintf(csv, "pvread,memcpy,%zu,usec_per_call,%.9g\n", size, pt->mc_us);
	fprintf(csv, "pvread,process_vm_readv_both_ways,%zu,mb_per_s,%.9g\n", size, pt->both_mbs);
}

static FILE *open_csv(const char *path)
{
	if (!path)
		return NULL;
	FILE *f = fopen(path, "a");
	if (!f) {
		fprintf(stderr, "mpi_pvread: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	if (ftell(f) == 0)
		fputs("section,case,x,metric,value\n", f);
	return f;
}

int main(int argc, char **argv)
{
	struct opts o = parse(argc, argv);
	int cpu0 = nth_cpu(0), cpu1 = nth_cpu(1) >= 0 ? nth_cpu(1) : cpu0;
	struct peer p;
	if (start_child(&p, o.max_size, cpu1) != 0) {
		perror("mpi_pvread: starting the child");
		return 1;
	}
	pin(cpu0);
	FILE *csv = open_csv(o.csv_path);
	unsigned char *dst = map_touched(o.max_size), *src = map_touched(o.max_size);
	struct utsname u;
	uname(&u);
	printf("# figure 5: one-copy primitive (process_vm_readv from another process) vs "
	       "memcpy\n# reader on cpu %d, owner on cpu %d; %s %s; %d runs per size, "
	       "about %.3f s each\n", cpu0, cpu1, u.sysname, u.release, o.runs, o.run_time);
	printf("%10s %14s %10s %14s %10s %8s %14s\n", "bytes", "pvreadv MB/s", "us/call",
	       "memcpy MB/s", "us/call", "ratio", "both ways MB/s");
	int rc = 0;
	for (size_t s = 8; s <= o.max_size && rc == 0; s *= o.quick ? 4 : 2) {
		struct point pt;
		rc = measure(&o, &p, dst, src, s, &pt);
		if (rc == -1)
			fprintf(stderr, "mpi_pvread: process_vm_readv(%zu bytes): %s\n", s,
				strerror(errno));
		else if (rc == -2)
			fprintf(stderr, "mpi_pvread: wrong data read at %zu bytes\n", s);
		else
			emit(csv, s, &pt);
	}
	close(p.hold_fd);
	close(p.res_fd);
	waitpid(p.pid, NULL, 0);
	if (csv)
		fclose(csv);
	return rc == 0 ? 0 : 1;
}
