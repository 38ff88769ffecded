/*
 * The separate server process of the tcp-* workloads (`schedlab __tcp-server`, whose
 * entry point in cli/cmd_server.c parses the options and calls wl_tcp_server_run()).
 *
 * Spawned by the workload's setup (workloads/tcp.c), never by hand. It inherits a
 * listening loopback socket and one end of a control socket, and answers the workload's
 * connections: read a request of exactly --size bytes, wait --delay-us, write the same
 * bytes back. The protocol is the workload's; the server only echoes. It first reads the
 * run's key on the control socket, drops every privilege (it needs none: the socket is
 * already open, and accepting, reading, sleeping and writing take no capability), then
 * writes --hello and a newline there, so the workload knows it runs the right binary; it
 * exits when that socket reaches end of file (the workload's teardown closed it, or the
 * workload died), so it never outlives its benchmark.
 *
 * Any local user can connect to a loopback port, so the server serves only the workload's
 * --conns connections. Each opens by sending the key; the admission thread, which accepts,
 * echoes it to admit the connection and hands it to a loop. A connection that sends
 * anything else, or nothing within SERVER_KEY_TIMEOUT_NS, is closed unanswered, and none
 * is ever waited on: every one not yet admitted sits in the admission thread's epoll set
 * with a deadline. After the last admission it closes the listening socket, so a stranger
 * who comes later is refused by the kernel and one who came first took no slot.
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
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#if defined(RT_SANITIZE_ADDRESS)
#include <sanitizer/lsan_interface.h>
#endif
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "runtime/clock.h"
#include "workloads/workload.h"

#define SERVER_MAX_LOOPS 8
#define SERVER_EVENTS    64
/* How long a connection may take to send the key. It bounds how long a stranger holds a
 * descriptor, never what anyone waits for: the workload sends the key as it connects. */
#define SERVER_KEY_TIMEOUT_NS 2000000000ull
/* Who a server started by root runs as, when the system has no user named nobody. */
#define SERVER_NOBODY 65534

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

/* A connection that has not sent the key yet. */
struct server_guest {
	int fd;
	size_t off;                       /* bytes of the key read so far */
	uint64_t deadline;                /* CLOCK_MONOTONIC ns when it is closed unanswered */
	struct server_guest *prev, *next; /* in deadline order, which is accept order */
	unsigned char key[WL_TCP_SERVER_KEY_LEN];
};

/* Everything but the loops belongs to the admission thread once it runs. */
struct server {
	int listen_fd;                    /* -1 once every connection is admitted */
	int epfd, tfd;                    /* listen_fd, the guests and their deadline timer */
	struct server_guest *head, *tail; /* earliest deadline first */
	long conns, admitted;
	unsigned next_loop;
	unsigned char key[WL_TCP_SERVER_KEY_LEN];
	unsigned nloops;
	struct server_loop loops[SERVER_MAX_LOOPS];
};

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
	c->due = rt_clock_ns() + l->delay_ns;
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
	uint64_t now = rt_clock_ns();
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

/* ---- admission ---------------------------------------------------------------------- */

static void guest_close(struct server *srv, struct server_guest *g)
{
	if (g->prev)
		g->prev->next = g->next;
	else
		srv->head = g->next;
	if (g->next)
		g->next->prev = g->prev;
	else
		srv->tail = g->prev;
	if (g->fd >= 0)
		close(g->fd); /* leaves the epoll set with it */
	free(g);
}

/* Hand an admitted connection to the loops in turn. */
static struct server_conn *conn_new(struct server *srv, int fd, struct server_loop **loop)
{
	struct server_loop *l = &srv->loops[srv->next_loop % srv->nloops];
	struct server_conn *c = calloc(1, sizeof(*c) + l->size);

	if (!c)
		return NULL;
	srv->next_loop++;
	c->fd = fd;
#if defined(RT_SANITIZE_ADDRESS)
	/* a connection's one reference is in the kernel's epoll set, where the leak checker
	 * cannot see it; the server exits with its connections open */
	__lsan_ignore_object(c);
#endif
	*loop = l;
	return c;
}

