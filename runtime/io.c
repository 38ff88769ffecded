/*
 * Timers and the I/O reactor: one thread per scheduler ("rt-io"), started on first use
 * under s->io_lock, sleeps in epoll_wait until the earliest timer or a watched file
 * descriptor is ready, and makes the waiting tasks runnable with rt__wake_all().
 *
 * A task's wait is a struct io_wait in the task's park area (never on its stack, which
 * compact mode copies away while the task waits): a node of an intrusive binary
 * min-heap of deadlines (as in libuv's heap-inl.h: inserting never allocates) and/or an
 * EPOLLONESHOT registration of its fd that points at it. Key invariant: only the
 * reactor thread ends a wait, under io->lock, and ending it removes both sources (see
 * io_end()), so each wait ends exactly once and nothing points at it afterwards.
 * Threads do not use the reactor: they sleep and poll(2) directly. With poller=worker a
 * task's fd wait goes to its worker's own epoll instead (see "poller=worker" below);
 * sleeps stay with the reactor. A task's blocking socket calls (at the end) either
 * block in a blocking section or, where sockets park, wait here like any fd wait.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "runtime/internal.h"

/* rt_io_wait() passes events to poll(2) as they are */
_Static_assert(EPOLLIN == POLLIN && EPOLLOUT == POLLOUT && EPOLLPRI == POLLPRI &&
		       EPOLLRDHUP == POLLRDHUP,
	       "epoll and poll event bits differ");

#define IO_EVENTS     (EPOLLIN | EPOLLOUT | EPOLLPRI | EPOLLRDHUP)
#define IO_BATCH      64
#define IO_NO_TIMER   UINT64_MAX

struct heap_node {
	struct heap_node *left, *right, *parent;
};

struct heap {
	struct heap_node *min;
	unsigned n;
};

struct rt__io {
	struct rt_sched *sched;
	pthread_t thread;
	int epfd;
	int evfd;

	/* A registration that becomes the earliest deadline while the thread sleeps toward
	 * a later one writes the eventfd, once (kicked), so that the thread recomputes its
	 * timeout; while the thread is awake it will look at the heap anyway. */
	uint32_t lock;         /* guards everything below */
	bool stop;
	bool kicked;           /* an eventfd write is pending: no need for another */
	uint64_t sleep_until;  /* the deadline epoll_wait sleeps toward; 0 while awake */
	struct heap timers;
	uint64_t seq;          /* registration order: ties between equal deadlines */

	uint64_t *phase;       /* the reactor thread's phase word, for tests; NULL until it
				* runs and once it has stopped */
};

/* One task's wait, in its park area (never on its stack: see rt__park_area()). */
struct io_wait {
	struct rt__waiter w;
	struct heap_node node; /* in io->timers while timed */
	uint64_t deadline;
	uint64_t seq;
	struct rt__io *io;
	int fd;                /* -1: a sleep */
	uint32_t events;
	bool timed;            /* in io->timers */
	int result;
};

#define node_wait(n) ((struct io_wait *)((char *)(n) - offsetof(struct io_wait, node)))

/* ---- clock ----------------------------------------------------------------------------- */

uint64_t rt_now_ns(void)
{
	return rt__now_ns();
}

static uint64_t deadline_after(uint64_t ns)
{
	uint64_t now = rt_now_ns();

	return ns > IO_NO_TIMER - 1 - now ? IO_NO_TIMER - 1 : now + ns;
}

static struct timespec ts_of(uint64_t ns)
{
	return (struct timespec){ .tv_sec = (time_t)(ns / 1000000000u),
				  .tv_nsec = (long)(ns % 1000000000u) };
}

/* ---- the timer heap (after libuv's heap-inl.h) ------------------------------------------
 * A complete binary tree of nodes linked by pointers: the path from the root to slot k
 * (1-based) is k's binary digits after the leading one, so the last slot is found in
 * log n steps and nothing is ever allocated. */

static bool node_less(const struct heap_node *a, const struct heap_node *b)
{
	const struct io_wait *x = node_wait(a), *y = node_wait(b);

	return x->deadline != y->deadline ? x->deadline < y->deadline : x->seq < y->seq;
}

