/*
 * What the sched probe costs per context switch, beside `perf stat -e
 * sched:sched_switch` on the same child in the same run: a ping-pong of two threads
 * pinned to one CPU (tests/helpers/sched_child), where every exchange is two switches
 * and little else. What is compared is the child's own CPU time over its exchanges
 * (CLOCK_PROCESS_CPUTIME_ID: a tracepoint's program and perf's counting run in the
 * switching thread's context, so they are in it, and waiting behind other work on a
 * busy CPU is not), with nothing attached, with the probe keeping its threads, and
 * under perf stat; the modes interleave round by round so that the machine's drift
 * falls on all three alike.
 *
 *   sched_cost [ROUNDS [EXCHANGES [CPU]]]     defaults 9, 200000, 0
 *
 * Prints each mode's median time, the switches (the child's own count, getrusage), the
 * median over rounds of the extra ns per switch over nothing attached in that round, and the probe's programs' own run time per
 * run as the kernel's BPF statistics measure it (every sched_switch, sched_wakeup and
 * sched_migrate_task of the machine while it is attached).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probes/probes.h"

enum mode { OFF, SCHED, PERF, NMODES };
static const char *const mode_names[] = { "nothing attached", "sched probe",
					  "perf stat -e sched:sched_switch" };

struct child {
	pid_t pid;
	FILE *in, *out;
};

static int spawn(struct child *c, enum mode m, const char *exchanges, const char *cpu)
{
	const char *build = getenv("SCHEDLAB_BUILD");
	char path[512], line[128];
	int to[2], from[2];

	snprintf(path, sizeof(path), "%s/tests/helpers/sched_child", build ? build : "build");
	if (pipe2(to, O_CLOEXEC) || pipe2(from, O_CLOEXEC))
		return -errno;
	c->pid = fork();
	if (c->pid < 0)
		return -errno;
	if (c->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(to[0], STDIN_FILENO);
		dup2(from[1], STDOUT_FILENO);
		if (m == PERF)
			execlp("perf", "perf", "stat", "-e", "sched:sched_switch", "-x,", "-o",
			       "/dev/null", "--", path, "pingpong", exchanges, cpu, (char *)NULL);
		else
			execl(path, "sched_child", "pingpong", exchanges, cpu, (char *)NULL);
		fprintf(stderr, "sched_cost: exec: %s\n", strerror(errno));
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	c->in = fdopen(to[1], "w");
	c->out = fdopen(from[0], "r");
	if (!c->in || !c->out || !fgets(line, sizeof(line), c->out) || strncmp(line, "ready", 5))
		return -EIO;
	return 0;
}

/* The figures of "done": four switch counts, the wall ns, the CPU ns. */
static int run(struct child *c, long *fig)
{
	char line[256];

	fputs("go\n", c->in);
	fflush(c->in);
	if (!fgets(line, sizeof(line), c->out) ||
	    sscanf(line, "done %ld %ld %ld %ld %ld %ld", &fig[0], &fig[1], &fig[2], &fig[3],
		   &fig[4], &fig[5]) != 6)
		return -EIO;
	return 0;
}

static void finish(struct child *c)
{
	fclose(c->in);
	fclose(c->out);
	waitpid(c->pid, NULL, 0);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int ignore(const struct probe_sched_thread *t, void *ctx)
{
	(void)t;
	(void)ctx;
	return 0;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 9;
	const char *exchanges = argc > 2 ? argv[2] : "200000";
	const char *cpu = argc > 3 ? argv[3] : "0";
	double *t[NMODES], *d[NMODES], *sw, med[NMODES], dmed[NMODES], msw;
	uint64_t runs0 = 0, ns0 = 0, runs = 0, ns = 0;
	struct probe_sched_stats st = {};
	struct probe_sched *p;
	char err[256];

	if (rounds < 1 || rounds > 1000 || atol(exchanges) < 1) {
		fprintf(stderr, "sched_cost: ROUNDS 1..1000 and EXCHANGES >= 1\n");
		return 2;
	}
	p = probe_sched_open(NULL, err, sizeof(err));
	if (!p) {
		fprintf(stderr, "sched_cost: %s\n", err);
		return 1;
	}
	for (int m = 0; m < NMODES; m++) {
		t[m] = calloc(rounds, sizeof(double));
		d[m] = calloc(rounds, sizeof(double));
	}
	sw = calloc(rounds, sizeof(double));
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < NMODES; k++) {
			enum mode m = (enum mode)((r + k) % NMODES); /* rotate the order */
			struct child c;
			long fig[6];
			uint64_t a, b;

			if (spawn(&c, m, exchanges, cpu)) {
				fprintf(stderr, "sched_cost: the child did not start\n");
				return 1;
			}
			if (m == SCHED) {
				probe_sched_prog_stats(p, &a, &b);
				runs0 += a, ns0 += b;
				probe_sched_start(p, c.pid, 0);
			}
			if (run(&c, fig)) {
				fprintf(stderr, "sched_cost: the child did not finish\n");
				return 1;
			}
			if (m == SCHED) {
				probe_sched_stop(p);
				probe_sched_prog_stats(p, &a, &b);
				runs += a, ns += b;
				probe_sched_drain(p, ignore, NULL, &st);
			}
			finish(&c);
			t[m][r] = (double)fig[5];
			if (m == OFF)
				sw[r] = (double)(fig[0] + fig[1] + fig[2] + fig[3]);
		}
	}
	msw = 0;
	for (int r = 0; r < rounds; r++)
		msw += sw[r] / rounds;
	/* each round's difference from nothing attached in that round, then the median:
	 * a round's load falls on its three modes alike */
	for (int m = NMODES - 1; m >= 0; m--) {
		for (int r = 0; r < rounds; r++)
			d[m][r] = (t[m][r] - t[OFF][r]) / sw[r];
		qsort(d[m], rounds, sizeof(double), cmp);
		dmed[m] = d[m][rounds / 2];
		qsort(t[m], rounds, sizeof(double), cmp);
		med[m] = t[m][rounds / 2];
	}

	printf("ping-pong of %s exchanges on CPU %s, %d rounds, median of each; %.0f switches "
	       "a run (getrusage)\n\n", exchanges, cpu, rounds, msw);
	printf("| mode | CPU time (ms) | per switch (ns) | over nothing attached, same round "
	       "(ns a switch) |\n| --- | ---: | ---: | ---: |\n");
	for (int m = 0; m < NMODES; m++)
		printf("| %s | %.1f | %.0f | %+.0f |\n", mode_names[m], med[m] / 1e6, med[m] / msw,
		       dmed[m]);
	printf("\nsched probe's programs: %.0f ns a run over %llu runs (kernel BPF statistics); "
	       "events of the child kept: %llu switch-outs, %llu wake-ups, lost %llu\n",
	       runs > runs0 ? (double)(ns - ns0) / (double)(runs - runs0) : 0,
	       (unsigned long long)(runs - runs0),
	       (unsigned long long)st.seen[PROBE_SCHED_SWITCH_OUT],
	       (unsigned long long)st.seen[PROBE_SCHED_WAKEUP],
	       (unsigned long long)(st.lost[0] + st.lost[1] + st.lost[2] + st.lost[3]));
	probe_sched_free(p);
	return 0;
}
