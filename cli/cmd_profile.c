/*
 * schedlab profile: the on-CPU probe on any program, a running process or a command it
 * starts, and the processes they start; its run folder as `run` writes one (harness/
 * pipeline.c: hx_pipeline_profile()), so that diagnose, compare and flame read it alike.
 * What is here is the command: its options, the checks before anything is sampled, the
 * line that says where the profile went, the exit status.
 */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "cli/cli.h"
#include "harness/harness.h"

static const char doc[] =
	"Sample the on-CPU stacks of any program: the processes -p names (every thread of "
	"each), or COMMAND started here with its ARGS; either way every process they start "
	"while profiled is followed too (--no-follow: not). It ends when the command exits (or, with -p, when "
	"every process has), when --duration ends, or at Ctrl-C; what was sampled is written "
	"in every case. The folder is a run's, results/<stamp>-<program>-profile/: "
	"oncpu.folded, an interactive oncpu.svg, report.md with the categories and "
	"findings, result.json; 'schedlab diagnose', 'compare' and 'flame' read it as they "
	"read a run's.\n\n"
	"Frames are named from each process's own mappings and symbol tables (PIE, shared "
	"libraries, code opened with dlopen while profiled, the vDSO); C++ and Rust names "
	"demangled, Go's as they are; a JIT's code from its perf map (/tmp/perf-PID.map: "
	"java -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit, or node "
	"--perf-basic-prof), suffixed _[j]; a call the compiler inlined, from the DWARF of "
	"the file or of its detached debug file (a -dbg package's), as a frame of its own "
	"suffixed _[i]; a PLT stub NAME@plt; anything else module+0xOFF. Categories come from "
	"the stack rules (analysis/categories.rules), with sections for Go, Tokio, the JDK "
	"and glibc threads; a frame no rule names is 'other', counted. --rules FILE "
	"classifies by a file of your own instead ('schedlab list --rules > my.rules' to "
	"start from the built-in ones).\n\n"
	"User stacks are walked by frame pointers; in --call-graph auto (the default) and "
	"dwarf, a stack the walk cannot give is unwound from DWARF with its own process's "
	"unwinder. Go switches stacks where its DWARF cannot follow (the vDSO under "
	"runtime.nanotime1): profile Go with --call-graph fp, which walks through.\v"
	"Examples:\n"
	"  schedlab profile -- ./server --port 8080    until it exits, or Ctrl-C\n"
	"  schedlab profile -p 4242 --duration 10      a running process for 10 s\n"
	"  schedlab profile -p 4242,4243               until both exit, or Ctrl-C\n"
	"  schedlab profile --call-graph fp -- ./goserver   (Go keeps frame pointers)\n"
	"  schedlab profile -- java -XX:+PreserveFramePointer \\\n"
	"        -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit Main\n"
	"  schedlab diagnose results/latest           what the profile says\n\n"
	"With --duration, a command still running at its end is stopped (SIGTERM, then "
	"SIGKILL 2 s later), as it is when the profile is interrupted; so is a command whose "
	"profiler dies. Ctrl-C ends a -p profile without --duration whole (exit 0); a "
	"command's or a duration's profile it ends early is written with \"partial\": true "
	"(exit 130).\n\n"
	"Exit status: 0 when the profile was written, 1 when it could not be (or the probe "
	"could not attach), 2 for bad input (a pid that is no process or may not be traced, a "
	"command that cannot be started), 130 when interrupted early. How the command ended "
	"(its exit status, a signal) is said on stderr, not passed on as ours.";

enum {
	OPT_DURATION = 0x100,
	OPT_FREQ,
	OPT_CALL_GRAPH,
	OPT_JSON,
	OPT_RULES,
	OPT_NO_FOLLOW,
};

static const struct argp_option options[] = {
	{ "pid", 'p', "PID[,PID...]", 0, "profile these running processes (all their threads)", 0 },
	{ "duration", OPT_DURATION, "SECONDS", 0,
	  "stop after this long (default: when the program exits, or Ctrl-C)", 0 },
	{ "freq", OPT_FREQ, "HZ", 0, "samples per second per CPU (default 999)", 0 },
	{ "call-graph", OPT_CALL_GRAPH, "MODE", 0,
	  "fp, dwarf or auto (default auto: frame pointers, DWARF where they fail)", 0 },
	{ "no-follow", OPT_NO_FOLLOW, NULL, 0,
	  "sample only the command or the -p processes, not the processes they start", 0 },
	{ "rules", OPT_RULES, "FILE", 0,
	  "classify the samples by FILE's stack rules instead of the built-in ones ('schedlab "
	  "list --rules' prints those, to start from)", 0 },
	{ "out", 'o', "DIR", 0, "the results folder (default results)", 0 },
	{ "json", OPT_JSON, NULL, 0, "print the profile's result.json on stdout", 0 },
	{ 0 }
};

