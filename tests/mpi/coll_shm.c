/* SPDX-License-Identifier: MIT */
/*
 * Node-local collectives (Barrier, Bcast, Reduce, Allreduce, Allgather)
 * run many times back to back with mixed sizes -- so the library's phase
 * counters and chunk buffers wrap many times -- on several communicators
 * at once (world, a dup, an even/odd split), with the in-place forms,
 * every predefined op on several types, Bcast and Allgather of
 * non-contiguous types and of matching signatures described by different
 * types, all checked against serial results; then the error classes of
 * bad arguments.
 *
 * argv[1] "kill": after a few rounds the last rank SIGKILLs itself while
 * the others are inside a large Allreduce; the job must end (the runner
 * checks how), not hang.
 */
#include "mpitest.h"

#include <stdbool.h>

enum { T_INT, T_LL, T_UNSIGNED, T_FLOAT, T_DOUBLE, T_CHAR, NTYPES };
static const MPI_Datatype types[NTYPES] = { MPI_INT, MPI_LONG_LONG, MPI_UNSIGNED, MPI_FLOAT,
					    MPI_DOUBLE, MPI_SIGNED_CHAR };
static const size_t tsizes[NTYPES] = { sizeof(int), sizeof(long long), sizeof(unsigned),
				       sizeof(float), sizeof(double), 1 };
static const MPI_Op ops[] = { MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_LAND, MPI_LOR,
			      MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR };
#define NOPS 10
#define NARITH 4        /* SUM PROD MIN MAX: the floating types' ops */

static void put(void *b, int t, size_t i, long long v)
{
	switch (t) {
	case T_INT: ((int *)b)[i] = (int)v; break;
	case T_LL: ((long long *)b)[i] = v; break;
	case T_UNSIGNED: ((unsigned *)b)[i] = (unsigned)v; break;
	case T_FLOAT: ((float *)b)[i] = (float)v; break;
	case T_DOUBLE: ((double *)b)[i] = (double)v; break;
	default: ((signed char *)b)[i] = (signed char)v; break;
	}
}

static long long get(const void *b, int t, size_t i)
{
	switch (t) {
	case T_INT: return ((const int *)b)[i];
	case T_LL: return ((const long long *)b)[i];
	case T_UNSIGNED: return ((const unsigned *)b)[i];
	case T_FLOAT: return (long long)((const float *)b)[i];
	case T_DOUBLE: return (long long)((const double *)b)[i];
	default: return ((const signed char *)b)[i];
	}
}

/* Small values so products of 7 ranks stay exact in every type (PROD
 * uses 1 or 2, the rest -3..3, unsigned 0..3). */
static long long value(int t, int op, int rank, size_t i, int round)
{
	long long v = (long long)((i * 7 + (size_t)rank * 5 + (size_t)round * 3) % 7) - 3;

	if (op == 1)
		return 1 + (long long)((i + (size_t)rank + (size_t)round) % 2);
	return t == T_UNSIGNED ? (v < 0 ? -v : v) : v;
}

static long long fold(int op, long long a, long long b)
{
	switch (op) {
	case 0: return a + b;
	case 1: return a * b;
	case 2: return a < b ? a : b;
	case 3: return a > b ? a : b;
	case 4: return a && b;
	case 5: return a || b;
	case 6: return !a != !b;
	case 7: return a & b;
	case 8: return a | b;
	default: return a ^ b;
	}
}

/* Folded in rank order, each step stored in the type (so a signed char
 * product wraps as it does in the library). */
static long long expect(int t, int op, int size, size_t i, int round)
{
	long long acc = value(t, op, 0, i, round);
	char cell[8];

	for (int r = 1; r < size; r++) {
		put(cell, t, 0, fold(op, acc, value(t, op, r, i, round)));
		acc = get(cell, t, 0);
	}
	return acc;
}

static int csize(MPI_Comm c)
{
	int n;

	MPI_Comm_size(c, &n);
	return n;
}

static int crank(MPI_Comm c)
{
	int r;

	MPI_Comm_rank(c, &r);
	return r;
}

