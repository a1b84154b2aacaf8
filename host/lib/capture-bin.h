/* SPDX-License-Identifier: GPL-2.0 */
/*
 * capture-bin.h - the layout of samples.bin (capture format version 2,
 * host/doc/capture-format.md), shared by the writer (capture.c) and the
 * reader (capture-read.c) so that it is written down once. Not installed.
 *
 *   header, 32 bytes:  "SBRIGSMP", u32 record format (1), u32 record size
 *                      (32), u32 flags (0), 12 bytes zero
 *   record, 32 bytes:  i64 t_ns, i64 power_uW, i32 current_uA, i32 bus_uV,
 *                      i32 shunt_nV, u32 reserved (0)
 *
 * Everything little-endian. The encoders and decoders below work on
 * unaligned bytes (memcpy) and compile to plain loads and stores on a
 * little-endian host.
 */
#ifndef SBRIG_CAPTURE_BIN_H
#define SBRIG_CAPTURE_BIN_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <sbrig/records.h>

#define CAPBIN_NAME		"samples.bin"
#define CAPBIN_MAGIC		"SBRIGSMP"
#define CAPBIN_MAGIC_LEN	8
#define CAPBIN_HEADER_SIZE	32
#define CAPBIN_RECORD_FORMAT	1
#define CAPBIN_RECORD_SIZE	32

/* header fields: offsets */
#define CAPBIN_OFF_FORMAT	8
#define CAPBIN_OFF_RECSIZE	12
#define CAPBIN_OFF_FLAGS	16

/* record fields: offsets */
#define CAPBIN_REC_T_NS		0
#define CAPBIN_REC_POWER_UW	8
#define CAPBIN_REC_CURRENT_UA	16
#define CAPBIN_REC_BUS_UV	20
#define CAPBIN_REC_SHUNT_NV	24
#define CAPBIN_REC_RESERVED	28

static inline void capbin_put32(unsigned char *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void capbin_put64(unsigned char *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof(v));
}

static inline uint32_t capbin_get32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static inline uint64_t capbin_get64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

/* The 32-byte header of a new samples.bin into @p. */
static inline void capbin_header(unsigned char p[CAPBIN_HEADER_SIZE])
{
	memset(p, 0, CAPBIN_HEADER_SIZE);
	memcpy(p, CAPBIN_MAGIC, CAPBIN_MAGIC_LEN);
	capbin_put32(p + CAPBIN_OFF_FORMAT, CAPBIN_RECORD_FORMAT);
	capbin_put32(p + CAPBIN_OFF_RECSIZE, CAPBIN_RECORD_SIZE);
	capbin_put32(p + CAPBIN_OFF_FLAGS, 0);
}

/* @n samples into @n records at @p (n * CAPBIN_RECORD_SIZE bytes). */
static inline void capbin_encode(unsigned char *p, const struct sbrig_sample *s,
				 size_t n)
{
	for (size_t i = 0; i < n; i++, p += CAPBIN_RECORD_SIZE) {
		capbin_put64(p + CAPBIN_REC_T_NS, (uint64_t)s[i].t_ns);
		capbin_put64(p + CAPBIN_REC_POWER_UW, (uint64_t)s[i].power_uW);
		capbin_put32(p + CAPBIN_REC_CURRENT_UA, (uint32_t)s[i].current_uA);
		capbin_put32(p + CAPBIN_REC_BUS_UV, (uint32_t)s[i].bus_uV);
		capbin_put32(p + CAPBIN_REC_SHUNT_NV, (uint32_t)s[i].shunt_nV);
		capbin_put32(p + CAPBIN_REC_RESERVED, 0);
	}
}

/*
 * @n records at @p into @s. @p may be @s itself (sizeof(struct
 * sbrig_sample) is the record size: each record is decoded in its own
 * slot, all of it loaded before the slot is stored). The reserved field is
 * ignored; the struct's padding comes out zero, so decoded samples
 * compare whole with memcmp(). The slot is stored field by field (no
 * temporary struct copied with wider loads: that stalls on store
 * forwarding and made the decode three times slower).
 */
static inline void capbin_decode(struct sbrig_sample *s, const void *p,
				 size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++, b += CAPBIN_RECORD_SIZE) {
		int64_t t = (int64_t)capbin_get64(b + CAPBIN_REC_T_NS);
		int64_t pw = (int64_t)capbin_get64(b + CAPBIN_REC_POWER_UW);
		int32_t c = (int32_t)capbin_get32(b + CAPBIN_REC_CURRENT_UA);
		int32_t v = (int32_t)capbin_get32(b + CAPBIN_REC_BUS_UV);
		int32_t sh = (int32_t)capbin_get32(b + CAPBIN_REC_SHUNT_NV);

		memset(&s[i], 0, sizeof(s[i]));
		s[i].t_ns = t;
		s[i].power_uW = pw;
		s[i].current_uA = c;
		s[i].bus_uV = v;
		s[i].shunt_nV = sh;
	}
}

#endif /* SBRIG_CAPTURE_BIN_H */