#define MAX_PIDS 64

struct profile_args {
	pid_t pids[MAX_PIDS];
	size_t npids;
	char **argv;
	double duration_s;
	long freq;
	int callgraph;
	const char *out;
	const char *rules;
	bool json, no_follow;
	int bad;
};

static error_t parse_pids(struct profile_args *a, const char *arg)
{
	char buf[1024];

	if (strlen(arg) >= sizeof(buf) || !*arg || arg[0] == ',' || arg[strlen(arg) - 1] == ',' ||
	    strstr(arg, ",,")) {
		a->bad = cli_usage_error("--pid '%.60s': expected PID or PID,PID,... e.g. -p 4242",
					 arg);
		return EINVAL;
	}
	strcpy(buf, arg);
	for (char *tok, *save = NULL, *str = buf; (tok = strtok_r(str, ",", &save)); str = NULL) {
		long v;

		if (a->npids == MAX_PIDS) {
			a->bad = cli_usage_error("--pid: at most %d processes", MAX_PIDS);
			return EINVAL;
		}
		if (!cli_parse_long(tok, 1, INT32_MAX, &v)) {
			a->bad = cli_usage_error("--pid '%s': '%s' is not a process id (a whole "
						 "number from 1)", arg, tok);
			return EINVAL;
		}
		a->pids[a->npids++] = (pid_t)v;
	}
	return 0;
}

static error_t parse(int key, char *arg, struct argp_state *state)
{
	struct profile_args *a = state->input;

	switch (key) {
	case 'p':
		return parse_pids(a, arg);
	case OPT_DURATION:
		if (!cli_parse_double(arg, 0.001, 86400, &a->duration_s)) {
			a->bad = cli_usage_error("--duration '%s': expected seconds from 0.001 to "
						 "86400, e.g. --duration 10", arg);
			return EINVAL;
		}
		return 0;
	case OPT_FREQ:
		a->bad = cli_parse_freq(arg, &a->freq);
		return a->bad ? EINVAL : 0;
	case OPT_CALL_GRAPH:
		a->bad = cli_parse_call_graph(arg, &a->callgraph);
		return a->bad ? EINVAL : 0;
	case 'o':
		a->bad = cli_parse_out(arg, &a->out);
		return a->bad ? EINVAL : 0;
	case OPT_JSON:
		a->json = true;
		return 0;
	case OPT_RULES:
		a->rules = arg;
		return 0;
	case OPT_NO_FOLLOW:
		a->no_follow = true;
		return 0;
	case ARGP_KEY_ARGS: {
		/* state->argv is the parser's copy, gone after it: keep the pointers (to the
		 * process's own strings) */
		int n = state->argc - state->next;

		a->argv = calloc((size_t)n + 1, sizeof(*a->argv));
		if (!a->argv) {
			a->bad = cli_usage_error("out of memory");
			return ENOMEM;
		}
		memcpy(a->argv, state->argv + state->next, (size_t)n * sizeof(*a->argv));
		return 0;
	}
	case ARGP_KEY_END:
		if (!a->argv && !a->npids) {
			a->bad = cli_usage_error("nothing to profile: give -p PID or -- COMMAND "
						 "[ARGS...] (see 'schedlab profile --help')");
			return EINVAL;
		}
		if (a->argv && a->npids) {
			a->bad = cli_usage_error("-p and a command: profile one or the other");
			return EINVAL;
		}
		return 0;
	}
	return ARGP_ERR_UNKNOWN;
}

/* The program's name for the run folder: the command's file name, or the first process's
 * name; letters, digits and ._+- kept (a run's name allows no other), the rest '_'. */
static void program_name(const struct profile_args *a, char *buf, size_t len)
{
	char comm[64] = "";
	const char *name = comm;

	if (a->argv) {
		const char *slash = strrchr(a->argv[0], '/');

		name = slash ? slash + 1 : a->argv[0];
	} else {
		char path[64];
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/comm", (int)a->pids[0]);
		f = fopen(path, "re");
		if (!f || !fgets(comm, sizeof(comm), f))
			snprintf(comm, sizeof(comm), "pid%d", (int)a->pids[0]);
		if (f)
			fclose(f);
		comm[strcspn(comm, "\n")] = '\0';
	}
	snprintf(buf, len, "%.48s", *name ? name : "program");
	for (char *c = buf; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || strchr("._+-", *c)))
			*c = '_';
	if (buf[0] == '.')
		buf[0] = '_'; /* "." and ".." are no run's name */
}

