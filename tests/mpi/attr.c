/* SPDX-License-Identifier: MIT */
/*
 * Communicator names, attributes (callbacks counted at set, dup, delete,
 * free, and after the keyval is freed; the predefined callbacks; the
 * predefined attributes of MPI_COMM_WORLD), datatype attributes, info objects against a serial
 * model of their key list, user error handlers (called with the
 * communicator and the code), and error classes, codes and strings the
 * program adds.  Error paths under MPI_ERRORS_RETURN.
 */
#include <stdbool.h>

#include "mpitest.h"

static int err_class(int rc)
{
	int c = -1;

	if (rc == MPI_SUCCESS)
		return MPI_SUCCESS;
	MPI_Error_class(rc, &c);
	return c;
}

/* ---- names ------------------------------------------------------------------ */

static void expect_name(MPI_Comm c, const char *want)
{
	char name[MPI_MAX_OBJECT_NAME];
	int len = -1;

	MPI_OK(MPI_Comm_get_name(c, name, &len));
	CHECK(!strcmp(name, want) && len == (int)strlen(want), "name '%s' (%d), expected '%s'",
	      name, len, want);
}

static void test_names(void)
{
	char longname[MPI_MAX_OBJECT_NAME + 20];
	MPI_Comm d;

	mt_phase = "names";
	expect_name(MPI_COMM_WORLD, "MPI_COMM_WORLD");
	expect_name(MPI_COMM_SELF, "MPI_COMM_SELF");
	MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
	expect_name(d, "");
	MPI_OK(MPI_Comm_set_name(d, "solver"));
	expect_name(d, "solver");
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	MPI_OK(MPI_Comm_set_name(d, longname));
	longname[MPI_MAX_OBJECT_NAME - 1] = '\0';
	expect_name(d, longname);
	MPI_OK(MPI_Comm_free(&d));
}

/* ---- attributes ------------------------------------------------------------- */

struct counts {
	int copies, deletes;
	long last_deleted;
};

/* Copies value + 1, so the generation shows. */
static int copy_plus_one(MPI_Comm oldcomm, int keyval, void *extra, void *in, void *out,
			 int *flag)
{
	struct counts *k = extra;

	(void)oldcomm, (void)keyval;
	k->copies++;
	*(void **)out = (void *)((long)in + 1);
	*flag = 1;
	return MPI_SUCCESS;
}

static int count_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
	struct counts *k = extra;

	(void)comm, (void)keyval;
	k->deletes++;
	k->last_deleted = (long)value;
	return MPI_SUCCESS;
}

static long get_long(MPI_Comm c, int key, int *flag)
{
	void *v = NULL;

	MPI_OK(MPI_Comm_get_attr(c, key, &v, flag));
	return (long)v;
}

static void test_attr_callbacks(void)
{
	struct counts k = { 0, 0, 0 };
	int key, flag = -1;
	MPI_Comm a, b;

	mt_phase = "attr callbacks";
	MPI_OK(MPI_Comm_create_keyval(copy_plus_one, count_delete, &key, &k));
	MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &a));
	get_long(a, key, &flag);
	CHECK(flag == 0, "unset attribute found");
	MPI_OK(MPI_Comm_set_attr(a, key, (void *)10L));
	CHECK(get_long(a, key, &flag) == 10 && flag, "get after set");
	MPI_OK(MPI_Comm_set_attr(a, key, (void *)20L));      /* old value deleted */
	CHECK(k.deletes == 1 && k.last_deleted == 10, "set over: %d deletes, last %ld", k.deletes,
	      k.last_deleted);
	MPI_OK(MPI_Comm_dup(a, &b));
	CHECK(k.copies == 1 && get_long(b, key, &flag) == 21 && flag, "dup: %d copies",
	      k.copies);
	MPI_OK(MPI_Comm_delete_attr(b, key));
	CHECK(k.deletes == 2 && k.last_deleted == 21, "delete_attr: %d deletes", k.deletes);
	get_long(b, key, &flag);
	CHECK(flag == 0, "deleted attribute found");
	MPI_OK(MPI_Comm_free(&b));
	CHECK(k.deletes == 2, "free without attributes deleted something");
	/* Freeing the key leaves a's attribute and its callback alive. */
	MPI_OK(MPI_Comm_free_keyval(&key));
	CHECK(key == MPI_KEYVAL_INVALID, "free_keyval did not reset the key");
	MPI_OK(MPI_Comm_free(&a));
	CHECK(k.deletes == 3 && k.last_deleted == 20, "free: %d deletes, last %ld", k.deletes,
	      k.last_deleted);
}

