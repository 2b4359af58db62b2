// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* ctl_socket.c: unix stream socket with SO_PEERCRED, one request per connection. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "user/ctl_socket.h"
#include "user/log.h"

#define REQUEST_MAX 1024
/* A client that connects and says nothing must not stall the daemon's event loop long. */
#define REQUEST_TIMEOUT_MS 500

struct gs_ctl_server {
	int fd;
	char *path;
};

static int fill_addr(struct sockaddr_un *addr, const char *path)
{
	memset(addr, 0, sizeof(*addr));
	addr->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(addr->sun_path)) {
		gs_err("control socket %s: path too long", path);
		return -ENAMETOOLONG;
	}
	strcpy(addr->sun_path, path);
	return 0;
}

/* Removes a socket left by an earlier daemon; refuses to touch anything else. */
static int remove_stale(const char *path)
{
	struct stat st;

	if (lstat(path, &st)) {
		if (errno == ENOENT)
			return 0;
		gs_err("control socket %s: %s", path, strerror(errno));
		return -errno;
	}
	if (!S_ISSOCK(st.st_mode)) {
		gs_err("control socket %s: exists and is not a socket", path);
		return -EEXIST;
	}
	if (unlink(path)) {
		gs_err("control socket %s: %s", path, strerror(errno));
		return -errno;
	}
	return 0;
}

int gs_ctl_server__open(struct gs_ctl_server **out, const char *path)
{
	struct sockaddr_un addr;
	struct gs_ctl_server *s;
	int err;

	err = fill_addr(&addr, path);
	if (err)
		return err;
	err = remove_stale(path);
	if (err)
		return err;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	s->path = strdup(path);
	if (s->fd < 0 || !s->path) {
		err = s->path ? -errno : -ENOMEM;
		goto out_err;
	}
	if (bind(s->fd, (struct sockaddr *)&addr, sizeof(addr)) || listen(s->fd, 16)) {
		err = -errno;
		goto out_err;
	}
	/* non-owners may connect: each request is checked against SO_PEERCRED */
	if (chmod(path, 0666)) {
		err = -errno;
		goto out_err;
	}
	*out = s;
	return 0;
out_err:
	gs_err("control socket %s: %s", path, strerror(-err));
	gs_ctl_server__free(s);
	return err;
}

int gs_ctl_server__fd(const struct gs_ctl_server *s)
{
	return s->fd;
}

/* Reads one line (without its newline) within the timeout; false if none came. */
static bool read_request(int fd, char *buf, size_t len)
{
	struct timeval tv = { .tv_usec = REQUEST_TIMEOUT_MS * 1000 };
	size_t used = 0;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (used + 1 < len) {
		ssize_t n = read(fd, buf + used, len - 1 - used);
		char *nl;

		if (n <= 0)
			break;
		used += (size_t)n;
		buf[used] = '\0';
		nl = strchr(buf, '\n');
		if (nl) {
			*nl = '\0';
			return true;
		}
	}
	buf[used] = '\0';
	return used > 0 && used + 1 < len; /* EOF after a line without newline is fine */
}

static void serve_one(int fd, gs_ctl_handler_fn handler, void *ctx)
{
	struct ucred cred;
	socklen_t cred_len = sizeof(cred);
	char request[REQUEST_MAX];
	struct gs_ctl_peer peer;
	FILE *out;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len)) {
		gs_warn("control socket: no peer credentials: %s", strerror(errno));
		close(fd);
		return;
	}
	peer = (struct gs_ctl_peer){ .pid = cred.pid, .uid = cred.uid, .gid = cred.gid };
	out = fdopen(fd, "w");
	if (!out) {
		close(fd);
		return;
	}
	if (read_request(fd, request, sizeof(request)))
		handler(ctx, &peer, request, out);
	else
		fprintf(out, "error: no request line (at most %d bytes) within %d ms\n",
			REQUEST_MAX - 1, REQUEST_TIMEOUT_MS);
	fclose(out);
}

int gs_ctl_server__serve(struct gs_ctl_server *s, gs_ctl_handler_fn handler, void *ctx)
{
	int served = 0;

	for (;;) {
		int fd = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				gs_warn("control socket: accept: %s", strerror(errno));
			return served;
		}
		serve_one(fd, handler, ctx);
		served++;
	}
}

void gs_ctl_server__free(struct gs_ctl_server *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	if (s->path)
		unlink(s->path);
	free(s->path);
	free(s);
}

int gs_ctl_request(const char *path, const char *request, FILE *out)
{
	struct sockaddr_un addr;
	char buf[4096];
	ssize_t n;
	int fd, err;

	err = fill_addr(&addr, path);
	if (err)
		return err;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		err = -errno;
		gs_err("cannot reach the daemon at %s: %s", path, strerror(-err));
		if (fd >= 0)
			close(fd);
		return err;
	}
	if (dprintf(fd, "%s\n", request) < 0) {
		err = -errno;
		gs_err("sending to %s: %s", path, strerror(-err));
		close(fd);
		return err;
	}
	shutdown(fd, SHUT_WR);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, (size_t)n, out);
	err = n < 0 ? -errno : 0;
	if (err)
		gs_err("reading from %s: %s", path, strerror(-err));
	close(fd);
	return err;
}
