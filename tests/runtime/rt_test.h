/*
 * Shared by the runtime tests: starting schedulers, running a test under every preset,
 * waiting for a flag, pinning a thread. Sizes: whole in the normal build, a tenth under
 * ThreadSanitizer (make test SANITIZE=thread), which slows every access by an order of
 * magnitude; the races it looks for need interleavings, not volume. Tests of memory
 * figures are off under it (.disabled = RT_UNDER_TSAN): its shadow memory is in them.
 */
#ifndef SCHEDLAB_TESTS_RT_TEST_H
#define SCHEDLAB_TESTS_RT_TEST_H

#if defined(RT_SANITIZE_THREAD)
#define RT_TEST_N(n) ((n) / 10 ? (n) / 10 : 1)
#define RT_UNDER_TSAN 1
#else
#define RT_TEST_N(n) (n)
#define RT_UNDER_TSAN 0
#endif

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime/rt.h"

/* Burn ns of CPU on the calling thread (a task's worker stays busy all the while). */
static inline void rt_test_spin_ns(uint64_t ns)
{
	uint64_t until = rt_now_ns() + ns;

	while (rt_now_ns() < until)
		;
}

/* A scheduler of a preset (NULL: the default) with `workers` workers (0: the preset's). */
static inline struct rt_sched *rt_test_start(const char *preset, unsigned workers)
{
	struct rt_config c;
	struct rt_sched *s;

	cr_assert_eq(rt_config_preset(&c, preset ? preset : "ce"), 0, "preset %s", preset);
	if (workers)
		c.workers = workers;
	s = rt_sched_new(&c);
	cr_assert_not_null(s, "rt_sched_new(%s, %u): %s", preset ? preset : "ce", workers,
			   strerror(errno));
	return s;
}

/* A preset with knob overrides: NULL-terminated name, value pairs. */
static inline struct rt_sched *rt_test_start_with(const char *preset, unsigned workers, ...)
{
	struct rt_config c;
	struct rt_sched *s;
	const char *knob;
	char err[256];
	va_list ap;

	cr_assert_eq(rt_config_preset(&c, preset), 0, "preset %s", preset);
	if (workers)
		c.workers = workers;
	va_start(ap, workers);
	while ((knob = va_arg(ap, const char *))) {
		const char *value = va_arg(ap, const char *);

		cr_assert_eq(rt_config_set(&c, knob, value, err, sizeof(err)), 0, "%s", err);
	}
	va_end(ap);
	s = rt_sched_new(&c);
	cr_assert_not_null(s, "%s: %s", preset, strerror(errno));
	return s;
}

/* Run fn under every preset (the list grows as presets are added) with 2 and 8 workers. */
static inline void rt_test_each_config(void (*fn)(struct rt_sched *s, const char *what))
{
	static const unsigned counts[] = { 2, 8 };

	for (const char *const *p = rt_preset_names(); *p; p++) {
		for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
			struct rt_sched *s = rt_test_start(*p, counts[i]);
			char what[64];

			snprintf(what, sizeof(what), "%s/%u workers", *p, counts[i]);
			fn(s, what);
			rt_sched_free(s);
		}
	}
}

/* Sleep ns on the calling thread, whole: a signal's interruption sleeps the rest. */
static inline void rt_test_sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Wait until cond(arg) holds, looking every 100 us; false when it still does not after
 * 30 s on the clock (a deadline, not a count of looks, which a loaded machine stretches). */
static inline bool rt_test_until(bool (*cond)(void *arg), void *arg)
{
	uint64_t until = rt_now_ns() + 30 * 1000000000ull;

	while (!cond(arg)) {
		if (rt_now_ns() >= until)
			return cond(arg);
		usleep(100);
	}
	return true;
}

struct rt_test_word {
	const uint32_t *word;
	uint32_t want;
};

static inline bool rt_test_word_is(void *arg)
{
	struct rt_test_word *q = arg;

	return __atomic_load_n(q->word, __ATOMIC_ACQUIRE) == q->want;
}

/* Wait (politely) until *word reaches want; fail the test after 30 s on the clock. */
static inline void rt_test_await_u32(const uint32_t *word, uint32_t want, const char *what)
{
	struct rt_test_word q = { word, want };

	if (!rt_test_until(rt_test_word_is, &q))
		cr_assert_fail("%s: stuck at %u, want %u", what,
			       __atomic_load_n(word, __ATOMIC_ACQUIRE), want);
}