/* Swap a child with its parent, fixing every link around them. */
static void heap_swap(struct heap *h, struct heap_node *parent, struct heap_node *child)
{
	struct heap_node *sibling;
	struct heap_node t = *parent;

	*parent = *child;
	*child = t;
	parent->parent = child;
	if (child->left == child) {
		child->left = parent;
		sibling = child->right;
	} else {
		child->right = parent;
		sibling = child->left;
	}
	if (sibling)
		sibling->parent = child;
	if (parent->left)
		parent->left->parent = parent;
	if (parent->right)
		parent->right->parent = parent;
	if (!child->parent)
		h->min = child;
	else if (child->parent->left == parent)
		child->parent->left = child;
	else
		child->parent->right = child;
}

/* The link that holds (or will hold) slot k, 1 <= k. */
static struct heap_node **heap_slot(struct heap *h, unsigned k, struct heap_node **parent)
{
	struct heap_node **link = &h->min;
	unsigned path = 0, depth = 0;

	*parent = NULL;
	for (; k >= 2; k /= 2, depth++)
		path = (path << 1) | (k & 1);
	while (depth--) {
		*parent = *link;
		link = path & 1 ? &(*link)->right : &(*link)->left;
		path >>= 1;
	}
	return link;
}

static void heap_insert(struct heap *h, struct heap_node *node)
{
	struct heap_node *parent, **link = heap_slot(h, h->n + 1, &parent);

	node->left = node->right = NULL;
	node->parent = parent;
	*link = node;
	h->n++;
	while (node->parent && node_less(node, node->parent))
		heap_swap(h, node->parent, node);
}

static void heap_remove(struct heap *h, struct heap_node *node)
{
	struct heap_node *parent, **link = heap_slot(h, h->n, &parent), *last = *link;

	*link = NULL;
	h->n--;
	if (last == node) {
		if (h->min == node)
			h->min = NULL;
		return;
	}
	/* the last node takes node's place, then sinks or rises to where it belongs */
	last->left = node->left;
	last->right = node->right;
	last->parent = node->parent;
	if (last->left)
		last->left->parent = last;
	if (last->right)
		last->right->parent = last;
	if (!node->parent)
		h->min = last;
	else if (node->parent->left == node)
		node->parent->left = last;
	else
		node->parent->right = last;
	for (;;) {
		struct heap_node *smallest = last;

		if (last->left && node_less(last->left, smallest))
			smallest = last->left;
		if (last->right && node_less(last->right, smallest))
			smallest = last->right;
		if (smallest == last)
			break;
		heap_swap(h, last, smallest);
	}
	while (last->parent && node_less(last, last->parent))
		heap_swap(h, last->parent, last);
}

/* ---- the reactor thread ------------------------------------------------------------------ */

static void io_kick(struct rt__io *io)
{
	uint64_t one = 1;
	ssize_t r = write(io->evfd, &one, sizeof(one));

	(void)r; /* a full counter (EAGAIN) wakes the thread too; nothing else can fail */
}

/* End wait iw (under io->lock): the first end is the only one, because the other
 * source is removed here, before iw joins the list to wake. Events of one epoll_wait
 * batch are handled before the next look at the heap, so a deadline never ends a wait
 * whose event is already in hand. */
static void io_end(struct rt__io *io, struct io_wait *iw, int result, struct rt__waiter **wake)
{
	if (iw->timed) {
		heap_remove(&io->timers, &iw->node);
		iw->timed = false;
	}
	/* the registration is EPOLLONESHOT, so an fd event disarmed it already; DEL also
	 * drops an event the kernel has queued but not yet handed to us. It fails only
	 * when the fd was closed meanwhile, which removed the registration anyway. */
	if (iw->fd >= 0)
		epoll_ctl(io->epfd, EPOLL_CTL_DEL, iw->fd, NULL);
	iw->result = result;
	iw->w.next = *wake;
	*wake = &iw->w;
}

/* A wait in epfd until the deadline `until` (IO_NO_TIMER: none). */
static int epoll_until(int epfd, struct epoll_event *ev, uint64_t until)
{
	struct timespec ts;
	uint64_t now;
	int n;

	if (until == IO_NO_TIMER)
		return epoll_pwait2(epfd, ev, IO_BATCH, NULL, NULL);
	now = rt_now_ns();
	ts = ts_of(until > now ? until - now : 0);
	n = epoll_pwait2(epfd, ev, IO_BATCH, &ts, NULL);
	if (n < 0 && errno == ENOSYS) {
		/* kernels before 5.11: milliseconds, rounded up so that a timer never fires
		 * early (the loops only end waits whose deadline has passed anyway) */
		uint64_t ms = (until > now ? until - now : 0) / 1000000 + 1;

		n = epoll_wait(epfd, ev, IO_BATCH, ms > 1000000 ? 1000000 : (int)ms);
	}
	return n;
}

