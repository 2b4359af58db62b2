// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* event_list.c: the daemon refuses an event list up front that its recordings would refuse. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "profilers/cuda/api.h"
#include "profilers/daemon/event_list.h"

#define SHOW_MAX 32

_Static_assert(sizeof(GS_RECORD_EVENT_NAMES) > sizeof(GS_EVENT_FAMILY_NAMES),
	       "record's names are the CUDA families, cpu, gpu and nvtx");

/* One name of the list, as `record -e` reads it (profilers/cmd/record.c parse_events). */
static bool is_event(const char *name, size_t len)
{
	char one[64];
	uint32_t families;

	if (!len || len >= sizeof(one))
		return false;
	memcpy(one, name, len);
	one[len] = '\0';
	return !strcmp(one, "cpu") || !strcmp(one, "gpu") || !strcmp(one, "nvtx") ||
	       !gs_parse_event_families(one, &families);
}

int gs_daemon_check_events(const char *list, size_t max, char *msg, size_t msg_len)
{
	const char *p = list;
	char shown[SHOW_MAX + 4];
	size_t len, i;

	if (!*list) {
		snprintf(msg, msg_len, "an empty event list (%s)", GS_RECORD_EVENT_NAMES);
		return -EINVAL;
	}
	if (strlen(list) >= max) {
		snprintf(msg, msg_len, "event list longer than %zu bytes", max - 1);
		return -EINVAL;
	}
	for (;; p += len + 1) {
		len = strcspn(p, ",");
		if (!is_event(p, len))
			break;
		if (!p[len])
			return 0;
	}
	for (i = 0; i < len && i < SHOW_MAX; i++)
		shown[i] = p[i] >= 0x20 && p[i] < 0x7f ? p[i] : '?';
	if (i < len) {
		memcpy(shown + i, "...", 3);
		i += 3;
	}
	shown[i] = '\0';
	snprintf(msg, msg_len, "'%s' is not an event (%s)", shown, GS_RECORD_EVENT_NAMES);
	return -EINVAL;
}
