/*
 * The loopback TCP client side of tcp-blocking and tcp-callback (workloads/internal.h
 * describes the exchanges), and the server process they talk to.
 *
 * The server is a separate process, `schedlab __tcp-server` (workloads/tcp_server.c), spawned
 * from the benchmark's own binary with posix_spawn: a multi-threaded process must not
 * fork without exec. Setup makes the listening socket (so the address is ours, loopback
 * only, and a bind error is reported here) and hands it over as fd 3, with one end of a
 * control socket as fd 4. Before the server starts, setup writes the run's key there (16
 * bytes from getrandom, in hex: a secret, so never on the command line). The server writes
 * back the hello token it was given once it has the key and has dropped its privileges,
 * and exits when the control socket reaches end of file: teardown closes it, and so does
 * the kernel when the benchmark dies, so a server never outlives it.
 *
 * Any local user may connect to a loopback port. So each connection opens by sending the
 * key and waits for the server to echo it, which admits it; the server closes any
 * connection without the key, and stops listening once it has admitted the `conns` it was
 * told of. A stranger thus gets no answer and takes none of the workload's connections.
 *
 * The binary is /proc/self/exe; $SCHEDLAB_EXE names another one for programs that are
 * not schedlab (the tests). A binary that is no schedlab never echoes the token, and
 * setup says so instead of waiting for exchanges that never come.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "workloads/internal.h"

extern char **environ;

#define SERVER_LISTEN_FD  3
#define SERVER_CONTROL_FD 4
#define HELLO_TIMEOUT_MS  10000
#define STOP_TIMEOUT_MS   2000
#define EXCHANGE_SLACK_NS 10000000000ll /* an exchange fails 10 s past twice the delay */

_Static_assert(WL__TCP_MAX_CONNS <= WL_TCP_SERVER_MAX_CONNS, "the server admits every one");

const struct wl_param wl__tcp_params[] = {
	{ "conns", WL_INT, "64", 1, WL__TCP_MAX_CONNS, NULL,
	  "persistent loopback connections, one task each per op" },
	{ "exchanges", WL_INT, "256", 1, 1000000, NULL,
	  "request/response exchanges per op, round-robin over the connections" },
	{ "delay", WL_INT, "1000", 0, 1000000, NULL,
	  "microseconds the server waits before each response" },
	{ 0 },
};

/* ---- the exchanges and their fold -------------------------------------------------- */

static uint32_t tcp_tag(uint32_t seq)
{
	uint64_t x = ((uint64_t)seq + 1) * 0x9e3779b97f4a7c15ull;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	return (uint32_t)(x >> 32);
}

/* Order matters in both folds: a response in the wrong place changes the result. */
static uint64_t fold_exchange(uint64_t r, uint32_t tag)
{
	return r * 1000003u + tag + 1;
}

static uint64_t tcp_reference(long nconns, long exchanges)
{
	uint64_t h = WL__FOLD_SEED;

	for (long k = 0; k < nconns; k++) {
		uint64_t r = 0;

		for (long i = k; i < exchanges; i += nconns)
			r = fold_exchange(r, tcp_tag((uint32_t)i));
		h = wl__fold(h, r);
	}
	return h;
}

