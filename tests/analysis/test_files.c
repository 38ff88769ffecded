/*
 * Tests of analysis/files.c, as a root process meets a folder other users can write in:
 * a name this program writes is never written through a link, a FIFO or a device
 * planted there, nor renamed over one; modes come from the umask and a rewritten file
 * keeps its own; an input that is not a regular file is refused at once, a FIFO
 * without a writer included (the test would hang, not fail, if it blocked: each open
 * runs under an alarm).
 */
#include <criterion/criterion.h>
#include <dirent.h>
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

static char dir[PATH_MAX];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/schedlab-files.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

TestSuite(files, .init = setup, .fini = teardown);

static const char *in(const char *name)
{
	static char path[4][PATH_MAX + 64];
	static int k;

	k = (k + 1) % 4;
	snprintf(path[k], sizeof(path[k]), "%s/%s", dir, name);
	return path[k];
}

static int put_hello(void *ctx, FILE *out)
{
	fputs(ctx ? ctx : "hello\n", out);
	return 0;
}

static void write_text(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	cr_assert_eq(fchmod(fd, mode), 0);
	close(fd);
}

static char *read_text(const char *path)
{
	static char buf[256];
	FILE *f = fopen(path, "r");
	size_t n;

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static mode_t mode_of(const char *path)
{
	struct stat st;

	cr_assert_eq(lstat(path, &st), 0, "%s: %s", path, strerror(errno));
	return st.st_mode & (07777 | S_IFMT);
}

/* Nothing but the names given is left in the folder (no temporary). */
static void expect_only(const char *const *names, size_t n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t seen = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d))) {
		bool known = false;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		for (size_t i = 0; i < n; i++)
			known |= !strcmp(e->d_name, names[i]);
		cr_expect(known, "%s left in the folder", e->d_name);
		seen++;
	}
	closedir(d);
	cr_expect_eq(seen, n);
}

Test(files, a_planted_link_is_refused_and_its_target_untouched)
{
	write_text(in("victim"), "root's\n", 0600);
	cr_assert_eq(symlink(in("victim"), in("compare.md")), 0);
	cr_expect_eq(an_write_file_atomic(in("compare.md"), put_hello, NULL), -ELOOP);
	cr_expect_str_eq(read_text(in("victim")), "root's\n");
	cr_expect_eq(mode_of(in("victim")) & 07777, 0600, "the target's mode was widened");
	cr_expect_str_eq(an_file_strerror(-ELOOP), "a symbolic link, which is not followed here");
	expect_only((const char *[]){ "victim", "compare.md" }, 2);
}

Test(files, a_planted_fifo_or_device_is_neither_written_nor_replaced)
{
	struct stat st;

	cr_assert_eq(mkfifo(in("report.md"), 0666), 0);
	alarm(10);
	cr_expect_eq(an_write_file_atomic(in("report.md"), put_hello, NULL), -AN_EOCCUPIED);
	alarm(0);
	cr_assert_eq(lstat(in("report.md"), &st), 0);
	cr_expect(S_ISFIFO(st.st_mode), "the FIFO was replaced");
	cr_assert_eq(mkdir(in("oncpu.svg"), 0755), 0);
	cr_expect_eq(an_write_file_atomic(in("oncpu.svg"), put_hello, NULL), -EISDIR);
	expect_only((const char *[]){ "report.md", "oncpu.svg" }, 2);
}

Test(files, a_new_file_takes_the_umask)
{
	mode_t old = umask(077);
	int err = an_write_file_atomic(in("a"), put_hello, NULL);

	umask(027);
	cr_expect_eq(an_write_file_atomic(in("b"), put_hello, NULL), 0);
	umask(old);
	cr_expect_eq(err, 0);
	cr_expect_eq(mode_of(in("a")) & 07777, 0600);
	cr_expect_eq(mode_of(in("b")) & 07777, 0640);
	cr_expect_str_eq(read_text(in("a")), "hello\n");
}

Test(files, a_rewritten_file_keeps_its_mode)
{
	mode_t old = umask(022);

	write_text(in("r"), "old\n", 0600);
	write_text(in("g"), "old\n", 0640);
	cr_expect_eq(an_write_file_atomic(in("r"), put_hello, "new\n"), 0);
	cr_expect_eq(an_write_file_atomic(in("g"), put_hello, "new\n"), 0);
	umask(old);
	cr_expect_eq(mode_of(in("r")) & 07777, 0600);
	cr_expect_eq(mode_of(in("g")) & 07777, 0640);
	cr_expect_str_eq(read_text(in("g")), "new\n");
	expect_only((const char *[]){ "r", "g" }, 2);
}

Test(files, a_user_named_link_is_followed_and_stays_a_link)
{
	write_text(in("mine.svg"), "old\n", 0644);
	cr_assert_eq(symlink("mine.svg", in("link.svg")), 0);
	cr_expect_eq(an_write_user_file(in("link.svg"), put_hello, NULL), 0);
	cr_expect_str_eq(read_text(in("mine.svg")), "hello\n");
	cr_expect(S_ISLNK(mode_of(in("link.svg"))), "the user's link was replaced");
	expect_only((const char *[]){ "mine.svg", "link.svg" }, 2);
}

Test(files, an_input_fifo_is_refused_without_blocking)
{
	char err[256];

	cr_assert_eq(mkfifo(in("oncpu.folded"), 0666), 0);
	alarm(10);
	cr_expect_eq(an_open_input(AT_FDCWD, in("oncpu.folded"), false), -AN_ENOTREG);
	cr_expect_null(an_folded_read(in("oncpu.folded"), err, sizeof(err)));
	alarm(0);
	cr_expect_eq(errno, AN_ENOTREG);
	cr_expect_not_null(strstr(err, "not a regular file"), "%s", err);
	cr_expect_eq(an_open_input(AT_FDCWD, dir, false), -EISDIR);
	cr_expect_eq(an_open_input(AT_FDCWD, "/dev/zero", false), -AN_ENOTREG);
}

Test(files, a_name_from_a_file_stays_in_its_folder)
{
	static const char *const bad[] = { "", ".", "..", "../x", "a/b", "/etc/passwd",
					   "x\ny", "x\x1b[2J" };
	char err[256];
	int fd;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_not(an_file_name_ok(bad[i]), "'%s' accepted", bad[i]);
	cr_expect(an_file_name_ok("oncpu.folded"));
	cr_expect(an_file_name_ok("..folded"));

	write_text(in("real.folded"), "main;a 1\n", 0644);
	cr_assert_eq(symlink("real.folded", in("link.folded")), 0);
	fd = an_dir_open(dir);
	cr_assert_geq(fd, 0);
	cr_expect_null(an_folded_read_at(fd, "link.folded", "link.folded", err, sizeof(err)),
		       "a link was followed");
	cr_expect_eq(errno, ELOOP);
	cr_expect_null(an_folded_read_at(fd, "../real.folded", "x", err, sizeof(err)));
	cr_expect_not_null(strstr(err, "not a file name of its folder"), "%s", err);
	{
		struct an_folded *f = an_folded_read_at(fd, "real.folded", "real.folded", err,
							sizeof(err));

		cr_expect_not_null(f, "%s", err);
		cr_expect_eq(an_folded_total(f), 1);
		an_folded_free(f);
	}
	close(fd);
}
