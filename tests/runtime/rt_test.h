/*
 * Shared by the runtime tests. Sizes: whole in the normal build, a tenth under
 * ThreadSanitizer (make test SANITIZE=thread), which slows every access by an order of
 * magnitude; the races it looks for need interleavings, not volume. Tests of memory
 * figures are off under it (.disabled = RT_UNDER_TSAN): its shadow memory is in them.
 */
#ifndef SCHEDLAB_TESTS_RT_TEST_H
#define SCHEDLAB_TESTS_RT_TEST_H

#if defined(RT_SANITIZE_thread)
#define RT_TEST_N(n) ((n) / 10 ? (n) / 10 : 1)
#define RT_UNDER_TSAN 1
#else
#define RT_TEST_N(n) (n)
#define RT_UNDER_TSAN 0
#endif

#endif /* SCHEDLAB_TESTS_RT_TEST_H */
