/*
 * Tasks and their stacks.
 *
 * A task is one anonymous mapping: a guard page at the bottom (installed in the page
 * tables where the kernel can, so that the mapping stays whole), the stack above it
 * (committed lazily by the kernel, page by page, as it is touched) and the struct
 * rt_task itself at the very top. Finished tasks are kept, stack and all, in a
 * small per-worker cache and then a shared pool, so the spawn path maps nothing and
 * calls no allocator in the steady state.
 *
 * A new task's stack holds the frame rt__switch pops: zeroed callee-saved registers,
 * %r12 = the task, and rt__fiber_start (just past its leading nop) as the return
 * address. The zero %rbp ends every frame-pointer walk at the fiber's entry.
 *
 * Compact mode keeps a parked task in the few hundred bytes its stack actually uses:
 * every task of a worker runs on that worker's one shared stack, and when a task
 * switches out the part it used, [sp, top), is copied to the heap and copied back
 * before it next runs. The copy must come back at the same addresses (frames point
 * into it: frame pointers, waiters, error handlers), so once a task has run it stays
 * on that worker (its home); only tasks that never ran may be stolen.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "runtime/internal.h"

/* Guard pages in the page tables, not as a PROT_NONE mapping (Linux 6.13+): a stack
 * stays one mapping, and neighbouring stacks merge into one, so 100,000 tasks need
 * a handful of mappings rather than 200,000 (vm.max_map_count is 65,530 by default).
 * Older kernels answer EINVAL and get mprotect(). */
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

#define RT_WORKER_CACHE 64   /* finished tasks a worker keeps */
#define RT_POOL_MAX     1024 /* finished tasks the shared pool keeps */

static int guard(void *page_start, size_t page)
{
	if (!madvise(page_start, page, MADV_GUARD_INSTALL))
		return 0;
	return mprotect(page_start, page, PROT_NONE);
}

static struct rt_task *task_map(struct rt_sched *s)
{
	size_t page = s->page;
	size_t len = page + ((s->cfg.stack_size + sizeof(struct rt_task) + page - 1) & ~(page - 1));
	char *map;
	struct rt_task *t;

	map = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	if (map == MAP_FAILED) {
		errno = ENOMEM;
		return NULL;
	}
	if (guard(map, page)) {
		munmap(map, len);
		errno = ENOMEM;
		return NULL;
	}
	t = (struct rt_task *)(((uintptr_t)(map + len) - sizeof(*t)) & ~(uintptr_t)(RT_CACHELINE - 1));
	t->map = map;
	t->map_len = len;
	t->sched = s;
	t->tsan_fiber = RT_TSAN_CREATE();
	return t;
}

static void task_unmap(struct rt_task *t)
{
	RT_TSAN_DESTROY(t->tsan_fiber);
	if (!t->map) {
		free(t->saved);
		free(t);
		return;
	}
	munmap(t->map, t->map_len);
}

/* Compact mode: the task is a small heap object; its stack is its home's, later. */
static struct rt_task *task_small(struct rt_sched *s)
{
	struct rt_task *t = calloc(1, sizeof(*t));

	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	t->sched = s;
	t->tsan_fiber = RT_TSAN_CREATE();
	return t;
}

int rt__shared_stack_map(struct rt_sched *s, struct rt__worker *w)
{
	size_t len = s->page + ((s->cfg.stack_size + s->page - 1) & ~(s->page - 1));
	char *map = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);

	if (map == MAP_FAILED)
		return -ENOMEM;
	if (guard(map, s->page)) {
		munmap(map, len);
		return -ENOMEM;
	}
	w->shared_map = map;
	w->shared_len = len;
	w->shared_top = map + len;
	return 0;
}

void rt__shared_stack_unmap(struct rt__worker *w)
{
	if (w->shared_map)
		munmap(w->shared_map, w->shared_len);
	w->shared_map = NULL;
}

/* The stack t runs on: its own mapping above the guard page, or its home's shared stack
 * in compact mode. */
void rt__task_stack(const struct rt_task *t, const void **lo, size_t *len)
{
	size_t page = t->sched->page;
	const char *bottom, *top;

	if (t->map) {
		bottom = (const char *)t->map + page;
		top = (const char *)t;
	} else if (t->home) {
		bottom = (const char *)t->home->shared_map + page;
		top = t->home->shared_top;
	} else {
		*lo = NULL;
		*len = 0;
		return;
	}
	*lo = bottom;
	*len = (size_t)(top - bottom);
}

