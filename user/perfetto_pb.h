/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* perfetto_pb.h: a tiny protobuf wire-format writer (varints, nested length-delimited fields). */
#ifndef GS_PERFETTO_PB_H
#define GS_PERFETTO_PB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * One message built in memory (a trace packet: bounded by the row it encodes), then handed
 * out whole. Nested messages get their exact, shortest length: gs_pb__end() measures the
 * body and moves it right by the length's size (packets are small, the move is cheap).
 * A failed allocation sets oom and makes every later call a no-op.
 */
#define GS_PB_DEPTH 16

struct gs_pb {
	uint8_t *buf;
	size_t len, cap;
	size_t open[GS_PB_DEPTH]; /* where each open nested message's body starts */
	int depth;
	bool oom;
};

void gs_pb__varint(struct gs_pb *pb, uint32_t field, uint64_t v);
void gs_pb__int64(struct gs_pb *pb, uint32_t field, int64_t v); /* two's complement varint */
void gs_pb__fixed64(struct gs_pb *pb, uint32_t field, uint64_t v);
void gs_pb__double(struct gs_pb *pb, uint32_t field, double v);
void gs_pb__bytes(struct gs_pb *pb, uint32_t field, const void *data, size_t len);
void gs_pb__string(struct gs_pb *pb, uint32_t field, const char *s);
/* A varint with no tag (the body of a packed repeated field). */
void gs_pb__raw_varint(struct gs_pb *pb, uint64_t v);
/* Opens a nested message (or packed field) under field; close it with gs_pb__end(). */
void gs_pb__begin(struct gs_pb *pb, uint32_t field);
void gs_pb__end(struct gs_pb *pb);
/* Empties the buffer (keeps its memory); frees it. */
void gs_pb__reset(struct gs_pb *pb);
void gs_pb__release(struct gs_pb *pb);
/* Bytes the varint encoding of v takes. */
size_t gs_pb_varint_len(uint64_t v);

#endif /* GS_PERFETTO_PB_H */
