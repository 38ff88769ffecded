/*
 * tcp-blocking and tcp-callback: ops and their checks under several presets on the
 * real runtime with a real server process; the server's life (it starts, answers,
 * stops, and dies with a benchmark that dies without teardown) with no descriptor or
 * process left behind; what it may do and whom it serves (no privilege; the workload's
 * keyed connections and no stranger's, before or after them); the errors setup and check
 * report; and the headline preset behaviour: under kyo, blocking TCP collapses (the
 * exchanges run one after another on one worker), and kyo-tuned recovers it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/workloads/wl_test.h"
#include "workloads/internal.h"

extern char **environ;

static struct wl_ctx tcp_ctx(const char *name, const char *preset, unsigned workers,
			     const char *delay)
{
	struct wl_ctx ctx;

	wl_test_use_schedlab();
	ctx = wl_test_ctx(name, preset, workers);
	wl_test_param(&ctx, "delay", delay);
	return ctx;
}

/* Two ops on the same connections: the second finds them as the first left them. */
static void two_ops_under(const char *name, const char *preset)
{
	struct wl_ctx ctx = tcp_ctx(name, preset, 2, "100");
	char err[512] = "";

	cr_expect_eq(wl_int(&ctx, "conns"), 64, "the studies' size is the default");
	cr_expect_eq(wl_int(&ctx, "exchanges"), 256);
	wl_test_setup(&ctx);
	for (int i = 0; i < 2; i++)
		cr_expect(wl_test_op_check(&ctx, err, sizeof(err)), "%s under %s, op %d: %s", name,
			  preset, i + 1, err);
	wl_test_finish(&ctx);
}

static const char *const presets[] = { "ce", "tokio", "go", "kyo", "kyo-flush", "loom", "global" };

Test(tcp_blocking, ops_check_under_2_workers_and_each_pool_preset, .timeout = 120)
{
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
		two_ops_under("tcp-blocking", presets[i]);
}

Test(tcp_callback, ops_check_under_2_workers_and_each_pool_preset, .timeout = 120)
{
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
		two_ops_under("tcp-callback", presets[i]);
	two_ops_under("tcp-callback", "threads");
}

/* rt_blocking_end() on a task of the threads executor (a section begun without a
 * worker) suspends the task into the pool, which has no workers: the op never ends.
 * Enable once runtime/blocking.c ends such a section in place. */
Test(tcp_blocking, ops_check_under_the_threads_executor, .timeout = 60)
{
	two_ops_under("tcp-blocking", "threads");
}

Test(tcp_blocking, uneven_exchanges_and_no_delay_still_check, .timeout = 60)
{
	struct wl_ctx ctx = tcp_ctx("tcp-blocking", "ce", 2, "0");
	char err[512] = "";

	wl_test_param(&ctx, "conns", "7");
	wl_test_param(&ctx, "exchanges", "100"); /* 2 connections do 15, 5 do 14 */
	wl_test_setup(&ctx);
	for (int i = 0; i < 3; i++)
		cr_expect(wl_test_op_check(&ctx, err, sizeof(err)), "op %d: %s", i + 1, err);
	wl_test_finish(&ctx);
}

/* ---- the server's life ------------------------------------------------------------------ */

static bool process_gone(pid_t pid)
{
	char path[64], state = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return true;
	/* "pid (comm) S ...": a zombie has exited and holds nothing but its slot */
	if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
		state = 0;
	fclose(f);
	return state == 'Z' || state == 'X';
}

Test(tcp_server, starts_answers_and_stops_leaving_no_descriptor_or_process, .timeout = 60)
{
	const char *names[] = { "tcp-blocking", "tcp-callback" };

	for (size_t k = 0; k < 2; k++) {
		int fds = wl_test_open_fds();
		struct wl_ctx ctx = tcp_ctx(names[k], "ce", 2, "100");
		pid_t kids[8];
		char err[512] = "";

		cr_assert_eq(wl_test_children(kids, 8), 0, "no child before setup");
		wl_test_setup(&ctx);
		cr_assert_eq(wl_test_children(kids, 8), 1, "%s: one server process", names[k]);
		/* 64 connections and the control socket */
		cr_expect_eq(wl_test_open_fds(), fds + 65, "%s", names[k]);
		cr_expect(wl_test_op_check(&ctx, err, sizeof(err)), "%s", err);
		ctx.desc->teardown(&ctx);
		cr_expect_eq(wl_test_children(kids + 1, 7), 0, "%s: the server is reaped",
			     names[k]);
		cr_expect(kill(kids[0], 0) && errno == ESRCH, "%s: server %d still exists",
			  names[k], (int)kids[0]);
		/* the runtime's reactor (epoll and eventfd) lives until rt_sched_free() */
		rt_sched_free(ctx.sched);
		cr_expect_eq(wl_test_open_fds(), fds, "%s: every descriptor closed", names[k]);
	}
}