static void print_json(void *ctx, const struct an_run *run)
{
	(void)ctx;
	an_report_json(run, stdout);
}

static void on_signal(int sig)
{
	if (hx_interrupted())
		an_files_interrupt();
	hx_interrupt(sig);
}

/* The probe opened and the folder checked, the profile taken and written. */
static int profile(const struct profile_args *a, const char *command)
{
	struct probe_oncpu_opts po = {
		.freq = (unsigned)a->freq,
		.callgraph = (enum probe_callgraph)a->callgraph,
	};
	struct hx_target t = {
		.pids = a->pids,
		.npids = a->npids,
		.argv = a->argv,
		.duration_s = a->duration_s,
		.no_follow = a->no_follow,
		.log = stderr,
	};
	struct hx_pipeline o = {
		.out = a->out,
		.command = command,
		.probes = 1u << HX_PROBE_ONCPU,
		.log = stderr,
		.emit = a->json ? print_json : NULL,
	};
	struct sigaction sa = { .sa_handler = on_signal };
	struct hx_probe_config pc = { 0 };
	struct hx_target_result tr;
	struct hx_pipeline_row row;
	struct hx_profile prof;
	struct hx_probeset set;
	char name[64], why[HX_WHY_LEN];
	int status, err;

	/* the maps at the probe's default sizes; a profile that fills them has its losses
	 * counted and drawn */
	err = hx_profile_open(&prof, true, &po);
	if (err) {
		/* the built-in rules that do not parse have said why */
		if (err == -ENOMEM)
			cli_usage_error("out of memory");
		return CLI_EXIT_FAIL;
	}
	if (a->rules && (status = cli_use_rules(&prof, a->rules)))
		goto out_close_profile;
	if (prof.open_error == -ERANGE) {
		status = cli_usage_error("--freq %ld: %s", a->freq,
					 prof.status + strlen("not attached: "));
		goto out_close_profile;
	}
	if (!prof.attached) {
		cli_usage_error("oncpu: %s", prof.status);
		status = CLI_EXIT_FAIL;
		goto out_close_profile;
	}
	err = cli_mkdir_p(a->out);
	if (!err && access(a->out, W_OK))
		err = -errno;
	if (err) {
		status = cli_folder_error(a->out, a->out, err);
		goto out_close_profile;
	}
	if (hx_probeset_open(&set, &prof, 1u << HX_PROBE_ONCPU, &pc, why, sizeof(why))) {
		status = cli_usage_error("%s", why);
		goto out_close_profile;
	}
	program_name(a, name, sizeof(name));
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	err = hx_pipeline_profile(&t, name, &set, &o, &row, &tr);
	if (row.dir_error) {
		status = cli_folder_error(a->out, row.dir, row.dir_error);
	} else if (!row.dir[0]) {
		/* nothing sampled: the pid or the command was the user's to fix */
		cli_usage_error("%s", row.error);
		status = err == -ESRCH ? CLI_EXIT_USAGE : cli_exit_for(err);
	} else {
		if (!a->json)
			printf("%s\n", row.dir);
		if (tr.unnamed)
			fprintf(stderr, "schedlab: %zu of %zu processes exited before their "
				"mappings could be read: their frames are addresses\n", tr.unnamed,
				tr.processes);
		status = err ? CLI_EXIT_FAIL : row.partial ? CLI_EXIT_INTERRUPTED : CLI_EXIT_OK;
	}
	hx_probeset_close(&set);
out_close_profile:
	hx_profile_close(&prof);
	return status;
}

int cmd_profile(int argc, char **argv)
{
	static const struct argp argp = { options, parse, "-p PID[,PID...] | -- COMMAND [ARGS...]",
					  doc, NULL, NULL, NULL };
	struct profile_args a = { .freq = 999, .callgraph = PROBE_CG_AUTO, .out = "results" };
	char command[2048];

	int status;

	if (cli_argp_parse(&argp, "profile", argc, argv, &a)) {
		free(a.argv);
		return a.bad ? a.bad : CLI_EXIT_USAGE;
	}
	cli_describe_command(command, sizeof(command), argc, argv);
	status = profile(&a, command);
	free(a.argv);
	return status;
}
