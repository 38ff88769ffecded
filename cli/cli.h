/*
 * The schedlab command line: one binary, subcommands in the manner of git and perf.
 * main.c dispatches; each cmd_*.c parses its own arguments with argp and calls the
 * modules. Exit status: 0 success, 1 a run or check failed, 2 bad input.
 */
#ifndef SCHEDLAB_CLI_H
#define SCHEDLAB_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CLI_EXIT_OK    0
#define CLI_EXIT_FAIL  1
#define CLI_EXIT_USAGE 2
#define CLI_EXIT_INTERRUPTED 130 /* 128 + SIGINT, as shells report it */

int cmd_run(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_flame(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_diagnose(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_suite(int argc, char **argv);
int cmd_profile(int argc, char **argv);
/* The re-executed fork of a benchmark; not for people. */
int cmd_fork(int argc, char **argv);
/* The tcp workloads' server process (workloads/tcp_server.c); not for people. */
int cmd_tcp_server(int argc, char **argv);

/* What cli_compare_write() prints on stdout. */
enum cli_compare_print { CLI_COMPARE_MD, CLI_COMPARE_JSON, CLI_COMPARE_NOTHING };
/* Compare run_b against run_a (folders 'schedlab run' wrote) into the folder out (NULL:
 * compare-<A>-vs-<B> beside run_b): compare.md, compare.json, diff.svg. Returns the exit
 * status, after one line on stderr if not 0. */
int cli_compare_write(const char *run_a, const char *run_b, const char *out,
		      enum cli_compare_print print);
/* CLI_EXIT_OK when run is a comparable run of workload, else CLI_EXIT_USAGE after one
 * line on stderr: for 'run --baseline', before anything runs. */
int cli_compare_check_baseline(const char *run, const char *workload);

/* The one table of exit statuses for an error (either sign) every command follows, as
 * README gives it: 2 for bad input, a path or file the user can fix (ENOENT, ENOTDIR,
 * EISDIR, ELOOP, EACCES, EPERM, ENAMETOOLONG, ENXIO, EINVAL, EEXIST, EFBIG, E2BIG); 130
 * for EINTR, an interrupt; 1 for the machine's failures (ENOSPC, EROFS, EIO, ENOMEM,
 * EDQUOT...). 0 for 0. */
int cli_exit_for(int err);

/* --freq and --call-graph as run and profile take them: 0, or CLI_EXIT_USAGE after the
 * one line that names the value and the fix (a frequency above the kernel's
 * perf_event_max_sample_rate included). */
int cli_parse_freq(const char *arg, long *freq);
int cli_parse_call_graph(const char *arg, int *mode);
/* --out DIR as run and profile take it: 0, or CLI_EXIT_USAGE after one line when empty. */
int cli_parse_out(const char *arg, const char **out);
struct hx_profile;
/* --rules FILE for the profile p: 0, or CLI_EXIT_USAGE after one line naming the file and
 * what is wrong with it. */
int cli_use_rules(struct hx_profile *p, const char *path);

/* Make the folder dir and those above it (0777 less the umask): 0, or -errno; what is there
 * already must be a folder (-ENOTDIR). */
int cli_mkdir_p(const char *dir);
/* A results folder (out, --out as given) or a folder in it (path) that cannot be made:
 * one line naming it with the reason; the exit status by cli_exit_for(). */
int cli_folder_error(const char *out, const char *path, int err);

/* Print "schedlab: <message>\n" to stderr; returns CLI_EXIT_USAGE for `return cli_usage_error(...)`. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

struct argp;
/* argp_parse() with the program named "schedlab <command>" in its messages and its own
 * usage errors exiting with CLI_EXIT_USAGE. Returns argp_parse()'s result. */
int cli_argp_parse(const struct argp *argp, const char *command, int argc, char **argv,
		   void *input);

/* ---- child runs (child.c): the `schedlab run`s that sweep and suite start ---------- */

/* What a child run's result.json says, read back. */
struct cli_run_figures {
	bool failed;
	char reason[512];   /* why, when failed */
	double score, error, n;
	char unit[32];
	double bytes;       /* bytes per op from the runtime allocator; NAN: n/a */
	char run[256];      /* the run folder's name; "" if none */
	bool no_run;        /* the child wrote no run folder: its log says why */
};

/* The run options a command hands on to each child run, as typed (option, value): an
 * argp child for the command's own argp (input: a struct cli_pass). */
#define CLI_MAX_PASS 32
struct cli_pass {
	const char *argv[CLI_MAX_PASS];
	size_t n;
	bool quick; /* --quick among them */
	int bad;    /* the exit status of a refusal, after its line */
};
extern const struct argp cli_pass_argp;

/* The SIGINT/SIGTERM flag of a command that runs children: the handler, and the flag. */
void cli_catch_interrupt(void);
bool cli_interrupted(void);
/* This binary's path, to run children of it: 0 or -errno. */
int cli_self_path(char *buf, size_t len);
/* The last non-empty line of the file at path, where `run` says why it stopped. */
void cli_last_line(const char *path, char *buf, size_t len);
/* Run argv (argv[0] a path) with stdout to out_fd (-1: /dev/null) and stderr to err_fd
 * (or a new file log): its exit status (128 + N for a signal), or -errno when it could
 * not start. */
int cli_spawn(const char *const *argv, int out_fd, int err_fd);
int cli_spawn_logged(const char *const *argv, const char *log);
/* The run options handed on to every child, checked by `run` itself before anything runs:
 * 0, or CLI_EXIT_USAGE after run's own one line. */
int cli_check_run_options(const char *self, const char *const *pass, size_t npass);
/* Read back the run a child wrote under dir (its --out): f filled, and the result for
 * further figures (an_result_free() it), or NULL with f->failed and f->reason. A result
 * that holds a failure or no throughput is returned with f->failed set. */
struct an_result *cli_run_load(const char *dir, struct cli_run_figures *f);
/* The command's folder: out, made here (absent, or an empty folder); else a new
 * results/<stamp>-<label>[-N]. 0, or CLI_EXIT_USAGE after one line. */
int cli_make_out_dir(const char *out, const char *label, char *dir, size_t len);
/* A command's output files, each written whole or not at all into dir by fn(ctx): 0, or
 * the first -errno after one line on stderr per file that could not be written. */
struct cli_out_file {
	const char *name;
	int (*fn)(void *ctx, FILE *out);
};
int cli_write_files(const char *dir, const struct cli_out_file *files, size_t n, void *ctx);
/* "schedlab ARGV..." into buf, as the command was typed. */
void cli_describe_command(char *buf, size_t len, int argc, char **argv);

/* Parse a whole decimal number in [min, max] (an optional '-' and digits, nothing else);
 * false when s is not one. */
bool cli_parse_long(const char *s, long min, long max, long *out);
/* The same for a decimal fraction ("0.5", "2", "1e-3"): no spaces, '+', hex, inf or nan. */
bool cli_parse_double(const char *s, double min, double max, double *out);

#endif /* SCHEDLAB_CLI_H */
