/*
 * offcpu_cost: what the offcpu probe costs per sched_switch event, against perf stat
 * counting the same tracepoint, measured side by side in one run.
 *
 *   offcpu_cost [ROUNDS [SECONDS]]     (as root; perf on PATH for its column)
 *
 * A child process ping-pongs a byte between two threads over two pipes, both pinned to
 * one CPU, so that every hand-off is a context switch; it counts round trips in shared
 * memory. Each round measures its rate for SECONDS (default 0.5) under each condition in
 * turn (each round starting at the next): nothing (the probe attached, its programs
 * returning at their first test); `perf stat -e sched:sched_switch -p CHILD`; `perf
 * record -g` on the same tracepoint (both stacks of every event, the probe's own work,
 * written to a file in /tmp removed after each round, whose samples are counted to show
 * that it took every event of the window); offcpu with the child as target
 * (every switch is the target's: two stack walks and a map update each); the same
 * with the user stack only (--offcpu-stacks user: no kernel walk); offcpu with another
 * process as target (the child's switches are other tasks', filtered out in the
 * kernel). Both probes stay attached throughout, the idle one returning at its first
 * test. The cost of an event is the extra time per round trip over the
 * events per round trip (2; the probe's own count of events says how many it saw). The
 * medians over ROUNDS (default 7) rounds are printed, as a Markdown table.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probes/probes.h"

enum { C_NONE, C_PERF, C_PERF_G, C_TARGET, C_USER, C_OTHER, NCOND };
static const char *const cond_names[NCOND] = {
	"nothing",
	"perf stat -e sched:sched_switch -p CHILD",
	"perf record -g -e sched:sched_switch -p CHILD",
	"offcpu, the child its target",
	"offcpu --offcpu-stacks user, the child its target",
	"offcpu, another process its target",
};

static volatile uint64_t *trips;
static int ping[2], pong[2];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *ponger(void *arg)
{
	char b;

	pin(0);
	for (;;) {
		if (read(ping[0], &b, 1) != 1 || write(pong[1], &b, 1) != 1)
			_exit(1);
	}
	return NULL;
}

static void child_main(void)
{
	pthread_t t;
	char b = 'x';

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	pin(0);
	if (pipe(ping) || pipe(pong) || pthread_create(&t, NULL, ponger, NULL))
		_exit(1);
	for (;;) {
		if (write(ping[1], &b, 1) != 1 || read(pong[0], &b, 1) != 1)
			_exit(1);
		__atomic_add_fetch(trips, 1, __ATOMIC_RELAXED);
	}
}

static double rate(double secs)
{
	uint64_t t0 = __atomic_load_n(trips, __ATOMIC_RELAXED), t1;
	double s0 = now_s(), s1;
	struct timespec ts = { (time_t)secs, (long)((secs - (time_t)secs) * 1e9) };

	nanosleep(&ts, NULL);
	t1 = __atomic_load_n(trips, __ATOMIC_RELAXED);
	s1 = now_s();
	return (double)(t1 - t0) / (s1 - s0);
}

/* perf stat counting the child's switches, or with record perf record taking both
 * stacks of each (as the probe does) into out. */
static pid_t start_perf(pid_t pid, const char *record)
{
	char p[32];
	pid_t k = fork();

	if (k == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		snprintf(p, sizeof(p), "%d", (int)pid);
		freopen("/dev/null", "w", stderr);
		freopen("/dev/null", "w", stdout);
		if (record)
			execlp("perf", "perf", "record", "-q", "-g", "--no-buildid", "-e",
			       "sched:sched_switch", "-o", record, "-p", p, (char *)NULL);
		else
			execlp("perf", "perf", "stat", "-e", "sched:sched_switch", "-p", p,
			       (char *)NULL);
		_exit(127);
	}
	/* perf attaches within a few ms of starting: give it them, outside the window */
	usleep(300 * 1000);
	return k;
}

/* What perf record wrote into file: its SAMPLE and LOST event counts (perf report
 * --stats), so that its row is judged only where it took every event of the window. */
static int perf_recorded(const char *file, double *samples, double *lost)
{
	char cmd[256], line[256];
	FILE *f;

	*samples = *lost = 0;
	snprintf(cmd, sizeof(cmd), "perf report -i %s --stats 2>/dev/null", file);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		double v;

		/* the first table is the file's totals; per-CPU tables may follow */
		if (sscanf(line, " SAMPLE events: %lf", &v) == 1 && !*samples)
			*samples = v;
		else if (sscanf(line, " LOST events: %lf", &v) == 1 && !*lost)
			*lost = v;
	}
	return pclose(f) ? -1 : 0;
}

/* The rate over secs with p timing target's threads; with events_per_trip, the target's
 * switch-outs the probe counted a round trip; *prog_ns, the program's ns a run. */