/* Read what g has of the key; once it is all in, admit g or close it. */
static void guest_readable(struct server *srv, struct server_guest *g)
{
	struct server_loop *l;
	struct server_conn *c;
	unsigned char diff = 0;
	int one = 1;

	while (g->off < sizeof(g->key)) {
		ssize_t n = recv(g->fd, g->key + g->off, sizeof(g->key) - g->off, MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return; /* the rest comes later, or its deadline does */
		if (n <= 0) {
			guest_close(srv, g);
			return;
		}
		g->off += (size_t)n;
	}
	/* every byte compared, so that how long it takes says nothing of where it differs */
	for (size_t i = 0; i < sizeof(g->key); i++)
		diff |= g->key[i] ^ srv->key[i];
	if (diff || srv->admitted >= srv->conns) {
		guest_close(srv, g);
		return;
	}
	c = conn_new(srv, g->fd, &l);
	if (!c) {
		guest_close(srv, g); /* the workload sees it refused */
		return;
	}
	epoll_ctl(srv->epfd, EPOLL_CTL_DEL, g->fd, NULL);
	g->fd = -1;
	guest_close(srv, g);
	/* stop listening before the last key goes back: once the workload has its
	 * connections, nobody else can make one */
	if (++srv->admitted == srv->conns) {
		close(srv->listen_fd);
		srv->listen_fd = -1;
	}
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* the key back says admitted; the socket is blocking for writes, and a fresh one
	 * takes it whole. Only then may the loop read the connection. */
	if (!write_all(c->fd, (const char *)srv->key, sizeof(srv->key)) ||
	    !conn_arm(l, c, EPOLL_CTL_ADD))
		conn_close(c);
}

/* Take every connection waiting on the listening socket as a guest. */
static void admit_accept(struct server *srv)
{
	for (;;) {
		int fd = accept4(srv->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
		struct server_guest *g;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EAGAIN)
				return;
			if (errno == EMFILE || errno == ENFILE || errno == ENOMEM ||
			    errno == ENOBUFS) {
				/* the connect waits in the backlog, and the listening socket
				 * stays readable: try again shortly */
				nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
				return;
			}
			fprintf(stderr, "schedlab __tcp-server: accept: %s\n", strerror(errno));
			/* no more admissions: the workload's connects fail, and say so */
			close(srv->listen_fd);
			srv->listen_fd = -1;
			return;
		}
		g = calloc(1, sizeof(*g));
		if (!g) {
			close(fd); /* the client sees the connection refused */
			continue;
		}
		g->fd = fd;
		g->deadline = rt_clock_ns() + SERVER_KEY_TIMEOUT_NS;
		g->prev = srv->tail;
		if (srv->tail)
			srv->tail->next = g;
		else
			srv->head = g;
		srv->tail = g;
		ev.data.ptr = g;
		if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev))
			guest_close(srv, g);
	}
}

/* Close the guests whose deadline passed; set the timer for the next. */
static void guests_expire(struct server *srv)
{
	uint64_t now = rt_clock_ns();
	struct itimerspec it = { 0 };

	while (srv->head && srv->head->deadline <= now)
		guest_close(srv, srv->head);
	if (srv->head) {
		it.it_value.tv_sec = (time_t)(srv->head->deadline / 1000000000u);
		it.it_value.tv_nsec = (long)(srv->head->deadline % 1000000000u);
	}
	timerfd_settime(srv->tfd, TFD_TIMER_ABSTIME, &it, NULL);
}

/* Accept, and admit the connections that send the key, until --conns are admitted. */
static void *server_admit(void *arg)
{
	struct server *srv = arg;
	struct epoll_event ev[SERVER_EVENTS];
	uint64_t expirations;

	while (srv->listen_fd >= 0) {
		int n = epoll_wait(srv->epfd, ev, SERVER_EVENTS, -1);

		if (n < 0 && errno != EINTR) {
			fprintf(stderr, "schedlab __tcp-server: epoll_wait: %s\n", strerror(errno));
			break;
		}
		for (int i = 0; i < n && srv->listen_fd >= 0; i++) {
			if (ev[i].data.ptr == &srv->listen_fd)
				admit_accept(srv);
			else if (ev[i].data.ptr) /* a guest; it frees no other in this round */
				guest_readable(srv, ev[i].data.ptr);
			else /* the timer: the list says who is due */
				(void)!read(srv->tfd, &expirations, sizeof(expirations));
		}
		guests_expire(srv);
	}
	/* every connection of the workload's is in: whoever else waits is a stranger */
	if (srv->listen_fd >= 0)
		close(srv->listen_fd);
	srv->listen_fd = -1;
	while (srv->head)
		guest_close(srv, srv->head);
	close(srv->epfd);
	close(srv->tfd);
	srv->epfd = srv->tfd = -1;
	return NULL;
}

/* Start the loops and the admission thread: 0, or -errno with the failing call in *what. */
static int server_start(struct server *srv, size_t size, uint64_t delay_ns, const char **what)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	struct epoll_event lev = { .events = EPOLLIN, .data.ptr = &srv->listen_fd };
	int flags = fcntl(srv->listen_fd, F_GETFL);
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
	/* nonblocking, so that a connection reset between readiness and accept4() costs an
	 * EAGAIN, not a blocked admission thread; accepted sockets do not inherit it */
	if (flags < 0 || fcntl(srv->listen_fd, F_SETFL, flags | O_NONBLOCK)) {
		*what = "listening socket";
		return -errno;
	}
	srv->epfd = epoll_create1(EPOLL_CLOEXEC);
	srv->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (srv->epfd < 0 || srv->tfd < 0 || epoll_ctl(srv->epfd, EPOLL_CTL_ADD, srv->tfd, &ev) ||
	    epoll_ctl(srv->epfd, EPOLL_CTL_ADD, srv->listen_fd, &lev)) {
		*what = "epoll";
		return -errno;
	}
	err = pthread_create(&tid, NULL, server_admit, srv);
	if (err) {
		*what = "pthread_create";
		return -err;
	}
	pthread_detach(tid);
	return 0;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* The run's key, a line of lowercase hex on control, read to its newline and no
 * further: 0, -EPIPE if the workload went away first, -EPROTO for anything else. */
