/* SPDX-License-Identifier: MIT */
/*
 * Window attributes, info hints and error handlers: user keyvals with
 * their delete callbacks (on replace, delete and MPI_Win_free, also after
 * the keyval was freed), the predefined callbacks, hints given at creation
 * and by MPI_Win_set_info coming back from MPI_Win_get_info, a window
 * error handler called for errors raised on the window and by
 * MPI_Win_call_errhandler, and the error paths.
 */
#include "mpitest.h"

static void expect(int rc, int cls, const char *what)
{
	int got = -1;

	MPI_Error_class(rc, &got);
	CHECK(got == cls, "%s: class %d, expected %d", what, got, cls);
}

/* ---- attributes ------------------------------------------------------------------------ */

/* What the delete callback saw, in order. */
static struct {
	int n;
	MPI_Win win[8];
	int keyval[8];
	void *value[8];
	void *extra[8];
} deleted;

static int fail_99;                     /* the callback fails for value 99 */

static int record_delete(MPI_Win win, int keyval, void *value, void *extra)
{
	int i = deleted.n++;

	if (i < 8) {
		deleted.win[i] = win;
		deleted.keyval[i] = keyval;
		deleted.value[i] = value;
		deleted.extra[i] = extra;
	}
	return fail_99 && value == (void *)99 ? MPI_ERR_OTHER : MPI_SUCCESS;
}

static void check_deleted(int i, MPI_Win win, int keyval, void *value, const char *what)
{
	CHECK(deleted.n > i && deleted.win[i] == win && deleted.keyval[i] == keyval &&
	      deleted.value[i] == value && deleted.extra[i] == &deleted,
	      "%s: delete callback %d: n %d win %d keyval %d value %p", what, i, deleted.n,
	      deleted.win[i], deleted.keyval[i], deleted.value[i]);
}

static void test_attrs(void)
{
	int buf[4], kv = MPI_KEYVAL_INVALID, kv2 = MPI_KEYVAL_INVALID, flag = -1;
	void *v = NULL, *mine = (void *)(long)(1000 + mt_rank);
	MPI_Win win, handle;

	mt_phase = "attributes";
	MPI_OK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, record_delete, &kv, &deleted));
	MPI_OK(MPI_Win_create_keyval(MPI_WIN_DUP_FN, MPI_WIN_NULL_DELETE_FN, &kv2, NULL));
	CHECK(kv != MPI_KEYVAL_INVALID && kv2 != kv, "keyvals %d %d", kv, kv2);
	MPI_OK(MPI_Win_create(buf, sizeof(buf), 4, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
	handle = win;

	MPI_OK(MPI_Win_get_attr(win, kv, &v, &flag));
	CHECK(flag == 0, "unset attribute found");
	MPI_OK(MPI_Win_set_attr(win, kv, mine));
	MPI_OK(MPI_Win_set_attr(win, kv2, &buf[1]));
	MPI_OK(MPI_Win_get_attr(win, kv, &v, &flag));
	CHECK(flag == 1 && v == mine, "get: flag %d value %p, expected %p", flag, v, mine);
	MPI_OK(MPI_Win_get_attr(win, kv2, &v, &flag));
	CHECK(flag == 1 && v == &buf[1], "get kv2: flag %d", flag);
	/* the predefined ones still answer */
	int *unit = NULL;
	MPI_OK(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &unit, &flag));
	CHECK(flag == 1 && unit && *unit == 4, "MPI_WIN_DISP_UNIT");

	/* replacing runs the delete callback on the old value */
	deleted.n = 0;
	MPI_OK(MPI_Win_set_attr(win, kv, (void *)7));
	check_deleted(0, win, kv, mine, "replace");
	MPI_OK(MPI_Win_delete_attr(win, kv));
	check_deleted(1, win, kv, (void *)7, "delete");
	MPI_OK(MPI_Win_get_attr(win, kv, &v, &flag));
	CHECK(flag == 0 && deleted.n == 2, "deleted attribute still there (%d)", flag);
	MPI_OK(MPI_Win_delete_attr(win, kv));   /* absent: no error, no callback */
	CHECK(deleted.n == 2, "deleting an absent attribute ran the callback");

	/* a failing delete callback fails the call */
	MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
	fail_99 = 1;
	MPI_OK(MPI_Win_set_attr(win, kv, (void *)99));
	expect(MPI_Win_delete_attr(win, kv), MPI_ERR_OTHER, "failing delete callback");
	MPI_OK(MPI_Win_get_attr(win, kv, &v, &flag));
	CHECK(flag == 1 && v == (void *)99, "a failed delete removed the attribute");
	expect(MPI_Win_set_attr(win, kv, mine), MPI_ERR_OTHER, "replace, callback failing");
	fail_99 = 0;

	/* freed keyval: the attribute stays, its callback runs at Win_free */
	MPI_OK(MPI_Win_set_attr(win, kv, mine));
	int freed = kv;
	MPI_OK(MPI_Win_free_keyval(&kv));
	CHECK(kv == MPI_KEYVAL_INVALID, "free_keyval did not reset the handle");
	deleted.n = 0;
	MPI_OK(MPI_Win_free(&win));
	CHECK(win == MPI_WIN_NULL, "Win_free did not reset the handle");
	check_deleted(0, handle, freed, mine, "Win_free");
	CHECK(deleted.n == 1, "Win_free ran %d delete callbacks", deleted.n);
	MPI_OK(MPI_Win_free_keyval(&kv2));
}

