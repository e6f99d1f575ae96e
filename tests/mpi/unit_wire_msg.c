/* SPDX-License-Identifier: MIT */
/*
 * Single-process unit test of vd_msg_parse (src/mpi/engine.h): the
 * header of a ring message, which another process wrote, is read only as
 * far as its type and length allow, and malformed ones are refused --
 * short ones, other versions, an EAGER_TINY carrying flags.
 * Exit 0 pass, 1 fail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

static int failed;

#define EXPECT(cond, ...)                                        \
	do {                                                     \
		if (!(cond)) {                                   \
			failed++;                                \
			printf("FAIL %s:%d: ", __FILE__, __LINE__); \
			printf(__VA_ARGS__);                     \
			printf("\n");                            \
		}                                                \
	} while (0)

/* A message of exactly len bytes on the heap (a sanitizer build sees
 * any read past it): h's bytes first, the rest 0xAB, which the parser
 * must never take for header fields.  Freed by parse(). */
static uint8_t *build(size_t len, const struct vd_msg *h)
{
	uint8_t *buf = malloc(len ? len : 1);

	if (!buf) {
		perror("malloc");
		exit(1);
	}
	memset(buf, 0xAB, len);
	memcpy(buf, h, len < sizeof(*h) ? len : sizeof(*h));
	return buf;
}

static bool parse(uint8_t *buf, size_t len, struct vd_msg *m, size_t *hlen)
{
	bool ok = vd_msg_parse(buf, len, m, hlen);

	free(buf);
	return ok;
}

static struct vd_msg head(unsigned type, unsigned flags)
{
	return (struct vd_msg){ .type = (uint8_t)type, .flags = (uint8_t)flags,
				.version = VD_MSG_VERSION, .ctx = 7, .src = 3, .tag = 42,
				.sreq = 11, .rreq = 12, .len = 99, .addr = 0x1000, .mh = 5,
				.off = 4096 };
}

static void test_tiny(void)
{
	struct vd_msg h = head(VD_MSG_EAGER_TINY, 0), m;
	size_t hlen = 0;

	EXPECT(parse(build(VD_MSG_HEAD + 40, &h), VD_MSG_HEAD + 40, &m, &hlen),
	       "a tiny eager with 40 bytes");
	EXPECT(hlen == VD_MSG_HEAD, "tiny header length %zu", hlen);
	EXPECT(m.type == VD_MSG_EAGER && m.len == 40, "type %u len %llu", m.type,
	       (unsigned long long)m.len);
	EXPECT(m.ctx == 7 && m.src == 3 && m.tag == 42, "ctx/src/tag");
	EXPECT(m.sreq == 0 && m.rreq == 0 && m.addr == 0,
	       "fields past the head came from the payload");

	EXPECT(parse(build(VD_MSG_HEAD, &h), VD_MSG_HEAD, &m, &hlen) && m.len == 0,
	       "a tiny eager of 0 bytes");
	EXPECT(!parse(build(VD_MSG_HEAD - 1, &h), VD_MSG_HEAD - 1, &m, &hlen),
	       "15 bytes taken for a head");
	EXPECT(!parse(build(0, &h), 0, &m, &hlen), "an empty message taken for a head");

	for (unsigned f = 1; f < 256; f <<= 1) {
		h = head(VD_MSG_EAGER_TINY, f);
		EXPECT(!parse(build(VD_MSG_HEAD + 8, &h), VD_MSG_HEAD + 8, &m, &hlen),
		       "a tiny eager with flag %#x", f);
	}
}

/* Every type's header length, as the wire defines it (not as
 * vd_msg_hdr_len says: a change there must fail here). */
static const struct {
	unsigned type;
	size_t len;
} wire_len[] = {
	{ VD_MSG_EAGER, 32 }, { VD_MSG_RTS_GET, 48 }, { VD_MSG_RTS_RNDV, 32 },
	{ VD_MSG_CTS, 48 },   { VD_MSG_DONE, 32 },    { VD_MSG_SYNC_ACK, 32 },
	{ VD_MSG_RMA, 32 },   { VD_MSG_PART, 32 },    { 0, 32 }, { 200, 32 },
};

static void test_lengths(void)
{
	for (size_t i = 0; i < sizeof(wire_len) / sizeof(wire_len[0]); i++) {
		unsigned type = wire_len[i].type;
		struct vd_msg h = head(type, VD_MSGF_SYNC), m;
		size_t want = wire_len[i].len, hlen = 0;

		EXPECT(!parse(build(want - 1, &h), want - 1, &m, &hlen),
		       "type %u: %zu bytes accepted", type, want - 1);
		EXPECT(parse(build(want, &h), want, &m, &hlen) && hlen == want,
		       "type %u: %zu bytes (header %zu)", type, want, hlen);
		EXPECT(m.type == type && m.flags == VD_MSGF_SYNC && m.len == 99,
		       "type %u: fields", type);
		if (want == sizeof(struct vd_msg))
			EXPECT(m.addr == 0x1000 && m.mh == 5 && m.off == 4096, "type %u: tail",
			       type);
		else
			EXPECT(m.addr == 0 && m.mh == 0 && m.off == 0,
			       "type %u: tail read from the payload", type);
	}
}

static void test_version(void)
{
	struct vd_msg h = head(VD_MSG_EAGER_TINY, 0), m;
	size_t hlen;

	h.version = VD_MSG_VERSION + 1;
	EXPECT(!parse(build(64, &h), 64, &m, &hlen), "another version accepted");
	h = head(VD_MSG_EAGER, 0);
	h.version = 0;
	EXPECT(!parse(build(64, &h), 64, &m, &hlen), "version 0 accepted");
}

int main(void)
{
	test_tiny();
	test_lengths();
	test_version();
	printf("unit_wire_msg: %s (%d failed checks)\n", failed ? "FAILED" : "ok", failed);
	return failed ? 1 : 0;
}