static int server_read_key(int control, unsigned char *key)
{
	char line[2 * WL_TCP_SERVER_KEY_LEN + 1];

	for (size_t off = 0; off < sizeof(line);) {
		ssize_t n = read(control, line + off, sizeof(line) - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n ? -errno : -EPIPE;
		off += (size_t)n;
	}
	if (line[sizeof(line) - 1] != '\n')
		return -EPROTO;
	for (size_t i = 0; i < WL_TCP_SERVER_KEY_LEN; i++) {
		int hi = hex_digit(line[2 * i]), lo = hex_digit(line[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EPROTO;
		key[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

/*
 * Give up every privilege, while the process has one thread (capabilities are per
 * thread; the threads started later inherit these). The server holds its listening
 * socket already, and accepting, reading, sleeping and writing need nothing, so: no
 * capability in any set, the bounding set emptied and no_new_privs, so that nothing it
 * runs regains one (a setuid binary, file capabilities). Started by root, it also becomes
 * nobody: uid 0 without capabilities still owns root's files. Its benchmark (root, or the
 * user it was before) still signals and reaps it. 0, or -errno with the step in *what.
 */
static int server_drop_privileges(const char **what)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3];
	uid_t uid = SERVER_NOBODY;
	gid_t gid = SERVER_NOBODY;
	struct passwd *pw;

	if (syscall(SYS_capget, &hdr, caps)) {
		*what = "capget";
		return -errno;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL)) {
		*what = "prctl(PR_SET_NO_NEW_PRIVS)";
		return -errno;
	}
	/* emptying the bounding set takes CAP_SETPCAP; without it, no_new_privs already keeps
	 * an exec from gaining what the set allows */
	if (caps[CAP_TO_INDEX(CAP_SETPCAP)].effective & CAP_TO_MASK(CAP_SETPCAP)) {
		for (unsigned long cap = 0; prctl(PR_CAPBSET_READ, cap, 0UL, 0UL, 0UL) >= 0; cap++)
			if (prctl(PR_CAPBSET_DROP, cap, 0UL, 0UL, 0UL)) {
				*what = "prctl(PR_CAPBSET_DROP)";
				return -errno;
			}
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0UL, 0UL, 0UL)) {
		*what = "prctl(PR_CAP_AMBIENT_CLEAR_ALL)";
		return -errno;
	}
	if (geteuid() == 0) {
		pw = getpwnam("nobody");
		if (pw) {
			uid = pw->pw_uid;
			gid = pw->pw_gid;
		}
		/* root without CAP_SETUID or CAP_SETGID (EPERM), or in a user namespace that
		 * maps no nobody (EINVAL), cannot switch: it stays uid 0 with no capability,
		 * which the capset below still ensures */
		if ((setgroups(0, NULL) || setgid(gid) || setuid(uid)) && errno != EPERM &&
		    errno != EINVAL) {
			*what = "setuid";
			return -errno;
		}
	}
	/* a change of uid clears the parent-death signal (commit_creds()): set it again, so
	 * that the server still dies with the benchmark (cli/cmd_server.c) */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0UL, 0UL, 0UL)) {
		*what = "prctl(PR_SET_PDEATHSIG)";
		return -errno;
	}
	memset(caps, 0, sizeof(caps));
	if (syscall(SYS_capset, &hdr, caps)) {
		*what = "capset";
		return -errno;
	}
	/* no other process of the same user may trace it or read its memory (the key);
	 * changing uid made it so already, and this says it for a server that did not */
	if (prctl(PR_SET_DUMPABLE, 0UL, 0UL, 0UL, 0UL)) {
		*what = "prctl(PR_SET_DUMPABLE)";
		return -errno;
	}
	return 0;
}

int wl_tcp_server_run(int listen_fd, int control, size_t size, uint64_t delay_ns, long conns,
		      const char *hello, const char **what)
{
	struct server *srv;
	char buf[128];
	int err;

	/* wait the delay, not the delay plus the default 50 us of timer slack; inherited by
	 * the threads started below */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	srv = calloc(1, sizeof(*srv)); /* lives as long as the process once it serves */
	if (!srv) {
		*what = "calloc";
		return -ENOMEM;
	}
	srv->listen_fd = listen_fd;
	srv->epfd = srv->tfd = -1;
	srv->conns = conns;
	err = server_read_key(control, srv->key);
	if (err) {
		*what = "key";
		goto out_free;
	}
	err = server_drop_privileges(what);
	if (err)
		goto out_free;
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

out_free:
	free(srv);
	return err;
}
