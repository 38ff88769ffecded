/*
 * The phase word (runtime/phase.h) against what it promises: found as the on-CPU probe
 * finds it (the thread pointer plus rt_phase_tls_offset()), it says RUN with the task's
 * id and the worker's index inside a task, and again after any operation that resumed
 * the task on another worker; BLOCK inside rt_blocking() whatever the blocking knob,
 * and RUN after; SCHED inside a wait, and on the thread's side of a switch; PARK on idle
 * workers, the reactor and the monitor. At each point a task or a commit can reach, the
 * word also agrees with the other method: a leaf-first walk of the frame pointers,
 * where the first phase function named decides, and none means the task's own work.
 * The entry word beside it names the running task's function in the task, and 0 on
 * the thread's own side of every switch.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "runtime/internal.h"
#include "runtime/phase.h"
#include "runtime/rt.h"
#include "tests/runtime/rt_test.h"

/* ---- the word, as the probe reads it ---------------------------------------------------- */

/* Read afresh on every call: a task may be on another thread since the last one. */
static char *thread_pointer(void)
{
	char *tp;

	__asm__ volatile("mov %%fs:0, %0" : "=r"(tp) : : "memory");
	return tp;
}

/* The phase word of the thread whose thread pointer is tp (fs base; on glibc, the
 * thread's pthread_t too): a thread-local variable at the same offset in every thread,
 * found as the probe finds it. */
static uint64_t *word_ptr_of(const char *tp)
{
	return (uint64_t *)(tp + rt_phase_tls_offset());
}

/* The entry word of that thread, RT_PHASE_ENTRY_OFFSET past its phase word. */
static uint64_t *entry_ptr_of(const char *tp)
{
	return (uint64_t *)(tp + rt_phase_tls_offset() + RT_PHASE_ENTRY_OFFSET);
}

/* Read as the probe reads it, from outside the memory model: ThreadSanitizer cannot
 * order it with the other thread's stores to its own TLS, and is not asked to. */
__attribute__((no_sanitize("thread"))) static uint64_t word_at(const uint64_t *p)
{
	return p ? *(const volatile uint64_t *)p : 0;
}

/* Wait (politely) up to ~10 s for a thread to publish where its word is (*slot); NULL if
 * it never does. */
static uint64_t *await_published(uint64_t *const *slot)
{
	uint64_t *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	for (int i = 0; i < 100000 && !p; i++) {
		usleep(100);
		p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	}
	return p;
}

/* The reactor's thread, started by the first timed wait; false if it never is. */
static bool await_io_thread(const struct rt_sched *s, pthread_t *io)
{
	for (int i = 0; i < 100000 && !rt__io_thread(s, io); i++)
		usleep(100);
	return rt__io_thread(s, io);
}

/* Wait (politely) up to ~10 s for *p to show kind; the last word read. */
static uint64_t await_kind(const uint64_t *p, unsigned kind)
{
	uint64_t word = word_at(p);

	for (int i = 0; i < 100000 && RT_PHASE_KIND(word) != kind; i++) {
		usleep(100);
		word = word_at(p);
	}
	return word;
}

/* ---- the other method: the stack rule ----------------------------------------------------- */

