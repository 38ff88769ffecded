/*
 * A task-clock counter per thread, inherited (perf_event_attr.inherit): see treeclock.h.
 * With inherit_thread the inheritance stops at threads, so a profile that does not
 * follow the processes its targets start does not clock them either.
 */
#include "probes/common/treeclock.h"

#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Listings of a process's threads until one finds none new: a thread started while
 * the counters were opened is found by the next, unless threads keep starting. */
#define LIST_PASSES 8

static bool counted(const struct probe__tree_clock *c, pid_t tid)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->tids[i] == tid)
			return true;
	return false;
}

/* Open thread tid's counter: 1 when opened, 0 when the thread is gone, -errno. */
static int open_thread(struct probe__tree_clock *c, pid_t tid)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_TASK_CLOCK,
		.inherit = 1,
		.inherit_thread = !c->processes,
	};
	int fd;

	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 16;
		int *fds = realloc(c->fds, cap * sizeof(*fds));
		pid_t *tids;

		if (!fds)
			return -ENOMEM;
		c->fds = fds;
		tids = realloc(c->tids, cap * sizeof(*tids));
		if (!tids)
			return -ENOMEM;
		c->tids = tids;
		c->cap = cap;
	}
	fd = (int)syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return errno == ESRCH ? 0 : -errno;
	c->fds[c->n] = fd;
	c->tids[c->n++] = tid;
	return 1;
}

int probe__tree_clock_add(struct probe__tree_clock *c, pid_t tgid)
{
	char path[64];
	bool found = true;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)tgid);
	for (int pass = 0; pass < LIST_PASSES && found; pass++) {
		DIR *d = opendir(path);
		struct dirent *e;

		if (!d)
			return errno == ENOENT ? -ESRCH : -errno;
		found = false;
		while ((e = readdir(d))) {
			char *end;
			long tid = strtol(e->d_name, &end, 10);
			int ret;

			if (e->d_name[0] == '.' || *end || tid <= 0 || counted(c, (pid_t)tid))
				continue;
			ret = open_thread(c, (pid_t)tid);
			if (ret < 0) {
				closedir(d);
				return ret;
			}
			found |= ret > 0;
		}
		closedir(d);
	}
	return 0;
}

int probe__tree_clock_read(const struct probe__tree_clock *c, uint64_t *ns)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < c->n; i++) {
		uint64_t v;
		/* a counter whose thread exited keeps its last count, its descendants' in it */
		ssize_t r = read(c->fds[i], &v, sizeof(v));

		if (r < 0)
			return -errno;
		if (r != (ssize_t)sizeof(v))
			return -EIO; /* the kernel put it in an error state */
		sum += v;
	}
	*ns = sum;
	return 0;
}

void probe__tree_clock_close(struct probe__tree_clock *c)
{
	for (size_t i = 0; i < c->n; i++)
		close(c->fds[i]);
	free(c->fds);
	free(c->tids);
	memset(c, 0, sizeof(*c));
}