static void test_predefined_fns(void)
{
	int flag = -1;
	void *out = NULL;

	mt_phase = "predefined callbacks";
	MPI_OK(MPI_WIN_DUP_FN(MPI_WIN_NULL, 1, NULL, (void *)5, &out, &flag));
	CHECK(flag == 1 && out == (void *)5, "MPI_WIN_DUP_FN: flag %d out %p", flag, out);
	MPI_OK(MPI_WIN_NULL_COPY_FN(MPI_WIN_NULL, 1, NULL, (void *)5, &out, &flag));
	CHECK(flag == 0, "MPI_WIN_NULL_COPY_FN: flag %d", flag);
	MPI_OK(MPI_WIN_NULL_DELETE_FN(MPI_WIN_NULL, 1, (void *)5, NULL));
}

static void test_attr_errors(void)
{
	int buf[2], kv, ckv, flag;
	void *v;
	MPI_Win win;

	mt_phase = "attribute errors";
	MPI_OK(MPI_Win_create(buf, sizeof(buf), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
	MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &ckv, NULL));
	MPI_OK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &kv, NULL));
	expect(MPI_Win_set_attr(win, ckv, NULL), MPI_ERR_KEYVAL, "comm keyval on a window");
	expect(MPI_Win_get_attr(win, ckv, &v, &flag), MPI_ERR_KEYVAL, "get with comm keyval");
	expect(MPI_Comm_set_attr(MPI_COMM_WORLD, kv, NULL), MPI_ERR_KEYVAL,
	       "window keyval on a comm");
	expect(MPI_Win_set_attr(win, MPI_WIN_BASE, NULL), MPI_ERR_KEYVAL, "set MPI_WIN_BASE");
	expect(MPI_Win_delete_attr(win, MPI_WIN_SIZE), MPI_ERR_KEYVAL, "delete MPI_WIN_SIZE");
	expect(MPI_Win_get_attr(win, 987654, &v, &flag), MPI_ERR_KEYVAL, "get bogus keyval");
	expect(MPI_Win_set_attr((MPI_Win)4242, kv, NULL), MPI_ERR_WIN, "invalid window");
	expect(MPI_Win_create_keyval(NULL, NULL, NULL, NULL), MPI_ERR_ARG, "NULL keyval");
	expect(MPI_Win_free_keyval(&ckv), MPI_ERR_KEYVAL, "free a comm keyval as a window's");
	MPI_OK(MPI_Win_free_keyval(&kv));
	expect(MPI_Win_set_attr(win, kv, NULL), MPI_ERR_KEYVAL, "freed keyval");
	MPI_OK(MPI_Comm_free_keyval(&ckv));
	MPI_OK(MPI_Win_free(&win));
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* ---- info ---------------------------------------------------------------------------------- */

/* info holds exactly the n key/value pairs kv[]. */
static void check_info(MPI_Info info, const char *const *kv, int n, const char *what)
{
	int nkeys = -1, flag;
	char value[64];

	MPI_OK(MPI_Info_get_nkeys(info, &nkeys));
	CHECK(nkeys == n, "%s: %d keys, expected %d", what, nkeys, n);
	for (int i = 0; i < n; i++) {
		flag = 0;
		MPI_OK(MPI_Info_get(info, kv[2 * i], sizeof(value) - 1, value, &flag));
		CHECK(flag && !strcmp(value, kv[2 * i + 1]), "%s: %s = %s", what, kv[2 * i],
		      flag ? value : "(absent)");
	}
}

