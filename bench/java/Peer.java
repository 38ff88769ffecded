/*
 * jdkpeer: schedlab's workloads on JDK 17's ForkJoinPool, for the model check of `make bench`
 * (bench/models.sh: the `global` preset against the JDK's pool). It runs the iteration
 * structure of bench/peer.h: warm-up iterations, then measured iterations of fixed time, one
 * throughput sample (ops/s) a line on stdout.
 *
 *   java -cp DIR Peer JOB [--warmup N] [--iterations N] [--time S]   ($(BUILD)/bench/jdkpeer)
 *
 *   spawn-join       1,000 times: fork() a RecursiveTask child returning i + 1 from a pool
 *                    task and join() it; one op, the sum checked. The pool's own spawn and
 *                    join: the child goes on the spawning worker's deque and an idle worker is
 *                    signalled; join is work-first, so when no thief took the child yet the
 *                    joiner pops it back and runs it in place, a call rather than a hand-over.
 *   spawn-join-cf    the same with CompletableFuture.supplyAsync(child, pool).join(), the
 *                    executor idiom, whose join blocks the worker (ForkJoinPool.managedBlock).
 *                    Not used by the bench scripts: with JDK 17.0.15 on 2 CPUs the pool stops
 *                    after some 1,000 to 16,000 such joins, one task queued and no worker
 *                    active (a lost wake-up in the pool), and this job then never ends.
 *   workers          4,096 values x 64 rounds of the workload's arithmetic split over 8
 *                    forked tasks, joined in order; checked against 16452561075408646571
 *   tcp-blocking     256 exchanges over 64 persistent loopback connections to schedlab's
 *                    own TCP server (1 ms before each echo), a forked task per connection;
 *                    each exchange a blocking write + readNBytes on a java.net.Socket, so the
 *                    pool's thread blocks in the kernel's read: JDK 17 has no virtual threads
 *                    and the pool does not compensate a plain socket read (only a
 *                    ManagedBlocker, or a join, may get a spare thread), so about
 *                    `parallelism` exchanges wait at once. That is what the `global` preset
 *                    does with a blocking socket call (sockets=block, blocking=none).
 *
 * The pool is new ForkJoinPool(availableProcessors()), one thread per CPU as the presets have
 * one worker per CPU (the common pool has one fewer). Like schedlab's harness, which submits
 * each op to the pool from its own thread and joins it, the main thread submits each op as a
 * pool task (ForkJoinPool.invoke) and waits for it: the op's own spawns happen inside a
 * worker. Every task is a ForkJoinTask, joined with ForkJoinTask.join(), for the reason
 * spawn-join-cf gives.
 *
 * tcp-blocking's server is `$SCHEDLAB_EXE __tcp-server`, started by bench/tcpserve
 * ($SCHEDLAB_TCPSERVE), which gives this peer the port and the run's key on a pipe (a JVM
 * cannot hand a child the sockets the server takes); the requests, the echo check and the
 * folds are the workload's (workloads/tcp.c).
 */
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.RecursiveTask;
import java.util.function.LongSupplier;

public final class Peer {
	static final int SPAWN_JOIN_N = 1000;
	static final int WORKERS_TASKS = 8, WORKERS_VALUES = 4096, WORKERS_ROUNDS = 64;
	static final long WORKERS_EXPECT = Long.parseUnsignedLong("16452561075408646571");
	static final int TCP_CONNS = 64, TCP_EXCHANGES = 256, TCP_DELAY_US = 1000;
	/* an exchange fails 10 s past twice the delay, as in the workload */
	static final int TCP_TIMEOUT_MS = 10000 + 2 * TCP_DELAY_US / 1000;
	static final long FOLD_START = 0xcbf29ce484222325L, FOLD_PRIME = 0x100000001b3L;

	static final ForkJoinPool pool = new ForkJoinPool(Runtime.getRuntime().availableProcessors());

	/* ---- spawn-join and workers -------------------------------------------------------- */

	/* A task running body: the ops and the tasks of workers and tcp-blocking. */
	static final class Call extends RecursiveTask<Long> {
		private static final long serialVersionUID = 1L;
		private final transient LongSupplier body;

		Call(LongSupplier body) {
			this.body = body;
		}

		@Override
		protected Long compute() {
			return body.getAsLong();
		}
	}

	static long spawnJoinCf() {
		long sum = 0;
		for (int i = 0; i < SPAWN_JOIN_N; i++) {
			final long v = i;
			sum += CompletableFuture.supplyAsync(() -> v + 1, pool).join();
		}
		return sum;
	}

	static final class Child extends RecursiveTask<Long> {
		private static final long serialVersionUID = 1L;
		private final long v;

		Child(long v) {
			this.v = v;
		}

		@Override
		protected Long compute() {
			return v + 1;
		}
	}