static double probed_rate(struct probe_offcpu *p, pid_t target, double secs,
			  double *events_per_trip, double *prog_ns)
{
	struct probe_offcpu_stats st = {};
	uint64_t runs0 = 0, ns0 = 0, runs1 = 0, ns1 = 0;
	double t0, r;

	probe_offcpu_prog_stats(p, &runs0, &ns0);
	probe_offcpu_start(p, target, 0);
	t0 = (double)__atomic_load_n(trips, __ATOMIC_RELAXED);
	r = rate(secs);
	t0 = (double)__atomic_load_n(trips, __ATOMIC_RELAXED) - t0;
	probe_offcpu_stop(p);
	probe_offcpu_drain(p, NULL, NULL, &st);
	probe_offcpu_prog_stats(p, &runs1, &ns1);
	if (events_per_trip)
		*events_per_trip = t0 > 0 ? (double)st.switches / t0 : 0;
	*prog_ns = runs1 > runs0 ? (double)(ns1 - ns0) / (double)(runs1 - runs0) : 0;
	return r;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 7;
	double secs = argc > 2 ? atof(argv[2]) : 0.5;
	double r[NCOND][64], events_per_trip[64], prog_ns[64], user_ns[64], other_ns[64];
	/* perf record's samples over the window's switches (>= 1: it took them all), lost */
	double recorded[64], perf_lost = 0;
	int recorded_n = 0;
	struct probe_offcpu_opts user_only = { .stacks = PROBE_OFFCPU_USER };
	struct probe_offcpu *p, *pu;
	char err[256];
	pid_t child, perf;
	bool have_perf = !system("perf --version >/dev/null 2>&1");
	char record[64];

	if (rounds < 1 || rounds > 64 || secs <= 0) {
		fprintf(stderr, "usage: offcpu_cost [ROUNDS (1-64) [SECONDS]]\n");
		return 2;
	}
	snprintf(record, sizeof(record), "/tmp/offcpu_cost.%d.data", (int)getpid());
	trips = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (trips == MAP_FAILED)
		return 1;
	child = fork();
	if (child == 0)
		child_main();
	p = probe_offcpu_open(NULL, err, sizeof(err));
	pu = p ? probe_offcpu_open(&user_only, err, sizeof(err)) : NULL;
	if (!pu) {
		fprintf(stderr, "offcpu_cost: %s\n", err);
		kill(child, SIGKILL);
		return 1;
	}
	rate(0.5); /* warm up */
	for (int i = 0; i < rounds; i++) {
		/* each round starts at another condition, so that none always follows the
		 * same one (a drain, perf's exit) */
		for (int k = 0; k < NCOND; k++) {
			int c = (i + k) % NCOND;

			switch (c) {
			case C_NONE:
				r[c][i] = rate(secs);
				break;
			case C_PERF:
			case C_PERF_G:
				if (!have_perf)
					break;
			{
				double t0, samples, lost;

				perf = start_perf(child, c == C_PERF_G ? record : NULL);
				t0 = (double)__atomic_load_n(trips, __ATOMIC_RELAXED);
				r[c][i] = rate(secs);
				t0 = (double)__atomic_load_n(trips, __ATOMIC_RELAXED) - t0;
				kill(perf, SIGINT);
				waitpid(perf, NULL, 0);
				if (c != C_PERF_G)
					break;
				/* two switches a round trip, as the probe counts them */
				if (!perf_recorded(record, &samples, &lost) && t0 > 0) {
					recorded[recorded_n++] = samples / (2 * t0);
					perf_lost += lost;
				}
				unlink(record);
				break;
			}
			case C_TARGET:
				r[c][i] = probed_rate(p, child, secs, &events_per_trip[i], &prog_ns[i]);
				break;
			case C_USER:
				r[c][i] = probed_rate(pu, child, secs, NULL, &user_ns[i]);
				break;
			case C_OTHER:
				r[c][i] = probed_rate(p, getpid(), secs, NULL, &other_ns[i]);
				break;
			}
		}
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	probe_offcpu_free(pu);
	probe_offcpu_free(p);

	{
		double base = median(r[C_NONE], rounds), ept = median(events_per_trip, rounds);

		printf("Ping-pong over a pipe, two threads pinned to one CPU: %d rounds of %.2f s "
		       "per condition, interleaved; medians. %.2f sched_switch events per round "
		       "trip (the target's switch-outs the probe counted). The program alone (the kernel's BPF "
		       "run-time statistics) took %.0f ns an event of the target (two stack walks, "
		       "stored, and a start record), %.0f ns with the user stack only, %.0f ns an "
		       "event of another task.\n\n",
		       rounds, secs, ept, median(prog_ns, rounds), median(user_ns, rounds),
		       median(other_ns, rounds));
		printf("| condition | round trips/s | ns per event over nothing |\n|---|---:|---:|\n");
		double cov = -1;

		for (int c = 0; c < NCOND; c++) {
			double m;

			if ((c == C_PERF || c == C_PERF_G) && !have_perf) {
				printf("| %s | n/a: perf not on PATH | |\n", cond_names[c]);
				continue;
			}
			m = median(r[c], rounds);
			if (c == C_PERF_G && recorded_n)
				/* it must have taken every event of the window to compare */
				cov = median(recorded, recorded_n);
			if (c == C_NONE)
				printf("| %s | %.0f | |\n", cond_names[c], m);
			else
				printf("| %s | %.0f | %.0f |\n", cond_names[c], m,
				       (1e9 / m - 1e9 / base) / (ept > 0 ? ept : 2));
		}
		if (have_perf) {
			if (cov < 0)
				printf("\nperf record's file could not be read (perf report --stats "
				       "failed): its row is not judged.\n");
			else
				printf("\nperf record took %.2f× the window's switches (median over "
				       "%d rounds; it runs a little longer than the window) and lost "
				       "%.0f events in all%s\n",
				       cov, recorded_n, perf_lost,
				       cov >= 1 && !perf_lost ?
					       ": every event of each window was walked and written." :
					       ": it did not take every event, so its figure "
					       "understates what the same work costs.");
		}
	}
	return 0;
}
