/* SPDX-License-Identifier: MIT */
/*
 * mpi_coll -- the latency of one collective against message size, measured
 * as OSU's collective benchmarks do, any number of ranks:
 *
 *   mpi_coll --op NAME [common options]
 *
 * NAME and what "size" means (bytes):
 *   barrier               one row, size 0
 *   bcast                 MPI_BYTE from rank 0, size bytes
 *   reduce, allreduce     MPI_SUM of size/4 MPI_FLOATs (to rank 0 / to all)
 *   allgather             MPI_BYTE, size bytes contributed by each rank
 *                         (each receives ranks x size)
 *   alltoall              MPI_BYTE, size bytes from each rank to each rank
 *                         (each sends and receives ranks x size)
 *   reduce_scatter_block  MPI_SUM of floats, size bytes received by each
 *                         rank (each contributes ranks x size)
 *
 * Per size: one call whose result is checked against a serial computation
 * (every rank that receives something checks it), a calibrating warm-up,
 * then --runs timed runs.  A run makes n calls, each timed on its own and
 * followed by an untimed MPI_Barrier, so that no call overlaps the next
 * (a root running ahead of its receivers would otherwise look fast); its
 * figure is the slowest rank's mean time per call (MPI_Allreduce/MPI_MAX
 * after the loop); --time is the wall time of a run, barriers included.
 * The table shows the median and the minimum over runs.
 *
 * Built with -DCOLL_OP=NAME, --op defaults to NAME (bench/mpi/run.sh keeps
 * its mpi_allreduce that way).  Plain MPI: builds with vdcc, mpicc.openmpi,
 * mpicc.mpich.
 */
#include "common.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define MIN_ITERS 5
#define MAX_ITERS 1000000

struct coll;

struct coll_op {
	const char *name;
	const char *title;
	bool floats;            /* size counts MPI_FLOATs (4 bytes each) */
	bool no_size;           /* barrier: one row at size 0 */
	void (*call)(const struct coll *c, size_t size);
	/* Fill the inputs, make one call, abort the job if a result is wrong. */
	void (*checked_call)(const struct coll *c, size_t size);
};

struct coll {
	struct bench_ctx *b;
	const struct coll_op *op;
	void *in, *out;         /* max_size x ranks bytes each */
	double wall;            /* seconds the last run took, barriers included */
};

static int count_of(const struct coll *c, size_t size)
{
	return (int)(c->op->floats ? size / sizeof(float) : size);
}

/* ------------------------------------------------------------------ */
/* The calls                                                           */

static void call_barrier(const struct coll *c, size_t size)
{
	(void)c;
	(void)size;
	MPI_Barrier(MPI_COMM_WORLD);
}

static void call_bcast(const struct coll *c, size_t size)
{
	MPI_Bcast(c->out, count_of(c, size), MPI_BYTE, 0, MPI_COMM_WORLD);
}