static void test_attr_predefined_fns(void)
{
	int kdup, knull, flag = -1;
	MPI_Comm a, b;

	mt_phase = "attr predefined fns";
	MPI_OK(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &kdup, NULL));
	MPI_OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &knull,
				      NULL));
	MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &a));
	MPI_OK(MPI_Comm_set_attr(a, kdup, (void *)7L));
	MPI_OK(MPI_Comm_set_attr(a, knull, (void *)8L));
	MPI_OK(MPI_Comm_dup(a, &b));
	CHECK(get_long(b, kdup, &flag) == 7 && flag, "DUP_FN did not copy");
	get_long(b, knull, &flag);
	CHECK(flag == 0, "NULL_COPY_FN copied");
	MPI_OK(MPI_Comm_free(&b));
	MPI_OK(MPI_Comm_free(&a));
	MPI_OK(MPI_Comm_free_keyval(&kdup));
	MPI_OK(MPI_Comm_free_keyval(&knull));
}

static void test_attr_world(void)
{
	int *v = NULL, flag = -1;

	mt_phase = "attr world";
	MPI_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &flag));
	CHECK(flag && *v >= 32767, "MPI_TAG_UB");
	MPI_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_HOST, &v, &flag));
	CHECK(flag && *v == MPI_PROC_NULL, "MPI_HOST");
	MPI_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_IO, &v, &flag));
	CHECK(flag && (*v == MPI_ANY_SOURCE || (*v >= 0 && *v < mt_size)), "MPI_IO");
	MPI_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &v, &flag));
	CHECK(flag && (*v == 0 || *v == 1), "MPI_WTIME_IS_GLOBAL");
	MPI_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &v, &flag));
	CHECK(flag && *v >= mt_size, "MPI_UNIVERSE_SIZE");
	MPI_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &v, &flag));
	CHECK(!flag || *v >= 0, "MPI_APPNUM");
	/* An MPMD launch line ("A : B") numbers its commands from 0; the
	 * runner says which one started this rank. */
	const char *want = getenv("MT_APPNUM");
	if (want)
		CHECK(flag && *v == atoi(want), "MPI_APPNUM %d, flag %d, expected %s",
		      flag ? *v : -1, flag, want);
	MPI_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &v, &flag));
	CHECK(flag && *v >= MPI_ERR_LASTCODE, "MPI_LASTUSEDCODE");
}

static void test_type_attr(void)
{
	struct counts k = { 0, 0, 0 };
	int tkey, ckey, flag = -1;
	void *v = NULL;
	MPI_Datatype t;

	mt_phase = "type attr";
	MPI_OK(MPI_Type_create_keyval(MPI_TYPE_DUP_FN, count_delete, &tkey, &k));
	MPI_OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &ckey,
				      NULL));
	MPI_OK(MPI_Type_contiguous(3, MPI_INT, &t));
	MPI_OK(MPI_Type_get_attr(t, tkey, &v, &flag));
	CHECK(flag == 0, "unset type attribute found");
	MPI_OK(MPI_Type_set_attr(t, tkey, (void *)5L));
	MPI_OK(MPI_Type_get_attr(t, tkey, &v, &flag));
	CHECK(flag && (long)v == 5, "type attribute: %d %ld", flag, (long)v);
	MPI_OK(MPI_Type_set_attr(MPI_INT, tkey, (void *)6L));   /* predefined too */
	MPI_OK(MPI_Type_get_attr(MPI_INT, tkey, &v, &flag));
	CHECK(flag && (long)v == 6, "attribute on MPI_INT");
	MPI_OK(MPI_Type_delete_attr(MPI_INT, tkey));
	CHECK(k.deletes == 1 && k.last_deleted == 6, "type delete_attr: %d", k.deletes);
	MPI_OK(MPI_Type_free_keyval(&tkey));            /* t keeps it alive */
	MPI_OK(MPI_Type_free(&t));
	CHECK(k.deletes == 2 && k.last_deleted == 5, "Type_free: %d deletes", k.deletes);
	/* A key of the other kind is no key here. */
	CHECK(err_class(MPI_Type_set_attr(MPI_INT, ckey, NULL)) == MPI_ERR_KEYVAL,
	      "comm key on a type");
	MPI_OK(MPI_Type_create_keyval(NULL, NULL, &tkey, NULL));
	CHECK(err_class(MPI_Comm_set_attr(MPI_COMM_WORLD, tkey, NULL)) == MPI_ERR_KEYVAL,
	      "type key on a communicator");
	CHECK(err_class(MPI_Type_set_attr(MPI_DATATYPE_NULL, tkey, NULL)) == MPI_ERR_TYPE,
	      "attribute on DATATYPE_NULL");
	CHECK(err_class(MPI_Comm_free_keyval(&tkey)) == MPI_ERR_KEYVAL, "Comm_free_keyval of a "
	      "type key");
	MPI_OK(MPI_Type_free_keyval(&tkey));
	MPI_OK(MPI_Comm_free_keyval(&ckey));
}

