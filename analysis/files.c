/*
 * Output files are written whole or not at all, and only where a file belongs. What is
 * at the path decides how (it is lstat'ed first, so nothing is renamed over a path that
 * was not looked at):
 *   absent or a regular file  a temporary file in the same folder (the rename cannot
 *                             cross file systems), fsync'ed, then renamed over the path;
 *   a symbolic link           written through: the same rule applies to the file it
 *                             resolves to, and the link stays; a dangling link is refused;
 *   a character device, FIFO  written in place (-o /dev/null, a pipe to a reader): opened
 *                             O_WRONLY without O_CREAT, never replaced;
 *   a folder, socket, block device  refused.
 * Every write goes through a stdio cookie that keeps the first write(2) error, so a full
 * file system is reported as ENOSPC, not as the EIO a writer infers from ferror().
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/analysis.h"

/* Set from a signal handler (an_files_interrupt()): process-wide by nature, like the
 * signal it records. A write in progress then fails with EINTR and removes its
 * temporary file. */
static volatile sig_atomic_t files_interrupted;

void an_files_interrupt(void)
{
	files_interrupted = 1;
}

bool an_files_interrupted(void)
{
	return files_interrupted != 0;
}

struct sink {
	int fd;
	int err; /* the first write error, as a positive errno */
};

static ssize_t sink_write(void *cookie, const char *buf, size_t len)
{
	struct sink *s = cookie;
	size_t done = 0;

	if (s->err) {
		errno = s->err;
		return -1;
	}
	while (done < len) {
		ssize_t n;

		if (files_interrupted) {
			s->err = EINTR;
			break;
		}
		n = write(s->fd, buf + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			s->err = n < 0 ? errno : ENOSPC;
			break;
		}
		done += (size_t)n;
	}
	if (s->err) {
		errno = s->err;
		return -1;
	}
	return (ssize_t)len;
}

/* Run fn on fd through the cookie; close fd. 0 or -errno, the write error first. */
static int write_fd(int fd, bool regular, int (*fn)(void *ctx, FILE *out), void *ctx)
{
	static const cookie_io_functions_t io = { .write = sink_write };
	struct sink s = { .fd = fd, .err = 0 };
	FILE *out;
	int err;

	out = fopencookie(&s, "w", io);
	if (!out) {
		err = -errno;
		close(fd);
		return err;
	}
	err = fn(ctx, out);
	if (fflush(out) != 0 && !err)
		err = -errno;
	if (fclose(out) != 0 && !err)
		err = -errno;
	if (s.err)
		err = -s.err; /* the real cause, whatever fn made of ferror() */
	if (!err && regular && fsync(fd) < 0)
		err = -errno;
	if (close(fd) < 0 && !err && errno != EINTR)
		err = -errno;
	if (!err && files_interrupted)
		err = -EINTR;
	return err;
}

static int write_in_place(const char *path, int (*fn)(void *ctx, FILE *out), void *ctx)
{
	/* O_NONBLOCK only for the open: a FIFO with no reader fails with ENXIO, not hangs */
	int fd = open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	int flags;

	if (fd < 0)
		return -errno;
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return write_fd(fd, false, fn, ctx);
}

static int write_replacing(const char *path, int (*fn)(void *ctx, FILE *out), void *ctx)
{
	char *tmp;
	int fd, err;

	if (asprintf(&tmp, "%s.tmpXXXXXX", path) < 0)
		return -ENOMEM;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto out_free_tmp;
	}
	/* mkstemp makes the file 0600; results are meant to be shared like any output */
	if (fchmod(fd, 0644) < 0) {
		err = -errno;
		close(fd);
		goto out_unlink;
	}
	err = write_fd(fd, true, fn, ctx);
	if (err)
		goto out_unlink;
	if (rename(tmp, path) < 0) {
		err = -errno;
		goto out_unlink;
	}
	free(tmp);
	return 0;

out_unlink:
	unlink(tmp);
out_free_tmp:
	free(tmp);
	return err;
}

int an_output_kind(const char *path, char *resolved, size_t len)
{
	struct stat st;

	if (!path || !*path)
		return -EINVAL;
	if (lstat(path, &st) < 0) {
		if (errno != ENOENT)
			return -errno;
		if ((size_t)snprintf(resolved, len, "%s", path) >= len)
			return -ENAMETOOLONG;
		return AN_OUT_REPLACE;
	}
	if (S_ISLNK(st.st_mode)) {
		char *real = realpath(path, NULL);
		int kind;

		if (!real)
			return -errno; /* a dangling link (ENOENT) is refused */
		kind = an_output_kind(real, resolved, len); /* realpath leaves no link */
		free(real);
		return kind;
	}
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode))
		return -ENXIO; /* a socket or a block device is no place for a report */
	if ((size_t)snprintf(resolved, len, "%s", path) >= len)
		return -ENAMETOOLONG;
	return S_ISREG(st.st_mode) ? AN_OUT_REPLACE : AN_OUT_IN_PLACE;
}

int an_write_file_atomic(const char *path, int (*fn)(void *ctx, FILE *out), void *ctx)
{
	char target[PATH_MAX];
	int kind;

	if (path && !strcmp(path, "-"))
		return write_fd(dup(STDOUT_FILENO), false, fn, ctx);
	kind = an_output_kind(path, target, sizeof(target));
	if (kind < 0)
		return kind;
	if (kind == AN_OUT_IN_PLACE)
		return write_in_place(target, fn, ctx);
	return write_replacing(target, fn, ctx);
}
