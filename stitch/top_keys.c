// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* top_keys.c: distributedInfo and deviceProperties of the inputs, for the stitched output. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_tree.h>

#include "stitch/top_keys.h"

/*
 * The end of the JSON value starting at s[0] within len bytes: one past its last byte at
 * depth 0, or at the first top-level ',' (values are compact: no whitespace between).
 */
static size_t value_end(const char *s, size_t len)
{
	bool in_string = false;
	int depth = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		char c = s[i];

		if (in_string) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = false;
		} else if (c == '"') {
			in_string = true;
		} else if (c == '{' || c == '[') {
			depth++;
		} else if (c == '}' || c == ']') {
			if (--depth < 0)
				return i;
		} else if (c == ',' && !depth) {
			return i;
		}
	}
	return i;
}

/* json with a space after each key's colon: HTA's rank pattern is "rank":\s+(\d+) */
static char *spaced(const char *json, size_t len)
{
	char *out = malloc(2 * len + 1), *o = out;
	bool in_string = false;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		char c = json[i];

		*o++ = c;
		if (in_string) {
			if (c == '\\' && i + 1 < len)
				*o++ = json[++i];
			else if (c == '"')
				in_string = false;
		} else if (c == '"') {
			in_string = true;
		} else if (c == ':' || c == ',') {
			*o++ = ' ';
		}
	}
	*o = '\0';
	return out;
}

/* elem's integer "id": true when it has one */
static bool device_id(const char *elem, size_t len, int64_t *id)
{
	static const char *id_path[] = { "id", NULL };
	char *text = strndup(elem, len);
	yajl_val v, x;
	bool ok = false;

	if (!text)
		return false;
	v = yajl_tree_parse(text, NULL, 0);
	free(text);
	x = v ? yajl_tree_get(v, id_path, yajl_t_number) : NULL;
	if (x && YAJL_IS_INTEGER(x)) {
		*id = YAJL_GET_INTEGER(x);
		ok = true;
	}
	yajl_tree_free(v);
	return ok;
}

static bool id_known(const struct gs_top_keys *k, int64_t id)
{
	for (size_t i = 0; i < k->nr_ids; i++)
		if (k->ids[i] == id)
			return true;
	return false;
}

/* appends one array element (and its id when it has one) */
static int add_device(struct gs_top_keys *k, const char *elem, size_t len)
{
	bool has_id;
	int64_t id;
	char *devs;

	has_id = device_id(elem, len, &id);
	if (has_id && id_known(k, id))
		return 0;
	if (has_id) {
		int64_t *ids = realloc(k->ids, (k->nr_ids + 1) * sizeof(*ids));

		if (!ids)
			return -ENOMEM;
		k->ids = ids;
		k->ids[k->nr_ids++] = id;
	}
	devs = realloc(k->devs, k->devs_len + len + 2);
	if (!devs)
		return -ENOMEM;
	k->devs = devs;
	if (k->devs_len)
		k->devs[k->devs_len++] = ',';
	memcpy(k->devs + k->devs_len, elem, len);
	k->devs_len += len;
	k->devs[k->devs_len] = '\0';
	return 0;
}

static int add_devices(struct gs_top_keys *k, const char *json, size_t len)
{
	size_t pos = 1; /* past '[' */
	int err;

	while (pos < len && json[pos] != ']') {
		size_t end = pos + value_end(json + pos, len - pos);

		if (end == pos)
			return 0; /* not the array trace_parse hands over: nothing more taken */
		err = add_device(k, json + pos, end - pos);
		if (err)
			return err;
		pos = end < len && json[end] == ',' ? end + 1 : end;
	}
	return 0;
}

int gs_top_keys__add(struct gs_top_keys *k, const char *key, const char *json, size_t len)
{
	if (!strcmp(key, "distributedInfo") && !k->dist && len && json[0] == '{') {
		k->dist = spaced(json, len);
		return k->dist ? 0 : -ENOMEM;
	}
	if (!strcmp(key, "deviceProperties") && len && json[0] == '[') {
		k->has_devices = true;
		return add_devices(k, json, len);
	}
	return 0;
}

void gs_top_keys__write(const struct gs_top_keys *k, struct gs_json *j)
{
	if (k->has_devices) {
		gs_json__begin_array(j, "deviceProperties");
		if (k->devs)
			gs_json__raw(j, NULL, k->devs); /* elements, comma-separated */
		gs_json__end_array(j);
	}
	if (k->dist)
		gs_json__raw(j, "distributedInfo", k->dist);
}

void gs_top_keys__free(struct gs_top_keys *k)
{
	free(k->dist);
	free(k->devs);
	free(k->ids);
	memset(k, 0, sizeof(*k));
}