/* A benchmark killed before its teardown: the server sees its control socket close and
 * exits rather than outliving it. */
Test(tcp_server, exits_when_its_benchmark_dies_without_teardown, .timeout = 60)
{
	int p[2], status;
	pid_t child, server = 0;

	wl_test_use_schedlab();
	cr_assert_eq(pipe(p), 0);
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		/* a fresh process: no runtime threads until the one made here */
		struct rt_config c;
		struct wl_ctx ctx = { .desc = wl_find("tcp-blocking") };
		pid_t kids[2] = { 0, 0 };
		char err[512];

		rt_config_default(&c);
		c.workers = 2;
		ctx.sched = rt_sched_new(&c);
		wl_params_default(ctx.desc, ctx.values);
		if (!ctx.sched || ctx.desc->setup(&ctx, err, sizeof(err)) ||
		    wl_test_children(kids, 2) != 1 ||
		    write(p[1], &kids[0], sizeof(kids[0])) != sizeof(kids[0]))
			_exit(1);
		_exit(0); /* no teardown: as if killed */
	}
	close(p[1]);
	cr_assert_eq(read(p[0], &server, sizeof(server)), sizeof(server), "the child set up");
	close(p[0]);
	cr_assert_eq(waitpid(child, &status, 0), child);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	for (int i = 0; i < 500 && !process_gone(server); i++)
		usleep(10000);
	cr_expect(process_gone(server), "server %d outlived its benchmark", (int)server);
	if (!process_gone(server))
		kill(server, SIGKILL);
}

/* ---- who the server serves, and with what privileges ------------------------------------ */

/* The value of field `name` in /proc/PID/status (the text after "Name:\t"), in buf. */
static bool proc_status(pid_t pid, const char *name, char *buf, size_t len)
{
	char path[64], line[512];
	size_t n = strlen(name);
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		if (strncmp(line, name, n) || line[n] != ':')
			continue;
		snprintf(buf, len, "%s", line + n + 1 + strspn(line + n + 1, " \t"));
		buf[strcspn(buf, "\n")] = '\0';
		found = true;
	}
	fclose(f);
	return found;
}

/* The server is handed its listening socket: accepting, reading, sleeping and writing
 * need no privilege, so it keeps none (and cannot regain any: an empty bounding set and
 * no_new_privs), and started by root it runs as nobody. Its benchmark still signals and
 * reaps it. */
Test(tcp_server, keeps_no_capability_and_runs_as_nobody_under_root, .timeout = 60)
{
	static const char *const caps[] = { "CapInh", "CapPrm", "CapEff", "CapAmb" };
	struct wl_ctx ctx = tcp_ctx("tcp-blocking", "ce", 2, "100");
	char err[512] = "", v[256], want[64];
	struct passwd *nobody;
	pid_t kids[2];

	wl_test_setup(&ctx);
	cr_assert_eq(wl_test_children(kids, 2), 1);
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		cr_assert(proc_status(kids[0], caps[i], v, sizeof(v)), "%s", caps[i]);
		cr_expect_eq(strtoull(v, NULL, 16), 0, "server %d: %s %s", (int)kids[0], caps[i],
			     v);
	}
	cr_assert(proc_status(kids[0], "NoNewPrivs", v, sizeof(v)));
	cr_expect_str_eq(v, "1");
	if (geteuid() == 0) {
		/* a user's bounding set is full and not its to empty; no_new_privs stands in */
		cr_assert(proc_status(kids[0], "CapBnd", v, sizeof(v)));
		cr_expect_eq(strtoull(v, NULL, 16), 0, "server %d: CapBnd %s", (int)kids[0], v);
		nobody = getpwnam("nobody");
		cr_assert_not_null(nobody, "this machine has a nobody");
		snprintf(want, sizeof(want), "%u\t%u\t%u\t%u", nobody->pw_uid, nobody->pw_uid,
			 nobody->pw_uid, nobody->pw_uid);
		cr_assert(proc_status(kids[0], "Uid", v, sizeof(v)));
		cr_expect_str_eq(v, want, "real, effective, saved and file-system uid");
		snprintf(want, sizeof(want), "%u\t%u\t%u\t%u", nobody->pw_gid, nobody->pw_gid,
			 nobody->pw_gid, nobody->pw_gid);
		cr_assert(proc_status(kids[0], "Gid", v, sizeof(v)));
		cr_expect_str_eq(v, want);
		cr_assert(proc_status(kids[0], "Groups", v, sizeof(v)));
		cr_expect_str_eq(v, "", "no supplementary group of root's");
	}
	for (int i = 0; i < 2; i++)
		cr_expect(wl_test_op_check(&ctx, err, sizeof(err)), "op %d: %s", i + 1, err);
	cr_expect_eq(kill(kids[0], 0), 0, "its benchmark may still signal it");
	wl_test_finish(&ctx);
	cr_expect(kill(kids[0], 0) && errno == ESRCH, "server %d was not reaped", (int)kids[0]);
}