/* Keep the first failure of an op: the connections fail independently. */
static void tcp_fail(struct wl__tcp *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void tcp_fail(struct wl__tcp *t, const char *fmt, ...)
{
	uint32_t expected = 0;
	va_list ap;

	if (!__atomic_compare_exchange_n(&t->failed, &expected, 1, false, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED))
		return;
	/* read by check after the op joined every task, which orders it */
	va_start(ap, fmt);
	vsnprintf(t->why, sizeof(t->why), fmt, ap);
	va_end(ap);
}

static const char *exchange_error(int err, char *buf, size_t len, int64_t timeout_ns)
{
	if (err == -ETIMEDOUT)
		snprintf(buf, len, "no response within %lld s",
			 (long long)(timeout_ns / 1000000000));
	else if (err == -EPIPE)
		snprintf(buf, len, "the server closed the connection");
	else
		snprintf(buf, len, "%s", strerror(-err));
	return buf;
}

void wl__tcp_request(const struct wl__tcp *t, uint32_t conn, long i, struct wl__tcp_msg *req)
{
	*req = (struct wl__tcp_msg){ conn, (uint32_t)i, t->gen, tcp_tag((uint32_t)i) };
}

uint64_t wl__tcp_fold_exchange(uint64_t r, const struct wl__tcp_msg *resp)
{
	return fold_exchange(r, resp->tag);
}

uint64_t wl__tcp_fold_connections(const uint64_t *r, long n)
{
	uint64_t h = WL__FOLD_SEED;

	for (long k = 0; k < n; k++)
		h = wl__fold(h, r[k]);
	return h;
}

uint64_t wl__tcp_connection(struct wl__tcp_conn *c, wl__tcp_exchange_fn exchange)
{
	struct wl__tcp *t = c->tcp;
	uint64_t r = 0;
	char why[96];

	for (long i = c->index; i < t->exchanges; i += t->nconns) {
		struct wl__tcp_msg req, resp;
		int err;

		wl__tcp_request(t, c->index, i, &req);
		err = exchange(c, &req, &resp);

		if (err) {
			tcp_fail(t, "%s: connection %u, exchange %ld: %s", t->name, c->index, i,
				 exchange_error(err, why, sizeof(why), t->timeout_ns));
			return 0;
		}
		if (memcmp(&req, &resp, sizeof(req))) {
			tcp_fail(t,
				 "%s: connection %u, exchange %ld (op %u): the response is for "
				 "connection %u, exchange %u (op %u), tag %#x instead of %#x",
				 t->name, c->index, i, req.gen, resp.conn, resp.seq, resp.gen,
				 resp.tag, req.tag);
			return 0;
		}
		r = wl__tcp_fold_exchange(r, &resp);
		/* the op's middle exchange: under a scheduler that keeps them all in flight,
		 * every connection's task is under way */
		if (t->sample && i == t->exchanges / 2)
			t->sampled = wl__smaps_rollup(&t->rss, &t->pss) ?: 1;
	}
	return r;
}

uint64_t wl__tcp_op(struct wl__tcp *t, rt_fn connection_task)
{
	struct rt_task *tasks[WL__TCP_MAX_CONNS];
	uint64_t r[WL__TCP_MAX_CONNS];
	long spawned = 0;

	t->failed = 0;
	t->gen++; /* published to the tasks by their spawn */
	for (; spawned < t->nconns; spawned++) {
		tasks[spawned] = rt_spawn(connection_task, &t->conns[spawned]);
		if (!tasks[spawned]) {
			tcp_fail(t, "%s: cannot spawn the task of connection %ld: %s", t->name,
				 spawned, strerror(errno));
			break;
		}
	}
	for (long k = 0; k < spawned; k++)
		r[k] = rt_join(tasks[k]);
	return wl__tcp_fold_connections(r, spawned);
}

size_t wl__tcp_report(struct wl_ctx *ctx, rt_fn op_task, struct wl_metric *out, size_t max)
{
	struct wl__tcp *t = ctx->state;
	struct rt_task *task;
	char err[256];
	uint64_t r;
	size_t n = 0;

	t->sample = true;
	t->sampled = 0;
	task = rt_submit(ctx->sched, op_task, ctx);
	r = task ? rt_join(task) : 0;
	t->sample = false;
	if (!task || !wl__tcp_check(t, r, err, sizeof(err)) || t->sampled != 1)
		return 0;
	wl_metric_add(out, &n, max, "client_rss", "MiB", t->rss / (1024.0 * 1024.0));
	wl_metric_add(out, &n, max, "client_pss", "MiB", t->pss / (1024.0 * 1024.0));
	return n;
}

bool wl__tcp_check(struct wl__tcp *t, uint64_t result, char *err, size_t errlen)
{
	if (t->failed) {
		snprintf(err, errlen, "%s", t->why);
		return false;
	}
	if (result == t->reference)
		return true;
	snprintf(err, errlen,
		 "%s: the responses fold to %#llx, expected %#llx (results out of order)", t->name,
		 (unsigned long long)result, (unsigned long long)t->reference);
	return false;
}

/* ---- the server process ------------------------------------------------------------- */

static void describe_status(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "stopped");
}

