/*
 * Shared by the workload files (and the TCP peer in bench/, which drives the same
 * connections from one epoll loop): the loopback TCP client side of tcp-blocking and
 * tcp-callback (the server process, the persistent connections, the exchanges and
 * their check; the two differ only in how one exchange waits for the socket); the
 * streams' order-sensitive fold; seeded draws for workloads whose inputs are random;
 * and the memory figures of the workloads that report them.
 *
 * Exchange i of an op (0 <= i < exchanges) goes on connection i % conns, so each
 * connection's task runs its exchanges in sequence (4 of them with the defaults). A
 * request is 16 bytes: connection, exchange number, the op's generation and a tag
 * derived from the exchange number; the server sleeps `delay` and echoes it. A task
 * checks each echo against its request and folds the tags in order; the op folds the
 * tasks' results in connection order, which setup computed without the network.
 *
 * And the simulated CPU work of every workload that has some, consume_cpu().
 */
#ifndef SCHEDLAB_WORKLOADS_INTERNAL_H
#define SCHEDLAB_WORKLOADS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/rt.h"
#include "workloads/workload.h"

#define WL__TCP_MAX_CONNS 512 /* a file descriptor each, on both sides */

/* One request, and its echo. */
struct wl__tcp_msg {
	uint32_t conn;
	uint32_t seq;
	uint32_t gen;
	uint32_t tag;
};

_Static_assert(sizeof(struct wl__tcp_msg) == 16, "the server is told this size");

struct wl__tcp;

/* One connection: what its task is handed. */
struct wl__tcp_conn {
	struct wl__tcp *tcp;
	int fd;
	uint32_t index;
};

/* Send req on c and receive its echo into resp: 0, or -errno (-ETIMEDOUT past the
 * workload's timeout_ns, -EPIPE when the server closed the connection). */
typedef int (*wl__tcp_exchange_fn)(const struct wl__tcp_conn *c, const struct wl__tcp_msg *req,
				   struct wl__tcp_msg *resp);

struct wl__tcp {
	const char *name;         /* the workload's, for messages */
	pid_t server;             /* -1: none */
	int control;              /* our end of the server's control socket; closing it stops it */
	struct wl__tcp_conn *conns;
	long nconns, exchanges, delay_us;
	int64_t timeout_ns;       /* an exchange that takes longer has failed */
	uint32_t gen;             /* the op's generation: a stale echo shows */
	uint64_t reference;       /* the fold of a correct op */
	uint32_t failed;          /* set by the first failing exchange of an op */
	bool sample;              /* this op samples the client's memory mid-way */
	int sampled;              /* 0 not yet; 1 taken; -errno could not read it */
	double rss, pss;          /* the sample, in bytes */
	char why[256];            /* its reason, for check */
};

/* Start the server (delay_us before each echo), connect nconns sockets to it
 * (nonblocking ones for the callback style) and compute the reference. 0, or -errno with
 * "<name>: ..." in err. */
int wl__tcp_open(struct wl__tcp **out, const char *name, long nconns, long exchanges,
		 long delay_us, bool nonblocking, char *err, size_t errlen);
/* Close the connections, stop the server and wait for it. NULL does nothing. */
void wl__tcp_close(struct wl__tcp *t);

/* Request i of connection conn in the op under way (t->gen); the fold of a connection's
 * responses, one at a time from 0 in exchange order; and the op's result from its
 * connections' folds in connection order. What an exchange loop of its own needs (the
 * epoll peer in bench/tcppeer.c) to give the result wl__tcp_check() expects. */
void wl__tcp_request(const struct wl__tcp *t, uint32_t conn, long i, struct wl__tcp_msg *req);
uint64_t wl__tcp_fold_exchange(uint64_t r, const struct wl__tcp_msg *resp);
uint64_t wl__tcp_fold_connections(const uint64_t *r, long n);

/* One op: a task per connection running fn, joined in order; the fold of their results. */
uint64_t wl__tcp_op(struct wl__tcp *t, rt_fn connection_task);
/* A connection task's body: its exchanges in sequence through exchange. */
uint64_t wl__tcp_connection(struct wl__tcp_conn *c, wl__tcp_exchange_fn exchange);
bool wl__tcp_check(struct wl__tcp *t, uint64_t result, char *err, size_t errlen);

/* The client's footprint while its connections are active, for the report hook: one
 * more op, run as op_task(ctx) on the scheduler, samples RSS and PSS as its middle
 * exchange completes (with every connection's task under way), and the figures
 * client_rss and client_pss (MiB) go to out. The count; 0 if that op failed. */
size_t wl__tcp_report(struct wl_ctx *ctx, rt_fn op_task, struct wl_metric *out, size_t max);

/* tcp-blocking and tcp-callback share parameters. */
extern const struct wl_param wl__tcp_params[];

/* ---- checks: the fold the workloads' checks use -------------------------------------- */

#define WL__FOLD_SEED 0xcbf29ce484222325ull /* FNV-1a's offset basis */

/* The fold of one value into acc: FNV-1a over 64-bit words, so that the fold depends on
 * the order of the values as well as the values, and a stream, a pipeline or a
 * connection's replies that reorder, drop or repeat one fold to something else. */
static inline uint64_t wl__fold(uint64_t acc, uint64_t v)
{
	return (acc ^ v) * 0x100000001b3ull;
}

/* ---- seeded inputs ------------------------------------------------------------------- */

/* SplitMix64's output for state z (Steele, Lea and Flood): a counter-based generator, so
 * that a workload's check can replay any draw from its number alone. */
static inline uint64_t wl__splitmix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Draw k of the stream `seed` (splitmix64 of seed's k-th step): the same seed gives the
 * same draws in every fork and in the sequential reference, whatever order tasks run. */
static inline uint64_t wl__draw(uint64_t seed, uint64_t k)
{
	return wl__splitmix64(seed + k * 0x9e3779b97f4a7c15ull);
}

/* A draw as a real in [0, 1), from its top 53 bits. */
static inline double wl__draw_unit(uint64_t seed, uint64_t k)
{
	return (double)(wl__draw(seed, k) >> 11) * 0x1.0p-53;
}

/* ---- test hooks ---------------------------------------------------------------------- */

/* sequentially: make the next op break its promise once (where the impl and form promise
 * each key's order, actors and every sequence: a key's first operation issued after its
 * second; buckets and converted issued concurrently: a bucket let go while its body is
 * still inside), so that a test sees the check catch it. */
void wl__sequentially_inject(struct wl_ctx *ctx);

/* ---- simulated work (consume.c) ---------------------------------------------------- */

/* Spend `tokens` steps of a dependent arithmetic chain that the compiler cannot remove
 * (a benchmark harness's black hole); returns the chain's value. Any thread. */
uint64_t consume_cpu(uint64_t tokens);
/* What one token costs on this thread now, in ns: the fastest of a few timed spins. */
double wl__consume_cpu_ns_per_token(void);
/* Append that calibration to a workload's report as "consume_cpu", ns/token. */
void wl__consume_cpu_metric(struct wl_metric *out, size_t *n, size_t max);

/* ---- memory (memory.c) ------------------------------------------------------------- */

/* RSS and PSS of this process in bytes, from /proc/self/smaps_rollup: 0, or -errno. */
int wl__smaps_rollup(double *rss, double *pss);

#endif /* SCHEDLAB_WORKLOADS_INTERNAL_H */
