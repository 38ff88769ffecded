/*
 * Files in and out, as a root process must treat them when other users can write in the
 * folders it reads and writes (a shared results folder).
 *
 * Outputs are written whole or not at all, and only where a file belongs. A file this
 * program names (every file of a run, compare or sweep folder) is written relative to
 * its folder's descriptor, opened once: what is at the name is lstat'ed first, and only
 * an absent name or a regular file is replaced, by a temporary file made beside it with
 * O_EXCL (so nothing planted is opened), fsync'ed, then renamed over the name; a
 * symbolic link, a device, a FIFO or a folder there is refused, never written through
 * nor renamed over. A new file's mode comes from the umask (0666 less it); a file
 * rewritten keeps its own mode. A path the user typed (flame -o) may also be "-"
 * (standard output), a symbolic link (the same rule applies to the file it resolves to),
 * or a character device or FIFO (written in place: -o /dev/null, a pipe to a reader).
 * Every write goes through a stdio cookie that keeps the first write(2) error, so a full
 * file system is reported as ENOSPC, not as the EIO a writer infers from ferror().
 *
 * Inputs are regular files only, opened without blocking (a FIFO named like a profile
 * would block its reader forever, a device never end); a name read from a file is a
 * name inside its own folder, opened there without following a symbolic link.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
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

const char *an_file_strerror(int err)
{
	switch (err < 0 ? -err : err) {
	case AN_ENOTREG:
		return "not a regular file (a FIFO, device, socket or folder is not read)";
	case ELOOP:
		return "a symbolic link, which is not followed here";
	case AN_EOCCUPIED:
		return "something that is not a regular file is there, and is not replaced";
	default:
		return strerror(err < 0 ? -err : err);
	}
}

bool an_file_name_ok(const char *name)
{
	size_t n;

	if (!name || !*name || !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	for (n = 0; name[n]; n++)
		if (name[n] == '/' || (unsigned char)name[n] < 0x20 || name[n] == 0x7f)
			return false;
	return n <= NAME_MAX;
}

/* ---- inputs ------------------------------------------------------------------------------ */

int an_open_input(int dirfd, const char *path, bool nofollow)
{
	int fd = openat(dirfd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
					 (nofollow ? O_NOFOLLOW : 0));
	struct stat st;
	int err;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		err = S_ISDIR(st.st_mode) ? -EISDIR : -AN_ENOTREG;
		goto out_close;
	}
	return fd; /* O_NONBLOCK means nothing to a regular file's reads */

out_close:
	close(fd);
	return err;
}

FILE *an_fopen_input(int dirfd, const char *path, bool nofollow)
{
	int fd = an_open_input(dirfd, path, nofollow);
	FILE *f;

	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	f = fdopen(fd, "r");
	if (!f) {
		int e = errno;

		close(fd);
		errno = e;
	}
	return f;
}

/* ---- outputs ----------------------------------------------------------------------------- */

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

	if (fd < 0)
		return -errno;
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

/* A new file NAME.tmpXXXXXX in dirfd, made with O_EXCL so that nothing already there is
 * opened; its name in tmp. The fd, or -errno. */
static int make_temporary(int dirfd, const char *name, mode_t mode, char *tmp, size_t len)
{
	static const char digits[] = "abcdefghijklmnopqrstuvwxyz0123456789";

	for (int tries = 0; tries < 100; tries++) {
		unsigned char r[6];
		char suffix[7];
		int fd;

		if (getrandom(r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
			uint64_t t = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20) ^
				     ((uint64_t)tries << 40) ^ (uint64_t)(uintptr_t)tmp;

			memcpy(r, &t, sizeof(r));
		}
		for (size_t i = 0; i < sizeof(r); i++)
			suffix[i] = digits[r[i] % (sizeof(digits) - 1)];
		suffix[6] = '\0';
		if ((size_t)snprintf(tmp, len, "%s.tmp%s", name, suffix) >= len)
			return -ENAMETOOLONG;
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY |
						O_CLOEXEC, mode);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd : -errno;
	}
	return -EEXIST;
}

int an_write_file_at(int dirfd, const char *name, int (*fn)(void *ctx, FILE *out), void *ctx)
{
	char tmp[NAME_MAX + 16];
	struct stat st;
	bool rewrite;
	int fd, err;

	if (!an_file_name_ok(name))
		return -EINVAL;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT)
			return -errno;
		rewrite = false;
	} else if (S_ISREG(st.st_mode)) {
		rewrite = true;
	} else {
		return S_ISLNK(st.st_mode) ? -ELOOP : S_ISDIR(st.st_mode) ? -EISDIR : -AN_EOCCUPIED;
	}
	/* 0666 less the umask for a new file; a file rewritten keeps its mode (set below:
	 * the umask would narrow it at the open) */
	fd = make_temporary(dirfd, name, 0666, tmp, sizeof(tmp));
	if (fd < 0)
		return fd;
	if (rewrite && fchmod(fd, st.st_mode & 0777) < 0) {
		err = -errno;
		close(fd);
		goto out_unlink;
	}
	err = write_fd(fd, true, fn, ctx);
	if (err)
		goto out_unlink;
	if (renameat(dirfd, tmp, dirfd, name) < 0) {
		err = -errno;
		goto out_unlink;
	}
	return 0;

out_unlink:
	unlinkat(dirfd, tmp, 0);
	return err;
}

int an_dir_open(const char *path)
{
	int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int an_write_file_atomic(const char *path, int (*fn)(void *ctx, FILE *out), void *ctx)
{
	const char *slash, *name;
	char dir[PATH_MAX];
	int dirfd, err;

	if (!path || !*path)
		return -ENOENT;
	slash = strrchr(path, '/');
	name = slash ? slash + 1 : path;
	if (!*name)
		return -EISDIR; /* "folder/" */
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if ((size_t)snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path),
				  path) >= sizeof(dir))
		return -ENAMETOOLONG;
	dirfd = an_dir_open(dir);
	if (dirfd < 0)
		return dirfd;
	err = an_write_file_at(dirfd, name, fn, ctx);
	close(dirfd);
	return err;
}

/* How an_write_user_file() would write path: AN_OUT_REPLACE or AN_OUT_IN_PLACE, with
 * the path it would write (symlinks resolved) in resolved; or -errno when it would refuse. */
static int an_output_kind(const char *path, char *resolved, size_t len)
{
	struct stat st;

	if (!path || !*path)
		return -ENOENT;
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

int an_write_user_file(const char *path, int (*fn)(void *ctx, FILE *out), void *ctx)
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
	return an_write_file_atomic(target, fn, ctx);
}