/* Close the control socket, which tells the server to exit, and reap it: SIGKILL if it
 * has not gone within STOP_TIMEOUT_MS. Its wait status, or -1 with no server. */
static int server_stop(struct wl__tcp *t)
{
	struct timespec tick = { 0, 5000000 };
	int status = -1;
	pid_t r = 0;

	if (t->control >= 0)
		close(t->control);
	t->control = -1;
	if (t->server < 0)
		return -1;
	for (int waited = 0; waited < STOP_TIMEOUT_MS; waited += 5) {
		do
			r = waitpid(t->server, &status, WNOHANG);
		while (r < 0 && errno == EINTR);
		if (r != 0)
			break;
		nanosleep(&tick, NULL);
	}
	if (r == 0) {
		kill(t->server, SIGKILL);
		do
			r = waitpid(t->server, &status, 0);
		while (r < 0 && errno == EINTR);
	}
	t->server = -1;
	return r > 0 ? status : -1;
}

/* Read the server's hello line into buf: 0, -EPIPE at end of file, -ETIMEDOUT. */
static int read_hello(int fd, char *buf, size_t len)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t off = 0;

	while (off + 1 < len) {
		ssize_t n;
		int r = poll(&p, 1, HELLO_TIMEOUT_MS);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r ? -errno : -ETIMEDOUT;
		n = read(fd, buf + off, len - 1 - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n ? -errno : -EPIPE;
		off += (size_t)n;
		if (buf[off - 1] == '\n')
			break;
	}
	buf[off] = '\0';
	return 0;
}

/* Spawn the server on the listening socket lfd, to admit t->nconns connections that
 * present key. */