/* The reactor's parking: the wait in epoll until the earliest deadline. */
static RT_PHASE_FN int (io_epoll_wait)(struct rt__io *io, struct epoll_event *ev, uint64_t until)
{
	uint64_t phase = rt__phase_push(RT_PHASE_PARK);
	int n = epoll_until(io->epfd, ev, until);

	rt__phase_pop(phase);
	return n;
}

/* its callers set its phase at the call, as for every phase function (internal.h) */
#define io_epoll_wait(io, ev, until) RT__PHASE_CALL(RT_PHASE_PARK, (io_epoll_wait)(io, ev, until))

static RT_PHASE_FN void *io_main(void *arg)
{
	struct rt__io *io = arg;
	struct epoll_event ev[IO_BATCH];
	struct rt__waiter *wake = NULL;

	/* expiring timers and reading events is scheduling (the base); waking their tasks
	 * is submitting (rt__wake_all); waiting in epoll is this thread's parking */
	rt__phase_set(RT_PHASE_WORD(RT_PHASE_SCHED, RT_PHASE_NO_WORKER, 0));
	__atomic_store_n(&io->phase, rt__phase_word(), __ATOMIC_RELEASE);
	pthread_setname_np(pthread_self(), "rt-io");
	rt__lock(&io->lock);
	while (!io->stop) {
		uint64_t now = rt_now_ns(), until;
		int n;

		while (io->timers.min && node_wait(io->timers.min)->deadline <= now)
			io_end(io, node_wait(io->timers.min), -ETIMEDOUT, &wake);
		until = io->timers.min ? node_wait(io->timers.min)->deadline : IO_NO_TIMER;
		io->sleep_until = until;
		rt__unlock(&io->lock);

		rt__wake_all(wake);
		wake = NULL;
		n = io_epoll_wait(io, ev, until);

		rt__lock(&io->lock);
		io->sleep_until = 0; /* awake: registrations need not kick us */
		for (int i = 0; i < n; i++) {
			struct io_wait *iw = ev[i].data.ptr;

			if (!iw) {
				uint64_t count;
				ssize_t r;

				/* clear kicked before draining: a registration after this kicks
				 * again. Nonblocking: another batch may have drained it. */
				io->kicked = false;
				r = read(io->evfd, &count, sizeof(count));
				(void)r;
				continue;
			}
			io_end(io, iw, 0, &wake);
		}
	}
	rt__unlock(&io->lock);
	rt__wake_all(wake); /* nothing, unless a task still waited at rt_sched_free() */
	__atomic_store_n(&io->phase, NULL, __ATOMIC_RELEASE); /* the word goes with the thread */
	return NULL;
}

static struct rt__io *io_start(struct rt_sched *s, int *err)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	sigset_t all, old;
	struct rt__io *io;

	io = calloc(1, sizeof(*io));
	if (!io) {
		*err = -ENOMEM;
		return NULL;
	}
	io->sched = s;
	io->evfd = -1;
	io->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (io->epfd < 0) {
		*err = -errno;
		goto out_free;
	}
	io->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (io->evfd < 0) {
		*err = -errno;
		goto out_close;
	}
	if (epoll_ctl(io->epfd, EPOLL_CTL_ADD, io->evfd, &ev)) {
		*err = -errno;
		goto out_close;
	}
	/* signals are for the application's threads, not for this one: it inherits a full
	 * mask, and ours is restored */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	*err = -pthread_create(&io->thread, NULL, io_main, io);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (*err)
		goto out_close;
	return io;

out_close:
	if (io->evfd >= 0)
		close(io->evfd);
	close(io->epfd);
out_free:
	free(io);
	return NULL;
}

/* The scheduler's reactor, started on first use. NULL and *err = -errno if it cannot be. */
static struct rt__io *io_get(struct rt_sched *s, int *err)
{
	/* acquire: pairs with the release store below, so a started reactor is whole */
	struct rt__io *io = __atomic_load_n(&s->io, __ATOMIC_ACQUIRE);