/* Wait up to 10 s for path to hold `text`; false if it never does. */
static bool file_says(const char *path, const char *text)
{
	char buf[64];

	for (int i = 0; i < 1000; i++) {
		FILE *f = fopen(path, "re");
		size_t n = 0;

		if (f) {
			n = fread(buf, 1, sizeof(buf) - 1, f);
			fclose(f);
		}
		buf[n] = '\0';
		if (!strcmp(buf, text))
			return true;
		usleep(10000);
	}
	return false;
}

static off_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : st.st_size;
}

/* Make DIR (a mkdtemp() template) and in it a bash script, DIR/schedlab, that the tcp
 * workloads start as their server's binary (SCHEDLAB_EXE): body, run with $dir and
 * $schedlab (the real binary) set. */
static void stand_in(char *dir, const char *body)
{
	char path[PATH_MAX];
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/schedlab", dir);
	f = fopen(path, "we");
	cr_assert_not_null(f);
	fprintf(f, "#!/bin/bash\ndir='%s'\nschedlab='%s'\n%s", dir, wl_test_schedlab(), body);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(chmod(path, 0700), 0);
	cr_assert_eq(setenv("SCHEDLAB_EXE", path, 1), 0);
}

/* Stands in for schedlab as the server's binary: before the server runs, two strangers
 * connect to its listening socket (fd 3; its port from /proc/net/tcp), so that they are
 * first in its accept queue. One sends a request's worth of bytes, the other nothing;
 * each one's reader keeps what comes back in DIR/NAME.got and writes DIR/NAME.end once its
 * connection is over. Then it becomes the real server. */
static const char stranger_script[] =
	"ino=$(readlink /proc/$$/fd/3); ino=${ino//[^0-9]/}\n"
	"port=$(awk -v ino=\"$ino\" '$10 == ino { split($2, a, \":\"); print a[2]; exit }' "
	"/proc/net/tcp)\n"
	"[ -n \"$port\" ] || exit 1\n"
	"exec 5<>/dev/tcp/127.0.0.1/$((16#$port)) 6<>/dev/tcp/127.0.0.1/$((16#$port)) || exit 1\n"
	"printf '%016d' 7 >&5\n"
	"(exec 3<&- 4<&- 6<&-; cat <&5 >\"$dir/talker.got\"; echo done >\"$dir/talker.end\") &\n"
	"(exec 3<&- 4<&- 5<&-; cat <&6 >\"$dir/silent.got\"; echo done >\"$dir/silent.end\") &\n"
	"exec 5<&- 6<&-\n"
	"exec \"$schedlab\" \"$@\"\n";

/* A stranger who connects before the workload takes none of its connections: one who
 * sends anything but the workload's key is closed unanswered, one who sends nothing is
 * closed once the workload's connections are in, and the workload runs as ever. */