/* One reduction (Allreduce, or Reduce to root) of n elements of type t
 * with op, optionally in place, checked. */
static void one_reduction(MPI_Comm c, int t, int op, size_t n, int root, bool inplace,
			  int round, char *in, char *out)
{
	int me = crank(c), size = csize(c);
	bool gets = root < 0 || me == root;

	for (size_t i = 0; i < n; i++) {
		put(in, t, i, value(t, op, me, i, round));
		put(out, t, i, 99);
	}
	if (inplace && gets)
		memcpy(out, in, n * tsizes[t]);
	const void *s = inplace && gets ? MPI_IN_PLACE : in;
	if (root < 0)
		MPI_OK(MPI_Allreduce(s, out, (int)n, types[t], ops[op], c));
	else
		MPI_OK(MPI_Reduce(s, out, (int)n, types[t], ops[op], root, c));
	for (size_t i = 0; gets && i < n; i++) {
		long long want = expect(t, op, size, i, round), got = get(out, t, i);

		if (!CHECK(got == want, "%s type %d op %d n %zu root %d: [%zu] = %lld, not %lld",
			   root < 0 ? "allreduce" : "reduce", t, op, n, root, i, got, want))
			break;
	}
	/* Nothing written where no result goes, nor into the input. */
	for (size_t i = 0; !gets && i < n; i++)
		if (!CHECK(get(out, t, i) == 99, "reduce root %d n %zu: rank %d's output [%zu] "
			   "written", root, n, me, i))
			break;
	for (size_t i = 0; !(inplace && gets) && i < n; i++)
		if (!CHECK(get(in, t, i) == value(t, op, me, i, round),
			   "%s n %zu: input [%zu] changed", root < 0 ? "allreduce" : "reduce", n, i))
			break;
}

static void bcast_check(MPI_Comm c, size_t n, int root, int round, unsigned char *buf)
{
	int me = crank(c);

	if (me == root)
		mt_fill(buf, n, root, round);
	else
		memset(buf, 0xee, n);
	MPI_OK(MPI_Bcast(buf, (int)n, MPI_BYTE, root, c));
	long bad = mt_verify(buf, n, root, round);
	CHECK(bad < 0, "bcast n %zu root %d round %d: byte %ld wrong", n, root, round, bad);
}

/* Allgather of k ints per member (in place every other round). */
static void allgather_check(MPI_Comm c, size_t k, int round, int *in, int *out)
{
	int me = crank(c), size = csize(c);

	for (size_t i = 0; i < k * (size_t)size; i++)
		out[i] = -1;
	for (size_t i = 0; i < k; i++)
		in[i] = (int)(i * 3) + me * 1000 + round;
	if (round % 2) {
		memcpy(out + (size_t)me * k, in, k * sizeof(int));
		MPI_OK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out, (int)k, MPI_INT, c));
	} else {
		MPI_OK(MPI_Allgather(in, (int)k, MPI_INT, out, (int)k, MPI_INT, c));
	}
	for (size_t i = 0; i < k * (size_t)size; i++) {
		int want = (int)(i % k * 3) + (int)(i / k) * 1000 + round;

		if (!CHECK(out[i] == want, "allgather k %zu round %d: [%zu] = %d, not %d", k, round,
			   i, out[i], want))
			break;
	}
}

