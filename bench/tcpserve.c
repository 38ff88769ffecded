/*
 * tcpserve: starts schedlab's TCP server (`$SCHEDLAB_EXE __tcp-server`, the server of the
 * tcp-* workloads, workloads/tcp_server.c) for a peer written in another language, which
 * cannot hand a child the listening socket and the control socket the server takes (Java
 * cannot pass a child any descriptor but its three standard ones). The peer runs this
 * program with pipes for its stdin and stdout:
 *
 *   tcpserve [--conns N] [--delay-us N]
 *
 * It binds a loopback listening socket, draws the run's key and starts the server with
 * both, as the workloads' setup does (workloads/tcp.c), then writes one line on stdout,
 * "PORT KEY" (the key in hex: 16 bytes that each connection sends first and gets echoed;
 * a secret, so on a pipe, never on a command line), and waits. When its stdin reaches end
 * of file (the peer closed it, or died), it closes the control socket, which stops the
 * server, reaps it and exits: the server never outlives the peer. The exchanges go
 * straight between the peer and the server; this program only waits in poll().
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "workloads/workload.h"

#define LISTEN_FD	 3
#define CONTROL_FD	 4
#define REQUEST_SIZE	 16 /* struct wl__tcp_msg */
#define HELLO_TIMEOUT_MS 10000
#define STOP_TIMEOUT_MS	 2000

extern char **environ;

/* Close the control socket, which tells the server to exit, and reap it (SIGKILL after
 * STOP_TIMEOUT_MS). */
static void server_stop(pid_t server, int control)
{
	struct timespec tick = { 0, 5000000 };
	int status;
	pid_t r = 0;

	close(control);
	for (int waited = 0; waited < STOP_TIMEOUT_MS && r == 0; waited += 5) {
		r = waitpid(server, &status, WNOHANG);
		if (r == 0)
			nanosleep(&tick, NULL);
	}
	if (r == 0) {
		kill(server, SIGKILL);
		while (waitpid(server, &status, 0) < 0 && errno == EINTR)
			;
	}
}

