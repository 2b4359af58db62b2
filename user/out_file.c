// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* out_file.c: outputs through a temporary and a rename; gzip by zlib's deflate; real errnos. */
#define ZLIB_CONST
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include "user/log.h"
#include "user/out_file.h"

#define OUT_BUFFER (256 << 10) /* a write(2) per 4 KiB of trace is a lot */
#define GZ_CHUNK   (64 << 10)
#define TMP_TRIES  64

struct gs_out {
	FILE *f;
	int fd;	   /* -1 for stdout */
	int dirfd; /* where tmp and name are; -1 when written in place */
	char *tmp; /* the temporary's name until it is renamed, else NULL */
	char *name;
	char *display;
	unsigned int flags;
	bool gz, z_ready;
	z_stream z;
	unsigned char *zbuf;
	int err;	 /* the first error, a positive errno */
	bool reported;	 /* err was logged */
	bool discard;	 /* giving up: writes go nowhere */
	bool regular;	 /* a regular file: synced, and cut back on failure once renamed */
	bool rollback;	 /* renamed by gs_out__sync(): a failure cuts it back to committed */
	off_t committed; /* its size at the last good sync */
};

static void set_err(struct gs_out *o, int err)
{
	if (!o->err)
		o->err = err > 0 ? err : EIO;
}

