/*
 * The CPU time of a set of processes and of everything they start: a task-clock
 * counter on each of their threads, inherited by every thread a counted thread starts
 * and, when processes are followed, by every process it forks. The kernel folds an
 * exited descendant's count into its ancestor's counter and a read sums the living
 * ones, so one read at the end clocks the whole tree, whatever exited meanwhile: the
 * clock behind a profile of processes' expected samples (`schedlab profile`), where no
 * one process CPU clock covers the set. Internal to probes/ (probe__ prefix).
 */
#ifndef SCHEDLAB_PROBES_COMMON_TREECLOCK_H
#define SCHEDLAB_PROBES_COMMON_TREECLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct probe__tree_clock {
	int *fds;       /* one counter per thread found at the start */
	pid_t *tids;    /* whose */
	size_t n, cap;
	bool processes; /* a process a counted thread forks is counted too */
};

/* Count every thread of process tgid from now on (a thread that starts while they are
 * listed is found by listing again). 0, or -errno: -ESRCH when it is gone. */
int probe__tree_clock_add(struct probe__tree_clock *c, pid_t tgid);
/* The counters' sum in ns: every counted thread's CPU time since it was added, with its
 * descendants'. -errno when one cannot be read. */
int probe__tree_clock_read(const struct probe__tree_clock *c, uint64_t *ns);
/* Close the counters; safe on a zeroed or closed clock. */
void probe__tree_clock_close(struct probe__tree_clock *c);

#endif /* SCHEDLAB_PROBES_COMMON_TREECLOCK_H */