/* The phase functions (runtime/internal.h lists them), as stacks name them. */
static const struct {
	const char *name;
	unsigned phase;
} phase_fns[] = {
	{ "rt__task_main", RT_PHASE_RUN },
	{ "rt__drive", RT_PHASE_SCHED },
	{ "worker_thread_main", RT_PHASE_SCHED },
	{ "offload_thread_main", RT_PHASE_SCHED },
	{ "task_thread_main", RT_PHASE_SCHED },
	{ "monitor_main", RT_PHASE_SCHED },
	{ "io_main", RT_PHASE_SCHED },
	{ "rt_join", RT_PHASE_SCHED },
	{ "rt_yield", RT_PHASE_SCHED },
	{ "rt_detach", RT_PHASE_SCHED },
	{ "rt__wait", RT_PHASE_SCHED },
	{ "rt__suspend", RT_PHASE_SCHED },
	{ "rt__task_exit", RT_PHASE_SCHED },
	{ "rt_spawn", RT_PHASE_SUBMIT },
	{ "rt_spawn_elsewhere", RT_PHASE_SUBMIT },
	{ "rt_submit", RT_PHASE_SUBMIT },
	{ "rt_flush", RT_PHASE_SUBMIT },
	{ "rt__place", RT_PHASE_SUBMIT },
	{ "rt__ready", RT_PHASE_SUBMIT },
	{ "rt__wake", RT_PHASE_SUBMIT },
	{ "rt__wake_all", RT_PHASE_SUBMIT },
	{ "rt__notify_parked", RT_PHASE_SUBMIT },
	{ "rt__notify_local", RT_PHASE_SUBMIT },
	{ "rt__unpark_worker", RT_PHASE_SUBMIT },
	{ "rt__wake_one_parked", RT_PHASE_SUBMIT },
	{ "rt__inbox_push", RT_PHASE_SUBMIT },
	{ "rt__inject_push", RT_PHASE_SUBMIT },
	{ "rt__drain", RT_PHASE_SUBMIT },
	{ "rt__drain_remote", RT_PHASE_SUBMIT },
	{ "rt__task_thread_ready", RT_PHASE_SUBMIT },
	{ "rt__handoff", RT_PHASE_SUBMIT },
	{ "rt__park", RT_PHASE_PARK },
	{ "spare_wait", RT_PHASE_PARK },
	{ "offload_wait", RT_PHASE_PARK },
	{ "monitor_sleep", RT_PHASE_PARK },
	{ "io_epoll_wait", RT_PHASE_PARK },
	{ "task_thread_wait", RT_PHASE_PARK },
	{ "rt_blocking", RT_PHASE_BLOCK },
	{ "rt_blocking_begin", RT_PHASE_BLOCK },
	{ "rt_blocking_end", RT_PHASE_BLOCK },
	{ "rt_alloc", RT_PHASE_ALLOC },
	{ "rt_calloc", RT_PHASE_ALLOC },
	{ "rt_free", RT_PHASE_ALLOC },
	{ "backtrace", RT_PHASE_STACKCAP },
	{ "__backtrace", RT_PHASE_STACKCAP },
};

#define STACK_MAX 48

/* One look at a thread: its word, and who it says runs, with the frames around. */
struct point {
	uint64_t word;
	uint64_t entry;   /* the entry word */
	unsigned worker;  /* rt_worker_index() */
	uint64_t task;    /* rt_task_id(rt_current()); 0: none */
	uint64_t ra[STACK_MAX]; /* return addresses, leaf first */
	unsigned n;
	bool taken;
};

/* Record the calling thread's word and stack, by frame pointers as the probe walks
 * them: the walk ends at a fiber's zero frame pointer, or at one that does not lead up
 * the stack (a frame of code built without them: the rule has decided by then). */
static __attribute__((noinline)) void note(struct point *pt)
{
	void **fp = __builtin_frame_address(0);
	struct rt_task *t = rt_current();

	pt->word = word_at(word_ptr_of(thread_pointer()));
	pt->entry = word_at(entry_ptr_of(thread_pointer()));
	pt->worker = rt_worker_index();
	pt->task = t ? rt_task_id(t) : 0;
	pt->n = 0;
	while (fp && pt->n < STACK_MAX) {
		void **next = fp[0];

		pt->ra[pt->n++] = (uint64_t)(uintptr_t)fp[1];
		if (next <= fp || (char *)next - (char *)fp > (1 << 20))
			break;
		fp = next;
	}
	__atomic_store_n(&pt->taken, true, __ATOMIC_RELEASE);
}

struct rule_ctx {
	struct an_symcache *cache;
	struct an_usyms *u;
};

static void rule_open(struct rule_ctx *r)
{
	struct an_procmaps *maps = an_procmaps_read(getpid());

	cr_assert_not_null(maps, "an_procmaps_read: %s", strerror(errno));
	r->cache = an_symcache_new();
	cr_assert_not_null(r->cache);
	r->u = an_usyms_new(r->cache, maps);
	cr_assert_not_null(r->u, "an_usyms_new: %s", strerror(errno));
}

static void rule_close(struct rule_ctx *r)
{
	an_usyms_free(r->u);
	an_symcache_free(r->cache);
}

