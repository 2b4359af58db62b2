// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* links.c: attach uprobes with a bpf_cookie and keep the links. */
#include <errno.h>
#include <stdlib.h>
#include <bpf/libbpf.h>
#include "user/links.h"

struct gs_links {
	struct bpf_link **links;
	size_t nr, cap;
};

struct gs_links *gs_links__new(void)
{
	return calloc(1, sizeof(struct gs_links));
}

void gs_links__free(struct gs_links *links)
{
	if (!links)
		return;
	/* newest first: entry probes were attached after their return probes */
	while (links->nr)
		bpf_link__destroy(links->links[--links->nr]);
	free(links->links);
	free(links);
}

int gs_links__attach_uprobe(struct gs_links *links, struct bpf_program *prog, pid_t pid,
			    const char *path, uint64_t off, bool retprobe, uint64_t cookie)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = retprobe, .bpf_cookie = cookie);
	struct bpf_link *link;

	if (links->nr == links->cap) {
		size_t cap = links->cap ? links->cap * 2 : 64;
		struct bpf_link **grown = realloc(links->links, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		links->links = grown;
		links->cap = cap;
	}
	link = bpf_program__attach_uprobe_opts(prog, pid, path, (size_t)off, &opts);
	if (!link)
		return -errno;
	links->links[links->nr++] = link;
	return 0;
}

size_t gs_links__count(const struct gs_links *links)
{
	return links->nr;
}
