/* SPDX-License-Identifier: MIT */
/*
 * Single-process unit test of vd_msg_parse (src/mpi/engine.h): the
 * header of a ring message, which another process wrote, is read only as
 * far as its type and length allow, and malformed ones are refused --
 * short ones, other versions, an EAGER_TINY carrying flags.
 * Exit 0 pass, 1 fail.
 */
#include <stdio.h>
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

/* A buffer of len bytes, the header of `type` at its start, the rest
 * 0xAB: what the parser must never take for header fields. */
static void build(uint8_t *buf, size_t len, const struct vd_msg *h)
{
	memset(buf, 0xAB, len);
	memcpy(buf, h, len < sizeof(*h) ? len : sizeof(*h));
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
	uint8_t buf[64];
	struct vd_msg h = head(VD_MSG_EAGER_TINY, 0), m;
	size_t hlen = 0;

	build(buf, VD_MSG_HEAD + 40, &h);
	EXPECT(vd_msg_parse(buf, VD_MSG_HEAD + 40, &m, &hlen), "a tiny eager with 40 bytes");
	EXPECT(hlen == VD_MSG_HEAD, "tiny header length %zu", hlen);
	EXPECT(m.type == VD_MSG_EAGER && m.len == 40, "type %u len %llu", m.type,
	       (unsigned long long)m.len);
	EXPECT(m.ctx == 7 && m.src == 3 && m.tag == 42, "ctx/src/tag");
	EXPECT(m.sreq == 0 && m.rreq == 0 && m.addr == 0,
	       "fields past the head came from the payload");

	EXPECT(vd_msg_parse(buf, VD_MSG_HEAD, &m, &hlen) && m.len == 0, "a tiny eager of 0 bytes");
	EXPECT(!vd_msg_parse(buf, VD_MSG_HEAD - 1, &m, &hlen), "15 bytes taken for a head");

	for (unsigned f = 1; f < 256; f <<= 1) {
		h = head(VD_MSG_EAGER_TINY, f);
		build(buf, VD_MSG_HEAD + 8, &h);
		EXPECT(!vd_msg_parse(buf, VD_MSG_HEAD + 8, &m, &hlen), "a tiny eager with flag %#x", f);
	}
}

static void test_lengths(void)
{
	static const unsigned types[] = { VD_MSG_EAGER, VD_MSG_RTS_GET, VD_MSG_RTS_RNDV,
					  VD_MSG_CTS, VD_MSG_DONE, VD_MSG_SYNC_ACK,
					  VD_MSG_RMA, VD_MSG_PART, 0, 200 };
	uint8_t buf[64];

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct vd_msg h = head(types[i], VD_MSGF_SYNC), m;
		size_t want = vd_msg_hdr_len(types[i]), hlen = 0;

		build(buf, sizeof(buf), &h);
		EXPECT(!vd_msg_parse(buf, want - 1, &m, &hlen), "type %u: %zu bytes accepted",
		       types[i], want - 1);
		EXPECT(vd_msg_parse(buf, want, &m, &hlen) && hlen == want, "type %u: %zu bytes",
		       types[i], want);
		EXPECT(m.type == types[i] && m.flags == VD_MSGF_SYNC && m.len == 99,
		       "type %u: fields", types[i]);
		if (want == sizeof(struct vd_msg))
			EXPECT(m.addr == 0x1000 && m.mh == 5 && m.off == 4096, "type %u: tail",
			       types[i]);
		else
			EXPECT(m.addr == 0 && m.mh == 0 && m.off == 0,
			       "type %u: tail read from the payload", types[i]);
	}
}

static void test_version(void)
{
	uint8_t buf[64];
	struct vd_msg h = head(VD_MSG_EAGER_TINY, 0), m;
	size_t hlen;

	h.version = VD_MSG_VERSION + 1;
	build(buf, sizeof(buf), &h);
	EXPECT(!vd_msg_parse(buf, sizeof(buf), &m, &hlen), "another version accepted");
	h = head(VD_MSG_EAGER, 0);
	h.version = 0;
	build(buf, sizeof(buf), &h);
	EXPECT(!vd_msg_parse(buf, sizeof(buf), &m, &hlen), "version 0 accepted");
}

int main(void)
{
	test_tiny();
	test_lengths();
	test_version();
	printf("unit_wire_msg: %s (%d failed checks)\n", failed ? "FAILED" : "ok", failed);
	return failed ? 1 : 0;
}
