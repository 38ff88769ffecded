/*
 * Running the schedlab binary as a user does, for the CLI tests: a scratch folder per
 * test (setup/teardown), the command's stdout and stderr captured, and the checks that
 * every command's bad input shares (one line on stderr, starting "schedlab: ").
 * Included by each tests/cli/test_*.c, tests/build/test_*.c and tests/bench/test_*.c;
 * everything is static.
 */
#ifndef SCHEDLAB_TESTS_CLI_RUN_H
#define SCHEDLAB_TESTS_CLI_RUN_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[] = "/tmp/schedlab-cli-XXXXXX";
static char out_text[65536], err_text[65536];

static void setup(void)
{
	strcpy(dir, "/tmp/schedlab-cli-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void remove_tree(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	char p[1024];
	struct stat st;

	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			remove_tree(p);
		else
			unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(path);
}

static void teardown(void)
{
	remove_tree(dir);
}

static __attribute__((unused)) const char *in_dir(const char *name)
{
	static char bufs[4][512];
	static int next;
	char *b = bufs[next++ % 4];

	snprintf(b, 512, "%s/%s", dir, name);
	return b;
}

static __attribute__((unused)) void write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	cr_assert_not_null(fp, "%s", path);
	fputs(text, fp);
	cr_assert_eq(fclose(fp), 0);
}

static __attribute__((unused)) char *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0;
	FILE *mem;
	int c;

	if (!fp)
		return NULL;
	mem = open_memstream(&buf, &n);
	while ((c = getc(fp)) != EOF)
		putc(c, mem);
	fclose(mem);
	fclose(fp);
	if (len)
		*len = n;
	return buf;
}

static void read_into(const char *path, char *buf, size_t cap)
{
	FILE *fp = fopen(path, "r");
	size_t n = fp ? fread(buf, 1, cap - 1, fp) : 0;

	buf[n] = '\0';
	if (fp)
		fclose(fp);
}

/* Run `PROGRAM ARGS...` (PROGRAM looked up in PATH when it has no '/'); stdout and
 * stderr land in out_text and err_text. Returns the exit status. */
static int run_program(const char *program, const char *const *args)
{
	char out_path[600], err_path[600];
	const char *argv[32];
	size_t argc = 0;
	int status;
	pid_t pid;

	snprintf(out_path, sizeof(out_path), "%s/.stdout", dir);
	snprintf(err_path, sizeof(err_path), "%s/.stderr", dir);
	argv[argc++] = program;
	for (size_t i = 0; args[i]; i++) {
		cr_assert_lt(argc, 30);
		argv[argc++] = args[i];
	}
	argv[argc] = NULL;
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(127);
		execvp(program, (char *const *)argv);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	read_into(out_path, out_text, sizeof(out_text));
	read_into(err_path, err_text, sizeof(err_text));
	unlink(out_path);
	unlink(err_path);
	cr_assert(WIFEXITED(status), "%s %s did not exit normally", program, args[0]);
	return WEXITSTATUS(status);
}

/* $SCHEDLAB_BUILD, where the binary and the helpers are ("build" by default). */
static const char *schedlab_build(void)
{
	const char *build = getenv("SCHEDLAB_BUILD");

	return build && *build ? build : "build";
}

/* The number after "key": in json, searching from the first occurrence of `after`
 * (NULL: from the start). */
static __attribute__((unused)) uint64_t json_u64(const char *json, const char *after, const char *key)
{
	char pat[64];
	const char *p = after ? strstr(json, after) : json;

	cr_assert_not_null(p, "%s not in result.json", after);
	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	p = strstr(p, pat);
	cr_assert_not_null(p, "%s not in result.json", key);
	return strtoull(p + strlen(pat), NULL, 10);
}

/* Run `schedlab ARGS...`; stdout and stderr land in out_text and err_text. */
static __attribute__((unused)) int run_schedlab(const char *const *args)
{
	char bin[512];

	snprintf(bin, sizeof(bin), "%s/schedlab", schedlab_build());
	cr_assert_eq(access(bin, X_OK), 0, "%s is not built; run make first", bin);
	return run_program(bin, args);
}

/* Run `schedlab COMMAND ARGS... -o DIR/s` (at most 20 arguments), for the commands that
 * make one output folder. */
static __attribute__((unused)) int run_schedlab_out(const char *command, const char *const *args)
{
	const char *argv[24] = { command };
	size_t n = 1;

	for (size_t i = 0; args[i]; i++) {
		cr_assert_lt(n, 21);
		argv[n++] = args[i];
	}
	argv[n++] = "-o";
	argv[n++] = in_dir("s");
	argv[n] = NULL;
	return run_schedlab(argv);
}

static __attribute__((unused)) size_t entries(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static __attribute__((unused)) void expect_one_error_line(const char *must_contain)
{
	size_t len = strlen(err_text);

	cr_expect(!strncmp(err_text, "schedlab: ", 10), "stderr: %s", err_text);
	cr_expect(len > 0 && err_text[len - 1] == '\n' && !memchr(err_text, '\n', len - 1),
		  "not one line: %s", err_text);
	cr_expect_not_null(strstr(err_text, must_contain), "'%s' not in: %s", must_contain,
			   err_text);
}

/* COMMAND ARGS... -o DIR/s is refused: exit 2, one line holding must_contain, nothing on
 * stdout and nothing made. */
static __attribute__((unused)) void expect_refused_out(const char *command,
						       const char *const *args,
						       const char *must_contain)
{
	cr_expect_eq(run_schedlab_out(command, args), 2, "%s", err_text);
	expect_one_error_line(must_contain);
	cr_expect_str_eq(out_text, "");
	cr_expect_eq(entries(), 0, "nothing was made for '%s'", must_contain);
}

#endif /* SCHEDLAB_TESTS_CLI_RUN_H */