	static long spawnJoin() {
		long sum = 0;
		for (int i = 0; i < SPAWN_JOIN_N; i++)
			sum += new Child(i).fork().join();
		return sum;
	}

	/*
	 * The workers workload's arithmetic (DESIGN.md, workloads/workers.c): value i starts at
	 * i + 1, each round r does x = x * 6364136223846793005 + 1442695040888963407 + r,
	 * x ^= x >>> 31, all wrapping (Java's long arithmetic wraps; >>> is the unsigned shift);
	 * the sum of the values.
	 */
	static long mix(long first, long count, long rounds) {
		long sum = 0;
		for (long i = first; i < first + count; i++) {
			long x = i + 1;
			for (long r = 0; r < rounds; r++) {
				x = x * 6364136223846793005L + 1442695040888963407L + r;
				x ^= x >>> 31;
			}
			sum += x;
		}
		return sum;
	}

	static long workers() {
		Call[] tasks = new Call[WORKERS_TASKS];
		long per = WORKERS_VALUES / WORKERS_TASKS, extra = WORKERS_VALUES % WORKERS_TASKS;
		long first = 0, sum = 0;

		for (int k = 0; k < WORKERS_TASKS; k++) {
			final long f = first, count = per + (k < extra ? 1 : 0);
			tasks[k] = new Call(() -> mix(f, count, WORKERS_ROUNDS));
			tasks[k].fork();
			first += count;
		}
		for (Call t : tasks)
			sum += t.join();
		return sum;
	}

	/* ---- tcp-blocking ---------------------------------------------------------------------- */

	/* The server (tcpserve) and the connections: process-wide by nature, one peer a process. */
	static Process serve;
	static final Socket[] conns = new Socket[TCP_CONNS];
	static final InputStream[] ins = new InputStream[TCP_CONNS];
	static final OutputStream[] outs = new OutputStream[TCP_CONNS];
	static int gen;

	static int tcpTag(int seq) {
		long x = ((seq & 0xffffffffL) + 1) * 0x9e3779b97f4a7c15L;
		x ^= x >>> 31;
		x *= 0xbf58476d1ce4e5b9L;
		return (int) (x >>> 32);
	}

	static long foldExchange(long r, int tag) {
		return r * 1000003L + (tag & 0xffffffffL) + 1;
	}

	static long foldConnection(long h, long r) {
		return (h ^ r) * FOLD_PRIME;
	}

	static long tcpReference() {
		long h = FOLD_START;
		for (int k = 0; k < TCP_CONNS; k++) {
			long r = 0;
			for (int i = k; i < TCP_EXCHANGES; i += TCP_CONNS)
				r = foldExchange(r, tcpTag(i));
			h = foldConnection(h, r);
		}
		return h;
	}

	static void putLE(byte[] b, int off, int v) {
		b[off] = (byte) v;
		b[off + 1] = (byte) (v >>> 8);
		b[off + 2] = (byte) (v >>> 16);
		b[off + 3] = (byte) (v >>> 24);
	}

	static void tcpSetup() throws IOException {
		String path = System.getenv("SCHEDLAB_TCPSERVE");
		if (path == null || path.isEmpty())
			throw new IOException("set SCHEDLAB_TCPSERVE to bench/tcpserve (the jdkpeer script does)");
		ProcessBuilder pb = new ProcessBuilder(path, "--conns", Integer.toString(TCP_CONNS),
						       "--delay-us", Integer.toString(TCP_DELAY_US));
		pb.redirectError(ProcessBuilder.Redirect.INHERIT);
		serve = pb.start();
		String line = new BufferedReader(new InputStreamReader(serve.getInputStream(),
								       StandardCharsets.US_ASCII)).readLine();
		String[] f = line == null ? new String[0] : line.trim().split(" ");
		if (f.length != 2 || f[1].length() != 32)
			throw new IOException(path + " gave no port and key (see its message above)");
		byte[] key = new byte[16], back = new byte[16];
		for (int i = 0; i < 16; i++)
			key[i] = (byte) Integer.parseInt(f[1].substring(2 * i, 2 * i + 2), 16);
		InetSocketAddress addr = new InetSocketAddress("127.0.0.1", Integer.parseInt(f[0]));
		for (int k = 0; k < TCP_CONNS; k++) {
			Socket s = new Socket();
			conns[k] = s;
			s.connect(addr);
			s.setTcpNoDelay(true);
			s.setSoTimeout(TCP_TIMEOUT_MS);
			ins[k] = s.getInputStream();
			outs[k] = s.getOutputStream();
			outs[k].write(key);
			if (ins[k].readNBytes(back, 0, 16) != 16 || !Arrays.equals(back, key))
				throw new IOException("the server did not admit connection " + (k + 1)
						      + " with the run's key");
		}
	}