	if (io)
		return io;
	pthread_mutex_lock(&s->io_lock);
	io = s->io;
	if (!io) {
		io = io_start(s, err);
		if (io)
			__atomic_store_n(&s->io, io, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&s->io_lock);
	return io;
}

uint64_t rt__io_phase(const struct rt_sched *s)
{
	const struct rt__io *io = __atomic_load_n(&s->io, __ATOMIC_ACQUIRE);

	uint64_t *p = io ? __atomic_load_n(&io->phase, __ATOMIC_ACQUIRE) : NULL;

	return p ? __atomic_load_n(p, __ATOMIC_RELAXED) : 0;
}

bool rt__io_thread(const struct rt_sched *s, pthread_t *thread)
{
	const struct rt__io *io = __atomic_load_n(&s->io, __ATOMIC_ACQUIRE);

	if (io)
		*thread = io->thread;
	return io != NULL;
}

void rt__io_stop(struct rt_sched *s)
{
	struct rt__io *io;

	pthread_mutex_lock(&s->io_lock);
	io = s->io;
	s->io = NULL;
	pthread_mutex_unlock(&s->io_lock);
	if (!io)
		return;
	rt__lock(&io->lock);
	io->stop = true;
	rt__unlock(&io->lock);
	io_kick(io);
	pthread_join(io->thread, NULL);
	close(io->evfd);
	close(io->epfd);
	free(io);
}

/* ---- poller=worker: each worker's own epoll ---------------------------------------------
 * cats-effect 3.6's integrated runtime: a task's fd wait is registered with the epoll
 * instance of the worker it runs on, which the worker looks at every global_interval
 * ticks (with the global queue, rt__next_task()) and waits in when it parks (rt__park()),
 * so that the kernel wakes the parked worker itself, where the reactor's thread would
 * wake and then wake a worker. Only the thread driving the worker touches its poller:
 * a wait is registered in its commit, on that thread once the task is switched out, and
 * ends in rt__poller_wait(), there too, and the timers of its waits are the worker's own
 * heap. So each wait ends exactly once with no lock: the events of a look end theirs
 * (taking their timers out) before that look expires timers, and an expired wait's DEL
 * drops any event the kernel had queued for it. A blocking section's handoff gives the
 * worker to another thread, and its poller goes with it; a worker whose thread blocks
 * without a handoff looks at nothing until it returns, as a blocked WorkerThread. */
struct rt__poller {
	int epfd;
	int evfd;          /* w->poll_evfd: wakes the worker parked in epfd */
	struct heap timers;
	uint64_t seq;
};

static struct rt__poller *poller_get(struct rt__worker *w, int *err)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	struct rt__poller *p = w->poller;

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p) {
		*err = -ENOMEM;
		return NULL;
	}
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	p->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->epfd < 0 || p->evfd < 0 || epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->evfd, &ev)) {
		*err = -errno;
		if (p->epfd >= 0)
			close(p->epfd);
		if (p->evfd >= 0)
			close(p->evfd);
		free(p);
		return NULL;
	}
	/* before in_poll is ever set, which is what tells a waker to write it */
	w->poll_evfd = p->evfd;
	w->poller = p;
	return p;
}

/* End wait iw of w's poller; see io_end(). */
static void poller_end(struct rt__worker *w, struct io_wait *iw, int result,
		       struct rt__waiter **wake)
{
	struct rt__poller *p = w->poller;

	if (iw->timed) {
		heap_remove(&p->timers, &iw->node);
		iw->timed = false;
	}
	epoll_ctl(p->epfd, EPOLL_CTL_DEL, iw->fd, NULL);
	rt__poll_waits_add(w, -1);
	iw->result = result;
	iw->w.next = *wake;
	*wake = &iw->w;
}

unsigned rt__poller_wait(struct rt__worker *w, bool block, struct rt__waiter **wake)
{
	struct rt__poller *p = w->poller;
	struct epoll_event ev[IO_BATCH];
	unsigned ended = 0;
	uint64_t now;
	int n;

	if (!p)
		return 0;
	if (block)
		n = epoll_until(p->epfd, ev,
				p->timers.min ? node_wait(p->timers.min)->deadline : IO_NO_TIMER);
	else
		n = epoll_wait(p->epfd, ev, IO_BATCH, 0);
	for (int i = 0; i < n; i++) {
		if (!ev[i].data.ptr) {
			uint64_t count;
			ssize_t r = read(p->evfd, &count, sizeof(count));

			(void)r; /* a woken worker: whoever woke it said so in w->futex */
			continue;
		}
		poller_end(w, ev[i].data.ptr, 0, wake);
		ended++;
	}
	now = rt_now_ns();
	while (p->timers.min && node_wait(p->timers.min)->deadline <= now) {
		poller_end(w, node_wait(p->timers.min), -ETIMEDOUT, wake);
		ended++;
	}
	return ended;
}