static int server_start(struct wl__tcp *t, int lfd, const unsigned char *key, char *err,
			size_t errlen)
{
	const char *exe = getenv("SCHEDLAB_EXE");
	char delay[48], conns[48], hello[64], hello_arg[80], got[96], how[96];
	char key_line[2 * WL_TCP_SERVER_KEY_LEN + 1];
	int sv[2] = { -1, -1 }, child_listen = -1, child_control = -1, ret;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none;
	ssize_t n;
	char *argv[9];

	if (!exe || !*exe)
		exe = "/proc/self/exe";
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		ret = -errno;
		snprintf(err, errlen, "%s: cannot start the server: socketpair: %s", t->name,
			 strerror(errno));
		goto out_close;
	}
	/* the key waits in the socket for the server to read first: a line far smaller than
	 * the socket's buffer, written before there is a server to go away */
	for (size_t i = 0; i < WL_TCP_SERVER_KEY_LEN; i++)
		snprintf(key_line + 2 * i, 3, "%02x", key[i]);
	key_line[sizeof(key_line) - 1] = '\n';
	n = send(sv[0], key_line, sizeof(key_line), MSG_NOSIGNAL);
	if (n != (ssize_t)sizeof(key_line)) {
		ret = n < 0 ? -errno : -EIO;
		snprintf(err, errlen, "%s: cannot start the server: the key: %s", t->name,
			 strerror(-ret));
		goto out_close;
	}
	/* copies clear of fds 3 and 4, so the dup2s below cannot clobber one another */
	child_listen = fcntl(lfd, F_DUPFD_CLOEXEC, 10);
	child_control = fcntl(sv[1], F_DUPFD_CLOEXEC, 10);
	if (child_listen < 0 || child_control < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: cannot start the server: fcntl: %s", t->name,
			 strerror(errno));
		goto out_close;
	}
	snprintf(hello, sizeof(hello), "schedlab-tcp-server-%d-%llx", (int)getpid(),
		 (unsigned long long)rt_now_ns());
	snprintf(hello_arg, sizeof(hello_arg), "--hello=%s", hello);
	snprintf(delay, sizeof(delay), "--delay-us=%ld", t->delay_us);
	snprintf(conns, sizeof(conns), "--conns=%ld", t->nconns);
	argv[0] = "schedlab";
	argv[1] = "__tcp-server";
	argv[2] = "--listen-fd=3";
	argv[3] = "--control-fd=4";
	argv[4] = "--size=16";
	argv[5] = delay;
	argv[6] = hello_arg;
	argv[7] = conns;
	argv[8] = NULL;
	_Static_assert(SERVER_LISTEN_FD == 3 && SERVER_CONTROL_FD == 4, "as in argv");

	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	/* the server gets fds 3 and 4 and nothing else of ours (the harness's socket included) */
	ret = posix_spawn_file_actions_adddup2(&fa, child_listen, SERVER_LISTEN_FD);
	if (!ret)
		ret = posix_spawn_file_actions_adddup2(&fa, child_control, SERVER_CONTROL_FD);
	if (!ret)
		ret = posix_spawn_file_actions_addclosefrom_np(&fa, SERVER_CONTROL_FD + 1);
	if (!ret)
		ret = posix_spawnattr_setsigmask(&attr, &none);
	if (!ret)
		ret = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
	if (!ret)
		ret = posix_spawn(&t->server, exe, &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(child_listen);
	close(child_control);
	child_listen = child_control = -1;
	if (ret) {
		t->server = -1;
		snprintf(err, errlen, "%s: cannot start the server: %s: %s", t->name, exe,
			 strerror(ret));
		ret = -ret;
		goto out_close;
	}
	/* only the server holds the other end now: its exit shows as end of file */
	t->control = sv[0];
	sv[0] = -1;
	close(sv[1]);
	sv[1] = -1;

	ret = read_hello(t->control, got, sizeof(got));
	if (!ret && (strncmp(got, hello, strlen(hello)) || got[strlen(hello)] != '\n'))
		ret = -EPROTO;
	if (ret) {
		int status = server_stop(t);

		if (status == -1)
			snprintf(how, sizeof(how), "vanished");
		else if (ret == -ETIMEDOUT)
			snprintf(how, sizeof(how), "did not answer within %d s",
				 HELLO_TIMEOUT_MS / 1000);
		else
			describe_status(status, how, sizeof(how));
		snprintf(err, errlen,
			 "%s: cannot start the server: '%s __tcp-server' %s (is it schedlab? "
			 "SCHEDLAB_EXE names the binary)",
			 t->name, exe, how);
		ret = -ECHILD;
	}
out_close:
	if (child_listen >= 0)
		close(child_listen);
	if (child_control >= 0)
		close(child_control);
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	return ret;
}

/* ---- the connections ---------------------------------------------------------------------- */

/* Open the connection on fd (still blocking) with the run's key, and wait for the server
 * to echo it, which admits the connection: 0, -EACCES if the server closed it instead,
 * -EPROTO for another answer, -ETIMEDOUT. */
static int present_key(int fd, const unsigned char *key)
{
	unsigned char back[WL_TCP_SERVER_KEY_LEN];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t off = 0;
	ssize_t n;

	do /* a fresh socket's buffer takes 16 bytes whole */
		n = send(fd, key, sizeof(back), MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(back))
		return n < 0 && errno != ECONNRESET && errno != EPIPE ? -errno : -EACCES;
	while (off < sizeof(back)) {
		int r = poll(&p, 1, HELLO_TIMEOUT_MS);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r ? -errno : -ETIMEDOUT;
		n = recv(fd, back + off, sizeof(back) - off, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0 && errno != ECONNRESET)
			return -errno;
		if (n <= 0)
			return -EACCES;
		off += (size_t)n;
	}
	return memcmp(back, key, sizeof(back)) ? -EPROTO : 0;
}