static void call_reduce(const struct coll *c, size_t size)
{
	MPI_Reduce(c->in, c->out, count_of(c, size), MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
}

static void call_allreduce(const struct coll *c, size_t size)
{
	MPI_Allreduce(c->in, c->out, count_of(c, size), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

static void call_allgather(const struct coll *c, size_t size)
{
	int k = count_of(c, size);
	MPI_Allgather(c->in, k, MPI_BYTE, c->out, k, MPI_BYTE, MPI_COMM_WORLD);
}

static void call_alltoall(const struct coll *c, size_t size)
{
	int k = count_of(c, size);
	MPI_Alltoall(c->in, k, MPI_BYTE, c->out, k, MPI_BYTE, MPI_COMM_WORLD);
}

static void call_reduce_scatter_block(const struct coll *c, size_t size)
{
	MPI_Reduce_scatter_block(c->in, c->out, count_of(c, size), MPI_FLOAT, MPI_SUM,
				 MPI_COMM_WORLD);
}

/* ------------------------------------------------------------------ */
/* The checked first calls                                             */

static void checked_barrier(const struct coll *c, size_t size)
{
	call_barrier(c, size);
}

static void check_bytes(const struct coll *c, const unsigned char *p, size_t size, unsigned salt)
{
	size_t bad = pattern_check(p, size, salt);
	if (bad)
		pattern_fail(c->b, size, bad);
}

static void checked_bcast(const struct coll *c, size_t size)
{
	if (c->b->rank == 0)
		pattern_fill(c->out, size, 7);
	else
		memset(c->out, 0, size);
	call_bcast(c, size);
	check_bytes(c, c->out, size, 7);
}

/* Block of rank `from` to rank `to` in allgather (to ignored) and alltoall. */
static unsigned block_salt(const struct coll *c, int from, int to)
{
	return (unsigned)(from * c->b->size + to + 1);
}

static void checked_allgather(const struct coll *c, size_t size)
{
	const struct bench_ctx *b = c->b;
	unsigned char *out = c->out;
	pattern_fill(c->in, size, block_salt(c, b->rank, 0));
	memset(out, 0, size * (size_t)b->size);
	call_allgather(c, size);
	for (int r = 0; r < b->size; r++)
		check_bytes(c, out + (size_t)r * size, size, block_salt(c, r, 0));
}

static void checked_alltoall(const struct coll *c, size_t size)
{
	const struct bench_ctx *b = c->b;
	unsigned char *in = c->in, *out = c->out;
	for (int r = 0; r < b->size; r++)
		pattern_fill(in + (size_t)r * size, size, block_salt(c, b->rank, r));
	memset(out, 0, size * (size_t)b->size);
	call_alltoall(c, size);
	for (int r = 0; r < b->size; r++)
		check_bytes(c, out + (size_t)r * size, size, block_salt(c, r, b->rank));
}

/* in[i] = rank + 1 + i % 7 on every rank, so the sum at i is
 * ranks (ranks + 1) / 2 + ranks (i % 7): small integers, exact in float. */
static void fill_summands(const struct coll *c, size_t n)
{
	float *in = c->in, *out = c->out;
	for (size_t i = 0; i < n; i++) {
		in[i] = (float)(c->b->rank + 1 + (int)(i % 7));
		out[i] = -1.0f;
	}
}

/* out[0 .. n) holds the sums of elements first .. first + n. */
static void check_sums(const struct coll *c, size_t first, size_t n)
{
	const struct bench_ctx *b = c->b;
	const float *out = c->out;
	for (size_t i = 0; i < n; i++) {
		float want = (float)(b->size * (b->size + 1) / 2 + b->size * (int)((first + i) % 7));
		if (out[i] != want) {
			fprintf(stderr, "mpi_coll %s (%s): rank %d: element %zu of %zu is %g, "
				"not %g\n", c->op->name, b->o.label, b->rank, i, n,
				(double)out[i], (double)want);
			MPI_Abort(MPI_COMM_WORLD, 4);
		}
	}
}

static void checked_reduce(const struct coll *c, size_t size)
{
	size_t n = size / sizeof(float);
	fill_summands(c, n);
	call_reduce(c, size);
	if (c->b->rank == 0)
		check_sums(c, 0, n);
}

static void checked_allreduce(const struct coll *c, size_t size)
{
	size_t n = size / sizeof(float);
	fill_summands(c, n);
	call_allreduce(c, size);
	check_sums(c, 0, n);
}

static void checked_reduce_scatter_block(const struct coll *c, size_t size)
{
	size_t n = size / sizeof(float);
	fill_summands(c, n * (size_t)c->b->size);
	call_reduce_scatter_block(c, size);
	check_sums(c, n * (size_t)c->b->rank, n);
}

static const struct coll_op OPS[] = {
	{ "barrier", "MPI_Barrier latency (us per call)", false, true,
	  call_barrier, checked_barrier },
	{ "bcast", "MPI_Bcast latency (MPI_BYTE from rank 0, us per call)", false, false,
	  call_bcast, checked_bcast },
	{ "reduce", "MPI_Reduce latency (MPI_SUM, MPI_FLOAT, to rank 0, us per call)", true,
	  false, call_reduce, checked_reduce },
	{ "allreduce", "MPI_Allreduce latency (MPI_SUM, MPI_FLOAT, us per call)", true, false,
	  call_allreduce, checked_allreduce },
	{ "allgather", "MPI_Allgather latency (MPI_BYTE, size = each rank's block, us per call)",
	  false, false, call_allgather, checked_allgather },
	{ "alltoall", "MPI_Alltoall latency (MPI_BYTE, size = one rank's block to one rank, "
	  "us per call)", false, false, call_alltoall, checked_alltoall },
	{ "reduce_scatter_block", "MPI_Reduce_scatter_block latency (MPI_SUM, MPI_FLOAT, "
	  "size = each rank's result block, us per call)", true, false,
	  call_reduce_scatter_block, checked_reduce_scatter_block },
};

/* ------------------------------------------------------------------ */
/* The one timing loop                                                 */

static double coll_run(void *arg, size_t size, long n)
{
	struct coll *c = arg;
	/* A barrier's call is its own separator. */
	bool separate = !c->op->no_size;
	double t = 0, slowest;

	MPI_Barrier(MPI_COMM_WORLD);
	double start = MPI_Wtime();
	for (long i = 0; i < n; i++) {
		double t0 = MPI_Wtime();
		c->op->call(c, size);
		t += MPI_Wtime() - t0;
		if (separate)
			MPI_Barrier(MPI_COMM_WORLD);
	}
	c->wall = MPI_Wtime() - start;
	slowest = t;
	MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	return slowest;
}

static double coll_wall(void *arg)
{
	return ((const struct coll *)arg)->wall;
}

/* Warm-up calls: up to 100 (10 from 64 KiB), but no more than a quarter
 * of --time by one call's cost with its barrier, so that a library taking
 * milliseconds a call (ranks outnumbering CPUs) does not spend seconds
 * warming up.  Rank 0 decides (calibrate()), so every rank agrees. */
static long warm_calls(struct coll *c, size_t size)
{
	long most = size >= 65536 ? 10 : 100;
	coll_run(c, size, 1);
	double one = c->wall > 0 ? c->wall : 1e-9;
	return calibrate(c->b, one * 4, 1, 1, most);
}

static void measure(void *arg, size_t size)
{
	struct coll *c = arg;
	double us[MAX_RUNS];

	c->op->checked_call(c, size);
	/* Microseconds per call. */
	const struct timing t = { coll_run, arg, warm_calls(c, size),
				  MIN_ITERS, MAX_ITERS, 1e6, false, coll_wall };
	long n = timed_runs(c->b, size, &t, us);
	report_runs(c->b, size, us, n, 3, false, "usec", "usec_min");
	end_row(c->b);
}

/* ------------------------------------------------------------------ */
/* Command line                                                        */

#define STR_(x) #x
#define STR(x) STR_(x)

static const struct coll_op *find_op(const char *name)
{
	for (size_t i = 0; name && i < sizeof(OPS) / sizeof(OPS[0]); i++)
		if (strcmp(OPS[i].name, name) == 0)
			return &OPS[i];
	return NULL;
}

/* Takes "--op NAME" out of argv (the rest is common_init's); NULL when
 * it is missing or names no collective. */
static const struct coll_op *take_op(int *argc, char **argv)
{
#ifdef COLL_OP
	const char *name = STR(COLL_OP);
#else
	const char *name = NULL;
#endif
	int j = 1;
	for (int i = 1; i < *argc; i++) {
		if (strcmp(argv[i], "--op") == 0 && i + 1 < *argc)
			name = argv[++i];
		else if (strcmp(argv[i], "--op") == 0)
			name = NULL;
		else
			argv[j++] = argv[i];
	}
	*argc = j;
	argv[j] = NULL;
	return find_op(name);
}

static void bad_op(const char *prog)
{
	int rank = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (rank == 0) {
		fprintf(stderr, "usage: %s --op NAME [options, --help]\n  NAME:", prog);
		for (size_t i = 0; i < sizeof(OPS) / sizeof(OPS[0]); i++)
			fprintf(stderr, " %s", OPS[i].name);
		fputc('\n', stderr);
	}
	MPI_Finalize();
	exit(2);
}

int main(int argc, char **argv)
{
	struct bench_ctx b;
	struct bench_opts defaults = {
		.min_size = 4, .max_size = 1u << 20, .run_time = 0.05, .runs = 5,
	};
	MPI_Init(&argc, &argv);
	const struct coll_op *op = take_op(&argc, argv);
	if (!op)
		bad_op(argv[0]);
	if (op->no_size)
		defaults.min_size = defaults.max_size = 0;
	common_init(&b, op->name, argc, argv, &defaults);
	if (op->no_size)
		b.o.min_size = b.o.max_size = 0;
	if (b.o.max_size > INT_MAX) {
		if (b.rank == 0)
			fprintf(stderr, "%s: --max-size above %d (an int count)\n", argv[0], INT_MAX);
		MPI_Finalize();
		exit(2);
	}
	if (op->floats && (b.o.min_size < sizeof(float) || b.o.min_size % sizeof(float))) {
		if (b.rank == 0)
			fprintf(stderr, "%s --op %s: --min-size must be a multiple of %zu (floats)\n",
				argv[0], op->name, sizeof(float));
		MPI_Finalize();
		exit(2);
	}
	print_header(&b, op->title);
	size_t bytes = b.o.max_size * (size_t)b.size;
	struct coll c = { &b, op, bench_alloc(&b, bytes), bench_alloc(&b, bytes), 0 };
	if (b.rank == 0)
		printf("%10s %12s %12s %10s\n", "bytes", "median us", "min us", "calls");
	for_each_size(&b, measure, &c);
	common_finish(&b);
	MPI_Finalize();
	return 0;
}
