/*
 * tcp-callback: the exchanges of tcp-blocking (256 over 64 persistent loopback
 * connections, the server sleeping `delay` before each response) on nonblocking
 * sockets, each task parking while its socket is not ready: on the reactor's thread,
 * or with poller=worker (ce) on its worker's own epoll.
 *
 * The studies' "callback TCP" benchmark: no thread ever blocks, so a scheduler's
 * blocking policy does not matter and every runtime lands near the 4-exchanges-in-a-row
 * ceiling (about 4 ms per op); what remains is the cost of parking, of the reactor's
 * wake-ups and of where woken tasks are placed. The exchanges and their check are in
 * tcp.c.
 */
#include <errno.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "runtime/rt.h"
#include "workloads/internal.h"

/* Wait until fd is ready for events or deadline (rt_now_ns()) passes. */
static int tcp_callback_wait(int fd, uint32_t events, uint64_t deadline)
{
	uint64_t now = rt_now_ns();

	if (now >= deadline)
		return -ETIMEDOUT;
	return rt_io_wait(fd, events, (int64_t)(deadline - now));
}

static int tcp_callback_send(int fd, const void *buf, size_t len, uint64_t deadline)
{
	for (size_t off = 0; off < len;) {
		ssize_t n = send(fd, (const char *)buf + off, len - off, MSG_NOSIGNAL);
		int err;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			err = tcp_callback_wait(fd, EPOLLOUT, deadline);
			if (err)
				return err;
			continue;
		}
		if (n < 0)
			return errno == ECONNRESET ? -EPIPE : -errno;
		off += (size_t)n;
	}
	return 0;
}

static int tcp_callback_recv(int fd, void *buf, size_t len, uint64_t deadline)
{
	for (size_t off = 0; off < len;) {
		ssize_t n = recv(fd, (char *)buf + off, len - off, 0);
		int err;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			err = tcp_callback_wait(fd, EPOLLIN, deadline);
			if (err)
				return err;
			continue;
		}
		if (n == 0)
			return -EPIPE;
		if (n < 0)
			return errno == ECONNRESET ? -EPIPE : -errno;
		off += (size_t)n;
	}
	return 0;
}

static __attribute__((noinline)) int tcp_callback_exchange(const struct wl__tcp_conn *c,
							   const struct wl__tcp_msg *req,
							   struct wl__tcp_msg *resp)
{
	uint64_t deadline = rt_now_ns() + (uint64_t)c->tcp->timeout_ns;
	int err = tcp_callback_send(c->fd, req, sizeof(*req), deadline);

	return err ? err : tcp_callback_recv(c->fd, resp, sizeof(*resp), deadline);
}

static uint64_t tcp_callback_connection(void *arg)
{
	return wl__tcp_connection(arg, tcp_callback_exchange);
}

static int tcp_callback_setup(struct wl_ctx *ctx, char *err, size_t errlen)
{
	struct wl__tcp *t;
	int ret = wl__tcp_open(&t, "tcp-callback", wl_int(ctx, "conns"), wl_int(ctx, "exchanges"),
			       wl_int(ctx, "delay"), true, err, errlen);

	if (!ret)
		ctx->state = t;
	return ret;
}

static uint64_t tcp_callback_op(struct wl_ctx *ctx)
{
	return wl__tcp_op(ctx->state, tcp_callback_connection);
}

static bool tcp_callback_check(struct wl_ctx *ctx, uint64_t result, char *err, size_t errlen)
{
	return wl__tcp_check(ctx->state, result, err, errlen);
}

static uint64_t tcp_callback_report_op(void *arg)
{
	return tcp_callback_op(arg);
}

/* The client's footprint while the exchanges run: one more op, sampled mid-way. */
static size_t tcp_callback_report(struct wl_ctx *ctx, struct wl_metric *out, size_t max)
{
	return wl__tcp_report(ctx, tcp_callback_report_op, out, max);
}

static void tcp_callback_teardown(struct wl_ctx *ctx)
{
	wl__tcp_close(ctx->state);
	ctx->state = NULL;
}

const struct wl_desc wl_tcp_callback = {
	.name = "tcp-callback",
	.summary = "the tcp-blocking exchanges on nonblocking sockets, each task parked on the "
		   "reactor until its socket is ready",
	.unit = "ops/s",
	.params = wl__tcp_params,
	.setup = tcp_callback_setup,
	.op = tcp_callback_op,
	.check = tcp_callback_check,
	.teardown = tcp_callback_teardown,
	.report = tcp_callback_report,
};
