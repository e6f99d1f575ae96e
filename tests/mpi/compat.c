/* SPDX-License-Identifier: MIT */
/*
 * MPI_Reduce_local (predefined and non-commutative user ops, argument
 * errors), MPI_Op_commutative, MPI_Pcontrol, and the MPI-1 names MPI-3.0
 * removed but old programs call: attributes through MPI_Keyval_create /
 * MPI_Attr_put / MPI_Attr_get / MPI_Attr_delete (with MPI_DUP_FN across a
 * dup), MPI_Errhandler_create/set/get, MPI_Address, MPI_Type_extent /
 * _lb / _ub, MPI_Type_hvector / _hindexed / _struct against their
 * MPI_Type_create_ forms.
 */
#include "mpitest.h"

/* (a, b) o (c, d) = (a c, b c + d): associative, not commutative. */
static void compose(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	const double *x = in;
	double *y = inout;

	(void)dt;
	for (int i = 0; i < *len; i++) {
		y[2 * i + 1] = x[2 * i + 1] * y[2 * i] + y[2 * i + 1];
		y[2 * i] *= x[2 * i];
	}
}

static void test_reduce_local(void)
{
	int a[4] = { 1, 2, 3, 4 }, b[4] = { 10, 20, 30, 40 }, commute = -1;
	double f[2] = { 2, 3 }, g[2] = { 5, 7 };
	MPI_Datatype pair;
	MPI_Op op;

	mt_phase = "reduce_local";
	MPI_OK(MPI_Reduce_local(a, b, 4, MPI_INT, MPI_SUM));
	CHECK(b[0] == 11 && b[3] == 44, "sum: %d %d", b[0], b[3]);
	MPI_OK(MPI_Reduce_local(a, b, 4, MPI_INT, MPI_MIN));
	CHECK(b[1] == 2, "min: %d", b[1]);
	MPI_OK(MPI_Type_contiguous(2, MPI_DOUBLE, &pair));
	MPI_OK(MPI_Type_commit(&pair));
	MPI_OK(MPI_Op_create(compose, 0, &op));
	MPI_OK(MPI_Reduce_local(f, g, 1, pair, op));        /* g = f o g */
	CHECK(g[0] == 10 && g[1] == 22, "user op: (%g, %g), want (10, 22)", g[0], g[1]);
	MPI_OK(MPI_Op_commutative(op, &commute));
	CHECK(commute == 0, "user op commutative: %d", commute);
	MPI_OK(MPI_Op_commutative(MPI_SUM, &commute));
	CHECK(commute == 1, "MPI_SUM commutative: %d", commute);

	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	CHECK(MPI_Reduce_local(a, b, -1, MPI_INT, MPI_SUM) == MPI_ERR_COUNT, "count -1");
	CHECK(MPI_Reduce_local(a, b, 1, MPI_INT, MPI_OP_NULL) == MPI_ERR_OP, "null op");
	CHECK(MPI_Reduce_local(MPI_IN_PLACE, b, 1, MPI_INT, MPI_SUM) == MPI_ERR_BUFFER,
	      "in place");
	CHECK(MPI_Reduce_local(a, b, 1, MPI_DATATYPE_NULL, MPI_SUM) == MPI_ERR_TYPE, "null type");
	CHECK(MPI_Op_commutative(MPI_OP_NULL, &commute) == MPI_ERR_OP, "commutative of null");
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
	CHECK(MPI_Pcontrol(1) == MPI_SUCCESS && MPI_Pcontrol(0, "x") == MPI_SUCCESS, "Pcontrol");
	MPI_Op_free(&op);
	MPI_Type_free(&pair);
}

static int deletes;

static int count_delete(MPI_Comm comm, int keyval, void *val, void *extra)
{
	(void)comm;
	(void)keyval;
	(void)val;
	(void)extra;
	deletes++;
	return MPI_SUCCESS;
}

