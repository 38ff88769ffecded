/*
 * The TCP peer for `make bench`: tcp-blocking's op (256 exchanges over 64 persistent
 * loopback connections against the same server process, which sleeps 1 ms before each
 * response) done by a single thread with nonblocking sockets and one epoll loop, no
 * runtime at all. Where the runtime's figure under ce should be: on this machine the
 * server's "1 ms" sleep overshoots, so the practical ceiling is below the ideal 250
 * ops/s, and this peer shows where it is.
 *
 *   tcp-epoll   one op: every connection sends its first request; each response that
 *               arrives is checked and folded, and that connection sends its next, until
 *               every connection has done its share (exchange i goes on connection
 *               i % 64, as in the workload)
 *
 * The server, the connections, the requests and the check are the workload's own
 * (workloads/tcp.c), so the two do the same exchanges and fold their responses alike.
 * The server is `$SCHEDLAB_EXE __tcp-server`: SCHEDLAB_EXE must name the schedlab binary.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/peer.h"
#include "workloads/internal.h"

#define CONNS	  64
#define EXCHANGES 256
#define DELAY_US  1000

/* One connection's place in the op: the exchange in flight and how much of its request
 * went out and of its response came in. */
struct conn_state {
	long next;    /* the exchange in flight; >= EXCHANGES: done */
	size_t sent, got;
	struct wl__tcp_msg req, resp;
	uint64_t fold;
};

/* What the op needs between calls; process-wide by nature: one peer per process. */
static struct wl__tcp *tcp;
static int epfd = -1;

static int setup(void)
{
	char err[512];
	int ret;

	if (!getenv("SCHEDLAB_EXE")) {
		fprintf(stderr, "tcppeer: set SCHEDLAB_EXE to the schedlab binary, whose "
				"__tcp-server this peer talks to\n");
		return -EINVAL;
	}
	ret = wl__tcp_open(&tcp, "tcp-epoll", CONNS, EXCHANGES, DELAY_US, true, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "%s\n", err);
		return ret;
	}
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		return -errno;
	for (long k = 0; k < CONNS; k++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t)k };

		if (epoll_ctl(epfd, EPOLL_CTL_ADD, tcp->conns[k].fd, &ev))
			return -errno;
	}
	return 0;
}

/* Send what is left of c's request: 0, or -errno. A 16-byte request on a socket whose
 * previous request was answered goes out whole; a short write is finished here. */
static int send_rest(int fd, struct conn_state *c)
{
	while (c->sent < sizeof(c->req)) {
		ssize_t n = send(fd, (const char *)&c->req + c->sent, sizeof(c->req) - c->sent,
				 MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		c->sent += (size_t)n;
	}
	return 0;
}

static int start_exchange(long k, struct conn_state *c)
{
	wl__tcp_request(tcp, (uint32_t)k, c->next, &c->req);
	c->sent = c->got = 0;
	return send_rest(tcp->conns[k].fd, c);
}

/* c's socket is readable: take what came; when a whole response is in, check it, fold
 * it and start the connection's next exchange. 0, or -errno (-EPROTO: a wrong echo). */
static int on_readable(long k, struct conn_state *c, long *left)
{
	ssize_t n = recv(tcp->conns[k].fd, (char *)&c->resp + c->got, sizeof(c->resp) - c->got, 0);

	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	if (n == 0)
		return -EPIPE;
	c->got += (size_t)n;
	if (c->got < sizeof(c->resp))
		return 0;
	if (memcmp(&c->req, &c->resp, sizeof(c->req))) {
		fprintf(stderr, "tcp-epoll: connection %ld, exchange %ld: a wrong echo\n", k,
			c->next);
		return -EPROTO;
	}
	c->fold = wl__tcp_fold_exchange(c->fold, &c->resp);
	c->next += CONNS;
	if (c->next >= EXCHANGES) {
		(*left)--;
		return 0;
	}
	return start_exchange(k, c);
}

/* One op; 0 when every response matched and folded to the reference, else 1 with the
 * reason on stderr (peer_iterate() then fails the iteration). */
static uint64_t op_epoll(void)
{
	struct conn_state cs[CONNS];
	struct epoll_event evs[CONNS];
	uint64_t folds[CONNS];
	long left = 0;
	char why[512];
	int err = 0;

	tcp->gen++;
	tcp->failed = 0;
	for (long k = 0; k < CONNS && !err; k++) {
		cs[k] = (struct conn_state){ .next = k };
		if (k < EXCHANGES) {
			left++;
			err = start_exchange(k, &cs[k]);
		}
	}
	while (left > 0 && !err) {
		int n = epoll_wait(epfd, evs, CONNS, (int)(tcp->timeout_ns / 1000000));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n ? -errno : -ETIMEDOUT;
			break;
		}
		for (int i = 0; i < n && !err; i++)
			err = on_readable((long)evs[i].data.u64, &cs[evs[i].data.u64], &left);
	}
	if (err) {
		fprintf(stderr, "tcp-epoll: %s\n", strerror(-err));
		return 1;
	}
	for (long k = 0; k < CONNS; k++)
		folds[k] = cs[k].fold;
	if (!wl__tcp_check(tcp, wl__tcp_fold_connections(folds, CONNS), why, sizeof(why))) {
		fprintf(stderr, "%s\n", why);
		return 1;
	}
	return 0;
}

static const struct peer_job jobs[] = {
	{ "tcp-epoll", op_epoll, 0, 1, setup, 0 },
};

int main(int argc, char **argv)
{
	int status = peer_main(argc, argv, jobs, sizeof(jobs) / sizeof(jobs[0]), NULL);

	if (epfd >= 0)
		close(epfd);
	wl__tcp_close(tcp);
	return status;
}