static const size_t sizes[] = { 1, 3, 17, 250, 1024, 4097, 9000, 40000, 70001 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* Rounds of mixed collectives on c. */
static void mixed_rounds(MPI_Comm c, int rounds, char *in, char *out)
{
	int size = csize(c);

	for (int r = 0; r < rounds; r++) {
		size_t n = sizes[(size_t)r % NSIZES];
		int t = r % NTYPES, op = (r / NTYPES) % NOPS;

		if (t == T_FLOAT || t == T_DOUBLE)
			op %= NARITH;
		MPI_OK(MPI_Barrier(c));
		bcast_check(c, n * 8, r % size, r, (unsigned char *)out);
		one_reduction(c, t, op, n, -1, r % 3 == 0, r, in, out);
		one_reduction(c, t, op, n, (r * 7) % size, r % 2 == 0, r, in, out);
		allgather_check(c, n / 4 + 1, r, (int *)in, (int *)out);
	}
}

/* Every op on every type it is defined on, a small and a chunked size. */
static void all_ops(MPI_Comm c, char *in, char *out)
{
	mt_phase = "all ops";
	for (int t = 0; t < NTYPES; t++)
		for (int op = 0; op < NOPS; op++) {
			if ((t == T_FLOAT || t == T_DOUBLE) && op >= NARITH)
				continue;
			one_reduction(c, t, op, 5, -1, false, t + op, in, out);
			one_reduction(c, t, op, 33000, -1, op % 2, t + op, in, out);
			one_reduction(c, t, op, 33000, csize(c) - 1, op % 2, t + op, in, out);
		}
}

/* Allgather where member 0 receives into a strided type and the others
 * into contiguous ints (the same signature). */
static void allgather_types(MPI_Comm c)
{
	MPI_Datatype strided, vec;
	int me = crank(c), size = csize(c), k = 5000;
	int *buf = malloc(sizeof(int) * 2 * (size_t)k * (size_t)size), mine[5000];

	mt_phase = "allgather types";
	MPI_OK(MPI_Type_vector(k, 1, 2, MPI_INT, &strided));
	MPI_OK(MPI_Type_create_resized(strided, 0, (MPI_Aint)(2 * k * sizeof(int)), &vec));
	MPI_Type_free(&strided);
	MPI_OK(MPI_Type_commit(&vec));
	for (int i = 0; i < k; i++)
		mine[i] = me * k + i;
	for (int i = 0; i < 2 * k * size; i++)
		buf[i] = -1;
	if (me == 0)
		MPI_OK(MPI_Allgather(mine, k, MPI_INT, buf, 1, vec, c));
	else
		MPI_OK(MPI_Allgather(mine, k, MPI_INT, buf, k, MPI_INT, c));
	for (int i = 0; i < (me == 0 ? 2 * k * size : k * size); i++) {
		int want = me != 0 ? i : i % 2 ? -1 : i / 2;

		if (!CHECK(buf[i] == want, "[%d] = %d, not %d", i, buf[i], want))
			break;
	}
	MPI_Type_free(&vec);
	free(buf);
}

/* Root sends 3 strided vectors, the others receive contiguous ints (the
 * same signature); then everyone uses the vector type. */
static void bcast_types(MPI_Comm c)
{
	MPI_Datatype vec;
	int buf[3 * 2 * 4000], me = crank(c), n = 3 * 4000;

	mt_phase = "bcast types";
	MPI_OK(MPI_Type_vector(4000, 1, 2, MPI_INT, &vec));
	MPI_OK(MPI_Type_commit(&vec));
	for (int i = 0; i < 2 * n; i++)
		buf[i] = me == 0 ? i : -1;
	if (me == 0)
		MPI_OK(MPI_Bcast(buf, 3, vec, 0, c));
	else
		MPI_OK(MPI_Bcast(buf, n, MPI_INT, 0, c));
	for (int i = 0; me && i < n; i++)
		if (!CHECK(buf[i] == 2 * (i % 4000) + (i / 4000) * 7999, "contig [%d] = %d", i,
			   buf[i]))
			break;
	for (int i = 0; i < 2 * n; i++)
		buf[i] = me == 0 ? i : -1;
	MPI_OK(MPI_Bcast(buf, 3, vec, 0, c));
	for (int i = 0; i < 2 * n; i++) {
		bool in_vec = i < 3 * 7999 && (i % 7999) % 2 == 0;   /* extent 7999 ints */

		if (!CHECK(buf[i] == (in_vec || me == 0 ? i : -1), "vector [%d] = %d", i, buf[i]))
			break;
	}
	MPI_Type_free(&vec);
}

/* On a node's communicator (its segment), sums of doubles combine in
 * rank order, x0 + (x1 + (... + xn-1)), on every member, whether the
 * blocks go through slots or are read directly: with 1, 1e16 and -1e16
 * that is 1, left to right it would be 0.  Small and direct-sized vectors.  (Point
 * to point, the tree decides the order: MPI allows either for a
 * commutative op.) */
static void fold_order(MPI_Comm c, double *in, double *out)
{
	static const int lens[] = { 3, 300, 9000 };
	int me = crank(c);

	const char *seg = getenv("VIADUCT_MPI_COLL_SHM");

	if (csize(c) < 3 || (seg && !strcmp(seg, "0")))
		return;
	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		int n = lens[k];

		for (int i = 0; i < n; i++)
			in[i] = me == 0 ? 1.0 : me == 1 ? 1e16 : me == 2 ? -1e16 : 0.0;
		MPI_OK(MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, c));
		for (int i = 0; i < n; i++)
			if (!CHECK(out[i] == 1.0, "allreduce n %d: [%d] = %g, not 1", n, i, out[i]))
				break;
		MPI_OK(MPI_Reduce(in, out, n, MPI_DOUBLE, MPI_SUM, 1, c));
		for (int i = 0; me == 1 && i < n; i++)
			if (!CHECK(out[i] == 1.0, "reduce n %d: [%d] = %g, not 1", n, i, out[i]))
				break;
	}
}

