/*
 * busy: a CPU-bound child for the probe tests.
 *
 *   busy SECONDS [THREADS [MODE [NAME]]]
 *
 * Spins THREADS threads (default 1) for SECONDS in noinline functions named busy_hot_*
 * and, like a runtime worker, keeps a thread-local phase word (rt_phase_word) holding
 * RT_PHASE_WORD(RT_PHASE_RUN, 3, 42). Before spinning it prints that word's offset from
 * the thread pointer on one line of stdout, once every thread has set its word. MODE:
 * hot (one 3-deep stack), many (recursion to 96 varied depths, each with the spin's
 * handful of sampled IPs: several hundred distinct stacks, all within the walk's
 * limit), deep (recursion 200 deep: past the limit), sys (64 KiB reads of /dev/zero:
 * most samples land in the kernel), qsort (glibc's qsort of 4096 ints with busy_cmp:
 * most samples in glibc, which has no frame pointers, or in the comparator, whose walk
 * returns into glibc before it reaches the thread's root), alloc (a thread that is not a
 * runtime's: no phase word, every thread's stays NONE, and glibc's malloc and free of
 * blocks up to 192 KiB, the larger ones mmap'd, between spins of busy_hot_spin). NAME
 * sets the threads' comm.
 */
#include "runtime/phase.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif

__thread volatile uint64_t rt_phase_word;

static double stop_at;
static const char *mode = "hot";
static pthread_barrier_t ready;
static volatile uint64_t sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

NOINLINE uint64_t busy_hot_spin(uint64_t n)
{
	uint64_t x = n;

	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

NOINLINE void busy_hot_loop(void)
{
	sink += busy_hot_spin(200000);
}

NOINLINE void busy_sys_read(int fd)
{
	static __thread char buf[1 << 16];

	if (read(fd, buf, sizeof(buf)) > 0)
		sink += buf[0];
}

NOINLINE int busy_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Through a volatile pointer, so that the call is glibc's qsort, never inlined. */
static void (*volatile qsort_fn)(void *, size_t, size_t, int (*)(const void *, const void *)) =
	qsort;

NOINLINE void busy_qsort_loop(uint64_t *seed)
{
	static __thread uint32_t v[4096];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		*seed = *seed * 6364136223846793005ull + 1;
		v[i] = (uint32_t)(*seed >> 33);
	}
	qsort_fn(v, sizeof(v) / sizeof(v[0]), sizeof(v[0]), busy_cmp);
	sink += v[0];
}

/* Blocks of 16 B to 192 KiB through glibc's allocator, each touched, then spin. */
NOINLINE void busy_alloc_loop(uint64_t *seed)
{
	static __thread char *blocks[16];

	for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) {
		size_t size;

		*seed = *seed * 6364136223846793005ull + 1;
		size = 16 + (size_t)(*seed >> 33) % (192u << 10);
		blocks[i] = malloc(size);
		if (blocks[i])
			blocks[i][size - 1] = (char)i;
	}
	for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) {
		if (blocks[i])
			sink += (unsigned char)blocks[i][0];
		free(blocks[i]);
	}
	sink += busy_hot_spin(2000000);
}

/* Not a tail call (the store after it), so each level keeps its frame. */
NOINLINE void busy_rec(int depth, uint64_t spin)
{
	if (depth <= 0)
		sink += busy_hot_spin(spin);
	else
		busy_rec(depth - 1, spin);
	sink++;
}

static void *worker(void *arg)
{
	uint64_t seed = (uintptr_t)arg * 2654435761u + 1;
	int zero_fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);

	if (strcmp(mode, "alloc"))
		rt_phase_word = RT_PHASE_WORD(RT_PHASE_RUN, 3, 42);
	pthread_barrier_wait(&ready);
	while (now() < stop_at) {
		if (!strcmp(mode, "many")) {
			seed = seed * 6364136223846793005ull + 1;
			busy_rec((seed >> 33) % 96, 2000);
		} else if (!strcmp(mode, "sys")) {
			busy_sys_read(zero_fd);
		} else if (!strcmp(mode, "deep")) {
			busy_rec(200, 200000);
		} else if (!strcmp(mode, "qsort")) {
			busy_qsort_loop(&seed);
		} else if (!strcmp(mode, "alloc")) {
			busy_alloc_loop(&seed);
		} else {
			busy_hot_loop();
		}
	}
	rt_phase_word = 0;
	close(zero_fd);
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	int nthreads = argc > 2 ? atoi(argv[2]) : 1;
	pthread_t tids[16];

	if (argc > 3)
		mode = argv[3];
	if (argc > 4)
		prctl(PR_SET_NAME, argv[4]); /* inherited by the threads created below */
	if (nthreads < 1 || nthreads > 16) {
		fprintf(stderr, "busy: THREADS must be 1..16\n");
		return 2;
	}
	if (strcmp(mode, "alloc"))
		rt_phase_word = RT_PHASE_WORD(RT_PHASE_PARK, 3, 0);
	stop_at = now() + secs;
	pthread_barrier_init(&ready, NULL, nthreads + 1);
	for (int i = 0; i < nthreads; i++)
		if (pthread_create(&tids[i], NULL, worker, (void *)(uintptr_t)(i + 1))) {
			perror("busy: pthread_create");
			return 1;
		}
	pthread_barrier_wait(&ready);
	printf("%lld\n", (long long)((char *)&rt_phase_word - (char *)__builtin_thread_pointer()));
	fflush(stdout);
	for (int i = 0; i < nthreads; i++)
		pthread_join(tids[i], NULL);
	return 0;
}
