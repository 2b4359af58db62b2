// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* perfetto_pb.c: protobuf wire format by hand: no .proto compiler, no runtime library. */
#include <stdlib.h>
#include <string.h>
#include "user/perfetto_pb.h"

enum { WIRE_VARINT = 0, WIRE_I64 = 1, WIRE_LEN = 2 };

static bool reserve(struct gs_pb *pb, size_t more)
{
	size_t cap = pb->cap ? pb->cap : 256;
	uint8_t *grown;

	if (pb->oom)
		return false;
	if (more <= pb->cap - pb->len)
		return true;
	while (more > cap - pb->len) {
		if (cap > SIZE_MAX / 2)
			goto out_oom;
		cap *= 2;
	}
	grown = realloc(pb->buf, cap);
	if (!grown)
		goto out_oom;
	pb->buf = grown;
	pb->cap = cap;
	return true;
out_oom:
	pb->oom = true;
	return false;
}

size_t gs_pb_varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static void put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p = (uint8_t)v;
}

void gs_pb__raw_varint(struct gs_pb *pb, uint64_t v)
{
	size_t n = gs_pb_varint_len(v);

	if (!reserve(pb, n))
		return;
	put_varint(pb->buf + pb->len, v);
	pb->len += n;
}

static void tag(struct gs_pb *pb, uint32_t field, unsigned int wire)
{
	gs_pb__raw_varint(pb, ((uint64_t)field << 3) | wire);
}

void gs_pb__varint(struct gs_pb *pb, uint32_t field, uint64_t v)
{
	tag(pb, field, WIRE_VARINT);
	gs_pb__raw_varint(pb, v);
}

void gs_pb__int64(struct gs_pb *pb, uint32_t field, int64_t v)
{
	gs_pb__varint(pb, field, (uint64_t)v);
}

void gs_pb__double(struct gs_pb *pb, uint32_t field, double v)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	gs_pb__fixed64(pb, field, bits);
}

void gs_pb__fixed64(struct gs_pb *pb, uint32_t field, uint64_t bits)
{
	tag(pb, field, WIRE_I64);
	if (!reserve(pb, 8))
		return;
	for (int i = 0; i < 8; i++) /* little-endian, whatever the host */
		pb->buf[pb->len++] = (uint8_t)(bits >> (8 * i));
}

void gs_pb__bytes(struct gs_pb *pb, uint32_t field, const void *data, size_t len)
{
	tag(pb, field, WIRE_LEN);
	gs_pb__raw_varint(pb, len);
	if (!len || !reserve(pb, len))
		return;
	memcpy(pb->buf + pb->len, data, len);
	pb->len += len;
}

void gs_pb__string(struct gs_pb *pb, uint32_t field, const char *s)
{
	gs_pb__bytes(pb, field, s, strlen(s));
}

void gs_pb__begin(struct gs_pb *pb, uint32_t field)
{
	tag(pb, field, WIRE_LEN);
	if (pb->depth >= GS_PB_DEPTH) { /* a bug of the caller's: nothing sane to write */
		pb->oom = true;
		return;
	}
	pb->open[pb->depth++] = pb->len;
}

void gs_pb__end(struct gs_pb *pb)
{
	size_t start, body, n;

	if (pb->depth <= 0 || pb->oom)
		return;
	start = pb->open[--pb->depth];
	body = pb->len - start;
	n = gs_pb_varint_len(body);
	if (!reserve(pb, n))
		return;
	memmove(pb->buf + start + n, pb->buf + start, body);
	put_varint(pb->buf + start, body);
	pb->len += n;
}

void gs_pb__reset(struct gs_pb *pb)
{
	pb->len = 0;
	pb->depth = 0;
	pb->oom = false;
}

void gs_pb__release(struct gs_pb *pb)
{
	free(pb->buf);
	*pb = (struct gs_pb){ 0 };
}
