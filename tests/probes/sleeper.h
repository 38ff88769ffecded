/*
 * The offcpu tests' child, tests/helpers/sleeper: starting it, telling it to begin, and
 * reading back the time it measured itself. Included by the offcpu tests; everything is
 * static. Children are killed and reaped by busy.h's reap_kids (the suites' .fini).
 */
#ifndef SCHEDLAB_TESTS_PROBES_SLEEPER_H
#define SCHEDLAB_TESTS_PROBES_SLEEPER_H

#include "tests/probes/busy.h"

struct sleeper {
	pid_t pid;
	int64_t tls_off;
	FILE *out;  /* its stdout */
	int in;     /* its stdin: a line starts the naps, closing it ends the child */
};

/* Start `sleeper COUNT MS MODE` and read the phase word's offset it prints first. */
static __attribute__((unused)) void sleeper_spawn(struct sleeper *s, const char *count,
						  const char *ms, const char *mode)
{
	const char *build = getenv("SCHEDLAB_BUILD");
	char path[PATH_MAX], line[64];
	int out[2], in[2];

	snprintf(path, sizeof(path), "%s/tests/helpers/sleeper", build ? build : "build");
	cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
	s->pid = fork();
	cr_assert_geq(s->pid, 0, "fork: %s", strerror(errno));
	if (s->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(out[1], STDOUT_FILENO);
		dup2(in[0], STDIN_FILENO);
		execl(path, "sleeper", count, ms, mode, (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	kids[nkids++] = s->pid;
	close(out[1]);
	close(in[0]);
	s->in = in[1];
	s->out = fdopen(out[0], "r");
	cr_assert_not_null(s->out);
	cr_assert_not_null(fgets(line, sizeof(line), s->out), "%s printed nothing", path);
	s->tls_off = strtoll(line, NULL, 10);
}

/* Let it nap, and wait until it has: the nanoseconds it measured itself. */
static __attribute__((unused)) uint64_t sleeper_run(struct sleeper *s)
{
	char line[64];

	cr_assert_eq(write(s->in, "go\n", 3), 3);
	cr_assert_not_null(fgets(line, sizeof(line), s->out), "sleeper died while napping");
	return strtoull(line, NULL, 10);
}

/* Let it exit (after the caller has read its mappings). */
static __attribute__((unused)) void sleeper_end(struct sleeper *s)
{
	close(s->in);
	fclose(s->out);
}

#endif /* SCHEDLAB_TESTS_PROBES_SLEEPER_H */