Test(tcp_server, drops_strangers_that_connect_before_the_workload, .timeout = 60)
{
	static const char *const files[] = { "schedlab",   "talker.got", "talker.end",
					     "silent.got", "silent.end" };
	const char *names[] = { "tcp-blocking", "tcp-callback" };

	for (size_t k = 0; k < 2; k++) {
		char dir[] = "/tmp/schedlab-stranger.XXXXXX", path[PATH_MAX], err[512] = "";
		struct wl_ctx ctx = tcp_ctx(names[k], "ce", 2, "100");

		stand_in(dir, stranger_script);
		wl_test_setup(&ctx);
		snprintf(path, sizeof(path), "%s/talker.end", dir);
		cr_expect(file_says(path, "done\n"),
			  "%s: the stranger who talked is still connected", names[k]);
		snprintf(path, sizeof(path), "%s/talker.got", dir);
		cr_expect_eq(file_size(path), 0, "%s: the stranger who talked got an answer",
			     names[k]);
		snprintf(path, sizeof(path), "%s/silent.end", dir);
		cr_expect(file_says(path, "done\n"), "%s: the silent stranger is still connected",
			  names[k]);
		snprintf(path, sizeof(path), "%s/silent.got", dir);
		cr_expect_eq(file_size(path), 0, "%s", names[k]);
		for (int i = 0; i < 2; i++)
			cr_expect(wl_test_op_check(&ctx, err, sizeof(err)), "%s, op %d: %s",
				  names[k], i + 1, err);
		wl_test_finish(&ctx);
		wl_test_use_schedlab();
		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
			unlink(path);
		}
		rmdir(dir);
	}
}

/* Once the workload's connections are in, the server listens no more: a stranger who
 * comes later is refused by the kernel. */
Test(tcp_server, stops_listening_once_the_workload_is_connected, .timeout = 60)
{
	struct wl_ctx ctx = tcp_ctx("tcp-callback", "ce", 2, "100");
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	struct wl__tcp *t;
	char err[512] = "";
	int fd;

	wl_test_param(&ctx, "conns", "3");
	wl_test_setup(&ctx);
	t = ctx.state;
	cr_assert_eq(getpeername(t->conns[0].fd, (struct sockaddr *)&a, &alen), 0);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	cr_expect_neq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0,
		      "a stranger connected to the server's port after setup");
	cr_expect_eq(errno, ECONNREFUSED, "%s", strerror(errno));
	close(fd);
	cr_expect(wl_test_op_check(&ctx, err, sizeof(err)), "%s", err);
	wl_test_finish(&ctx);
}

/* Up to len bytes from fd, each within 10 s: the count, short at end of file; -1 when
 * nothing more came in time. */
static ssize_t direct_recv(int fd, void *buf, size_t len)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t off = 0;

	while (off < len) {
		ssize_t n;

		if (poll(&p, 1, 10000) != 1)
			return -1;
		n = recv(fd, (char *)buf + off, len - off, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != ECONNRESET)
			return -1;
		if (n <= 0)
			break; /* end of file, or a reset: the server closed it */
		off += (size_t)n;
	}
	return (ssize_t)off;
}

/* A server that admits fewer connections than the workload opens: setup says which
 * connection was refused, in one line, and leaves nothing behind. */
Test(tcp_blocking, setup_says_when_the_server_admits_fewer_connections, .timeout = 60)
{
	char dir[] = "/tmp/schedlab-conns.XXXXXX", path[PATH_MAX], err[512] = "";
	struct wl_ctx ctx = tcp_ctx("tcp-blocking", "ce", 2, "100");
	int fds = wl_test_open_fds();
	pid_t kids[2];

	wl_test_param(&ctx, "conns", "3");
	stand_in(dir, "args=()\n"
		      "for a in \"$@\"; do\n"
		      "\tcase $a in --conns=*) a=--conns=1 ;; esac\n"
		      "\targs+=(\"$a\")\n"
		      "done\n"
		      "exec \"$schedlab\" \"${args[@]}\"\n");
	cr_expect_neq(ctx.desc->setup(&ctx, err, sizeof(err)), 0);
	cr_expect(strstr(err, "tcp-blocking: cannot connect to the server") &&
			  strstr(err, "(connection 2 of 3)") && strstr(err, "refused"),
		  "%s", err);
	cr_expect_null(strchr(err, '\n'), "one line: %s", err);
	cr_expect_eq(wl_test_open_fds(), fds, "a failed setup leaves nothing open");
	cr_expect_eq(wl_test_children(kids, 2), 0, "nor any process");
	rt_sched_free(ctx.sched);
	snprintf(path, sizeof(path), "%s/schedlab", dir);
	unlink(path);
	rmdir(dir);
}

