/*
 * The Makefile's conventions, checked by running make as a user does, from the
 * repository root: a command-line CFLAGS or LDFLAGS keeps the flags the build needs,
 * the BPF include path is a folder that exists, another architecture or a missing
 * multiarch folder stops with a line naming the fix, and `make install` puts the
 * binary under DESTDIR/PREFIX, renaming only over a regular file. Dry runs (-n) into
 * a scratch BUILD folder, so that nothing is compiled, but for one -O0 object.
 */
#include "tests/cli/cli_run.h"

TestSuite(makefile, .init = setup, .fini = teardown);

/* Run `make --no-print-directory ARGS...` with none of an outer make's flags or a
 * CFLAGS from the environment. */
static int run_make(const char *const *args)
{
	const char *argv[32] = { "--no-print-directory" };
	size_t n = 1;
	int rc;

	for (size_t i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	unsetenv("MAKEFLAGS");
	unsetenv("MFLAGS");
	unsetenv("MAKELEVEL");
	unsetenv("CFLAGS");
	unsetenv("LDFLAGS");
	rc = run_program("make", argv);
	cr_assert_neq(rc, 127, "make could not be run");
	return rc;
}

/* The line of out_text holding needle, copied into line (with a space at each end,
 * so that a flag can be looked for as " -flag "). */
static bool line_with(const char *needle, char *line, size_t cap)
{
	const char *hit = strstr(out_text, needle), *start, *end;

	if (!hit)
		return false;
	for (start = hit; start > out_text && start[-1] != '\n'; start--)
		;
	end = strchr(hit, '\n');
	if (!end)
		end = hit + strlen(hit);
	snprintf(line, cap, " %.*s ", (int)(end - start), start);
	return true;
}

static void expect_flags(const char *line, const char *const *flags)
{
	char want[128];

	for (size_t i = 0; flags[i]; i++) {
		snprintf(want, sizeof(want), " %s ", flags[i]);
		cr_expect_not_null(strstr(line, want), "'%s' missing from:%s", flags[i], line);
	}
}

static const char *build_arg(void)
{
	static char arg[600];

	snprintf(arg, sizeof(arg), "BUILD=%s", in_dir("b"));
	return arg;
}

/* ---- flags -------------------------------------------------------------------------------- */

static const char *const required_flags[] = {
	"-std=gnu11", "-D_GNU_SOURCE", "-I.", "-Werror", "-fno-omit-frame-pointer",
	"-mno-omit-leaf-frame-pointer", "-pthread", "-MMD", "-MP", NULL,
};

Test(makefile, command_line_cflags_keep_the_required_flags)
{
	const char *args[] = { "-n", "V=1", build_arg(), "CFLAGS=-O0 -ggdb", "LDFLAGS=-Wl,-O1",
			       in_dir("b/schedlab"), NULL };
	const char *user[] = { "-O0", "-ggdb", NULL };
	const char *link[] = { "-Wl,-O1", "-pthread", NULL };
	char line[8192];

	cr_assert_eq(run_make(args), 0, "stderr: %s", err_text);
	cr_assert(line_with("-c runtime/deque.c", line, sizeof(line)), "%s", out_text);
	expect_flags(line, required_flags);
	expect_flags(line, user);
	cr_expect_null(strstr(line, " -O2 "), "the default -O2 stayed:%s", line);
	cr_assert(line_with("libschedlab.a -lbpf", line, sizeof(line)), "%s", out_text);
	expect_flags(line, link);
}

/* Built for real: at -O0 nothing is folded, so an asm operand that needs a constant
 * after inlining stops the build. blocking.c enters and leaves phases. */
Test(makefile, runtime_compiles_at_O0)
{
	const char *args[] = { build_arg(), "CFLAGS=-O0", in_dir("b/obj/runtime/blocking.o"), NULL };
	struct stat st;

	cr_expect_eq(run_make(args), 0, "stderr: %s", err_text);
	cr_expect_eq(stat(in_dir("b/obj/runtime/blocking.o"), &st), 0);
}

/* Under SANITIZE=san and CFLAGS=-O1, the line compiling source into object (under the
 * scratch BUILD) holds the required flags and the extra ones. */
static void expect_sanitizer_flags(const char *san, const char *object, const char *source,
				   const char *const *extra)
{
	char san_arg[128], compile[256], line[8192];
	const char *args[] = { "-n", "V=1", build_arg(), san_arg, "CFLAGS=-O1", in_dir(object),
			       NULL };

	snprintf(san_arg, sizeof(san_arg), "SANITIZE=%s", san);
	snprintf(compile, sizeof(compile), "-c %s", source);
	cr_assert_eq(run_make(args), 0, "stderr: %s", err_text);
	cr_assert(line_with(compile, line, sizeof(line)), "%s", out_text);
	expect_flags(line, required_flags);
	expect_flags(line, extra);
}

Test(makefile, sanitizer_flags_survive_a_command_line_cflags)
{
	const char *san[] = { "-O1", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
			      "-DRT_SANITIZE_ADDRESS=1", NULL };

	expect_sanitizer_flags("address,undefined", "b/obj/runtime/deque.o", "runtime/deque.c",
			       san);
}

Test(makefile, thread_sanitizer_tests_keep_their_include_path)
{
	const char *tsan[] = { "-O1", "-Itests/tsan", "-fsanitize=thread", NULL };

	expect_sanitizer_flags("thread", "b/obj/tests/runtime/test_deque.o",
			       "tests/runtime/test_deque.c", tsan);
}

/* ---- architecture ------------------------------------------------------------------------- */

Test(makefile, bpf_include_path_is_a_folder_that_exists)
{
	const char *args[] = { "-n", "V=1", build_arg(), in_dir("b/probes/oncpu/oncpu.bpf.o"),
			       NULL };
	char line[8192], path[512];
	const char *inc;
	struct stat st;

	cr_assert_eq(run_make(args), 0, "stderr: %s", err_text);
	cr_assert(line_with("-target bpf", line, sizeof(line)), "%s", out_text);
	inc = strstr(line, " -I/usr/include/");
	cr_assert_not_null(inc, "%s", line);
	cr_assert_eq(sscanf(inc + 3, "%511s", path), 1);
	cr_expect(stat(path, &st) == 0 && S_ISDIR(st.st_mode), "%s is no folder", path);
	cr_expect(strcat(path, "/asm/types.h") && stat(path, &st) == 0, "%s is missing", path);
}

Test(makefile, missing_multiarch_folder_stops_naming_the_fix)
{
	const char *args[] = { "-n", build_arg(), "MULTIARCH=no-such-triplet",
			       in_dir("b/probes/oncpu/oncpu.bpf.o"), NULL };

	cr_expect_neq(run_make(args), 0);
	cr_expect_not_null(strstr(err_text, "/usr/include/no-such-triplet"), "%s", err_text);
	cr_expect_not_null(strstr(err_text, "MULTIARCH="), "%s", err_text);
	cr_expect_not_null(strstr(err_text, "libc6-dev"), "%s", err_text);
}

Test(makefile, another_architecture_stops_saying_why)
{
	const char *args[] = { "-n", build_arg(), "UNAME_M=aarch64", NULL };

	cr_expect_neq(run_make(args), 0);
	cr_expect_not_null(strstr(err_text, "x86_64 only, not ARCH=arm64 (UNAME_M=aarch64)"), "%s", err_text);
	cr_expect_not_null(strstr(err_text, "x86-64 assembly"), "%s", err_text);
}

/* ---- version ------------------------------------------------------------------------------ */

static void version_line(const char *git, char *line, size_t cap)
{
	char git_arg[64];
	const char *args[] = { "-n", "V=1", build_arg(), git_arg, in_dir("b/version.h"), NULL };

	snprintf(git_arg, sizeof(git_arg), "GIT=%s", git);
	cr_assert_eq(run_make(args), 0, "stderr: %s", err_text);
	cr_assert(line_with("#define SCHEDLAB_VERSION", line, cap), "%s", out_text);
}

Test(makefile, version_comes_from_the_version_file)
{
	char want[128], line[4096], version[64] = "";
	FILE *fp = fopen("VERSION", "r");

	cr_assert_not_null(fp);
	cr_assert_eq(fscanf(fp, "%63s", version), 1);
	fclose(fp);
	/* in a git checkout, git describe follows the version */
	if (access(".git", F_OK) == 0) {
		version_line("git", line, sizeof(line));
		snprintf(want, sizeof(want), "'%s (", version);
		cr_expect_not_null(strstr(line, want), "%s", line);
	}
	/* without git the build goes on, with the bare version */
	version_line("/nonexistent/git", line, sizeof(line));
	snprintf(want, sizeof(want), "'%s'", version);
	cr_expect_not_null(strstr(line, want), "%s", line);
	cr_expect_str_eq(err_text, "");
}

/* ---- install ------------------------------------------------------------------------------ */

static int run_install(void)
{
	char build[600], destdir[600], san[200];
	const char *args[] = { build, san, destdir, "PREFIX=/usr", "install", NULL };
	const char *sanitize = getenv("SCHEDLAB_SANITIZE");

	/* the build the tests run from, sanitizers and all, so that nothing is relinked */
	snprintf(build, sizeof(build), "BUILD=%s", schedlab_build());
	snprintf(san, sizeof(san), "SANITIZE=%s", sanitize ? sanitize : "");
	snprintf(destdir, sizeof(destdir), "DESTDIR=%s", in_dir("d"));
	return run_make(args);
}

/* Whether files a and b hold the same bytes. */
static bool same_bytes(const char *a, const char *b)
{
	size_t alen, blen;
	char *at = slurp(a, &alen), *bt = slurp(b, &blen);
	bool same = at && bt && alen == blen && !memcmp(at, bt, alen);

	free(at);
	free(bt);
	return same;
}

static size_t entries_in(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	size_t n = 0;

	cr_assert_not_null(d, "%s", path);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

Test(makefile, install_puts_the_binary_under_destdir_and_prefix)
{
	char bin[600];
	struct stat st;

	snprintf(bin, sizeof(bin), "%s/schedlab", schedlab_build());
	cr_assert_eq(access(bin, X_OK), 0, "%s is not built; run make first", bin);
	cr_assert_eq(run_install(), 0, "stderr: %s", err_text);
	cr_assert_eq(lstat(in_dir("d/usr/bin/schedlab"), &st), 0, "%s", out_text);
	cr_expect(S_ISREG(st.st_mode));
	cr_expect_eq(st.st_mode & 07777, 0755);
	cr_expect(same_bytes(bin, in_dir("d/usr/bin/schedlab")));
	/* again, over the installed copy: replaced, and no temporary file left beside it */
	cr_assert_eq(run_install(), 0, "stderr: %s", err_text);
	cr_expect(same_bytes(bin, in_dir("d/usr/bin/schedlab")));
	cr_expect_eq(entries_in(in_dir("d/usr/bin")), 1);
	/* the man pages, made from the commands' own --help: one for schedlab and one for
	 * each command, named as its page */
	cr_expect_eq(entries_in(in_dir("d/usr/share/man/man1")), 9);
	{
		char *page = slurp(in_dir("d/usr/share/man/man1/schedlab-run.1"), NULL);

		cr_assert_not_null(page, "no schedlab-run.1: %s", out_text);
		cr_expect_not_null(strstr(page, ".TH SCHEDLAB-RUN \"1\""), "%.300s", page);
		cr_expect_not_null(strstr(page, "schedlab-run \\- run workloads under the probes"),
				   "%.300s", page);
		cr_expect_not_null(strstr(page, "\\-\\-quick"), "run's options: %.300s", page);
		free(page);
		page = slurp(in_dir("d/usr/share/man/man1/schedlab.1"), NULL);
		cr_assert_not_null(page);
		cr_expect_not_null(strstr(page, "profile"), "the commands: %.300s", page);
		free(page);
	}
	cr_expect_eq(access(in_dir("d/usr/share/bash-completion/completions/schedlab"), R_OK), 0,
		     "no bash completion: %s", out_text);
}

Test(makefile, install_leaves_a_link_where_the_binary_goes_alone)
{
	char target[600], *text;
	struct stat st;

	snprintf(target, sizeof(target), "%s", in_dir("precious"));
	write_file(target, "keep\n");
	cr_assert_eq(mkdir(in_dir("d"), 0755), 0);
	cr_assert_eq(mkdir(in_dir("d/usr"), 0755), 0);
	cr_assert_eq(mkdir(in_dir("d/usr/bin"), 0755), 0);
	cr_assert_eq(symlink(target, in_dir("d/usr/bin/schedlab")), 0);
	cr_expect_neq(run_install(), 0);
	cr_expect_not_null(strstr(err_text, "not a regular file"), "%s", err_text);
	cr_expect(lstat(in_dir("d/usr/bin/schedlab"), &st) == 0 && S_ISLNK(st.st_mode));
	text = slurp(target, NULL);
	cr_expect_str_eq(text, "keep\n");
	free(text);
	cr_expect_eq(entries_in(in_dir("d/usr/bin")), 1);
}
