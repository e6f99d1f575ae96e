/* SPDX-License-Identifier: MIT */
/*
 * Environment: Initialized/Finalized before and after, Init_thread's
 * provided level (argv[1]: single|funneled|serialized|multiple, or "init"
 * for plain MPI_Init) and Query_thread, Get_version, Wtime/Wtick,
 * processor name, library version, Alloc_mem, and argv passed through the
 * launcher (the runner appends "arg1 'two words'"); calls out of order
 * (before|twice|after, see misuse).
 */
#include "mpitest.h"

static int level_of(const char *s)
{
	if (!strcmp(s, "funneled"))
		return MPI_THREAD_FUNNELED;
	if (!strcmp(s, "serialized"))
		return MPI_THREAD_SERIALIZED;
	if (!strcmp(s, "multiple"))
		return MPI_THREAD_MULTIPLE;
	return MPI_THREAD_SINGLE;
}

static void test_before(void)
{
	int flag = -1, v = -1, sv = -1;

	MPI_Initialized(&flag);
	if (flag != 0)
		fprintf(stderr, "FAIL: Initialized before MPI_Init is %d\n", flag), mt_errors++;
	flag = -1;
	MPI_Finalized(&flag);
	if (flag != 0)
		fprintf(stderr, "FAIL: Finalized before MPI_Init is %d\n", flag), mt_errors++;
	MPI_Get_version(&v, &sv);    /* callable before Init */
	if (v != MPI_VERSION || sv != MPI_SUBVERSION)
		fprintf(stderr, "FAIL: Get_version before Init: %d.%d\n", v, sv), mt_errors++;
}

static void test_running(int required, int provided)
{
	int flag = -1, q = -1, v = -1, sv = -1, len = -1;
	char name[MPI_MAX_PROCESSOR_NAME], lib[MPI_MAX_LIBRARY_VERSION_STRING];

	mt_phase = "env";
	CHECK(provided >= MPI_THREAD_SINGLE && provided <= MPI_THREAD_MULTIPLE,
	      "provided level %d invalid", provided);
#ifdef VIADUCT_MPI
	/* Every level is provided as asked. */
	CHECK(provided == required, "required %d but provided %d", required, provided);
#else
	(void)required;
#endif
	MPI_OK(MPI_Query_thread(&q));
	CHECK(q == provided, "Query_thread %d, Init_thread provided %d", q, provided);
	MPI_OK(MPI_Initialized(&flag));
	CHECK(flag == 1, "Initialized after Init is %d", flag);
	MPI_OK(MPI_Finalized(&flag));
	CHECK(flag == 0, "Finalized before Finalize is %d", flag);
	MPI_OK(MPI_Get_version(&v, &sv));
	CHECK(v == MPI_VERSION && sv == MPI_SUBVERSION, "version %d.%d, macros %d.%d", v, sv,
	      MPI_VERSION, MPI_SUBVERSION);
#ifdef VIADUCT_MPI
	CHECK(v == 3 && sv == 1, "viaduct implements MPI 3.1, says %d.%d", v, sv);
#endif
	memset(name, 0, sizeof(name));
	MPI_OK(MPI_Get_processor_name(name, &len));
	CHECK(len > 0 && len < MPI_MAX_PROCESSOR_NAME && (size_t)len == strlen(name),
	      "processor name \"%s\" len %d", name, len);
	memset(lib, 0, sizeof(lib));
	MPI_OK(MPI_Get_library_version(lib, &len));
	CHECK(len > 0 && len < MPI_MAX_LIBRARY_VERSION_STRING && (size_t)len == strlen(lib),
	      "library version \"%s\" len %d", lib, len);
#ifdef VIADUCT_MPI
	CHECK(strstr(lib, "viaduct") != NULL, "library version \"%s\" does not say viaduct", lib);
#ifdef VIADUCT_TEST_HAVE_OFI
	/* It names both transports, not the one of a single host. */
	CHECK(strstr(lib, "libfabric") != NULL, "library version \"%s\" does not name libfabric", lib);
#endif
#endif
	/* One node: every rank has the same processor name. */
	char *all = mt_malloc((size_t)mt_size * MPI_MAX_PROCESSOR_NAME);
	MPI_OK(MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME,
			     MPI_CHAR, MPI_COMM_WORLD));
	for (int r = 0; r < mt_size; r++)
		CHECK(!strcmp(all + (size_t)r * MPI_MAX_PROCESSOR_NAME, name),
		      "rank %d's processor name differs", r);
	free(all);
}