/* ---- info --------------------------------------------------------------------- */

static void expect_keys(MPI_Info info, const char *const *keys, int n)
{
	char key[MPI_MAX_INFO_KEY];
	int nk = -1;

	MPI_OK(MPI_Info_get_nkeys(info, &nk));
	if (!CHECK(nk == n, "%d keys, expected %d", nk, n))
		return;
	for (int i = 0; i < n; i++) {
		MPI_OK(MPI_Info_get_nthkey(info, i, key));
		CHECK(!strcmp(key, keys[i]), "key %d is '%s', expected '%s'", i, key, keys[i]);
	}
}

static void test_info(void)
{
	static const char *const k3[] = { "alpha", "beta", "gamma" };
	static const char *const k2[] = { "alpha", "gamma" };
	char v[MPI_MAX_INFO_VAL + 1], small[4];
	int flag = -1, len = -1, buflen;
	MPI_Info in, dup;

	mt_phase = "info";
	MPI_OK(MPI_Info_create(&in));
	expect_keys(in, k3, 0);
	MPI_OK(MPI_Info_set(in, "alpha", "1"));
	MPI_OK(MPI_Info_set(in, "beta", "two"));
	MPI_OK(MPI_Info_set(in, "gamma", "three3"));
	MPI_OK(MPI_Info_set(in, "alpha", "one"));       /* replaces, keeps order */
	expect_keys(in, k3, 3);
	MPI_OK(MPI_Info_get(in, "alpha", MPI_MAX_INFO_VAL, v, &flag));
	CHECK(flag && !strcmp(v, "one"), "get alpha: '%s'", v);
	MPI_OK(MPI_Info_get(in, "gamma", 3, v, &flag));
	CHECK(flag && !strcmp(v, "thr"), "get truncated: '%s'", v);
	MPI_OK(MPI_Info_get(in, "delta", MPI_MAX_INFO_VAL, v, &flag));
	CHECK(!flag, "get of a missing key");
	MPI_OK(MPI_Info_get_valuelen(in, "gamma", &len, &flag));
	CHECK(flag && len == 6, "valuelen %d", len);
	buflen = sizeof(small);
	MPI_OK(MPI_Info_get_string(in, "gamma", &buflen, small, &flag));
	CHECK(flag && buflen == 7 && !strcmp(small, "thr"), "get_string short: %d '%s'", buflen,
	      small);
	buflen = 0;
	MPI_OK(MPI_Info_get_string(in, "beta", &buflen, NULL, &flag));
	CHECK(flag && buflen == 4, "get_string length query: %d", buflen);
	MPI_OK(MPI_Info_dup(in, &dup));
	MPI_OK(MPI_Info_delete(in, "beta"));
	expect_keys(in, k2, 2);
	expect_keys(dup, k3, 3);
	MPI_OK(MPI_Info_free(&dup));
	CHECK(dup == MPI_INFO_NULL, "free did not reset the handle");
	MPI_OK(MPI_Info_get_nkeys(MPI_INFO_ENV, &len));
	CHECK(len >= 0, "MPI_INFO_ENV");
	/* Errors. */
	char longkey[MPI_MAX_INFO_KEY + 8];
	memset(longkey, 'k', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = '\0';
	CHECK(err_class(MPI_Info_set(in, longkey, "x")) == MPI_ERR_INFO_KEY, "long key");
	CHECK(err_class(MPI_Info_delete(in, "beta")) == MPI_ERR_INFO_NOKEY, "delete missing");
	CHECK(err_class(MPI_Info_get_nthkey(in, 2, v)) == MPI_ERR_ARG, "nthkey out of range");
	CHECK(err_class(MPI_Info_get_nkeys(9999, &len)) == MPI_ERR_INFO, "invalid info");
	CHECK(err_class(MPI_Info_free(&dup)) == MPI_ERR_INFO, "free of INFO_NULL");
	MPI_OK(MPI_Info_free(&in));
}

/* ---- error handlers and codes ------------------------------------------------------ */

static int handler_calls, handler_code;
static MPI_Comm handler_comm;

static void record_error(MPI_Comm *comm, int *code, ...)
{
	handler_calls++;
	handler_comm = *comm;
	handler_code = *code;
}

static void test_errhandlers(void)
{
	MPI_Errhandler eh, got;
	MPI_Comm d;
	int x = 0, rc, cls, code, len;
	char text[MPI_MAX_ERROR_STRING];

	mt_phase = "errhandlers";
	MPI_OK(MPI_Comm_create_errhandler(record_error, &eh));
	MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
	MPI_OK(MPI_Comm_set_errhandler(d, eh));
	MPI_OK(MPI_Errhandler_free(&eh));       /* d keeps it */
	CHECK(eh == MPI_ERRHANDLER_NULL, "free did not reset the handle");
	rc = MPI_Send(&x, 1, MPI_INT, mt_size, 0, d);
	CHECK(handler_calls == 1 && handler_comm == d && err_class(handler_code) == MPI_ERR_RANK &&
	      rc == handler_code, "handler: %d calls, comm %d, code %d, rc %d", handler_calls,
	      (int)handler_comm, handler_code, rc);
	MPI_OK(MPI_Add_error_class(&cls));
	MPI_OK(MPI_Add_error_code(cls, &code));
	MPI_OK(MPI_Add_error_string(code, "the solver diverged"));
	CHECK(cls > MPI_ERR_LASTCODE && code > cls, "class %d code %d", cls, code);
	MPI_OK(MPI_Error_class(code, &x));
	CHECK(x == cls, "Error_class of the new code: %d", x);
	MPI_OK(MPI_Error_string(code, text, &len));
	CHECK(!strcmp(text, "the solver diverged") && len == (int)strlen(text), "string '%s'",
	      text);
	MPI_OK(MPI_Error_string(cls, text, &len));
	CHECK(len == 0, "class without a string: '%s'", text);
	MPI_OK(MPI_Comm_call_errhandler(d, code));
	CHECK(handler_calls == 2 && handler_code == code, "call_errhandler: %d calls, code %d",
	      handler_calls, handler_code);
	MPI_OK(MPI_Comm_get_errhandler(d, &got));
	MPI_OK(MPI_Errhandler_free(&got));
	int *last, flag;
	MPI_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag));
	CHECK(flag && *last >= code, "MPI_LASTUSEDCODE %d < %d", *last, code);
	MPI_OK(MPI_Comm_free(&d));
	/* MPI_ERRORS_RETURN on WORLD: call_errhandler returns success. */
	MPI_OK(MPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_OTHER));
	MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ABORT));
	MPI_OK(MPI_Comm_get_errhandler(MPI_COMM_SELF, &got));
	CHECK(got == MPI_ERRORS_ABORT, "ERRORS_ABORT not kept");
	MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL));
	/* Errors. */
	CHECK(err_class(MPI_Add_error_code(MPI_ERR_LASTCODE + 999, &x)) == MPI_ERR_ARG,
	      "code of an unknown class");
	CHECK(err_class(MPI_Add_error_code(code, &x)) == MPI_ERR_ARG, "code of a code");
	CHECK(err_class(MPI_Add_error_string(MPI_ERR_RANK, "no")) == MPI_ERR_ARG,
	      "string for a predefined class");
	CHECK(err_class(MPI_Errhandler_free(&eh)) == MPI_ERR_ARG, "free of ERRHANDLER_NULL");
	CHECK(err_class(MPI_Comm_set_errhandler(MPI_COMM_WORLD, 777)) == MPI_ERR_ARG,
	      "set of an invalid handler");
}