void rt__poller_free(struct rt__worker *w)
{
	if (!w->poller)
		return;
	close(w->poller->epfd);
	close(w->poller->evfd);
	free(w->poller);
	w->poller = NULL;
}

/* ---- waiting ------------------------------------------------------------------------------ */

/* rt__wait's commit, on the worker once the task is switched out. */
static bool io_commit(struct rt__waiter *w, void *arg)
{
	struct io_wait *iw = arg;
	struct rt__io *io = iw->io;
	bool kick = false;

	rt__lock(&io->lock);
	if (iw->fd >= 0) {
		struct epoll_event ev = { .events = iw->events | EPOLLONESHOT, .data.ptr = iw };

		/* under the lock: the reactor may see the event at once, but handles it only
		 * after we unlock, with iw complete */
		if (epoll_ctl(io->epfd, EPOLL_CTL_ADD, iw->fd, &ev)) {
			iw->result = errno == EEXIST ? -EBUSY : -errno;
			rt__unlock(&io->lock);
			return false;
		}
	}
	if (iw->timed) {
		iw->seq = io->seq++;
		heap_insert(&io->timers, &iw->node);
		if (iw->deadline < io->sleep_until && !io->kicked)
			kick = io->kicked = true;
	}
	rt__unlock(&io->lock);
	/* iw may be over already: only io is used from here */
	if (kick)
		io_kick(io);
	return true;
}

static void thread_sleep_until(uint64_t deadline)
{
	struct timespec ts = ts_of(deadline);

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
	}
}

/* rt__wait's commit with poller=worker, on the worker's thread once the task is
 * switched out: the wait joins that worker's poller. */
static bool poller_commit(struct rt__waiter *wt, void *arg)
{
	struct io_wait *iw = arg;
	struct rt__worker *w = rt__thread()->w;
	struct epoll_event ev = { .events = iw->events | EPOLLONESHOT, .data.ptr = iw };
	struct rt__poller *p;
	int err = -ENOMEM;

	p = w ? poller_get(w, &err) : NULL;
	if (!p) {
		iw->result = err;
		return false;
	}
	if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, iw->fd, &ev)) {
		iw->result = errno == EEXIST ? -EBUSY : -errno;
		return false;
	}
	if (iw->timed) {
		iw->seq = p->seq++;
		heap_insert(&p->timers, &iw->node);
	}
	rt__poll_waits_add(w, 1);
	(void)wt;
	return true;
}

_Static_assert(sizeof(struct io_wait) <= RT_PARK_BYTES, "a wait fits a task's park area");

void rt_sleep_ns(uint64_t ns)
{
	struct rt_task *t = rt_current();
	struct io_wait *iw;
	int err;

	if (!t) {
		thread_sleep_until(deadline_after(ns));
		return;
	}
	if (!ns) {
		rt_yield();
		return;
	}
	iw = rt__park_area(sizeof(*iw));
	if (!iw) { /* inside a blocking section: the thread sleeps */
		thread_sleep_until(deadline_after(ns));
		return;
	}
	memset(iw, 0, sizeof(*iw));
	iw->deadline = deadline_after(ns);
	iw->fd = -1;
	iw->timed = true;
	iw->io = io_get(t->sched, &err);
	if (!iw->io) {
		/* no reactor (no memory, no thread): block the worker rather than return
		 * early, which would break every caller's lower bound */
		thread_sleep_until(iw->deadline);
		return;
	}
	rt__wait(&iw->w, io_commit, iw);
}