/* Lay out, below top, the frame that rt__switch pops the first time it switches to t. */
static void frame_init(struct rt_task *t, void *stack_top)
{
	uint64_t *top = (uint64_t *)((uintptr_t)stack_top & ~(uintptr_t)15);
#if defined(RT_SANITIZE_ADDRESS)
	const void *lo;
	size_t len;

	/* a reused stack may still hold the poisoned frames of the task that ran on it
	 * last, left by a switch rather than a return */
	rt__task_stack(t, &lo, &len);
	RT_ASAN_UNPOISON(lo, len);
#endif

	/* the return address: past rt__fiber_start's leading nop (switch_x86_64.S says why);
	 * after the ret, %rsp = top */
	top[-1] = (uint64_t)(uintptr_t)rt__fiber_start + 1;
	top[-2] = 0;                                    /* %rbp: ends frame-pointer walks */
	top[-3] = 0;                                    /* %rbx */
	top[-4] = (uint64_t)(uintptr_t)t;               /* %r12: rt__fiber_start's argument */
	top[-5] = 0;                                    /* %r13 */
	top[-6] = 0;                                    /* %r14 */
	top[-7] = 0;                                    /* %r15 */
	t->sp = &top[-7];
}

struct rt_task *rt__task_new(struct rt_sched *s, struct rt__worker *w, rt_fn fn, void *arg)
{
	struct rt_task *t = NULL;
	uint64_t seq;

	if (w && w->free_tasks) {
		t = w->free_tasks;
		w->free_tasks = t->next;
		w->nfree--;
	} else if (__atomic_load_n(&s->npool, __ATOMIC_RELAXED)) {
		pthread_mutex_lock(&s->pool_lock);
		t = s->pool;
		if (t) {
			s->pool = t->next;
			__atomic_store_n(&s->npool, s->npool - 1, __ATOMIC_RELAXED);
		}
		pthread_mutex_unlock(&s->pool_lock);
	}
	if (!t) {
		t = s->cfg.stack_mode == RT_STACK_COMPACT ? task_small(s) : task_map(s);
		if (!t)
			return NULL;
	}

	t->fn = fn;
	t->arg = arg;
	t->result = 0;
	t->next = NULL;
	t->state = 0;
	t->waiter = NULL;
	t->err_top = NULL;
	t->scope = NULL;
	t->fork = NULL;
	t->promise = NULL;
	t->own = NULL;
	t->ready_ns = 0;
	t->runtime = 0;
	t->home = NULL;
	t->saved_len = 0;
	/* ids need only be unique: a per-worker sequence tagged with the worker keeps the
	 * spawn path off any shared cache line */
	if (w) {
		seq = ++w->id_seq;
		t->id = (seq << 9) | (w->index + 1);
	} else {
		seq = __atomic_add_fetch(&s->next_id, 1, __ATOMIC_RELAXED);
		t->id = seq << 9;
	}
	if (t->map)
		frame_init(t, t);
	return t;
}

void rt__compact_first_run(struct rt__worker *w, struct rt_task *t)
{
	t->home = w;
	frame_init(t, w->shared_top);
}

int rt__compact_save(struct rt_task *t)
{
	char *top = (char *)((uintptr_t)t->home->shared_top & ~(uintptr_t)15);
	uint32_t len = (uint32_t)(top - (char *)t->sp);

	if (len > t->saved_cap) {
		void *p = realloc(t->saved, len);

		if (!p)
			return -ENOMEM;
		t->saved = p;
		t->saved_cap = len;
	}
	/* the frames hold AddressSanitizer's poisoned redzones: copied out as plain bytes,
	 * and the shared stack is clean for the next task (it comes back unpoisoned) */
	RT_ASAN_UNPOISON(t->sp, len);
	memcpy(t->saved, t->sp, len);
	t->saved_len = len;
	return 0;
}

void rt__compact_restore(struct rt_task *t)
{
	memcpy(t->sp, t->saved, t->saved_len);
}

void rt__task_put(struct rt_sched *s, struct rt__worker *w, struct rt_task *t)
{
	if (w && w->sched == s && w->nfree < RT_WORKER_CACHE) {
		t->next = w->free_tasks;
		w->free_tasks = t;
		w->nfree++;
		return;
	}
	pthread_mutex_lock(&s->pool_lock);
	if (s->npool < RT_POOL_MAX) {
		t->next = s->pool;
		s->pool = t;
		__atomic_store_n(&s->npool, s->npool + 1, __ATOMIC_RELAXED);
		t = NULL;
	}
	pthread_mutex_unlock(&s->pool_lock);
	if (t)
		task_unmap(t);
}

void rt__task_cache_drain(struct rt_sched *s, struct rt__worker *w)
{
	while (w->free_tasks) {
		struct rt_task *t = w->free_tasks;

		w->free_tasks = t->next;
		task_unmap(t);
	}
	w->nfree = 0;
}

void rt__task_pool_free(struct rt_sched *s)
{
	while (s->pool) {
		struct rt_task *t = s->pool;

		s->pool = t->next;
		task_unmap(t);
	}
	s->npool = 0;
}