static int connect_one(const struct sockaddr_in *a, const unsigned char *key, bool nonblocking,
		       int64_t timeout_ns, int *out)
{
	struct timeval tv = { .tv_sec = timeout_ns / 1000000000,
			      .tv_usec = timeout_ns % 1000000000 / 1000 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, err;

	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)a, sizeof(*a)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		goto out_close;
	err = present_key(fd, key);
	if (err) {
		close(fd);
		return err;
	}
	/* nonblocking sockets wait in the reactor with the timeout; blocking ones in the
	 * kernel, where these turn a silent server into EAGAIN */
	if (nonblocking ? fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
			: setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
				  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
		goto out_close;
	*out = fd;
	return 0;

out_close:
	err = -errno;
	close(fd);
	return err;
}

int wl__tcp_open(struct wl__tcp **out, const char *name, long nconns, long exchanges,
		 long delay_us, bool nonblocking, char *err, size_t errlen)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	unsigned char key[WL_TCP_SERVER_KEY_LEN];
	socklen_t alen = sizeof(a);
	struct wl__tcp *t;
	int lfd = -1, ret;
	ssize_t n;

	t = calloc(1, sizeof(*t));
	if (!t || !(t->conns = calloc((size_t)nconns, sizeof(*t->conns)))) {
		free(t);
		snprintf(err, errlen, "%s: out of memory", name);
		return -ENOMEM;
	}
	t->name = name;
	t->server = -1;
	t->control = -1;
	t->nconns = nconns;
	t->exchanges = exchanges;
	t->delay_us = delay_us;
	t->timeout_ns = EXCHANGE_SLACK_NS + 2 * (int64_t)delay_us * 1000;
	t->reference = tcp_reference(nconns, exchanges);
	for (long k = 0; k < nconns; k++)
		t->conns[k] = (struct wl__tcp_conn){ .tcp = t, .fd = -1, .index = (uint32_t)k };

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(lfd, (int)nconns) || getsockname(lfd, (struct sockaddr *)&a, &alen)) {
		ret = -errno;
		snprintf(err, errlen, "%s: cannot start the server: a listening socket on 127.0.0.1: %s",
			 name, strerror(errno));
		goto out_free;
	}
	/* the run's key: whoever presents it is this workload (getrandom() blocks only
	 * until the kernel's pool is first seeded, long before any benchmark runs) */
	do
		n = getrandom(key, sizeof(key), 0);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(key)) {
		ret = n < 0 ? -errno : -EIO;
		snprintf(err, errlen, "%s: cannot start the server: getrandom: %s", name,
			 strerror(-ret));
		goto out_free;
	}
	ret = server_start(t, lfd, key, err, errlen);
	close(lfd); /* the server has its own */
	lfd = -1;
	if (ret)
		goto out_free;
	for (long k = 0; k < nconns; k++) {
		ret = connect_one(&a, key, nonblocking, t->timeout_ns, &t->conns[k].fd);
		if (ret) {
			snprintf(err, errlen,
				 "%s: cannot connect to the server on 127.0.0.1:%u (connection %ld of %ld): %s",
				 name, ntohs(a.sin_port), k + 1, nconns,
				 ret == -EACCES   ? "the server closed it instead of admitting it"
				 : ret == -EPROTO ? "the server answered its key with another"
						  : strerror(-ret));
			goto out_free;
		}
	}
	explicit_bzero(key, sizeof(key));
	*out = t;
	return 0;

out_free:
	explicit_bzero(key, sizeof(key));
	if (lfd >= 0)
		close(lfd);
	wl__tcp_close(t);
	return ret;
}

void wl__tcp_close(struct wl__tcp *t)
{
	if (!t)
		return;
	for (long k = 0; k < t->nconns; k++)
		if (t->conns[k].fd >= 0)
			close(t->conns[k].fd);
	server_stop(t);
	free(t->conns);
	free(t);
}
