/*
 * schedlab __tcp-server: the entry point of the tcp workloads' server process. The
 * server itself lives beside its client in workloads/tcp_server.c; this only parses the
 * options the workload's setup passes (--conns: how many connections to admit) and
 * reports a failure to start. The run's key comes on the control socket, not here: a
 * command line is anyone's to read in /proc.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#include "cli/cli.h"
#include "workloads/workload.h"

int cmd_tcp_server(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "listen-fd", required_argument, NULL, 'l' },
		{ "control-fd", required_argument, NULL, 'c' },
		{ "size", required_argument, NULL, 's' },
		{ "delay-us", required_argument, NULL, 'd' },
		{ "hello", required_argument, NULL, 'h' },
		{ "conns", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	long listen_fd = -1, control = -1, size = -1, delay_us = -1, conns = -1;
	const char *hello = NULL, *what = "";
	int c, err;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			if (!cli_parse_long(optarg, 0, 1 << 20, &listen_fd))
				return cli_usage_error("__tcp-server: bad --listen-fd %s", optarg);
			break;
		case 'c':
			if (!cli_parse_long(optarg, 0, 1 << 20, &control))
				return cli_usage_error("__tcp-server: bad --control-fd %s", optarg);
			break;
		case 's':
			if (!cli_parse_long(optarg, 1, WL_TCP_SERVER_MAX_SIZE, &size))
				return cli_usage_error("__tcp-server: bad --size %s", optarg);
			break;
		case 'd':
			if (!cli_parse_long(optarg, 0, 1000000000, &delay_us))
				return cli_usage_error("__tcp-server: bad --delay-us %s", optarg);
			break;
		case 'h':
			hello = optarg;
			break;
		case 'n':
			if (!cli_parse_long(optarg, 1, WL_TCP_SERVER_MAX_CONNS, &conns))
				return cli_usage_error("__tcp-server: bad --conns %s", optarg);
			break;
		default:
			return CLI_EXIT_USAGE;
		}
	}
	if (optind != argc || listen_fd < 0 || control < 0 || size < 1 || delay_us < 0 ||
	    conns < 1 || !hello)
		return cli_usage_error("__tcp-server is started by the tcp workloads, not by hand");
	/* Die with the benchmark that spawned us, as its forks die with theirs (set again
	 * once the server has dropped to nobody, which clears it): the control socket's end
	 * of file stops the server too, but only once its loop reads it. Had the benchmark
	 * died before this call, the socket is at end of file already. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	err = wl_tcp_server_run((int)listen_fd, (int)control, (size_t)size,
				(uint64_t)delay_us * 1000, conns, hello, &what);
	if (err) {
		fprintf(stderr, "schedlab __tcp-server: %s: %s\n", what, strerror(-err));
		return CLI_EXIT_FAIL;
	}
	return CLI_EXIT_OK;
}
