/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* addr_map.h: a hash map from (pid, 64-bit address or handle) to a 64-bit value. */
#ifndef GS_ADDR_MAP_H
#define GS_ADDR_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct gs_addr_map;

struct gs_addr_map *gs_addr_map__new(void);
void gs_addr_map__free(struct gs_addr_map *m);
/* Inserts or replaces. Returns 0 or -ENOMEM. */
int gs_addr_map__set(struct gs_addr_map *m, pid_t pid, uint64_t key, uint64_t value);
bool gs_addr_map__get(const struct gs_addr_map *m, pid_t pid, uint64_t key, uint64_t *value);
/* Removes every entry of pid, handing each value to drop (may be NULL) first. */
void gs_addr_map__forget_pid(struct gs_addr_map *m, pid_t pid, void (*drop)(uint64_t value));
/* Hands every value to drop, e.g. to free owned pointers before gs_addr_map__free(). */
void gs_addr_map__for_each_value(struct gs_addr_map *m, void (*drop)(uint64_t value));
size_t gs_addr_map__count(const struct gs_addr_map *m);

#endif /* GS_ADDR_MAP_H */