/* The stack rule: leaf first, the first phase function decides; none is RUN. */
static unsigned rule_phase(struct rule_ctx *r, const struct point *pt, char *decider, size_t len)
{
	char name[256];

	snprintf(decider, len, "(none)");
	for (unsigned i = 0; i < pt->n; i++) {
		/* a return address minus one lies in the call, inside the calling function */
		an_usyms_name(r->u, pt->ra[i] - 1, name, sizeof(name));
		for (size_t k = 0; k < sizeof(phase_fns) / sizeof(phase_fns[0]); k++) {
			if (!strcmp(name, phase_fns[k].name)) {
				snprintf(decider, len, "%s", name);
				return phase_fns[k].phase;
			}
		}
	}
	return RT_PHASE_RUN;
}

/* The point shows kind, with the task and worker it was taken under, and (rule) the
 * stack says the same. */
static void expect_point(struct rule_ctx *r, const struct point *pt, unsigned kind, bool rule,
			 const char *what)
{
	char decider[256];
	unsigned by_rule;

	cr_assert(__atomic_load_n(&pt->taken, __ATOMIC_ACQUIRE), "%s: never reached", what);
	cr_expect_eq(RT_PHASE_KIND(pt->word), kind, "%s: phase %u, want %u (word %#llx)", what,
		     RT_PHASE_KIND(pt->word), kind, (unsigned long long)pt->word);
	cr_expect_eq(RT_PHASE_TASK(pt->word), (uint32_t)pt->task, "%s: task %#x, want %#x", what,
		     RT_PHASE_TASK(pt->word), (uint32_t)pt->task);
	cr_expect_eq(RT_PHASE_WORKER(pt->word), pt->worker, "%s: worker %u, want %u", what,
		     RT_PHASE_WORKER(pt->word), pt->worker);
	if (!rule)
		return;
	by_rule = rule_phase(r, pt, decider, sizeof(decider));
	cr_expect_eq(by_rule, kind, "%s: the stack says phase %u (decided by %s), the word %u",
		     what, by_rule, decider, kind);
}

/* ---- the layout ------------------------------------------------------------------------- */

Test(phase, the_masks_split_the_word)
{
	uint64_t w = RT_PHASE_WORD(RT_PHASE_SUBMIT, 7, 0x123456789ull);

	cr_expect_eq(RT_PHASE_KIND(w), RT_PHASE_SUBMIT);
	cr_expect_eq(RT_PHASE_WORKER(w), 7);
	cr_expect_eq(RT_PHASE_TASK(w), 0x23456789u, "the low 32 bits of the id");
	cr_expect_eq(w & RT_PHASE_KIND_MASK, RT_PHASE_SUBMIT);
	cr_expect_eq((w & RT_PHASE_WORKER_MASK) >> 8, 7);
	cr_expect_eq(RT_PHASE_WITHOUT_TASK(w), RT_PHASE_WORD(RT_PHASE_SUBMIT, 7, 0));
	cr_expect_eq(RT_PHASE_KIND_MASK | RT_PHASE_WORKER_MASK | RT_PHASE_TASK_MASK,
		     0xffffffffffffffffull & ~0xff000000ull, "bits 24..31 are unused");
	cr_expect_eq(RT_PHASE_WORKER(RT_PHASE_WORD(RT_PHASE_RUN, RT_NO_WORKER, 1)),
		     RT_PHASE_NO_WORKER);
}

/* ---- finding the word ------------------------------------------------------------------- */

struct found {
	uint64_t *ptr; /* through the thread pointer, as the probe */
	uint64_t *own; /* where the thread says its word is, rt__thread()->phase */
	char *slot;    /* &rt_phase_word */
	char *tp;
};

static uint64_t find_own_word(void *arg)
{
	struct found *f = arg;

	f->tp = thread_pointer();
	f->ptr = word_ptr_of(f->tp);
	f->own = rt__thread()->phase;
	f->slot = (char *)&rt_phase_word;
	return 0;
}

static uint64_t sleep_a_while(void *arg)
{
	rt_sleep_ns(200 * 1000000ull);
	return 0;
}