	static void tcpClose() {
		for (Socket s : conns) {
			try {
				if (s != null)
					s.close();
			} catch (IOException e) {
				/* going away anyway */
			}
		}
		if (serve != null) {
			try {
				serve.getOutputStream().close(); /* end of file: tcpserve stops the server */
				serve.waitFor();
			} catch (IOException | InterruptedException e) {
				serve.destroyForcibly();
			}
		}
	}

	/* Connection k's exchanges in op g, each blocking this pool thread in write and read. */
	static long tcpConnection(int k, int g) {
		byte[] req = new byte[16], resp = new byte[16];
		long r = 0;

		for (int i = k; i < TCP_EXCHANGES; i += TCP_CONNS) {
			putLE(req, 0, k);
			putLE(req, 4, i);
			putLE(req, 8, g);
			putLE(req, 12, tcpTag(i));
			try {
				outs[k].write(req);
				if (ins[k].readNBytes(resp, 0, 16) != 16)
					throw new IOException("the server closed the connection");
			} catch (IOException e) {
				throw new UncheckedIOException("connection " + k + ", exchange " + i + ": "
							       + e.getMessage(), e);
			}
			if (!Arrays.equals(req, resp))
				throw new IllegalStateException("connection " + k + ", exchange " + i
								+ ": a wrong echo");
			r = foldExchange(r, tcpTag(i));
		}
		return r;
	}

	static long tcpBlocking() {
		Call[] tasks = new Call[TCP_CONNS];
		final int g = ++gen;
		long h = FOLD_START;

		for (int k = 0; k < TCP_CONNS; k++) {
			final int c = k;
			tasks[k] = new Call(() -> tcpConnection(c, g));
			tasks[k].fork();
		}
		for (Call t : tasks)
			h = foldConnection(h, t.join());
		return h;
	}

	/* ---- the driver ---------------------------------------------------------------------------- */

	static void usage() {
		System.err.println("usage: jdkpeer spawn-join|spawn-join-cf|workers|tcp-blocking "
				   + "[--warmup N] [--iterations N] [--time S]");
		System.exit(2);
	}

	/* The first failure's own message: a join rethrows a task's exception wrapped in one of
	 * its own class (ForkJoinTask) or in a CompletionException. */
	static String why(Throwable e) {
		while (e.getCause() != null
		       && (e instanceof CompletionException || e.getClass() == e.getCause().getClass()))
			e = e.getCause();
		return e.getMessage() != null ? e.getMessage() : e.toString();
	}

	public static void main(String[] args) {
		int warmup = 3, iterations = 3;
		double seconds = 1;
		LongSupplier op = null;
		long expect = 0;

		if (args.length < 1 || args.length % 2 != 1)
			usage();
		try {
			for (int i = 1; i + 1 < args.length; i += 2) {
				switch (args[i]) {
				case "--warmup": warmup = Integer.parseInt(args[i + 1]); break;
				case "--iterations": iterations = Integer.parseInt(args[i + 1]); break;
				case "--time": seconds = Double.parseDouble(args[i + 1]); break;
				default: usage();
				}
			}
		} catch (NumberFormatException e) {
			usage();
		}
		switch (args[0]) {
		case "spawn-join": op = Peer::spawnJoin; expect = (long) SPAWN_JOIN_N * (SPAWN_JOIN_N + 1) / 2; break;
		case "spawn-join-cf": op = Peer::spawnJoinCf; expect = (long) SPAWN_JOIN_N * (SPAWN_JOIN_N + 1) / 2; break;
		case "workers": op = Peer::workers; expect = WORKERS_EXPECT; break;
		case "tcp-blocking": op = Peer::tcpBlocking; expect = tcpReference(); break;
		default: usage();
		}
		if (warmup < 0 || iterations < 1 || !(seconds > 0))
			usage();
		int status = 0;
		try {
			if (args[0].equals("tcp-blocking"))
				tcpSetup();
		} catch (IOException | RuntimeException e) {
			System.err.println("jdkpeer " + args[0] + ": setup failed: " + why(e));
			status = 1;
		}
		final LongSupplier task = op;
		long limit = (long) (seconds * 1e9);
		for (int it = 0; status == 0 && it < warmup + iterations; it++) {
			long t0 = System.nanoTime(), t = t0, ops = 0;
			do {
				long r;
				try {
					r = pool.invoke(new Call(task));
				} catch (RuntimeException e) {
					System.err.println("jdkpeer " + args[0] + ": " + why(e));
					status = 1;
					break;
				}
				if (r != expect) {
					System.err.println("jdkpeer " + args[0] + ": result " + Long.toUnsignedString(r)
							   + ", expected " + Long.toUnsignedString(expect));
					status = 1;
					break;
				}
				ops++;
				t = System.nanoTime();
			} while (t - t0 < limit);
			if (status == 0 && it >= warmup)
				System.out.println(ops / ((t - t0) * 1e-9));
		}
		tcpClose();
		System.out.flush();
		System.exit(status);
	}
}
