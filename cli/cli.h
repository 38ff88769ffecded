/*
 * The schedlab command line: one binary, subcommands in the manner of git and perf.
 * main.c dispatches; each cmd_*.c parses its own arguments with argp and calls the
 * modules. Exit status: 0 success, 1 a run or check failed, 2 bad input.
 */
#ifndef SCHEDLAB_CLI_H
#define SCHEDLAB_CLI_H

#include <stdbool.h>

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

/* Print "schedlab: <message>\n" to stderr; returns CLI_EXIT_USAGE for `return cli_usage_error(...)`. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

struct argp;
/* argp_parse() with the program named "schedlab <command>" in its messages and its own
 * usage errors exiting with CLI_EXIT_USAGE. Returns argp_parse()'s result. */
int cli_argp_parse(const struct argp *argp, const char *command, int argc, char **argv,
		   void *input);

/* Parse a whole decimal number in [min, max]; false when s is not one. */
bool cli_parse_long(const char *s, long min, long max, long *out);
bool cli_parse_double(const char *s, double min, double max, double *out);

#endif /* SCHEDLAB_CLI_H */