static void test_attributes(void)
{
	static int value = 42;
	int keyval, flag = 0, *got = NULL;
	MPI_Comm dup;

	mt_phase = "MPI-1 attributes";
	MPI_OK(MPI_Keyval_create(MPI_DUP_FN, count_delete, &keyval, NULL));
	MPI_OK(MPI_Attr_put(MPI_COMM_WORLD, keyval, &value));
	MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
	MPI_OK(MPI_Attr_get(dup, keyval, &got, &flag));
	CHECK(flag && got == &value, "copied by MPI_DUP_FN: flag %d", flag);
	MPI_OK(MPI_Comm_free(&dup));
	CHECK(deletes == 1, "deletes after free of the dup: %d", deletes);
	MPI_OK(MPI_Attr_delete(MPI_COMM_WORLD, keyval));
	MPI_OK(MPI_Attr_get(MPI_COMM_WORLD, keyval, &got, &flag));
	CHECK(!flag && deletes == 2, "after delete: flag %d, deletes %d", flag, deletes);
	MPI_OK(MPI_Keyval_free(&keyval));
	CHECK(keyval == MPI_KEYVAL_INVALID, "keyval after free: %d", keyval);
}

static int handled;

static void on_error(MPI_Comm *comm, int *code, ...)
{
	(void)comm;
	handled = *code;
}

static void test_errhandler(void)
{
	MPI_Errhandler eh, got;
	MPI_Comm dup;
	int cls = -1;

	mt_phase = "MPI-1 error handlers";
	MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
	MPI_OK(MPI_Errhandler_create(on_error, &eh));
	MPI_OK(MPI_Errhandler_set(dup, eh));
	MPI_OK(MPI_Errhandler_get(dup, &got));
	CHECK(got != MPI_ERRHANDLER_NULL, "Errhandler_get");
	MPI_Send(&cls, 1, MPI_INT, mt_size + 5, 0, dup);
	MPI_Error_class(handled, &cls);
	CHECK(cls == MPI_ERR_RANK, "the handler saw class %d", cls);
	MPI_Errhandler_free(&got);
	MPI_Errhandler_free(&eh);
	MPI_Comm_free(&dup);
}

static void same_type(MPI_Datatype a, MPI_Datatype b, const char *what)
{
	MPI_Aint lb1, ex1, lb2, ex2;
	int s1, s2;

	MPI_Type_get_extent(a, &lb1, &ex1);
	MPI_Type_get_extent(b, &lb2, &ex2);
	MPI_Type_size(a, &s1);
	MPI_Type_size(b, &s2);
	CHECK(lb1 == lb2 && ex1 == ex2 && s1 == s2, "%s: lb %ld/%ld extent %ld/%ld size %d/%d",
	      what, (long)lb1, (long)lb2, (long)ex1, (long)ex2, s1, s2);
}

static void test_types(void)
{
	int bl[2] = { 2, 1 };
	MPI_Aint disp[2] = { 4, 24 }, addr1, addr2, ext, lb, ub;
	MPI_Datatype types[2] = { MPI_INT, MPI_DOUBLE }, t1, t2;
	double d[2];

	mt_phase = "MPI-1 datatypes";
	MPI_OK(MPI_Address(&d[0], &addr1));
	MPI_OK(MPI_Get_address(&d[1], &addr2));
	CHECK(addr2 - addr1 == (MPI_Aint)sizeof(double), "MPI_Address: %ld", (long)(addr2 - addr1));
	MPI_OK(MPI_Type_hvector(3, 2, 40, MPI_INT, &t1));
	MPI_OK(MPI_Type_create_hvector(3, 2, 40, MPI_INT, &t2));
	same_type(t1, t2, "hvector");
	MPI_OK(MPI_Type_extent(t1, &ext));
	CHECK(ext == 88, "hvector extent %ld, want 88", (long)ext);
	MPI_Type_free(&t1);
	MPI_Type_free(&t2);
	MPI_OK(MPI_Type_hindexed(2, bl, disp, MPI_INT, &t1));
	MPI_OK(MPI_Type_create_hindexed(2, bl, disp, MPI_INT, &t2));
	same_type(t1, t2, "hindexed");
	MPI_OK(MPI_Type_lb(t1, &lb));
	MPI_OK(MPI_Type_ub(t1, &ub));
	CHECK(lb == 4 && ub == 28, "hindexed lb %ld ub %ld, want 4 28", (long)lb, (long)ub);
	MPI_Type_free(&t1);
	MPI_Type_free(&t2);
	MPI_OK(MPI_Type_struct(2, bl, disp, types, &t1));
	MPI_OK(MPI_Type_create_struct(2, bl, disp, types, &t2));
	same_type(t1, t2, "struct");
	MPI_Type_free(&t1);
	MPI_Type_free(&t2);
}

int main(int argc, char **argv)
{
	mt_init(&argc, &argv, 60);
	test_reduce_local();
	test_attributes();
	test_errhandler();
	test_types();
	return mt_finish("compat");
}