Test(phase, the_probe_finds_each_threads_word_from_its_thread_pointer, .timeout = 60)
{
	struct rt_sched *s = rt_test_start("ce", 2); /* metrics on: the monitor runs */
	struct found f = { 0 };
	struct rt_task *t;
	pthread_t io;
	uint64_t *p;

	/* not a runtime thread: the word is there, saying none and no worker */
	cr_expect_eq((char *)&rt_phase_word - thread_pointer(), rt_phase_tls_offset());
	cr_expect_eq(word_at(word_ptr_of(thread_pointer())),
		     RT_PHASE_WORD(RT_PHASE_NONE, RT_PHASE_NO_WORKER, 0));

	rt_join(rt_submit(s, find_own_word, &f));
	cr_expect_eq(f.slot - f.tp, rt_phase_tls_offset(), "one offset for every thread");
	cr_expect_eq(f.ptr, f.own, "a worker's thread pointer leads to its thread's word");

	/* the monitor and the reactor have words of their own, no worker's */
	cr_assert(s->monitor_started);
	p = word_ptr_of((const char *)s->monitor);
	cr_expect_eq(await_published(&s->monitor_phase), p, "the monitor's word");
	cr_expect_eq(RT_PHASE_WITHOUT_TASK(word_at(p)) & ~RT_PHASE_KIND_MASK,
		     RT_PHASE_WORD(0, RT_PHASE_NO_WORKER, 0));
	t = rt_submit(s, sleep_a_while, NULL);
	cr_assert(await_io_thread(s, &io), "the reactor never started");
	p = word_ptr_of((const char *)io);
	cr_expect_eq(await_kind(p, RT_PHASE_PARK),
		     RT_PHASE_WORD(RT_PHASE_PARK, RT_PHASE_NO_WORKER, 0));
	cr_expect_eq(RT_PHASE_KIND(rt__io_phase(s)), RT_PHASE_PARK, "and it is that word");
	rt_join(t);
	rt_sched_free(s);
}

/* Idle workers park; the reactor waits in epoll and the monitor between ticks, parked
 * too; none runs a task. */
Test(phase, idle_workers_and_helper_threads_are_parked, .timeout = 60)
{
	struct rt_sched *s = rt_test_start("ce", 2);
	struct rt_task *t = rt_submit(s, sleep_a_while, NULL);
	pthread_t io;

	for (unsigned i = 0; i < rt_sched_workers(s); i++) {
		struct rt__worker *w = s->workers[i];
		struct rt__thread *th = __atomic_load_n(&w->thread, __ATOMIC_ACQUIRE);
		uint64_t word = await_kind(await_published(&th->phase), RT_PHASE_PARK);

		cr_expect_eq(word, RT_PHASE_WORD(RT_PHASE_PARK, i, 0), "worker %u: %#llx", i,
			     (unsigned long long)word);
	}
	cr_expect_eq(await_kind(await_published(&s->monitor_phase), RT_PHASE_PARK),
		     RT_PHASE_WORD(RT_PHASE_PARK, RT_PHASE_NO_WORKER, 0));
	cr_assert(await_io_thread(s, &io), "the reactor never started");
	cr_expect_eq(await_kind(word_ptr_of((const char *)io), RT_PHASE_PARK),
		     RT_PHASE_WORD(RT_PHASE_PARK, RT_PHASE_NO_WORKER, 0));
	rt_join(t);
	rt_sched_free(s);
}

/* ---- in a task ------------------------------------------------------------------------ */

struct body_points {
	struct point body, in_try;
};

static uint64_t note_in_try(void *arg)
{
	note(arg);
	return 0;
}

static uint64_t note_body(void *arg)
{
	struct body_points *b = arg;
	struct rt_result r;

	note(&b->body);
	r = rt_try(note_in_try, &b->in_try); /* not a phase function: still the task's work */
	return r.ok ? 0 : 1;
}

