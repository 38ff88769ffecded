/*
 * The separate server process of the tcp-* workloads (`schedlab __tcp-server`, whose
 * entry point in cli/cmd_server.c parses the options and calls wl_tcp_server_run()).
 *
 * Spawned by the workload's setup (workloads/tcp.c), never by hand. It inherits a
 * listening loopback socket and one end of a control socket, and answers every
 * connection it accepts: read a request of exactly --size bytes, wait --delay-us, write
 * the same bytes back. The protocol is the workload's; the server only echoes. Once it
 * accepts it writes --hello and a newline on the control socket, so the workload knows
 * it runs the right binary; it exits when that socket reaches end of file (the
 * workload's teardown closed it, or the workload died), so it never outlives its
 * benchmark.
 *
 * It must not be what limits the exchanges, and on a small machine it shares the CPUs
 * with the benchmark: a thread per connection costs two sleeps and two wake-ups per
 * exchange, which on a 2-CPU machine held 64 connections to about 60 ops/s. So a few
 * event loops (one per CPU, at most 8) each own some connections, an epoll set and a
 * timerfd: a complete request is queued with its due time (arrival + delay; the delay is
 * constant, so each loop's queue is in due order) and the loop sleeps until the earliest
 * one, answering every request due by then in one wake-up.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#if defined(RT_SANITIZE_ADDRESS)
#include <sanitizer/lsan_interface.h>
#endif
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "workloads/workload.h"

#define SERVER_MAX_LOOPS 8
#define SERVER_EVENTS    64

struct server_conn {
	int fd;
	size_t off;               /* bytes of the request read so far */
	uint64_t due;             /* CLOCK_MONOTONIC ns when the echo is due */
	struct server_conn *next; /* in its loop's queue of due echoes */
	char buf[];
};

/* Everything but epfd and tfd belongs to the loop's own thread. */
struct server_loop {
	int epfd, tfd;
	struct server_conn *head, *tail; /* complete requests, earliest due first */
	uint64_t armed;                  /* the due time tfd is set for; 0: disarmed */
	size_t size;
	uint64_t delay_ns;
};

struct server {
	int listen_fd;
	unsigned nloops;
	struct server_loop loops[SERVER_MAX_LOOPS];
};

static uint64_t server_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool write_all(int fd, const char *buf, size_t len)
{
	for (size_t off = 0; off < len;) {
		ssize_t n = send(fd, buf + off, len - off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return false;
		off += (size_t)n;
	}
	return true;
}

static void conn_close(struct server_conn *c)
{
	close(c->fd); /* leaves the epoll set with it */
	free(c);
}

/* Listen for c's next request: each registration reports once (EPOLLONESHOT), so a
 * connection is never read while its echo is pending. */
static bool conn_arm(struct server_loop *l, struct server_conn *c, int op)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT, .data.ptr = c };

	return !epoll_ctl(l->epfd, op, c->fd, &ev);
}

/* Read what c has; a complete request joins the queue. */
static void conn_readable(struct server_loop *l, struct server_conn *c)
{
	while (c->off < l->size) {
		ssize_t n = recv(c->fd, c->buf + c->off, l->size - c->off, MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			conn_close(c); /* the client closed its end, or went away */
			return;
		}
		c->off += (size_t)n;
	}
	if (c->off < l->size) {
		if (!conn_arm(l, c, EPOLL_CTL_MOD))
			conn_close(c);
		return;
	}
	c->due = server_now() + l->delay_ns;
	c->next = NULL;
	if (l->tail)
		l->tail->next = c;
	else
		l->head = c;
	l->tail = c;
}

/* Echo every request due by now; set the timer for the next. */
static void loop_answer(struct server_loop *l)
{
	uint64_t now = server_now();
	struct itimerspec it = { 0 };

	while (l->head && l->head->due <= now) {
		struct server_conn *c = l->head;

		l->head = c->next;
		if (!l->head)
			l->tail = NULL;
		c->off = 0;
		/* the socket is blocking for writes: one small echo never fills it */
		if (!write_all(c->fd, c->buf, l->size) || !conn_arm(l, c, EPOLL_CTL_MOD))
			conn_close(c);
	}
	if ((l->head ? l->head->due : 0) == l->armed)
		return;
	l->armed = l->head ? l->head->due : 0;
	it.it_value.tv_sec = (time_t)(l->armed / 1000000000u);
	it.it_value.tv_nsec = (long)(l->armed % 1000000000u);
	timerfd_settime(l->tfd, TFD_TIMER_ABSTIME, &it, NULL);
}