static int write_all(struct gs_out *o, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(o->fd, p, len);

		if (n < 0 && errno == EINTR)
			continue; /* SIGINT stops a recording without SA_RESTART: not an error */
		if (n <= 0) {
			set_err(o, n < 0 ? errno : EIO);
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Compresses what is in z.next_in (or finishes the member) and writes it out. */
static int gz_pump(struct gs_out *o, int flush)
{
	int ret;

	do {
		o->z.next_out = o->zbuf;
		o->z.avail_out = GZ_CHUNK;
		ret = deflate(&o->z, flush);
		if (ret == Z_STREAM_ERROR) {
			set_err(o, EIO);
			return -1;
		}
		if (write_all(o, o->zbuf, GZ_CHUNK - o->z.avail_out))
			return -1;
	} while (o->z.avail_out == 0);
	return 0;
}

static ssize_t cookie_write(void *cookie, const char *buf, size_t len)
{
	struct gs_out *o = cookie;
	size_t done = 0;

	if (o->discard)
		return (ssize_t)len;
	if (o->err) {
		errno = o->err;
		return -1;
	}
	if (!o->gz) {
		if (write_all(o, buf, len)) {
			errno = o->err;
			return -1;
		}
		return (ssize_t)len;
	}
	while (done < len) {
		size_t n = len - done < (1U << 30) ? len - done : (1U << 30);

		o->z.next_in = (const Bytef *)buf + done;
		o->z.avail_in = (uInt)n;
		if (gz_pump(o, Z_NO_FLUSH)) {
			errno = o->err;
			return -1;
		}
		done += n;
	}
	return (ssize_t)len;
}

/* The descriptor is closed by gs_out__close(), after its errors were checked. */
static int cookie_close(void *cookie)
{
	return 0;
}

static bool has_gz_suffix(const char *name)
{
	size_t len = name ? strlen(name) : 0;

	return len > 3 && !strcmp(name + len - 3, ".gz");
}

static struct gs_out *out_new(const char *name, const char *display, unsigned int flags)
{
	struct gs_out *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->fd = -1;
	o->dirfd = -1;
	o->flags = flags;
	o->gz = !(flags & GS_OUT_PLAIN) && (flags & GS_OUT_GZIP || has_gz_suffix(name));
	o->display = strdup(display ? display : "stdout");
	o->name = name ? strdup(name) : NULL;
	if (!o->display || (name && !o->name)) {
		free(o->display);
		free(o->name);
		free(o);
		return NULL;
	}
	return o;
}

static void out_free(struct gs_out *o)
{
	if (o->f && o->f != stdout)
		fclose(o->f);
	if (o->fd >= 0)
		close(o->fd);
	if (o->dirfd >= 0)
		close(o->dirfd);
	if (o->z_ready)
		deflateEnd(&o->z);
	free(o->zbuf);
	free(o->tmp);
	free(o->name);
	free(o->display);
	free(o);
}

/* The stdio stream over o->fd: a cookie, so a failed write keeps its errno. */
static int out_stream(struct gs_out *o)
{
	cookie_io_functions_t io = { .write = cookie_write, .close = cookie_close };

	if (o->gz) {
		o->zbuf = malloc(GZ_CHUNK);
		if (!o->zbuf)
			return -ENOMEM;
		/* 15 + 16: a gzip header and trailer, as gzopen() writes */
		if (deflateInit2(&o->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
				 Z_DEFAULT_STRATEGY) != Z_OK)
			return -ENOMEM;
		o->z_ready = true;
	}
	o->f = fopencookie(o, "w", io);
	if (!o->f)
		return -errno;
	setvbuf(o->f, NULL, _IOFBF, OUT_BUFFER);
	return 0;
}

static int out_fail(struct gs_out *o, const char *what, int err)
{
	gs_err("%s: %s%s", o->display, what, strerror(-err));
	out_free(o);
	return err;
}

int gs_tmp_create(int dirfd, const char *name, mode_t mode, char *tmp, size_t len)
{
	static const char chars[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

	for (int i = 0; i < TMP_TRIES; i++) {
		unsigned char rnd[6];
		char sfx[sizeof(rnd) + 1];
		int fd, w;

		if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd)) {
			struct timespec ts;
			uint64_t x;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			x = ((uint64_t)ts.tv_nsec << 16) ^ (uint64_t)getpid() ^ (uint64_t)i << 40;
			memcpy(rnd, &x, sizeof(rnd));
		}
		for (size_t j = 0; j < sizeof(rnd); j++)
			sfx[j] = chars[rnd[j] % (sizeof(chars) - 1)];
		sfx[sizeof(rnd)] = '\0';
		/* a long name is cut: the temporary's must stay within NAME_MAX too */
		w = snprintf(tmp, len, ".%.200s.tmp.%s", name, sfx);
		if (w < 0 || (size_t)w >= len)
			return -ENAMETOOLONG;
		fd = openat(dirfd, tmp,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, mode);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

int gs_tmp_commit(int dirfd, const char *tmp, const char *name, bool noreplace)
{
	int err = 0;

	if (!noreplace) {
		if (renameat(dirfd, tmp, dirfd, name))
			err = -errno;
	} else if (renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE)) {
		err = -errno;
		/* a filesystem without RENAME_NOREPLACE: link(2) refuses an existing name too */
		if (err == -EINVAL) {
			err = linkat(dirfd, tmp, dirfd, name, 0) ? -errno : 0;
			if (!err)
				unlinkat(dirfd, tmp, 0);
		}
	}
	if (err)
		unlinkat(dirfd, tmp, 0);
	return err;
}

/* Creates the temporary beside name in o->dirfd; an existing file lends it mode and owner. */
static int open_temp(struct gs_out *o, mode_t mode, bool like_existing)
{
	char tmp[320];
	struct stat st;
	int fd;

	fd = gs_tmp_create(o->dirfd, o->name, mode, tmp, sizeof(tmp));
	if (fd < 0)
		return fd;
	o->fd = fd;
	o->regular = true;
	o->tmp = strdup(tmp);
	if (!o->tmp) {
		unlinkat(o->dirfd, tmp, 0);
		return -ENOMEM;
	}
	if (like_existing && !fstatat(o->dirfd, o->name, &st, AT_SYMLINK_NOFOLLOW) &&
	    S_ISREG(st.st_mode)) {
		/* replacing a user's file as root keeps it theirs, as writing into it did */
		if (geteuid() == 0 && (st.st_uid || st.st_gid) && fchown(fd, st.st_uid, st.st_gid))
			gs_dbg("%s: keeping its owner: %s", o->display, strerror(errno));
		if (fchmod(fd, st.st_mode & 0777))
			gs_dbg("%s: keeping its mode: %s", o->display, strerror(errno));
	}
	return out_stream(o);
}

int gs_out__openat(struct gs_out **out, int dirfd, const char *name, const char *display,
		   mode_t mode, unsigned int flags)
{
	struct gs_out *o = out_new(name, display ? display : name, flags);
	int err;

	if (!o)
		return -ENOMEM;
	o->dirfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	if (o->dirfd < 0)
		return out_fail(o, "", -errno);
	err = open_temp(o, mode, false);
	if (err) {
		if (o->tmp)
			unlinkat(o->dirfd, o->tmp, 0);
		return out_fail(o, "", err);
	}
	*out = o;
	return 0;
}

static int open_in_place(struct gs_out *o, int fd)
{
	struct stat st;
	int err;

	o->fd = fd;
	o->regular = !fstat(fd, &st) && S_ISREG(st.st_mode);
	err = out_stream(o);
	return err ? out_fail(o, "", err) : 0;
}

int gs_out__open_fd(struct gs_out **out, int fd, const char *display, unsigned int flags)
{
	struct gs_out *o = out_new(NULL, display, flags);
	int err;

	if (!o) {
		close(fd);
		return -ENOMEM;
	}
	err = open_in_place(o, fd);
	if (!err)
		*out = o;
	return err;
}

/* "/dev/stdout", "/dev/fd/3": a descriptor this process holds, written where it points. */
static int fd_of_name(const char *path)
{
	static const char *const dirs[] = { "/dev/fd/", "/proc/self/fd/" };
	char *end;
	long n;

	if (!strcmp(path, "/dev/stdout"))
		return STDOUT_FILENO;
	if (!strcmp(path, "/dev/stderr"))
		return STDERR_FILENO;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		size_t len = strlen(dirs[i]);

		if (strncmp(path, dirs[i], len) || !path[len])
			continue;
		n = strtol(path + len, &end, 10);
		if (!*end && n >= 0 && n < INT32_MAX)
			return (int)n;
	}
	return -1;
}

int gs_out__open(struct gs_out **out, const char *path, unsigned int flags)
{
	char *real = NULL, *dir, *slash;
	const char *target = path;
	struct gs_out *o;
	struct stat st;
	int fd, err;

	if (!path || !strcmp(path, "-")) {
		o = out_new(NULL, NULL, flags & ~GS_OUT_GZIP);
		if (!o)
			return -ENOMEM;
		o->f = stdout;
		*out = o;
		return 0;
	}
	o = out_new(path, path, flags);
	if (!o)
		return -ENOMEM;
	fd = fd_of_name(path);
	if (fd >= 0) {
		fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		if (fd < 0)
			return out_fail(o, "", -errno);
		return open_in_place(o, fd) ?: (*out = o, 0);
	}
	if (!lstat(path, &st)) {
		/*
		 * A link made by the caller or root is followed, to a regular file (written
		 * beside its target) or a device; another user's is only ever replaced.
		 */
		if (S_ISLNK(st.st_mode) && (st.st_uid == geteuid() || st.st_uid == 0) &&
		    !stat(path, &st)) {
			if (S_ISREG(st.st_mode)) {
				real = realpath(path, NULL);
				if (!real)
					return out_fail(o, "", -errno);
				target = real;
			}
		}
		if (S_ISDIR(st.st_mode))
			return out_fail(o, "", -EISDIR);
		if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
			/* a FIFO or a device: nothing to rename over, and nothing to truncate */
			fd = open(target, O_WRONLY | O_NOCTTY | O_CLOEXEC);
			if (fd < 0)
				return out_fail(o, "", -errno);
			return open_in_place(o, fd) ?: (*out = o, 0);
		}
	} else if (errno != ENOENT) {
		return out_fail(o, "", -errno);
	}
	dir = strdup(target);
	if (!dir) {
		free(real);
		return out_fail(o, "", -ENOMEM);
	}
	slash = strrchr(dir, '/');
	free(o->name);
	o->name = strdup(slash ? slash + 1 : dir);
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	free(real);
	if (!o->name || !*o->name || !strcmp(o->name, ".") || !strcmp(o->name, "..")) {
		free(dir);
		return out_fail(o, "", o->name ? -EISDIR : -ENOMEM);
	}
	o->dirfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (o->dirfd < 0)
		return out_fail(o, "", -errno);
	err = open_temp(o, 0666, true); /* the umask applies, as for any new file */
	if (err) {
		if (o->tmp)
			unlinkat(o->dirfd, o->tmp, 0);
		return out_fail(o, "cannot create a temporary beside it: ", err);
	}
	*out = o;
	return 0;
}