Test(phase, a_task_runs_in_run_with_its_id_and_worker, .timeout = 60)
{
	static const char *const presets[] = { "ce", "go", "kyo", "loom", "threads" };
	struct rule_ctx r;

	rule_open(&r);
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++) {
		struct rt_sched *s = rt_test_start(presets[i], 2);
		struct body_points b = { 0 };
		char what[64];

		cr_expect_eq(rt_join(rt_submit(s, note_body, &b)), 0);
		rt_sched_free(s);
		snprintf(what, sizeof(what), "%s: the task's body", presets[i]);
		expect_point(&r, &b.body, RT_PHASE_RUN, true, what);
		cr_expect_neq(b.body.task, 0, "%s: a task", presets[i]);
		snprintf(what, sizeof(what), "%s: inside rt_try", presets[i]);
		expect_point(&r, &b.in_try, RT_PHASE_RUN, true, what);
	}
	rule_close(&r);
}

/* ---- resumed elsewhere -------------------------------------------------------------------- */

enum op { OP_YIELD, OP_JOIN, OP_SEM, OP_CHAN, OP_COUNT };

static const char *const op_names[OP_COUNT] = { "rt_yield", "rt_join", "a semaphore wait",
						"a channel receive" };

/* Tasks at once: a yield moves its task only to an idle worker, so one runs alone; a wait
 * moves its task to where its child runs, so two run, each worker busy with one and
 * with the other's child (an idle worker would steal the child and run it here). */
#define PROBES 2
#define PROBES_FOR(op) ((op) == OP_YIELD ? 1 : PROBES)

struct moves {
	enum op op;
	unsigned rounds, moved, wrong;
	uint64_t bad_word, want; /* the first wrong word, and what it should have said */
};

/* Spin until *word has a bit of mask set, for at most 2 ms (a bound, not a guess: the
 * test goes on either way, and only counts the rounds in which the task moved). */
static void spin_until(const uint32_t *word, uint32_t mask)
{
	uint64_t until = rt_now_ns() + (RT_UNDER_TSAN ? 20000000 : 2000000);

	while (!(__atomic_load_n(word, __ATOMIC_ACQUIRE) & mask) && rt_now_ns() < until)
		rt__cpu_relax();
}

/* The children: each ends its parent's wait only once the parent waits (suspended, so
 * that it resumes where the child runs), or holds its worker until the parent has run
 * again elsewhere. */
static uint64_t finish_once_joined(void *arg)
{
	spin_until(&rt_current()->state, RT_TASK_WAITING);
	return 0;
}

static uint64_t release_sem(void *arg)
{
	struct rt_sem *sem = arg;

	spin_until(&sem->nwaiters, ~0u);
	rt_sem_release(sem);
	return 0;
}

static uint64_t send_one(void *arg)
{
	struct rt_chan *c = arg;

	spin_until(&c->recv_waiting, ~0u);
	return (uint64_t)-rt_chan_send(c, (void *)1);
}

static uint64_t hold_the_worker(void *arg)
{
	spin_until(arg, ~0u);
	return 0;
}

/* What one_op() waits on, for as long as the task's rounds go on. */
struct op_ctx {
	struct rt_sem sem;
	struct rt_chan chan;
	uint32_t resumed; /* the yielding task ran again */
};

/* One operation that may resume the caller on another worker; *helper: a task to join
 * once the word has been looked at. For a wait, a child on some other worker ends it,
 * and its worker runs the woken task (the wake is local). For a yield, a child spawned
 * on the same worker holds it (with nothing else queued the yield would run on at
 * once), while the other worker, woken by the spawn, steals the caller from its queue. */
static void one_op(enum op op, struct op_ctx *x, struct rt_task **helper)
{
	void *v;

	*helper = NULL;
	switch (op) {
	case OP_YIELD:
		__atomic_store_n(&x->resumed, 0, __ATOMIC_RELAXED);
		*helper = rt_spawn(hold_the_worker, &x->resumed);
		rt_yield();
		__atomic_store_n(&x->resumed, 1, __ATOMIC_RELEASE);
		break;
	case OP_JOIN:
		*helper = rt_spawn_elsewhere(finish_once_joined, NULL);
		if (*helper)
			rt_join(*helper);
		*helper = NULL;
		break;
	case OP_SEM:
		*helper = rt_spawn_elsewhere(release_sem, &x->sem);
		rt_sem_acquire(&x->sem);
		break;
	case OP_CHAN:
		*helper = rt_spawn_elsewhere(send_one, &x->chan);
		rt_chan_recv(&x->chan, &v);
		break;
	case OP_COUNT:
		break;
	}
}

