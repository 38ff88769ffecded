/*
 * wrong_echo: a stand-in for `schedlab __tcp-server` that answers one chosen op's
 * exchanges wrongly, so that a real `schedlab run` of a tcp workload fails its check.
 *
 *   SCHEDLAB_EXE=build/tests/helpers/wrong_echo WRONG_ECHO='SERVER OP FILE' schedlab run ...
 *
 * The tcp workloads spawn $SCHEDLAB_EXE with the server's arguments (workloads/tcp.c):
 * fd 3 listening, fd 4 the control socket, --size, --delay-us and --hello. Like the real
 * server it writes the hello token and a newline on the control socket, echoes the key
 * each connection opens with (admitting it: unlike the real server, it neither reads the
 * key from the control socket nor checks it), echoes each request of --size bytes after
 * --delay-us, and exits when the control socket reaches end of file. Unlike it, it is one
 * thread answering in turn, and each start appends a byte to FILE: the SERVER-th server
 * started (1: the first fork's, as each fork starts its own) flips the low bit of the tag
 * of every echo whose request carries op generation OP (the harness's op k of a fork,
 * counting warm-up ops, is generation k). Without WRONG_ECHO it echoes every request as it
 * came.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "workloads/internal.h"

#define MAX_CONNS (WL__TCP_MAX_CONNS + 2)

struct conn {
	int fd;
	size_t off;
	bool admitted; /* its first message, the key, went back */
	struct wl__tcp_msg msg;
};

_Static_assert(sizeof(struct wl__tcp_msg) == WL_TCP_SERVER_KEY_LEN, "the key is read as a message");

static long option(int argc, char **argv, const char *name, const char **text)
{
	size_t len = strlen(name);

	for (int i = 1; i < argc; i++)
		if (!strncmp(argv[i], name, len) && argv[i][len] == '=') {
			if (text)
				*text = argv[i] + len + 1;
			return strtol(argv[i] + len + 1, NULL, 10);
		}
	fprintf(stderr, "wrong_echo: no %s=\n", name);
	exit(2);
}

/* This server's place among those started with FILE: 1 for the first. */
static unsigned count_start(const char *file)
{
	int fd = open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	struct stat st;

	if (fd < 0 || write(fd, "s", 1) != 1 || fstat(fd, &st)) {
		fprintf(stderr, "wrong_echo: %s: %s\n", file, strerror(errno));
		exit(1);
	}
	close(fd);
	return (unsigned)st.st_size;
}

static int write_all(int fd, const void *buf, size_t len)
{
	for (size_t off = 0; off < len;) {
		ssize_t n = send(fd, (const char *)buf + off, len - off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		off += (size_t)n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *spec = getenv("WRONG_ECHO"), *hello = NULL;
	long listen_fd = option(argc, argv, "--listen-fd", NULL);
	long control = option(argc, argv, "--control-fd", NULL);
	long size = option(argc, argv, "--size", NULL);
	long delay_us = option(argc, argv, "--delay-us", NULL);
	struct timespec delay = { delay_us / 1000000, delay_us % 1000000 * 1000 };
	unsigned server = 0, op = 0, me = 0;
	static struct pollfd p[MAX_CONNS];
	static struct conn c[MAX_CONNS];
	char line[256];
	int np = 2, off = 0;

	option(argc, argv, "--hello", &hello);
	if (size != (long)sizeof(struct wl__tcp_msg)) {
		fprintf(stderr, "wrong_echo: --size=%ld, not the workload's %zu\n", size,
			sizeof(struct wl__tcp_msg));
		return 2;
	}
	if (spec) {
		if (sscanf(spec, "%u %u %n", &server, &op, &off) != 2 || !spec[off]) {
			fprintf(stderr, "wrong_echo: WRONG_ECHO='%s': expected 'SERVER OP FILE'\n",
				spec);
			return 2;
		}
		me = count_start(spec + off);
	}
	snprintf(line, sizeof(line), "%s\n", hello);
	if (write_all((int)control, line, strlen(line)))
		return 1;
	p[0] = (struct pollfd){ .fd = (int)listen_fd, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = (int)control, .events = POLLIN };
	for (;;) {
		if (poll(p, (nfds_t)np, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		/* end of file on the control socket: the workload is done with us */
		if (p[1].revents && read((int)control, line, sizeof(line)) <= 0)
			return 0;
		if ((p[0].revents & POLLIN) && np < MAX_CONNS) {
			int fd = accept4((int)listen_fd, NULL, NULL, SOCK_CLOEXEC);

			if (fd >= 0) {
				c[np] = (struct conn){ .fd = fd };
				p[np++] = (struct pollfd){ .fd = fd, .events = POLLIN };
			}
		}
		for (int i = 2; i < np; i++) {
			ssize_t n;

			if (!p[i].revents)
				continue;
			n = recv(c[i].fd, (char *)&c[i].msg + c[i].off, sizeof(c[i].msg) - c[i].off,
				 MSG_DONTWAIT);
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n <= 0) {
				close(c[i].fd);
				c[i] = c[--np];
				p[i] = p[np];
				i--;
				continue;
			}
			c[i].off += (size_t)n;
			if (c[i].off < sizeof(c[i].msg))
				continue;
			c[i].off = 0;
			if (!c[i].admitted) {
				c[i].admitted = true;
				if (write_all(c[i].fd, &c[i].msg, sizeof(c[i].msg)))
					return 1;
				continue;
			}
			nanosleep(&delay, NULL);
			if (me && me == server && c[i].msg.gen == op)
				c[i].msg.tag ^= 1;
			if (write_all(c[i].fd, &c[i].msg, sizeof(c[i].msg)))
				return 1;
		}
	}
}