static void *server_loop_main(void *arg)
{
	struct server_loop *l = arg;
	struct epoll_event ev[SERVER_EVENTS];

	for (;;) {
		int n = epoll_wait(l->epfd, ev, SERVER_EVENTS, -1);
		uint64_t expirations;

		if (n < 0 && errno != EINTR)
			break;
		for (int i = 0; i < n; i++) {
			if (ev[i].data.ptr)
				conn_readable(l, ev[i].data.ptr);
			else /* the timer; EAGAIN if a re-arm raced it: the queue says what is due */
				(void)!read(l->tfd, &expirations, sizeof(expirations));
		}
		loop_answer(l);
	}
	fprintf(stderr, "schedlab __tcp-server: epoll_wait: %s\n", strerror(errno));
	return NULL;
}

/* Hand accepted connections to the loops in turn. */
static void *server_accept(void *arg)
{
	struct server *srv = arg;
	unsigned next = 0;
	int one = 1;

	for (;;) {
		int fd = accept4(srv->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		struct server_loop *l = &srv->loops[next++ % srv->nloops];
		struct server_conn *c;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOMEM) {
				/* the client's connect waits in the backlog; try again shortly */
				nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
				continue;
			}
			fprintf(stderr, "schedlab __tcp-server: accept: %s\n", strerror(errno));
			break;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c = calloc(1, sizeof(*c) + l->size);
		if (!c) {
			close(fd); /* the client sees the connection closed */
			continue;
		}
		c->fd = fd;
#if defined(RT_SANITIZE_ADDRESS)
		/* a connection's one reference is in the kernel's epoll set, where the leak
		 * checker cannot see it; the server exits with its connections open */
		__lsan_ignore_object(c);
#endif
		if (!conn_arm(l, c, EPOLL_CTL_ADD))
			conn_close(c);
	}
	return NULL;
}

/* Start the loops and the acceptor: 0, or -errno with the failing call in *what. */
static int server_start(struct server *srv, size_t size, uint64_t delay_ns, const char **what)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	pthread_t tid;
	int err;

	srv->nloops = cpus < 1 ? 1 : cpus > SERVER_MAX_LOOPS ? SERVER_MAX_LOOPS : (unsigned)cpus;
	for (unsigned i = 0; i < srv->nloops; i++) {
		struct server_loop *l = &srv->loops[i];

		l->size = size;
		l->delay_ns = delay_ns;
		l->epfd = epoll_create1(EPOLL_CLOEXEC);
		l->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		if (l->epfd < 0 || l->tfd < 0 || epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->tfd, &ev)) {
			*what = "epoll";
			return -errno;
		}
		err = pthread_create(&tid, NULL, server_loop_main, l);
		if (err) {
			*what = "pthread_create";
			return -err;
		}
		pthread_detach(tid);
	}
	err = pthread_create(&tid, NULL, server_accept, srv);
	if (err) {
		*what = "pthread_create";
		return -err;
	}
	pthread_detach(tid);
	return 0;
}

int wl_tcp_server_run(int listen_fd, int control, size_t size, uint64_t delay_ns,
		      const char *hello, const char **what)
{
	struct server *srv;
	char buf[128];
	int err;

	/* wait the delay, not the delay plus the default 50 us of timer slack; inherited by
	 * the threads started below */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	srv = calloc(1, sizeof(*srv)); /* lives as long as the process */
	if (!srv) {
		*what = "calloc";
		return -ENOMEM;
	}
	srv->listen_fd = listen_fd;
	err = server_start(srv, size, delay_ns, what);
	if (err)
		return err;
	snprintf(buf, sizeof(buf), "%s\n", hello);
	if (!write_all(control, buf, strlen(buf))) {
		*what = "hello";
		return -EPIPE;
	}
	/* until end of file: the workload closed the control socket or died */
	for (;;) {
		ssize_t n = read(control, buf, sizeof(buf));

		if (n == 0 || (n < 0 && errno != EINTR))
			break;
	}
	return 0;
}