static void test_attr_errors(void)
{
	int key = 4321, flag;
	void *v;

	mt_phase = "attr errors";
	CHECK(err_class(MPI_Comm_set_attr(MPI_COMM_WORLD, key, NULL)) == MPI_ERR_KEYVAL,
	      "set with an invalid key");
	CHECK(err_class(MPI_Comm_get_attr(MPI_COMM_WORLD, key, &v, &flag)) == MPI_ERR_KEYVAL,
	      "get with an invalid key");
	CHECK(err_class(MPI_Comm_delete_attr(MPI_COMM_WORLD, key)) == MPI_ERR_KEYVAL,
	      "delete with an invalid key");
	CHECK(err_class(MPI_Comm_free_keyval(&key)) == MPI_ERR_KEYVAL, "free an invalid key");
	CHECK(err_class(MPI_Comm_set_name(MPI_COMM_NULL, "x")) == MPI_ERR_COMM, "name of NULL");
	CHECK(err_class(MPI_Comm_set_attr(MPI_COMM_NULL, MPI_TAG_UB, NULL)) == MPI_ERR_COMM,
	      "attr on NULL");
}

int main(int argc, char **argv)
{
	mt_init(&argc, &argv, 60);
	test_names();
	for (int i = 0; i < 3; i++) {   /* slots of keys and handlers are reused */
		test_attr_callbacks();
		test_attr_predefined_fns();
	}
	test_attr_world();
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	test_info();
	test_attr_errors();
	test_type_attr();
	test_errhandlers();
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
	return mt_finish("attr");
}