FILE *gs_out__file(struct gs_out *o)
{
	return o->f;
}

const char *gs_out__path(const struct gs_out *o)
{
	return o->display;
}

int gs_out__error(const struct gs_out *o)
{
	return -o->err;
}

/* Everything written so far out of stdio and zlib, the gzip member ended: 0 or -errno. */
static int out_flush(struct gs_out *o)
{
	if (fflush(o->f))
		set_err(o, errno);
	if (ferror(o->f))
		set_err(o, EIO);
	if (!o->err && o->gz && !gz_pump(o, Z_FINISH))
		deflateReset(&o->z); /* a later write starts a new member: gzip allows several */
	if (!o->err && o->regular && o->fd >= 0 && fdatasync(o->fd))
		set_err(o, errno);
	return -o->err;
}

static void report(struct gs_out *o)
{
	if (!o->reported)
		gs_err("writing %s: %s", o->display, strerror(o->err));
	o->reported = true;
}

/*
 * After a failure: nothing half-written stays under the name. Written in place (a pipe, a
 * device), nothing can be taken back: what was written goes out as it is.
 */
static void undo(struct gs_out *o)
{
	if (o->tmp || o->rollback)
		o->discard = true;
	if (o->tmp) {
		unlinkat(o->dirfd, o->tmp, 0);
		free(o->tmp);
		o->tmp = NULL;
	} else if (o->rollback && ftruncate(o->fd, o->committed)) {
		gs_warn("%s: cutting back to its last whole part: %s", o->display, strerror(errno));
	}
}

