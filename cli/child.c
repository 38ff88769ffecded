/*
 * Child runs, for the commands that run a grid of `schedlab run`s (sweep, suite): each
 * one a child process of this same binary with its own --out folder and log, its
 * result.json read back afterwards. Also the output folder such a command makes, the
 * check of the run options it hands on, and its SIGINT flag.
 *
 * A child runs in the same process group, so a SIGINT reaches it too: it writes its
 * partial result and exits 130, and the parent notes the flag and stops.
 */
#include <argp.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "cli/cli.h"

/* ---- the run options handed on to every child ------------------------------------------ */

enum {
	PASS_QUICK = 0x300,
	PASS_FORKS,
	PASS_WARMUP,
	PASS_ITERATIONS,
	PASS_TIME,
	PASS_PROBES,
	PASS_FREQ,
	PASS_CALL_GRAPH,
	PASS_STACK_COPY,
	PASS_EVENTS,
};

static const struct argp_option pass_options[] = {
	{ "quick", PASS_QUICK, NULL, 0, "each run: 1 fork, 1 x 0.2 s warm-up, 3 x 0.2 s", 1 },
	{ "forks", PASS_FORKS, "N", 0, "each run: fresh processes (default 3)", 1 },
	{ "warmup", PASS_WARMUP, "N", 0, "each run: warm-up iterations per fork", 1 },
	{ "iterations", PASS_ITERATIONS, "N", 0, "each run: measured iterations per fork", 1 },
	{ "time", PASS_TIME, "SECONDS", 0, "each run: length of an iteration", 1 },
	{ "probes", PASS_PROBES, "LIST", 0, "as run's: oncpu (the default), offcpu, sched, "
	  "runtime, alloc, counters, all or none", 1 },
	{ "freq", PASS_FREQ, "HZ", 0, "on-CPU samples per second per CPU", 1 },
	{ "call-graph", PASS_CALL_GRAPH, "MODE", 0, "fp, dwarf or auto", 1 },
	{ "stack-copy", PASS_STACK_COPY, "BYTES", 0, "user stack a DWARF sample copies", 1 },
	{ "events", PASS_EVENTS, "LIST", 0, "the counters probe's libpfm4 events", 1 },
	{ 0 },
};

/* as `run` spells them, in the order of the keys */
static const char *const pass_flags[] = {
	"--quick", "--forks", "--warmup", "--iterations", "--time",
	"--probes", "--freq", "--call-graph", "--stack-copy", "--events",
};

/* Each is kept as typed: `run` checks them (cli_check_run_options()). */
static error_t pass_parse(int key, char *arg, struct argp_state *state)
{
	struct cli_pass *p = state->input;

	if (key < PASS_QUICK || key > PASS_EVENTS)
		return ARGP_ERR_UNKNOWN;
	if (p->n + 2 > CLI_MAX_PASS) {
		p->bad = cli_usage_error("too many run options (at most %d)", CLI_MAX_PASS / 2);
		return EINVAL;
	}
	p->argv[p->n++] = pass_flags[key - PASS_QUICK];
	if (key == PASS_QUICK)
		p->quick = true;
	else
		p->argv[p->n++] = arg;
	return 0;
}

const struct argp cli_pass_argp = { pass_options, pass_parse, NULL, NULL, NULL, NULL, NULL };

/* ---- interrupts --------------------------------------------------------------------------- */

/* process-wide by nature, like the signal it records */
static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	interrupted = 1;
}