static void errors(void)
{
	int x = 0, y, cls;

	mt_phase = "errors";
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Error_class(MPI_Bcast(&x, 1, MPI_INT, mt_size, MPI_COMM_WORLD), &cls);
	CHECK(cls == MPI_ERR_ROOT, "bcast bad root: class %d", cls);
	MPI_Error_class(MPI_Allreduce(&x, &y, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), &cls);
	CHECK(cls == MPI_ERR_COUNT, "allreduce count -1: class %d", cls);
	MPI_Error_class(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD), &cls);
	CHECK(cls == MPI_ERR_OP, "allreduce MPI_OP_NULL: class %d", cls);
	MPI_Error_class(MPI_Reduce(&x, &y, 1, MPI_DOUBLE, MPI_BAND, 0, MPI_COMM_WORLD), &cls);
	CHECK(cls == MPI_ERR_OP, "reduce BAND on double: class %d", cls);
	MPI_Error_class(MPI_Barrier(MPI_COMM_NULL), &cls);
	CHECK(cls == MPI_ERR_COMM, "barrier COMM_NULL: class %d", cls);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));   /* still usable */
}

static void killed_member(char *in, char *out)
{
	int n = 150000;         /* ints: several chunks, within the buffers */

	for (int r = 0;; r++) {
		if (r == 20 && mt_rank == mt_size - 1) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			printf("FAILTIME %ld.%09ld\n", (long)ts.tv_sec, ts.tv_nsec);
			fflush(stdout);
			raise(SIGKILL);
		}
		MPI_Allreduce(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "run";
	char *in = malloc(8 * 80000), *out = malloc(8 * 80000);
	MPI_Comm dup, half;

	mt_init(&argc, &argv, 100);
	if (!in || !out)
		MPI_Abort(MPI_COMM_WORLD, 2);
	memset(in, 0, 8 * 80000);
	if (!strcmp(mode, "kill"))
		killed_member(in, out);
	MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
	MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, mt_rank % 2, mt_size - mt_rank, &half));
	mt_phase = "fold order";
	MPI_Comm node;
	MPI_OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
	fold_order(node, (double *)in, (double *)out);
	MPI_OK(MPI_Comm_free(&node));
	mt_phase = "world";
	mixed_rounds(MPI_COMM_WORLD, 60, in, out);
	mt_phase = "interleaved";
	for (int r = 0; r < 30; r++) {
		MPI_Comm c = r % 3 == 0 ? MPI_COMM_WORLD : r % 3 == 1 ? dup : half;

		mixed_rounds(c, 1 + r % 4, in, out);
	}
	all_ops(dup, in, out);
	all_ops(half, in, out);
	bcast_types(half);
	bcast_types(MPI_COMM_WORLD);
	allgather_types(half);
	allgather_types(MPI_COMM_WORLD);
	errors();
	MPI_Comm_free(&half);
	MPI_Comm_free(&dup);
	free(in);
	free(out);
	return mt_finish("coll_shm");
}
