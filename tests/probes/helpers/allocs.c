/*
 * allocs: a child that asks the C allocator for known sizes, for the alloc probe tests.
 *
 *   allocs [deep]
 *
 * Prints "ready" once its own start-up allocations are done (stdio's buffers among
 * them), waits for a byte on stdin, then, in noinline functions named alloc_known_*,
 * makes exactly the calls ALLOCS_* below describe, writes "done" and waits for stdin to
 * close. Between the byte and "done" it calls nothing else that allocates: it talks
 * with read() and write() only. With "deep", it makes only the calls of
 * alloc_known_malloc and alloc_known_big, ALLOCS_DEEP frames of alloc_deep down: deeper
 * than a stack walk keeps.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "allocs.h"

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif

static void *keep[ALLOCS_MALLOC_N + ALLOCS_CALLOC_N + ALLOCS_REALLOC_N + ALLOCS_REALLOC_NULL_N +
		  2 * ALLOCS_ALIGNED_N + ALLOCS_BIG_N];
static size_t nkeep;

/* the compiler may not drop a call whose result is only freed */
static void *volatile sink;
/* nor turn realloc(NULL, n) into malloc(n) */
static void *volatile null;

static void hold(void *p)
{
	if (!p)
		abort();
	sink = p;
	keep[nkeep++] = p;
}

NOINLINE void alloc_known_malloc(void)
{
	for (int i = 0; i < ALLOCS_MALLOC_N; i++)
		hold(malloc(ALLOCS_MALLOC_SIZE));
}

NOINLINE void alloc_known_calloc(void)
{
	for (int i = 0; i < ALLOCS_CALLOC_N; i++)
		hold(calloc(ALLOCS_CALLOC_NMEMB, ALLOCS_CALLOC_SIZE));
}

NOINLINE void alloc_known_realloc(void)
{
	for (int i = 0; i < ALLOCS_REALLOC_N; i++) {
		void *p = malloc(ALLOCS_REALLOC_FROM);

		if (!p)
			abort();
		hold(realloc(p, ALLOCS_REALLOC_SIZE));
	}
	for (int i = 0; i < ALLOCS_REALLOC_NULL_N; i++)
		hold(realloc(null, ALLOCS_REALLOC_NULL_SIZE));
}

NOINLINE void alloc_known_aligned(void)
{
	for (int i = 0; i < ALLOCS_ALIGNED_N; i++) {
		void *p = NULL;

		if (posix_memalign(&p, 64, ALLOCS_ALIGNED_SIZE))
			abort();
		hold(p);
		hold(aligned_alloc(64, ALLOCS_ALIGNED_SIZE));
	}
}

NOINLINE void alloc_known_big(void)
{
	for (int i = 0; i < ALLOCS_BIG_N; i++)
		hold(malloc(ALLOCS_BIG_SIZE));
}

/* Freed at once: this many blocks held would be a lot of memory for nothing. */
NOINLINE void alloc_known_many(void)
{
	for (int i = 0; i < ALLOCS_MANY_N; i++) {
		void *p = malloc(ALLOCS_MANY_SIZE);

		if (!p)
			abort();
		sink = p;
		free(p);
	}
}

NOINLINE void alloc_deep(int depth)
{
	if (depth <= 0) {
		alloc_known_malloc();
		alloc_known_big();
		return;
	}
	alloc_deep(depth - 1);
	__asm__ volatile("" ::: "memory"); /* no tail call: each level keeps its frame */
}

int main(int argc, char **argv)
{
	bool deep = argc > 1 && !strcmp(argv[1], "deep");
	char c;

	prctl(PR_SET_NAME, "allocs");
	printf("ready\n");
	fflush(stdout);
	if (read(0, &c, 1) != 1)
		return 1;
	if (deep) {
		alloc_deep(ALLOCS_DEEP);
	} else {
		alloc_known_malloc();
		alloc_known_calloc();
		alloc_known_realloc();
		alloc_known_aligned();
		alloc_known_big();
		alloc_known_many();
	}
	if (write(1, "done\n", 5) != 5)
		return 1;
	while (read(0, &c, 1) > 0)
		;
	for (size_t i = 0; i < nkeep; i++)
		free(keep[i]);
	return 0;
}