static uint64_t move_around(void *arg)
{
	struct moves *m = arg;
	uint64_t id = rt_task_id(rt_current()), until = rt_now_ns() + 10000000000ull;
	void *slots[RT_CHAN_SLOTS(2)];
	struct op_ctx x;

	rt_sem_init(&x.sem, 0);
	rt_chan_init(&x.chan, slots, 2);
	/* until it moved a few times, for up to 10 s: bounded by time, not by rounds, since
	 * while the machine does not run the other worker's thread, its children are stolen
	 * and run here, round after round */
	for (m->rounds = 0; m->moved < 3 && rt_now_ns() < until; m->rounds++) {
		unsigned before = rt_worker_index(), after;
		struct rt_task *helper;
		uint64_t word, want;

		one_op(m->op, &x, &helper);
		after = rt_worker_index();
		word = word_at(word_ptr_of(thread_pointer()));
		want = RT_PHASE_WORD(RT_PHASE_RUN, after, id);
		if (word != want && !m->wrong++) {
			m->bad_word = word;
			m->want = want;
		}
		m->moved += after != before;
		if (helper)
			rt_join(helper);
	}
	rt_sem_destroy(&x.sem);
	return 0;
}

Test(phase, resumed_on_another_worker_a_task_names_that_worker, .timeout = 120)
{
	static const char *const presets[] = { "ce", "go" };

	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++) {
		for (enum op op = 0; op < OP_COUNT; op++) {
			struct rt_sched *s = rt_test_start(presets[i], 2);
			struct moves m[PROBES] = { 0 };
			struct rt_task *t[PROBES];
			unsigned moved = 0;

			for (int k = 0; k < PROBES_FOR(op); k++) {
				m[k].op = op;
				t[k] = rt_submit(s, move_around, &m[k]);
			}
			for (int k = 0; k < PROBES_FOR(op); k++)
				rt_join(t[k]);
			rt_sched_free(s);
			for (int k = 0; k < PROBES_FOR(op); k++) {
				cr_expect_eq(m[k].wrong, 0,
					     "%s, after %s: %u of %u words wrong, first %#llx, "
					     "want %#llx",
					     presets[i], op_names[op], m[k].wrong, m[k].rounds,
					     (unsigned long long)m[k].bad_word,
					     (unsigned long long)m[k].want);
				moved += m[k].moved;
			}
			/* else the test proved less than it says */
			cr_expect_gt(moved, 0, "%s: %s never resumed a task on another worker",
				     presets[i], op_names[op]);
		}
	}
}

/* ---- blocking -------------------------------------------------------------------------------- */

struct blocking_points {
	struct point inside, after, in_commit, after_wait;
	bool wait_inside; /* the section waits too (rt__wait, whose commit says go on) */
};

static bool note_and_go_on(struct rt__waiter *w, void *arg)
{
	note(arg);
	return false; /* the condition holds: no sleep */
}

static int blocking_call(void *arg)
{
	struct blocking_points *b = arg;

	note(&b->inside);
	if (b->wait_inside) {
		struct rt__waiter w;

		/* in a section the thread itself waits, and the commit runs at once */
		rt__wait(&w, note_and_go_on, &b->in_commit);
		note(&b->after_wait);
	}
	return 42;
}

static uint64_t block_once(void *arg)
{
	struct blocking_points *b = arg;
	int ret = rt_blocking(blocking_call, b);

	note(&b->after);
	return (uint64_t)ret;
}