/* Wait for the server's hello line on control: 0 when it echoed hello, else -errno. */
static int await_hello(int control, const char *hello)
{
	struct pollfd p = { .fd = control, .events = POLLIN };
	char got[128];
	size_t off = 0;

	while (off + 1 < sizeof(got) && (off == 0 || got[off - 1] != '\n')) {
		int r = poll(&p, 1, HELLO_TIMEOUT_MS);
		ssize_t n;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r ? -errno : -ETIMEDOUT;
		n = read(control, got + off, sizeof(got) - 1 - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n ? -errno : -EPIPE;
		off += (size_t)n;
	}
	got[off] = '\0';
	return strncmp(got, hello, strlen(hello)) || got[strlen(hello)] != '\n' ? -EPROTO : 0;
}

static long count_arg(const char *text, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(text, &end, 10);
	return errno || end == text || *end || v < min || v > max ? -1 : v;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char delay_arg[48], conns_arg[48], hello[64], hello_arg[80];
	char key_line[2 * WL_TCP_SERVER_KEY_LEN + 2];
	unsigned char key[WL_TCP_SERVER_KEY_LEN];
	int lfd = -1, sv[2] = { -1, -1 }, child_listen = -1, child_control = -1, err = 1, ret;
	const char *exe = getenv("SCHEDLAB_EXE");
	long conns = 64, delay_us = 1000;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, pipe_only;
	socklen_t alen = sizeof(a);
	struct pollfd p[2];
	pid_t server = -1;
	char *sargv[9];

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--conns"))
			conns = count_arg(argv[i + 1], 1, WL_TCP_SERVER_MAX_CONNS);
		else if (!strcmp(argv[i], "--delay-us"))
			delay_us = count_arg(argv[i + 1], 0, 1000000);
		else
			conns = -1;
	}
	if (argc % 2 == 0 || conns < 0 || delay_us < 0) {
		fprintf(stderr, "usage: tcpserve [--conns N] [--delay-us N]   (stdin and stdout: pipes "
				"from the peer; SCHEDLAB_EXE: the schedlab binary)\n");
		return 2;
	}
	if (!exe || !*exe) {
		fprintf(stderr, "tcpserve: set SCHEDLAB_EXE to the schedlab binary, whose "
				"__tcp-server the peer talks to\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, (int)conns) ||
	    getsockname(lfd, (struct sockaddr *)&a, &alen)) {
		fprintf(stderr, "tcpserve: a listening socket on 127.0.0.1: %s\n", strerror(errno));
		goto out_close;
	}
	if (getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key)) {
		fprintf(stderr, "tcpserve: getrandom: %s\n", strerror(errno));
		goto out_close;
	}
	for (size_t i = 0; i < sizeof(key); i++)
		snprintf(key_line + 2 * i, 3, "%02x", key[i]);
	key_line[2 * sizeof(key)] = '\n';
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) ||
	    send(sv[0], key_line, 2 * sizeof(key) + 1, MSG_NOSIGNAL) != 2 * (ssize_t)sizeof(key) + 1) {
		fprintf(stderr, "tcpserve: the control socket: %s\n", strerror(errno));
		goto out_close;
	}
	/* copies clear of fds 3 and 4, so that the dup2s below cannot clobber one another */
	child_listen = fcntl(lfd, F_DUPFD_CLOEXEC, 10);
	child_control = fcntl(sv[1], F_DUPFD_CLOEXEC, 10);
	if (child_listen < 0 || child_control < 0) {
		fprintf(stderr, "tcpserve: fcntl: %s\n", strerror(errno));
		goto out_close;
	}
	snprintf(hello, sizeof(hello), "schedlab-tcpserve-%d", (int)getpid());
	snprintf(hello_arg, sizeof(hello_arg), "--hello=%s", hello);
	snprintf(delay_arg, sizeof(delay_arg), "--delay-us=%ld", delay_us);
	snprintf(conns_arg, sizeof(conns_arg), "--conns=%ld", conns);
	sargv[0] = "schedlab";
	sargv[1] = "__tcp-server";
	sargv[2] = "--listen-fd=3";
	sargv[3] = "--control-fd=4";
	sargv[4] = "--size=16";
	sargv[5] = delay_arg;
	sargv[6] = hello_arg;
	sargv[7] = conns_arg;
	sargv[8] = NULL;
	_Static_assert(LISTEN_FD == 3 && CONTROL_FD == 4 && REQUEST_SIZE == 16, "as in sargv");
	/* fds 0-2 are ours to give the server too: its stderr is the peer's, its stdin and
	 * stdout /dev/null, so that it holds no end of the peer's pipes. Its signals as the
	 * workload's server has them: none blocked (whatever mask the peer's runtime gave
	 * this process), and SIGPIPE back to its default, which this program ignores. */
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	ret = posix_spawnattr_setsigmask(&attr, &none);
	if (!ret)
		ret = posix_spawnattr_setsigdefault(&attr, &pipe_only);
	if (!ret)
		ret = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	if (!ret)
		ret = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (!ret)
		ret = posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	if (!ret)
		ret = posix_spawn_file_actions_adddup2(&fa, child_listen, LISTEN_FD);
	if (!ret)
		ret = posix_spawn_file_actions_adddup2(&fa, child_control, CONTROL_FD);
	if (!ret)
		ret = posix_spawn_file_actions_addclosefrom_np(&fa, CONTROL_FD + 1);
	if (!ret)
		ret = posix_spawn(&server, exe, &fa, &attr, sargv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (ret) {
		server = -1;
		fprintf(stderr, "tcpserve: cannot start %s __tcp-server: %s\n", exe, strerror(ret));
		goto out_close;
	}
	/* the server has its own; only it holds the other end of control now */
	close(lfd);
	close(sv[1]);
	close(child_listen);
	close(child_control);
	lfd = sv[1] = child_listen = child_control = -1;
	ret = await_hello(sv[0], hello);
	if (ret) {
		fprintf(stderr, "tcpserve: '%s __tcp-server' did not start (%s): is it schedlab?\n",
			exe, strerror(-ret));
		goto out_stop;
	}
	if (printf("%u %.*s\n", ntohs(a.sin_port), (int)(2 * sizeof(key)), key_line) < 0 ||
	    fflush(stdout)) {
		fprintf(stderr, "tcpserve: writing the port and key: %s\n", strerror(errno));
		goto out_stop;
	}
	explicit_bzero(key_line, sizeof(key_line));
	explicit_bzero(key, sizeof(key));

	/* until the peer goes (end of file or an error on stdin), or the server does */
	p[0] = (struct pollfd){ .fd = 0, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = sv[0], .events = POLLIN };
	for (;;) {
		char buf[256];
		int r = poll(p, 2, -1);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fprintf(stderr, "tcpserve: poll: %s\n", strerror(errno));
			goto out_stop;
		}
		if (p[1].revents) {
			fprintf(stderr, "tcpserve: the server exited before the peer was done\n");
			goto out_stop;
		}
		if (p[0].revents && read(0, buf, sizeof(buf)) <= 0)
			break;
	}
	err = 0;
out_stop:
	server_stop(server, sv[0]);
	sv[0] = -1;
out_close:
	if (child_listen >= 0)
		close(child_listen);
	if (child_control >= 0)
		close(child_control);
	if (lfd >= 0)
		close(lfd);
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	return err;
}