static void test_info(void)
{
	static const char *const given[] = { "no_locks", "true", "viaduct_test", "rank" };
	static const char *const later[] = { "accumulate_ordering", "none" };
	MPI_Info info, used;
	MPI_Win win;
	void *base;

	mt_phase = "info";
	MPI_OK(MPI_Info_create(&info));
	MPI_OK(MPI_Info_set(info, "no_locks", "true"));
	MPI_OK(MPI_Info_set(info, "viaduct_test", "rank"));
	MPI_OK(MPI_Win_allocate(64, 8, info, MPI_COMM_WORLD, &base, &win));
	MPI_OK(MPI_Info_free(&info));   /* the window keeps its own copy */
	MPI_OK(MPI_Win_get_info(win, &used));
	check_info(used, given, 2, "at creation");
	MPI_OK(MPI_Info_free(&used));

	MPI_OK(MPI_Info_create(&info));
	MPI_OK(MPI_Info_set(info, "accumulate_ordering", "none"));
	MPI_OK(MPI_Win_set_info(win, info));
	MPI_OK(MPI_Info_free(&info));
	MPI_OK(MPI_Win_get_info(win, &used));
	check_info(used, later, 1, "after Win_set_info");
	MPI_OK(MPI_Info_free(&used));

	MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
	expect(MPI_Win_set_info(win, MPI_INFO_NULL), MPI_ERR_INFO, "set MPI_INFO_NULL");
	expect(MPI_Win_set_info(win, (MPI_Info)777), MPI_ERR_INFO, "set invalid info");
	expect(MPI_Win_get_info(win, NULL), MPI_ERR_ARG, "get into NULL");
	MPI_OK(MPI_Win_free(&win));

	/* no hints: an empty info */
	MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
	MPI_OK(MPI_Win_get_info(win, &used));
	check_info(used, NULL, 0, "no hints");
	MPI_OK(MPI_Info_free(&used));
	MPI_OK(MPI_Win_free(&win));
}

/* ---- error handlers ---------------------------------------------------------------------- */

static struct {
	int calls;
	MPI_Win win;
	int code;
} handled;

static void win_handler(MPI_Win *win, int *code, ...)
{
	handled.calls++;
	handled.win = *win;
	handled.code = *code;
}

static void comm_handler(MPI_Comm *comm, int *code, ...)
{
	(void)comm, (void)code;
}

static void test_errhandlers(void)
{
	int buf[4] = { 0 }, one = 1, cls = -1;
	MPI_Errhandler eh, got, ceh;
	MPI_Win win;

	mt_phase = "error handlers";
	MPI_OK(MPI_Win_create(buf, sizeof(buf), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
	MPI_OK(MPI_Win_create_errhandler(win_handler, &eh));
	MPI_OK(MPI_Win_set_errhandler(win, eh));
	MPI_OK(MPI_Win_get_errhandler(win, &got));
	CHECK(got == eh, "Win_get_errhandler: %d, expected %d", (int)got, (int)eh);
	MPI_OK(MPI_Errhandler_free(&got));
	MPI_OK(MPI_Errhandler_free(&eh));       /* the window still holds it */

	/* an error raised on the window reaches the handler */
	MPI_OK(MPI_Win_fence(0, win));
	int rc = MPI_Put(&one, 1, MPI_INT, mt_size, 0, 1, MPI_INT, win);
	MPI_Error_class(rc, &cls);
	CHECK(cls == MPI_ERR_RANK, "Put to rank %d: class %d", mt_size, cls);
	CHECK(handled.calls == 1 && handled.win == win && handled.code == rc,
	      "handler: %d calls, win %d, code %d", handled.calls, handled.win, handled.code);
	MPI_OK(MPI_Win_fence(0, win));

	MPI_OK(MPI_Win_call_errhandler(win, MPI_ERR_OTHER));
	CHECK(handled.calls == 2 && handled.win == win && handled.code == MPI_ERR_OTHER,
	      "Win_call_errhandler: %d calls, code %d", handled.calls, handled.code);

	/* handlers go only on their own kind of object */
	MPI_OK(MPI_Comm_create_errhandler(comm_handler, &ceh));
	MPI_OK(MPI_Win_create_errhandler(win_handler, &eh));
	MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	expect(MPI_Win_set_errhandler(win, ceh), MPI_ERR_ARG, "comm handler on a window");
	expect(MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh), MPI_ERR_ARG,
	       "window handler on a comm");
	expect(MPI_Win_create_errhandler(NULL, &eh), MPI_ERR_ARG, "NULL function");
	expect(MPI_Win_call_errhandler((MPI_Win)4242, MPI_ERR_OTHER), MPI_ERR_WIN,
	       "call on an invalid window");
	CHECK(MPI_Win_call_errhandler(win, MPI_ERR_OTHER) == MPI_SUCCESS,
	      "Win_call_errhandler with ERRORS_RETURN");
	MPI_OK(MPI_Errhandler_free(&eh));
	MPI_OK(MPI_Errhandler_free(&ceh));
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
	MPI_OK(MPI_Win_free(&win));
	CHECK(handled.calls == 2, "handler called %d times", handled.calls);
}

int main(int argc, char **argv)
{
	mt_init(&argc, &argv, 60);
	test_attrs();
	test_predefined_fns();
	test_attr_errors();
	test_info();
	test_errhandlers();
	return mt_finish("winattr");
}