/* A thread's wait, and anyone's zero-timeout look: poll(2). */
static int io_poll(int fd, uint32_t events, int64_t timeout_ns)
{
	struct pollfd p = { .fd = fd, .events = (short)events };
	uint64_t deadline = timeout_ns > 0 ? deadline_after((uint64_t)timeout_ns) : 0;

	for (;;) {
		struct timespec ts, *tsp = NULL;
		int n;

		if (timeout_ns >= 0) {
			uint64_t now = rt_now_ns();

			ts = ts_of(deadline > now ? deadline - now : 0);
			tsp = &ts;
		}
		n = ppoll(&p, 1, tsp, NULL);
		if (n > 0)
			return p.revents & POLLNVAL ? -EBADF : 0;
		if (n == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

int rt_io_wait(int fd, uint32_t events, int64_t timeout_ns)
{
	struct rt_task *t = rt_current();
	struct io_wait *iw;
	int err;

	if (fd < 0)
		return -EBADF;
	if (!events || (events & ~(uint32_t)IO_EVENTS))
		return -EINVAL;
	iw = t && timeout_ns ? rt__park_area(sizeof(*iw)) : NULL;
	if (!iw) /* a thread, a blocking section, or a zero-timeout look */
		return io_poll(fd, events, timeout_ns);
	memset(iw, 0, sizeof(*iw));
	iw->fd = fd;
	iw->events = events;
	iw->timed = timeout_ns > 0;
	if (iw->timed)
		iw->deadline = deadline_after((uint64_t)timeout_ns);
	if (t->sched->cfg.poller == RT_POLLER_WORKER && rt__thread()->w) {
		rt__wait(&iw->w, poller_commit, iw);
		return iw->result;
	}
	iw->io = io_get(t->sched, &err);
	if (!iw->io)
		return err;
	rt__wait(&iw->w, io_commit, iw);
	return iw->result;
}

/* ---- sockets ---------------------------------------------------------------------------- */

/* Whether the calling task's socket calls park: a task of a scheduler whose sockets do,
 * outside a blocking section (where the thread is the task's and may block). */
static bool sockets_park(void)
{
	struct rt_task *t = rt_current();

	return t && t->sched->cfg.sockets == RT_SOCKETS_PARK && rt__park_area(1);
}

int rt_socket_section(int (*fn)(void *arg), void *arg)
{
	struct rt_task *t = rt_current();

	if (!t || t->sched->cfg.sockets == RT_SOCKETS_PARK)
		return fn(arg);
	return rt_blocking(fn, arg);
}

/* A socket call's failure as the callers promise it: a peer gone is -EPIPE, a blocking
 * socket's own timeout (EAGAIN) -ETIMEDOUT. */
static int socket_error(int err)
{
	if (err == EAGAIN || err == EWOULDBLOCK)
		return -ETIMEDOUT;
	return err == ECONNRESET || err == EPIPE ? -EPIPE : -err;
}

/* Send (send_side) or receive all len bytes on fd: blocking calls, or, where the task's
 * sockets park, calls that do not block with a park on the poller between them, for at
 * most timeout_ns in all (< 0: no limit). */
static int socket_all(int fd, char *buf, size_t len, bool send_side, int64_t timeout_ns)
{
	bool park = sockets_park();
	uint64_t deadline = park && timeout_ns >= 0 ? deadline_after((uint64_t)timeout_ns) : 0;
	int flags = (send_side ? MSG_NOSIGNAL : 0) | (park ? MSG_DONTWAIT : 0);

	for (size_t off = 0; off < len;) {
		ssize_t n = send_side ? send(fd, buf + off, len - off, flags)
				      : recv(fd, buf + off, len - off, flags);
		int64_t left = -1;
		int err;

		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n == 0)
			return -EPIPE; /* recv: the peer closed */
		if (errno == EINTR)
			continue;
		if (!park || (errno != EAGAIN && errno != EWOULDBLOCK))
			return socket_error(errno);
		if (deadline) {
			uint64_t now = rt_now_ns();

			if (now >= deadline)
				return -ETIMEDOUT;
			left = (int64_t)(deadline - now);
		}
		err = rt_io_wait(fd, send_side ? EPOLLOUT : EPOLLIN, left);
		if (err)
			return err;
	}
	return 0;
}

int rt_socket_send_all(int fd, const void *buf, size_t len, int64_t timeout_ns)
{
	return socket_all(fd, (char *)buf, len, true, timeout_ns);
}

int rt_socket_recv_all(int fd, void *buf, size_t len, int64_t timeout_ns)
{
	return socket_all(fd, buf, len, false, timeout_ns);
}