Test(phase, a_blocking_call_is_block_whatever_the_knob_then_run, .timeout = 60)
{
	static const char *const knobs[] = { "none", "handoff", "retake", "detect", "compensate",
					     "offload" };
	struct rule_ctx r;

	rule_open(&r);
	for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		for (int wait = 0; wait < 2; wait++) {
			struct rt_sched *s = rt_test_start_with("ce", 2, "blocking", knobs[i],
								 NULL);
			struct blocking_points b = { .wait_inside = wait };
			char what[96];

			cr_expect_eq(rt_join(rt_submit(s, block_once, &b)), 42,
				     "rt_blocking returns fn's result");
			rt_sched_free(s);
			snprintf(what, sizeof(what), "blocking=%s: inside rt_blocking", knobs[i]);
			expect_point(&r, &b.inside, RT_PHASE_BLOCK, true, what);
			snprintf(what, sizeof(what), "blocking=%s: after rt_blocking", knobs[i]);
			expect_point(&r, &b.after, RT_PHASE_RUN, true, what);
			if (!wait)
				continue;
			snprintf(what, sizeof(what), "blocking=%s: a wait's commit in a section",
				 knobs[i]);
			expect_point(&r, &b.in_commit, RT_PHASE_SCHED, true, what);
			snprintf(what, sizeof(what), "blocking=%s: after the wait", knobs[i]);
			expect_point(&r, &b.after_wait, RT_PHASE_BLOCK, true, what);
		}
	}
	rule_close(&r);
}

/* A hand-off takes the worker from the blocked thread: the word says so, inside the
 * section and after it, where the task goes on on that thread (cats-effect's fiber on
 * its blocker thread) until it next waits. An offloaded section comes back to a
 * worker. */
Test(phase, a_handed_off_section_names_no_worker, .timeout = 60)
{
	static const char *const knobs[] = { "handoff", "offload" };

	for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		struct rt_sched *s = rt_test_start_with("ce", 2, "blocking", knobs[i], NULL);
		struct blocking_points b = { 0 };
		bool handoff = !strcmp(knobs[i], "handoff");

		rt_join(rt_submit(s, block_once, &b));
		rt_sched_free(s);
		cr_expect_eq(RT_PHASE_WORKER(b.inside.word), RT_PHASE_NO_WORKER,
			     "blocking=%s: %#llx", knobs[i], (unsigned long long)b.inside.word);
		if (handoff)
			cr_expect_eq(RT_PHASE_WORKER(b.after.word), RT_PHASE_NO_WORKER,
				     "blocking=handoff: still on the thread that blocked");
		else
			cr_expect_neq(RT_PHASE_WORKER(b.after.word), RT_PHASE_NO_WORKER,
				      "blocking=%s: back on a worker", knobs[i]);
		cr_expect_eq(b.after.worker == RT_NO_WORKER, handoff,
			     "blocking=%s: rt_worker_index() %u after the section", knobs[i],
			     b.after.worker);
	}
}

struct by_hand {
	struct point inside, after;
};

static uint64_t block_by_hand(void *arg)
{
	struct by_hand *h = arg;

	rt_blocking_begin();
	note(&h->inside);
	rt_blocking_end();
	note(&h->after);
	return 0;
}

/* Begun by hand, a section has no frame of its own: the word alone says BLOCK. */
Test(phase, a_section_by_hand_is_block_until_its_end, .timeout = 60)
{
	static const char *const knobs[] = { "none", "handoff", "offload" };
	struct rule_ctx r;

	rule_open(&r);
	for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		struct rt_sched *s = rt_test_start_with("ce", 2, "blocking", knobs[i], NULL);
		struct by_hand h = { 0 };
		char what[96];

		rt_join(rt_submit(s, block_by_hand, &h));
		rt_sched_free(s);
		snprintf(what, sizeof(what), "blocking=%s: between begin and end", knobs[i]);
		expect_point(&r, &h.inside, RT_PHASE_BLOCK, false, what);
		snprintf(what, sizeof(what), "blocking=%s: after the end", knobs[i]);
		expect_point(&r, &h.after, RT_PHASE_RUN, true, what);
	}
	rule_close(&r);
}

/* ---- the thread's side of a switch -------------------------------------------------------- */

struct suspend_points {
	struct point commit, after;
};

static bool note_on_the_thread(struct rt_task *self, void *arg)
{
	note(arg);
	return false; /* nothing to wait for: run the task again */
}

static uint64_t suspend_once(void *arg)
{
	struct suspend_points *p = arg;

	rt__suspend(note_on_the_thread, &p->commit);
	note(&p->after);
	return 0;
}

/* A wait's commit runs on the thread, once the task is switched out: scheduling, with
 * no task, on the thread's worker; the task then runs again in RUN. */
