// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* out_file.c: zlib's gzip writer behind a stdio FILE (fopencookie). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "user/out_file.h"

#define OUT_BUFFER (256 << 10)

static ssize_t gz_write(void *cookie, const char *buf, size_t len)
{
	int n;

	if (!len)
		return 0;
	n = gzwrite(cookie, buf, (unsigned int)len);
	if (n <= 0) {
		errno = EIO;
		return -1;
	}
	return n;
}

static int gz_close(void *cookie)
{
	if (gzclose(cookie) != Z_OK) {
		errno = EIO;
		return -1;
	}
	return 0;
}

static bool has_gz_suffix(const char *path)
{
	size_t len = strlen(path);

	return len > 3 && !strcmp(path + len - 3, ".gz");
}

FILE *gs_out_open(const char *path)
{
	cookie_io_functions_t io = { .write = gz_write, .close = gz_close };
	gzFile gz;
	FILE *f;
	int fd;

	if (!path || !strcmp(path, "-"))
		return stdout;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return NULL;
	if (!has_gz_suffix(path)) {
		f = fdopen(fd, "w");
		if (!f)
			close(fd);
		else
			setvbuf(f, NULL, _IOFBF,
				OUT_BUFFER); /* a write(2) per 4 KiB of trace is a lot */
		return f;
	}
	gz = gzdopen(fd, "wb");
	if (!gz) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	f = fopencookie(gz, "w", io);
	if (!f)
		gzclose(gz);
	else
		setvbuf(f, NULL, _IOFBF, OUT_BUFFER);
	return f;
}

int gs_out_close(FILE *f)
{
	if (f == stdout)
		return fflush(f) || ferror(f) ? -EIO : 0;
	if (ferror(f)) {
		fclose(f);
		return -EIO;
	}
	return fclose(f) ? -errno : 0;
}
