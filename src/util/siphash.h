/* SPDX-License-Identifier: MIT */
/*
 * SipHash-2-4 (Aumasson and Bernstein): a keyed hash that nobody without
 * the 128-bit key can forge or predict.  It authenticates the ofi
 * handshake and drives vd_random64.  No library we depend on has one.
 */
#ifndef VIADUCT_UTIL_SIPHASH_H
#define VIADUCT_UTIL_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t vd_siphash24(const uint64_t key[2], const void *data, size_t len);

#endif