Test(phase, a_commit_runs_on_the_thread_in_sched_with_no_task, .timeout = 60)
{
	static const char *const presets[] = { "ce", "threads" };
	struct rule_ctx r;

	rule_open(&r);
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++) {
		struct rt_sched *s = rt_test_start(presets[i], 2);
		struct suspend_points p = { 0 };
		char what[64];

		rt_join(rt_submit(s, suspend_once, &p));
		rt_sched_free(s);
		snprintf(what, sizeof(what), "%s: the commit", presets[i]);
		expect_point(&r, &p.commit, RT_PHASE_SCHED, true, what);
		cr_expect_eq(p.commit.task, 0, "%s: the thread's own context", presets[i]);
		snprintf(what, sizeof(what), "%s: after the suspend", presets[i]);
		expect_point(&r, &p.after, RT_PHASE_RUN, true, what);
	}
	rule_close(&r);
}

/* ---- the entry word ---------------------------------------------------------------------- */

struct entry_points {
	struct point outer, inner, after_join, commit, after_suspend;
};

#define FN_ADDR(fn) ((uint64_t)(uintptr_t)(fn))

static uint64_t entry_inner(void *arg)
{
	struct entry_points *e = arg;

	note(&e->inner);
	rt__suspend(note_on_the_thread, &e->commit);
	note(&e->after_suspend);
	return 0;
}

static uint64_t entry_outer(void *arg)
{
	struct entry_points *e = arg;

	note(&e->outer);
	rt_join(rt_spawn(entry_inner, e));
	note(&e->after_join); /* resumed, perhaps on the other worker */
	return 0;
}

static void expect_entry(const struct point *pt, uint64_t want, const char *what)
{
	cr_assert(__atomic_load_n(&pt->taken, __ATOMIC_ACQUIRE), "%s: never reached", what);
	cr_expect_eq(pt->entry, want, "%s: entry word %#llx, want %#llx", what,
		     (unsigned long long)pt->entry, (unsigned long long)want);
}

/* In a task the word is the function the task was spawned with (a child's its own, the
 * parent's again once it resumes); on the thread's side of a switch, and on a worker
 * that has run tasks and parked, 0. */
Test(phase, the_entry_word_names_the_running_tasks_function_and_none_off_a_task, .timeout = 60)
{
	static const char *const presets[] = { "ce", "kyo", "threads" };

	cr_expect_eq((char *)&rt_entry_word - (char *)&rt_phase_word, RT_PHASE_ENTRY_OFFSET);
	cr_expect_eq(word_at(entry_ptr_of(thread_pointer())), 0, "not a runtime thread");
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++) {
		struct rt_sched *s = rt_test_start(presets[i], 2);
		struct entry_points e = { 0 };
		char what[96];

		cr_expect_eq(rt_join(rt_submit(s, entry_outer, &e)), 0);
		for (unsigned w = 0; w < rt_sched_workers(s); w++) {
			struct rt__thread *th = __atomic_load_n(&s->workers[w]->thread,
								__ATOMIC_ACQUIRE);
			uint64_t *word;

			if (!th)
				continue; /* threads: no worker thread runs tasks */
			word = await_published(&th->phase);
			cr_assert_not_null(word, "%s: worker %u never published its word",
					   presets[i], w);
			await_kind(word, RT_PHASE_PARK);
			cr_expect_eq(word_at(word + RT_PHASE_ENTRY_OFFSET / sizeof(*word)), 0,
				     "%s: parked worker %u names a task's entry", presets[i], w);
		}
		rt_sched_free(s);
		snprintf(what, sizeof(what), "%s: the outer task", presets[i]);
		expect_entry(&e.outer, FN_ADDR(entry_outer), what);
		snprintf(what, sizeof(what), "%s: the task it spawned", presets[i]);
		expect_entry(&e.inner, FN_ADDR(entry_inner), what);
		snprintf(what, sizeof(what), "%s: the outer task after the join", presets[i]);
		expect_entry(&e.after_join, FN_ADDR(entry_outer), what);
		snprintf(what, sizeof(what), "%s: a commit on the thread", presets[i]);
		expect_entry(&e.commit, 0, what);
		snprintf(what, sizeof(what), "%s: the spawned task after its suspend", presets[i]);
		expect_entry(&e.after_suspend, FN_ADDR(entry_inner), what);
	}
}