/* The state letter of thread tid of this process in /proc/self/task/TID/stat (R running or
 * runnable, S asleep, ...); '?' when it cannot be read (the thread is gone). */
static inline char rt_test_thread_state(pid_t tid)
{
	char path[64], buf[512], state = '?';
	const char *paren;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	if (fgets(buf, sizeof(buf), f) && (paren = strrchr(buf, ')')) && paren[1] == ' ')
		state = paren[2]; /* "tid (comm) S ..." */
	fclose(f);
	return state;
}

/* Wait until thread tid is asleep (state S: blocked, not runnable, which other work on the
 * CPUs cannot make it); fail after 30 s on the clock. */
static inline bool rt_test_tid_asleep(void *tid)
{
	return rt_test_thread_state(*(pid_t *)tid) == 'S';
}

static inline void rt_test_await_asleep(pid_t tid, const char *what)
{
	if (!rt_test_until(rt_test_tid_asleep, &tid))
		cr_assert_fail("%s: thread %d still in state %c after 30 s", what, (int)tid,
			       rt_test_thread_state(tid));
}

/* Call fn(entry, f, arg) for each entry of /proc/self/dir with its file (`file` inside
 * the entry's folder, or the entry itself when NULL) open, until fn returns true; an
 * entry gone meanwhile (a thread that exited, a descriptor closed) is passed over.
 * Whether fn returned true. */
static inline bool rt_test_proc_scan(const char *dir, const char *file,
				     bool (*fn)(const char *entry, FILE *f, void *arg), void *arg)
{
	char path[300];
	DIR *d;
	struct dirent *e;
	bool stop = false;

	snprintf(path, sizeof(path), "/proc/self/%s", dir);
	d = opendir(path);
	cr_assert_not_null(d, "%s: %s", path, strerror(errno));
	while (!stop && (e = readdir(d))) {
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/%s/%s%s%s", dir, e->d_name, file ? "/" : "",
			 file ? file : "");
		if (!(f = fopen(path, "r")))
			continue;
		stop = fn(e->d_name, f, arg);
		fclose(f);
	}
	closedir(d);
	return stop;
}

struct rt_test_named {
	const char *comm;
	char state;
	unsigned n, in_state;
};

static inline bool rt_test_named_one(const char *tid, FILE *f, void *arg)
{
	struct rt_test_named *q = arg;
	char name[32] = "";

	if (fgets(name, sizeof(name), f)) {
		name[strcspn(name, "\n")] = '\0';
		if (!strcmp(name, q->comm)) {
			q->n++;
			q->in_state += rt_test_thread_state((pid_t)atoi(tid)) == q->state;
		}
	}
	return false;
}

/* How many threads of this process are named comm, and in *in_state how many of those
 * are in state (a letter of rt_test_thread_state()). */
static inline unsigned rt_test_named_threads(const char *comm, char state, unsigned *in_state)
{
	struct rt_test_named q = { .comm = comm, .state = state };

	rt_test_proc_scan("task", "comm", rt_test_named_one, &q);
	*in_state = q.in_state;
	return q.n;
}

struct rt_test_asleep {
	const char *comm;
	unsigned want, seen, asleep;
};

static inline bool rt_test_all_asleep(void *arg)
{
	struct rt_test_asleep *q = arg;

	q->seen = rt_test_named_threads(q->comm, 'S', &q->asleep);
	return q->seen >= q->want && q->asleep == q->seen;
}

/* Wait until at least n threads of this process are named comm and every one of them is
 * asleep (workers parked, not just counted as parking); fail after 30 s on the clock. */
static inline void rt_test_await_named_asleep(const char *comm, unsigned n, const char *what)
{
	struct rt_test_asleep q = { .comm = comm, .want = n };

	if (!rt_test_until(rt_test_all_asleep, &q))
		cr_assert_fail("%s: %u of %u %s threads asleep after 30 s (want %u)", what,
			       q.asleep, q.seen, comm, n);
}

struct rt_test_sleeper {
	uint64_t min_ns;
	int mem; /* /proc/self/mem */
};

