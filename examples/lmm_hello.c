/* SPDX-License-Identifier: MIT */
/*
 * lmm_hello: lock one buffer twice with the Locked Memory Manager and look
 * at what it reports.  Locking stacks: after the first unlock the pages are
 * still locked by the second registration.
 *
 *   cc lmm_hello.c $(pkg-config --cflags --libs viaduct) -o lmm_hello
 */
#include <viaduct/lmm.h>
#include <viaduct/viaduct.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_BYTES (3 * 4096 + 100) /* deliberately not page-aligned */
#define MAX_PAGES 16

/* Print the error in viaduct's words and say whether the call failed. */
static int failed(const char *what, int err)
{
	if (err)
		fprintf(stderr, "%s: %s\n", what, viaduct_strerror(err));
	return err != 0;
}

static int show_pages(lmm_handle_t h)
{
	uint64_t pages[MAX_PAGES];
	size_t n, i;
	unsigned flags = 0;

	if (failed("lmm_get_pages",
		   lmm_get_pages(h, pages, MAX_PAGES, &n, &flags)))
		return -1;
	printf("  %zu pages (%s addresses):", n,
	       flags & LMM_PAGES_VIRTUAL ? "virtual" : "physical");
	for (i = 0; i < n && i < MAX_PAGES; i++)
		printf(" 0x%" PRIx64, pages[i]);
	printf("\n");
	return 0;
}

static int show_blocks(lmm_handle_t h)
{
	struct lmm_block blocks[MAX_PAGES];
	size_t n, i;

	if (failed("lmm_get_blocks",
		   lmm_get_blocks(h, blocks, MAX_PAGES, &n, NULL)))
		return -1;
	printf("  %zu contiguous block(s):", n);
	for (i = 0; i < n && i < MAX_PAGES; i++)
		printf(" [0x%" PRIx64 " +%" PRIu64 "]", blocks[i].addr,
		       blocks[i].length);
	printf("\n");
	return 0;
}

static void show_stats(const char *when)
{
	struct lmm_stats st;

	if (failed("lmm_get_stats", lmm_get_stats(&st)))
		return;
	printf("%s: %" PRIu64 " registrations, %" PRIu64 " bytes locked, %" PRIu64
	       " mlock / %" PRIu64 " munlock calls\n",
	       when, st.registrations, st.locked_bytes, st.mlock_calls,
	       st.munlock_calls);
}

int main(void)
{
	lmm_handle_t first, second;
	char *buf = malloc(BUF_BYTES);

	printf("viaduct %s\n", viaduct_version());
	if (!buf)
		return EXIT_FAILURE;
	memset(buf, 'v', BUF_BYTES);

	if (failed("lock #1", lmm_lock_area(buf, BUF_BYTES, &first)))
		return EXIT_FAILURE;
	if (failed("lock #2", lmm_lock_area(buf, BUF_BYTES, &second)))
		return EXIT_FAILURE;
	printf("locked %d bytes at %p twice\n", BUF_BYTES, (void *)buf);
	if (show_pages(first) || show_blocks(first))
		return EXIT_FAILURE;
	show_stats("after two locks");

	if (failed("unlock #1", lmm_unlock_area(first)))
		return EXIT_FAILURE;
	show_stats("after one unlock (pages stay locked)");

	/* A released handle is an error, never a crash. */
	printf("unlock #1 again: %s\n",
	       viaduct_strerror(lmm_unlock_area(first)));

	if (failed("unlock #2", lmm_unlock_area(second)))
		return EXIT_FAILURE;
	show_stats("after both unlocks");
	lmm_cleanup();
	free(buf);
	return EXIT_SUCCESS;
}