/* The server by itself, as the workload drives it: fd 3 listening, fd 4 the control
 * socket, on which the key arrives as a line of hex before the server says hello. */
struct direct_server {
	pid_t pid;
	int control;
	struct sockaddr_in addr;
	unsigned char key[WL_TCP_SERVER_KEY_LEN];
};

static void direct_server_start(struct direct_server *s, const char *conns)
{
	char conns_arg[32], line[2 * WL_TCP_SERVER_KEY_LEN + 2], hello[64];
	char *argv[] = { "schedlab",	    "__tcp-server", "--listen-fd=3",  "--control-fd=4",
			 "--size=16",	    "--delay-us=0", "--hello=direct", conns_arg,
			 NULL };
	posix_spawn_file_actions_t fa;
	socklen_t alen = sizeof(s->addr);
	int lfd, sv[2];
	size_t off = 0;

	snprintf(conns_arg, sizeof(conns_arg), "--conns=%s", conns);
	s->addr = (struct sockaddr_in){ .sin_family = AF_INET,
					.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(lfd, 0);
	cr_assert_eq(bind(lfd, (struct sockaddr *)&s->addr, sizeof(s->addr)), 0);
	cr_assert_eq(listen(lfd, 8), 0);
	cr_assert_eq(getsockname(lfd, (struct sockaddr *)&s->addr, &alen), 0);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	for (size_t i = 0; i < sizeof(s->key); i++) {
		s->key[i] = (unsigned char)(0x5a ^ (i * 37));
		off += (size_t)sprintf(line + off, "%02x", s->key[i]);
	}
	line[off++] = '\n';
	cr_assert_eq(write(sv[0], line, off), (ssize_t)off);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, lfd, 3);
	posix_spawn_file_actions_adddup2(&fa, sv[1], 4);
	cr_assert_eq(posix_spawn(&s->pid, wl_test_schedlab(), &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	close(lfd);
	close(sv[1]);
	s->control = sv[0];
	for (off = 0; off < sizeof(hello) - 1 && (!off || hello[off - 1] != '\n');) {
		ssize_t n = direct_recv(s->control, hello + off, 1);

		cr_assert_eq(n, 1, "the server said hello (%zu bytes so far)", off);
		off++;
	}
	hello[off] = '\0';
	cr_assert_str_eq(hello, "direct\n");
}

static int direct_connect(const struct direct_server *s)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(connect(fd, (const struct sockaddr *)&s->addr, sizeof(s->addr)), 0, "%s",
		     strerror(errno));
	return fd;
}

/* A connection that keys itself is answered at once, while one that says nothing waits to
 * be closed at its deadline and one with the wrong key is closed unanswered; after the
 * --conns keyed ones the server listens no more. */
Test(tcp_server, serves_keyed_connections_and_closes_the_rest, .timeout = 60)
{
	struct direct_server s;
	unsigned char back[WL_TCP_SERVER_KEY_LEN], wrong[WL_TCP_SERVER_KEY_LEN];
	struct wl__tcp_msg req = { 1, 2, 3, 4 }, resp;
	struct pollfd p;
	int silent, keyed, liar, second, late, status;

	wl_test_use_schedlab();
	direct_server_start(&s, "2");
	silent = direct_connect(&s);
	keyed = direct_connect(&s);
	cr_assert_eq(send(keyed, s.key, sizeof(s.key), MSG_NOSIGNAL), (ssize_t)sizeof(s.key));
	cr_assert_eq(direct_recv(keyed, back, sizeof(back)), (ssize_t)sizeof(back),
		     "the key comes back: the connection is admitted");
	cr_expect_eq(memcmp(back, s.key, sizeof(back)), 0);
	cr_assert_eq(send(keyed, &req, sizeof(req), MSG_NOSIGNAL), (ssize_t)sizeof(req));
	cr_assert_eq(direct_recv(keyed, &resp, sizeof(resp)), (ssize_t)sizeof(resp));
	cr_expect_eq(memcmp(&req, &resp, sizeof(req)), 0, "and served");
	p = (struct pollfd){ .fd = silent, .events = POLLIN };
	cr_expect_eq(poll(&p, 1, 0), 0, "the silent one was closed before its deadline");

	liar = direct_connect(&s);
	memcpy(wrong, s.key, sizeof(wrong));
	wrong[sizeof(wrong) - 1] ^= 1;
	cr_assert_eq(send(liar, wrong, sizeof(wrong), MSG_NOSIGNAL), (ssize_t)sizeof(wrong));
	cr_expect_eq(direct_recv(liar, back, sizeof(back)), 0, "a wrong key is closed unanswered");
	cr_expect_eq(direct_recv(silent, back, sizeof(back)), 0,
		     "a silent connection is closed at its deadline");

	second = direct_connect(&s);
	cr_assert_eq(send(second, s.key, sizeof(s.key), MSG_NOSIGNAL), (ssize_t)sizeof(s.key));
	cr_assert_eq(direct_recv(second, back, sizeof(back)), (ssize_t)sizeof(back));
	late = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_expect_neq(connect(late, (struct sockaddr *)&s.addr, sizeof(s.addr)), 0,
		      "the server still listens after its --conns connections");
	cr_assert_eq(send(keyed, &req, sizeof(req), MSG_NOSIGNAL), (ssize_t)sizeof(req));
	cr_expect_eq(direct_recv(keyed, &resp, sizeof(resp)), (ssize_t)sizeof(resp),
		     "the admitted ones are still served");

	close(s.control); /* the server exits at end of file */
	cr_expect_eq(waitpid(s.pid, &status, 0), s.pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
	close(silent);
	close(keyed);
	close(liar);
	close(second);
	close(late);
}

/* ---- errors ----------------------------------------------------------------------------- */

Test(tcp_blocking, setup_says_when_the_binary_is_no_schedlab, .timeout = 60)
{
	struct wl_ctx ctx = tcp_ctx("tcp-blocking", "ce", 2, "100");
	int fds = wl_test_open_fds();
	pid_t kids[2];
	char err[512] = "";

	setenv("SCHEDLAB_EXE", "/bin/true", 1);
	cr_expect_neq(ctx.desc->setup(&ctx, err, sizeof(err)), 0);
	cr_expect(strstr(err, "tcp-blocking: cannot start the server"), "%s", err);
	cr_expect(strstr(err, "/bin/true") && strstr(err, "exited with status 0"), "%s", err);
	cr_expect(strstr(err, "SCHEDLAB_EXE"), "%s", err);
	cr_expect_null(strchr(err, '\n'), "one line: %s", err);
	setenv("SCHEDLAB_EXE", "/nonexistent/schedlab", 1);
	cr_expect_eq(ctx.desc->setup(&ctx, err, sizeof(err)), -ENOENT);
	cr_expect(strstr(err, "cannot start the server") && strstr(err, "No such file"), "%s", err);
	cr_expect_eq(wl_test_open_fds(), fds, "a failed setup leaves nothing open");
	cr_expect_eq(wl_test_children(kids, 2), 0, "nor any process");
	rt_sched_free(ctx.sched);
}

Test(tcp_blocking, bad_parameters_are_refused_with_their_bounds)
{
	const struct wl_desc *d = wl_find("tcp-blocking");
	char err[256];

	cr_assert_not_null(d);
	cr_expect_eq(wl_test_parse(d, "conns", "0", err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "conns=0") && strstr(err, "1 to 512"), "%s", err);
	cr_expect_eq(wl_test_parse(d, "conns", "513", err, sizeof(err)), -EINVAL);
	cr_expect_eq(wl_test_parse(d, "exchanges", "0", err, sizeof(err)), -EINVAL);
	cr_expect_eq(wl_test_parse(d, "delay", "-1", err, sizeof(err)), -EINVAL);
	cr_expect_eq(wl_test_parse(d, "delay", "1ms", err, sizeof(err)), -EINVAL);
	cr_expect_eq(wl_test_parse(d, "delay", "0", err, sizeof(err)), 0);
	cr_expect_eq(wl_test_parse(wl_find("tcp-callback"), "conns", "1000", err, sizeof(err)),
		     -EINVAL);
}

Test(tcp_blocking, check_names_a_dead_server_and_a_wrong_fold, .timeout = 60)
{
	const char *names[] = { "tcp-blocking", "tcp-callback" };

	for (size_t k = 0; k < 2; k++) {
		struct wl_ctx ctx = tcp_ctx(names[k], "ce", 2, "100");
		pid_t kids[2];
		char err[512] = "";
		uint64_t good;

		wl_test_setup(&ctx);
		good = wl_test_op(&ctx);
		cr_expect(ctx.desc->check(&ctx, good, err, sizeof(err)), "%s", err);
		cr_expect_not(ctx.desc->check(&ctx, good + 1, err, sizeof(err)));
		cr_expect(strstr(err, names[k]) && strstr(err, "out of order"), "%s", err);

		cr_assert_eq(wl_test_children(kids, 2), 1);
		kill(kids[0], SIGKILL);
		cr_expect_not(wl_test_op_check(&ctx, err, sizeof(err)), "%s: no server", names[k]);
		cr_expect(strstr(err, "the server closed the connection"), "%s", err);
		wl_test_finish(&ctx); /* reaps the killed server */
		cr_expect_eq(wl_test_children(kids, 2), 0);
	}
}

/* ---- the preset behaviour: Kyo's blocking-TCP collapse -------------------------------- */

struct tcp_rate {
	double ops_per_s;
	struct rt_worker_stats st;
	unsigned workers;
};

/* ops/s of tcp-blocking with the server's 1 ms delay under preset, as configured (its
 * own worker count): one op to warm up, then ops for at least min_s, checking each. */
static struct tcp_rate blocking_rate(const char *preset, double min_s)
{
	struct wl_ctx ctx = tcp_ctx("tcp-blocking", preset, 0, "1000");
	struct rt_worker_stats before;
	struct tcp_rate r = { 0 };
	char err[512] = "";
	uint64_t t0, t, n = 0;

	wl_test_setup(&ctx);
	cr_assert(wl_test_op_check(&ctx, err, sizeof(err)), "%s: warm-up: %s", preset, err);
	rt_sched_stats_total(ctx.sched, &before);
	t0 = rt_now_ns();
	do {
		cr_assert(wl_test_op_check(&ctx, err, sizeof(err)), "%s: %s", preset, err);
		n++;
		t = rt_now_ns();
	} while (t - t0 < (uint64_t)(min_s * 1e9) || n < 3);
	rt_sched_stats_total(ctx.sched, &r.st);
	for (size_t i = 0; i < sizeof(r.st) / sizeof(uint64_t); i++)
		((uint64_t *)&r.st)[i] -= ((const uint64_t *)&before)[i];
	r.ops_per_s = (double)n / ((double)(t - t0) / 1e9);
	r.workers = rt_sched_workers(ctx.sched);
	wl_test_finish(&ctx);
	return r;
}

static void rate_describe(const char *preset, const struct tcp_rate *r, char *buf, size_t len)
{
	snprintf(buf, len,
		 "%s: %.1f ops/s on %u workers (place local %llu scan %llu fallback %llu flush "
		 "%llu, stolen %llu, missed_idle %llu, stranded %.0f ms, detector misses %llu "
		 "flags %llu, handoffs %llu)",
		 preset, r->ops_per_s, r->workers, (unsigned long long)r->st.place_local,
		 (unsigned long long)r->st.place_scan, (unsigned long long)r->st.place_fallback,
		 (unsigned long long)r->st.place_flush, (unsigned long long)r->st.stolen,
		 (unsigned long long)r->st.missed_idle, r->st.stranded_ns / 1e6,
		 (unsigned long long)r->st.detector_misses,
		 (unsigned long long)r->st.detector_flags, (unsigned long long)r->st.handoffs);
}

Test(tcp_blocking, kyo_collapses_and_kyo_tuned_recovers, .timeout = 120)
{
	struct tcp_rate ce = blocking_rate("ce", 1.5), kyo = blocking_rate("kyo", 1.5);
	struct tcp_rate flush = blocking_rate("kyo-flush", 1.0);
	struct tcp_rate tuned = blocking_rate("kyo-tuned", 1.5);
	char a[400], b[400], c[400], d[400];

	rate_describe("ce", &ce, a, sizeof(a));
	rate_describe("kyo", &kyo, b, sizeof(b));
	rate_describe("kyo-flush", &flush, c, sizeof(c));
	rate_describe("kyo-tuned", &tuned, d, sizeof(d));
	/* the figures, for the record; kyo-flush (the partial fix) is not asserted on */
	cr_log_info("%s", a);
	cr_log_info("%s", b);
	cr_log_info("%s", c);
	cr_log_info("%s", d);
	/* the studies: 145 vs 4.95 (29x); 5x leaves room for a noisy 2-CPU machine */
	cr_expect_geq(ce.ops_per_s, 5 * kyo.ops_per_s, "kyo must collapse:\n%s\n%s", a, b);
	/* the studies: 144.89 vs 149 */
	cr_expect_geq(3 * tuned.ops_per_s, ce.ops_per_s, "kyo-tuned must recover:\n%s\n%s", a, d);
	/* how: kyo leaves every connection task on the spawning worker and sees no 1 ms
	 * block; ce hands a blocked worker's queue off */
	cr_expect_gt(kyo.st.detector_misses, 0, "%s", b);
	cr_expect_eq(kyo.st.handoffs, 0, "%s", b);
	cr_expect_gt(ce.st.handoffs, 0, "%s", a);
}

/* Loom and Go park a task blocked on a socket on their poller: tcp-blocking's exchanges
 * block no worker under them (no blocking section, no spare: the JDK adds no carrier
 * for a socket read), and the workers stay the carriers they started as. ce's blocking
 * sections go on as before. */
Test(tcp_blocking, under_loom_and_go_a_socket_wait_parks_and_adds_no_worker, .timeout = 120)
{
	static const char *const parking[] = { "loom", "go" };
	struct tcp_rate ce = blocking_rate("ce", 0.3);
	char a[400];

	rate_describe("ce", &ce, a, sizeof(a));
	cr_expect_gt(ce.st.blocking_episodes, 0, "%s", a);
	for (size_t i = 0; i < sizeof(parking) / sizeof(parking[0]); i++) {
		struct wl_ctx ctx = tcp_ctx("tcp-blocking", parking[i], 0, "1000");
		unsigned carriers = rt_sched_workers(ctx.sched);
		struct rt_worker_stats st;
		char err[512] = "";

		wl_test_setup(&ctx);
		for (int k = 0; k < 3; k++)
			cr_assert(wl_test_op_check(&ctx, err, sizeof(err)), "%s: %s", parking[i],
				  err);
		rt_sched_stats_total(ctx.sched, &st);
		cr_expect_eq(st.blocking_episodes, 0, "%s: %llu blocking sections", parking[i],
			     (unsigned long long)st.blocking_episodes);
		cr_expect_eq(st.compensations, 0, "%s", parking[i]);
		cr_expect_eq(rt_sched_workers_started(ctx.sched), carriers,
			     "%s: %u workers started for %u carriers", parking[i],
			     rt_sched_workers_started(ctx.sched), carriers);
		wl_test_finish(&ctx);
	}
}

/* The client's footprint mid-op: RSS and PSS of this process, sampled while the
 * connections' tasks run (each has its stack mapped and touched by then), and ops still
 * check after the sampled one. Under ce all 64 tasks are under way at the middle
 * exchange, so RSS holds at least a touched page of each task's stack. */
Test(tcp_blocking, report_samples_the_client_footprint_mid_op, .timeout = 60)
{
	const char *names[] = { "tcp-blocking", "tcp-callback" };

	for (size_t k = 0; k < 2; k++) {
		struct wl_ctx ctx = tcp_ctx(names[k], "ce", 2, "100");
		struct wl_metric m[WL_MAX_METRICS];
		char err[512] = "";
		size_t n;

		cr_assert_not_null(ctx.desc->report, "%s", names[k]);
		wl_test_setup(&ctx);
		n = ctx.desc->report(&ctx, m, WL_MAX_METRICS);
		cr_assert_eq(n, 2, "%s: client_rss and client_pss", names[k]);
		cr_expect_str_eq(m[0].name, "client_rss");
		cr_expect_str_eq(m[1].name, "client_pss");
		cr_expect_str_eq(m[0].unit, "MiB");
		cr_expect_geq(m[0].value, 64 * 4.0 / 1024, "%s: %.2f MiB", names[k], m[0].value);
		cr_expect_gt(m[1].value, 0);
		cr_expect_leq(m[1].value, m[0].value + 1e-9, "PSS is at most RSS");
		cr_expect(wl_test_op_check(&ctx, err, sizeof(err)), "%s: %s", names[k], err);
		cr_expect_eq(ctx.desc->report(&ctx, m, 1), 1, "no more than asked for");
		wl_test_finish(&ctx);
	}
}
