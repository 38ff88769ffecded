/*
 * What tests/probes/helpers/allocs asks the allocator for, shared with the test that
 * checks the alloc probe's counts against it.
 */
#ifndef SCHEDLAB_TESTS_PROBES_ALLOCS_H
#define SCHEDLAB_TESTS_PROBES_ALLOCS_H

#define ALLOCS_MALLOC_N		 1000 /* alloc_known_malloc: malloc(1000) */
#define ALLOCS_MALLOC_SIZE	 1000
#define ALLOCS_CALLOC_N		 100  /* alloc_known_calloc: calloc(10, 100) */
#define ALLOCS_CALLOC_NMEMB	 10
#define ALLOCS_CALLOC_SIZE	 100
#define ALLOCS_REALLOC_N	 50   /* alloc_known_realloc: malloc(100), realloc to 2000 */
#define ALLOCS_REALLOC_FROM	 100
#define ALLOCS_REALLOC_SIZE	 2000
#define ALLOCS_REALLOC_NULL_N	 10   /* ... and realloc(NULL, 300): malloc's, for glibc */
#define ALLOCS_REALLOC_NULL_SIZE 300
#define ALLOCS_ALIGNED_N	 20   /* alloc_known_aligned: posix_memalign and aligned_alloc
				       * of 4096 at 64 each */
#define ALLOCS_ALIGNED_SIZE	 4096
#define ALLOCS_BIG_N		 64   /* alloc_known_big: malloc(1 MiB) */
#define ALLOCS_BIG_SIZE		 (1 << 20)
#define ALLOCS_MANY_N		 200000 /* alloc_known_many: malloc(256), freed at once */
#define ALLOCS_MANY_SIZE	 256
#define ALLOCS_DEEP		 200  /* allocs deep: frames of alloc_deep above the calls */

#define ALLOCS_MALLOC_CALLS                                                          \
	(ALLOCS_MALLOC_N + ALLOCS_REALLOC_N + ALLOCS_REALLOC_NULL_N + ALLOCS_BIG_N + \
	 ALLOCS_MANY_N)
#define ALLOCS_MALLOC_BYTES                                                       \
	((unsigned long long)ALLOCS_MALLOC_N * ALLOCS_MALLOC_SIZE +               \
	 (unsigned long long)ALLOCS_REALLOC_N * ALLOCS_REALLOC_FROM +             \
	 (unsigned long long)ALLOCS_REALLOC_NULL_N * ALLOCS_REALLOC_NULL_SIZE +   \
	 (unsigned long long)ALLOCS_BIG_N * ALLOCS_BIG_SIZE +                     \
	 (unsigned long long)ALLOCS_MANY_N * ALLOCS_MANY_SIZE)

#endif /* SCHEDLAB_TESTS_PROBES_ALLOCS_H */