static inline bool rt_test_sleeper_one(const char *tid, FILE *f, void *arg)
{
	struct rt_test_sleeper *q = arg;
	char line[512];
	unsigned long a[4];
	struct timespec ts;
	long nr;

	(void)tid;
	if (!fgets(line, sizeof(line), f) ||
	    sscanf(line, "%ld %lx %lx %lx %lx", &nr, &a[0], &a[1], &a[2], &a[3]) != 5)
		return false; /* "running", or not in a call */
	if (nr == SYS_epoll_wait || nr == SYS_epoll_pwait)
		return (int)a[3] >= 0 && (uint64_t)(int)a[3] * 1000000 >= q->min_ns;
	return nr == SYS_epoll_pwait2 && a[3] &&
	       pread(q->mem, &ts, sizeof(ts), (off_t)a[3]) == (ssize_t)sizeof(ts) &&
	       (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec >= q->min_ns;
}

/* Whether a thread of this process sleeps in an epoll wait with at least min_ns of its
 * timeout to go, as /proc/self/task/TID/syscall shows a blocked thread's call and its
 * arguments (epoll_pwait2's timespec read through /proc/self/mem: the kernel's copy, so
 * no sanitizer sees a read of another thread's stack). An untimed wait does not count. */
static inline bool rt_test_epoll_sleeper(uint64_t min_ns)
{
	struct rt_test_sleeper q = { .min_ns = min_ns };
	bool found;

	q.mem = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	cr_assert_geq(q.mem, 0, "/proc/self/mem: %s", strerror(errno));
	found = rt_test_proc_scan("task", "syscall", rt_test_sleeper_one, &q);
	close(q.mem);
	return found;
}

static inline bool rt_test_epoll_sleeper_cond(void *arg)
{
	return rt_test_epoll_sleeper(*(const uint64_t *)arg);
}

/* Wait until a thread of this process (a reactor, a worker's poller) has settled into an
 * epoll wait with at least min_ns to go, so that what the test does next must wake it;
 * fail after 30 s on the clock. */
static inline void rt_test_await_epoll_sleep(uint64_t min_ns, const char *what)
{
	if (!rt_test_until(rt_test_epoll_sleeper_cond, &min_ns))
		cr_assert_fail("%s: no thread sleeps in epoll for %llu ms or more after 30 s",
			       what, (unsigned long long)(min_ns / 1000000));
}

static inline bool rt_test_watches_one(const char *fd, FILE *f, void *arg)
{
	char line[256];
	int tfd;

	(void)fd;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "tfd: %d", &tfd) == 1 && tfd == *(const int *)arg)
			return true;
	return false;
}

/* Whether descriptor fd is in the interest list of an epoll instance of this process
 * (a "tfd:" line of its /proc/self/fdinfo entry). */
static inline bool rt_test_epoll_watches(void *fd)
{
	return rt_test_proc_scan("fdinfo", NULL, rt_test_watches_one, fd);
}

/* Wait until fd is watched by an epoll instance of this process: a task's wait on it is
 * registered with the reactor or its worker's poller. Fail after 30 s on the clock. */
static inline void rt_test_await_epoll_watch(int fd, const char *what)
{
	if (!rt_test_until(rt_test_epoll_watches, &fd))
		cr_assert_fail("%s: descriptor %d in no epoll instance after 30 s", what, fd);
}

/* Wait until every worker has parked once since start: a worker still starting up looks
 * for work once, and would take tasks a test means to stay put. Not a sleep: on a loaded
 * machine a thread may take long to start. */
static inline void rt_test_await_all_parked(struct rt_sched *s)
{
	struct rt_worker_stats per[RT_MAX_WORKERS];
	unsigned n = rt_sched_workers(s), parked = 0;
	uint64_t deadline = rt_now_ns() + 60 * 1000000000ull;

	/* a bound only a machine that stopped running threads meets: then say so */
	while (rt_now_ns() < deadline) {
		unsigned got = rt_sched_stats(s, per, n);

		parked = 0;
		for (unsigned i = 0; i < got; i++)
			parked += per[i].parks > 0;
		if (parked == n)
			break;
		rt_test_sleep_ns(1000000);
	}
	cr_assert_eq(parked, n, "%u of %u workers parked within 60 s of the start", parked, n);
	/* and are asleep, not just counted */
	rt_test_await_named_asleep("rt-worker", n, "the workers park");
}

/* Pin the calling thread to CPU i (modulo the CPUs there are). */
static inline void rt_test_pin(unsigned i)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(i % (unsigned)(cpus > 0 ? cpus : 1), &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

#endif /* SCHEDLAB_TESTS_RT_TEST_H */