static void test_time(void)
{
	double t0, prev, t, tick;

	mt_phase = "wtime";
	tick = MPI_Wtick();
	CHECK(tick > 0 && tick <= 0.01, "Wtick %g", tick);
	t0 = prev = MPI_Wtime();
	for (int i = 0; i < 100000; i++) {
		t = MPI_Wtime();
		if (!CHECK(t >= prev, "Wtime went back: %.9f after %.9f", t, prev))
			break;
		prev = t;
	}
	t0 = MPI_Wtime();
	mt_sleep_ms(20);
	t = MPI_Wtime() - t0;
	CHECK(t >= 0.019 && t < 1.0, "20 ms sleep measured as %.6f s", t);
}

static void test_alloc(void)
{
	char *p = NULL, *q = NULL;

	mt_phase = "alloc_mem";
	MPI_OK(MPI_Alloc_mem(1 << 20, MPI_INFO_NULL, &p));
	MPI_OK(MPI_Alloc_mem(100, MPI_INFO_NULL, &q));
	if (CHECK(p && q, "Alloc_mem gave NULL")) {
		memset(p, 0xAB, 1 << 20);
		memset(q, 0xCD, 100);
		CHECK(p[12345] == (char)0xAB && q[99] == (char)0xCD, "Alloc_mem memory not usable");
	}
	MPI_OK(MPI_Free_mem(p));
	MPI_OK(MPI_Free_mem(q));
}

/* Calls out of order (argv[1] before|twice|after): each is fatal under
 * MPI_ERRORS_ARE_FATAL, and its message must say which order was wrong
 * (test_mpi_env.sh reads it).  Returns only if the library let it pass. */
static void misuse(const char *mode, int *argc, char ***argv)
{
	int r;

	if (!strcmp(mode, "before")) {
		MPI_Comm_rank(MPI_COMM_WORLD, &r);
		return;
	}
	MPI_Init(argc, argv);
	if (!strcmp(mode, "after"))
		MPI_Finalize();
	if (!strcmp(mode, "twice"))
		MPI_Init(argc, argv);
	else
		MPI_Comm_rank(MPI_COMM_WORLD, &r);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "init";
	int required = level_of(mode), provided = -1, flag = -1;

	alarm(30);
	if (!strcmp(mode, "before") || !strcmp(mode, "twice") || !strcmp(mode, "after")) {
		misuse(mode, &argc, &argv);
		fprintf(stderr, "FAIL: %s: the misuse was not fatal\n", mode);
		return 1;
	}
	test_before();
	if (!strcmp(mode, "init")) {
		MPI_Init(&argc, &argv);
		MPI_Query_thread(&provided);
	} else {
		MPI_Init_thread(&argc, &argv, required, &provided);
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
	mt_phase = "argv";
	CHECK(argc == 4 && !strcmp(argv[2], "arg1") && !strcmp(argv[3], "two words"),
	      "arguments not passed through: argc %d", argc);
	test_running(required, provided);
	test_time();
	test_alloc();
	int total = 0;
	MPI_Allreduce(&mt_errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Finalize();
	MPI_Finalized(&flag);
	if (flag != 1)
		fprintf(stderr, "FAIL rank %d: Finalized after Finalize is %d\n", mt_rank, flag),
			mt_errors++;
	flag = -1;
	MPI_Initialized(&flag);
	if (flag != 1)
		fprintf(stderr, "FAIL rank %d: Initialized after Finalize is %d\n", mt_rank, flag),
			mt_errors++;
	if (mt_rank == 0)
		printf("env %s: %d ranks: provided %d: %s\n", mode, mt_size, provided,
		       total || mt_errors ? "FAIL" : "ok");
	return total || mt_errors ? 1 : 0;
}