static int publish(struct gs_out *o)
{
	int err = gs_tmp_commit(o->dirfd, o->tmp, o->name, o->flags & GS_OUT_NOREPLACE);

	free(o->tmp);
	o->tmp = NULL; /* renamed, or removed by the failed commit */
	if (err)
		set_err(o, -err);
	return err;
}

int gs_out__sync(struct gs_out *o)
{
	off_t end;

	if (o->err) {
		report(o);
		return -o->err;
	}
	if (!out_flush(o) && o->tmp && !publish(o))
		o->rollback = true;
	if (o->err) {
		report(o);
		undo(o);
		return -o->err;
	}
	if (o->rollback) {
		end = lseek(o->fd, 0, SEEK_CUR);
		if (end >= 0)
			o->committed = end;
	}
	return 0;
}

int gs_out__close(struct gs_out *o)
{
	int err;

	if (!o)
		return 0;
	if (o->f == stdout) {
		if (fflush(stdout) || ferror(stdout))
			set_err(o, errno ?: EIO);
	} else if (!out_flush(o) && o->tmp) {
		/* close(2) reports some filesystems' write errors: checked before the rename */
		if (close(o->fd))
			set_err(o, errno);
		o->fd = -1;
		if (!o->err)
			publish(o);
	} else if (!o->err && o->fd >= 0) {
		if (close(o->fd))
			set_err(o, errno);
		o->fd = -1;
	}
	if (o->err) {
		report(o);
		if (o->f != stdout)
			undo(o);
	}
	err = -o->err;
	out_free(o);
	return err;
}

void gs_out__abort(struct gs_out *o)
{
	if (!o)
		return;
	if (o->f == stdout)
		fflush(stdout);
	else
		undo(o);
	out_free(o);
}

int gs_out__fail(struct gs_out *o, int err)
{
	if (!o)
		return err;
	set_err(o, -err); /* a write error seen first is the real cause */
	err = -o->err;
	report(o);
	if (o->f == stdout)
		fflush(stdout);
	else
		undo(o);
	out_free(o);
	return err;
}
