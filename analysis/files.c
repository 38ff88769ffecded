/*
 * Output files are written whole or not at all: into a temporary file in the same
 * folder (so the rename cannot cross file systems), then renamed over the target.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/analysis.h"

int an_write_file_atomic(const char *path, int (*fn)(void *ctx, FILE *out), void *ctx)
{
	char *tmp;
	FILE *out;
	int fd, err;

	if (!path || !*path)
		return -EINVAL;
	if (asprintf(&tmp, "%s.tmpXXXXXX", path) < 0)
		return -ENOMEM;
	fd = mkstemp(tmp);
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
	out = fdopen(fd, "w");
	if (!out) {
		err = -errno;
		close(fd);
		goto out_unlink;
	}
	err = fn(ctx, out);
	if (fflush(out) != 0 && !err)
		err = -errno;
	if (fclose(out) != 0 && !err)
		err = -errno;
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
