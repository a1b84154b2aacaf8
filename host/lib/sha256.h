/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sha256.h - a small SHA-256 (FIPS 180-4) for provenance hashes of rig
 * configs and scenarios. Private to libsbrig.
 */
#ifndef SBRIG_SHA256_H
#define SBRIG_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SBRIG_SHA256_LEN 32
/* Lowercase hex digest plus NUL. */
#define SBRIG_SHA256_HEX_LEN (2 * SBRIG_SHA256_LEN + 1)

/**
 * struct sbrig_sha256 - running hash state (caller-owned, no resources)
 * @h: chaining value
 * @len: bytes hashed so far
 * @buf: partial block
 * @nbuf: bytes in @buf
 */
struct sbrig_sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
	size_t nbuf;
};

/** sbrig_sha256_init() - start a hash */
void sbrig_sha256_init(struct sbrig_sha256 *ctx);

/** sbrig_sha256_update() - hash @n bytes at @data (any split is fine) */
void sbrig_sha256_update(struct sbrig_sha256 *ctx, const void *data, size_t n);

/** sbrig_sha256_final() - finish; @ctx must be re-initialised to reuse it */
void sbrig_sha256_final(struct sbrig_sha256 *ctx,
			uint8_t out[SBRIG_SHA256_LEN]);

/**
 * sbrig_sha256_hex() - one-shot hash of a buffer as lowercase hex
 * @data: bytes
 * @n: their count
 * @hex: out, SBRIG_SHA256_HEX_LEN bytes (NUL-terminated)
 */
void sbrig_sha256_hex(const void *data, size_t n,
		      char hex[SBRIG_SHA256_HEX_LEN]);

#endif /* SBRIG_SHA256_H */
