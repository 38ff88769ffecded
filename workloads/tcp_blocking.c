/*
 * tcp-blocking: 256 exchanges over 64 persistent loopback connections, each a blocking
 * send and recv on a blocking socket, made as the runtime makes such calls
 * (rt_socket_section()): inside a blocking section, or, where sockets park on the poller
 * (loom, go), parking the task; a separate server process sleeps `delay` (1 ms) before
 * each response.
 *
 * The studies' "blocking TCP" benchmark, the one that made Kyo 30x slower: the op
 * spawns a task per connection and joins them; each task runs its 4 exchanges in
 * sequence, and each exchange holds its thread in the kernel for about 1 ms. A
 * scheduler that hands the blocked worker's queue off (ce), or parks the task and never
 * blocks the worker (loom, go), keeps all 64 in flight, about 4 ms per op; one that
 * neither notices a 1 ms block nor spreads the queued siblings (kyo) runs them one after
 * another, about 256 ms. Under kyo-flush the runtime itself flushes the worker's queue as
 * each section begins (the blocking_flush knob), so the workload is the same under every
 * preset. The exchanges
 * and their check are in tcp.c, and so is the report's client footprint (RSS and PSS
 * sampled at an op's middle exchange, in one more op after the measured ones).
 */
#include "runtime/rt.h"
#include "workloads/internal.h"

struct tcp_blocking_call {
	const struct wl__tcp_conn *c;
	const struct wl__tcp_msg *req;
	struct wl__tcp_msg *resp;
};

/* The blocking calls themselves, on a blocking socket whose SO_RCVTIMEO / SO_SNDTIMEO
 * give up on a silent server. Run in the runtime's socket section: under sockets=block
 * a blocking section, so that every sample of it has the section's frame (and the phase
 * word says blocking); under sockets=park (loom, go) the calls park the task on the
 * poller instead, as a virtual thread's or a goroutine's read does. */
static int tcp_blocking_send_recv(void *arg)
{
	const struct tcp_blocking_call *x = arg;
	int64_t timeout = x->c->tcp->timeout_ns;
	int err = rt_socket_send_all(x->c->fd, x->req, sizeof(*x->req), timeout);

	return err ? err : rt_socket_recv_all(x->c->fd, x->resp, sizeof(*x->resp), timeout);
}

/* Not inlined: the flame graph shows the exchange by name. */
static __attribute__((noinline)) int tcp_blocking_exchange(const struct wl__tcp_conn *c,
							   const struct wl__tcp_msg *req,
							   struct wl__tcp_msg *resp)
{
	struct tcp_blocking_call x = { c, req, resp };

	return rt_socket_section(tcp_blocking_send_recv, &x);
}

static uint64_t tcp_blocking_connection(void *arg)
{
	return wl__tcp_connection(arg, tcp_blocking_exchange);
}

static int tcp_blocking_setup(struct wl_ctx *ctx, char *err, size_t errlen)
{
	struct wl__tcp *t;
	int ret = wl__tcp_open(&t, "tcp-blocking", wl_int(ctx, "conns"), wl_int(ctx, "exchanges"),
			       wl_int(ctx, "delay"), false, err, errlen);

	if (!ret)
		ctx->state = t;
	return ret;
}

static uint64_t tcp_blocking_op(struct wl_ctx *ctx)
{
	return wl__tcp_op(ctx->state, tcp_blocking_connection);
}

static bool tcp_blocking_check(struct wl_ctx *ctx, uint64_t result, char *err, size_t errlen)
{
	return wl__tcp_check(ctx->state, result, err, errlen);
}

static uint64_t tcp_blocking_report_op(void *arg)
{
	return tcp_blocking_op(arg);
}

/* The client's footprint while the exchanges run: one more op, sampled mid-way. */
static size_t tcp_blocking_report(struct wl_ctx *ctx, struct wl_metric *out, size_t max)
{
	return wl__tcp_report(ctx, tcp_blocking_report_op, out, max);
}

static void tcp_blocking_teardown(struct wl_ctx *ctx)
{
	wl__tcp_close(ctx->state);
	ctx->state = NULL;
}

const struct wl_desc wl_tcp_blocking = {
	.name = "tcp-blocking",
	.summary = "exchanges over conns persistent loopback connections, each a blocking "
		   "send+recv in a blocking section; the server waits delay us to respond",
	.unit = "ops/s",
	.params = wl__tcp_params,
	.setup = tcp_blocking_setup,
	.op = tcp_blocking_op,
	.check = tcp_blocking_check,
	.teardown = tcp_blocking_teardown,
	.report = tcp_blocking_report,
};