void cli_catch_interrupt(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

bool cli_interrupted(void)
{
	return interrupted;
}

int cli_self_path(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

void cli_last_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	char line[1024];

	buf[0] = '\0';
	while (f && fgets(line, sizeof(line), f))
		if (line[0] && line[0] != '\n')
			snprintf(buf, len, "%.*s", (int)strcspn(line, "\n"), line);
	if (f)
		fclose(f);
}

int cli_spawn(const char *const *argv, int out_fd, int err_fd)
{
	pid_t pid, parent = getpid();
	int status;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int out;

		/* A child run dies with us, as its own forks die with it (harness/controller.c):
		 * a sweep killed must not leave its runs going. The signal comes when this
		 * thread exits, and it waits for the child below; had we died before the prctl,
		 * init would be the parent already. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
			_exit(127);
		out = out_fd >= 0 ? out_fd : open("/dev/null", O_WRONLY);
		if (out < 0 || dup2(out, STDOUT_FILENO) < 0 || dup2(err_fd, STDERR_FILENO) < 0)
			_exit(127);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

int cli_spawn_logged(const char *const *argv, const char *log)
{
	int status, fd;

	fd = open(log, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
	if (fd < 0)
		return -errno;
	status = cli_spawn(argv, -1, fd);
	close(fd);
	return status;
}

/* argp reads the options in order and stops at the --help after them, so the first it
 * refuses is its one-line error (exit 2) and good ones end in the help text, exit 0. */
int cli_check_run_options(const char *self, const char *const *pass, size_t npass)
{
	const char *argv[4 + npass];
	char msg[1024];
	size_t n = 0, got = 0;
	int fds[2], st;
	ssize_t r;

	if (!npass)
		return 0;
	argv[n++] = self;
	argv[n++] = "run";
	for (size_t i = 0; i < npass; i++)
		argv[n++] = pass[i];
	argv[n++] = "--help";
	argv[n] = NULL;
	if (pipe2(fds, O_CLOEXEC))
		return cli_usage_error("cannot check the run options: %s", strerror(errno));
	st = cli_spawn(argv, -1, fds[1]);
	close(fds[1]);
	while (got + 1 < sizeof(msg) && (r = read(fds[0], msg + got, sizeof(msg) - 1 - got)) > 0)
		got += (size_t)r;
	close(fds[0]);
	msg[got] = '\0';
	msg[strcspn(msg, "\n")] = '\0';
	if (st == 0)
		return 0;
	if (st == CLI_EXIT_USAGE && msg[0]) {
		fprintf(stderr, "%s\n", msg);
		return CLI_EXIT_USAGE;
	}
	return cli_usage_error("cannot check the run options: %s",
			       st < 0 ? strerror(-st) : "run exited without saying why");
}

/* The run folder a child made in dir, its own --out: the one folder there (latest names
 * only a run with measured data, and a failed run's result says why it failed). */
static bool child_run_folder(const char *dir, char *name, size_t len)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;

	while (d && (e = readdir(d))) {
		struct stat st;

		if (e->d_name[0] == '.' || !strcmp(e->d_name, "latest") ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode))
			continue;
		if (found++ == 0)
			snprintf(name, len, "%s", e->d_name);
	}
	if (d)
		closedir(d);
	return found == 1;
}

struct an_result *cli_run_load(const char *dir, struct cli_run_figures *f)
{
	char path[PATH_MAX + 16], err[1024];
	struct an_result *r;
	const char *s;
	double ops, bytes;

	memset(f, 0, sizeof(*f));
	f->bytes = NAN;
	if (!child_run_folder(dir, f->run, sizeof(f->run))) {
		f->failed = true;
		f->no_run = true;
		snprintf(f->reason, sizeof(f->reason), "%s: the run wrote no run folder", dir);
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, f->run);
	r = an_result_load(path, err, sizeof(err));
	if (!r) {
		f->failed = true;
		snprintf(f->reason, sizeof(f->reason), "%s", err);
		return NULL;
	}
	s = an_result_str(r, "failure");
	f->score = an_result_num(r, "score");
	f->error = an_result_num(r, "error");
	f->n = an_result_num(r, "n");
	snprintf(f->unit, sizeof(f->unit), "%s", an_result_str(r, "unit") ?: "ops/s");
	if (s || !(f->score > 0)) {
		f->failed = true;
		snprintf(f->reason, sizeof(f->reason), "%s", s ? s : "no throughput measured");
	}
	ops = an_result_num(r, "runtime.ops");
	bytes = an_result_num(r, "runtime.alloc_bytes");
	f->bytes = ops > 0 && bytes > 0 ? bytes / ops : NAN;
	return r;
}

static bool folder_is_empty(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	bool empty = d != NULL;

	while (d && empty && (e = readdir(d)))
		empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return empty;
}

int cli_make_out_dir(const char *out, const char *label, char *dir, size_t len)
{
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	struct stat st;

	if (out) {
		snprintf(dir, len, "%s", out);
		if (!mkdir(dir, 0777))
			return 0;
		if (errno != EEXIST)
			return cli_usage_error("-o %s: %s; name a new or empty folder whose parent "
					       "exists", out, strerror(errno));
		if (!lstat(dir, &st) && S_ISDIR(st.st_mode) && folder_is_empty(dir))
			return 0;
		return cli_usage_error("-o %s: exists and is not an empty folder; name a new or "
				       "empty folder", out);
	}
	if (mkdir("results", 0777) && errno != EEXIST)
		return cli_usage_error("cannot create results: %s (choose a folder with -o)",
				       strerror(errno));
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	for (int n = 1; n < 1000; n++) {
		if (n == 1)
			snprintf(dir, len, "results/%s-%s", stamp, label);
		else
			snprintf(dir, len, "results/%s-%s-%d", stamp, label, n);
		if (!mkdir(dir, 0777))
			return 0;
		if (errno != EEXIST)
			break;
	}
	return cli_usage_error("cannot create %s: %s (choose a folder with -o)", dir,
			       strerror(errno));
}

int cli_write_files(const char *dir, const struct cli_out_file *files, size_t n, void *ctx)
{
	char path[PATH_MAX + 64];
	int err, first = 0;

	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i].name);
		err = an_write_file_atomic(path, files[i].fn, ctx);
		if (err) {
			fprintf(stderr, "schedlab: %s: cannot write it: %s\n", path, strerror(-err));
			first = first ? first : err;
		}
	}
	return first;
}

void cli_describe_command(char *buf, size_t len, int argc, char **argv)
{
	size_t off = (size_t)snprintf(buf, len, "schedlab");

	for (int i = 0; i < argc && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, " %s", argv[i]);
}
