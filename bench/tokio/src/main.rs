//! tokiopeer: schedlab's workloads written for Tokio 1.24's multi-thread runtime, for the
//! model check of `make bench` (bench/models.sh: the `tokio` preset against Tokio). It runs
//! the iteration structure of bench/peer.h: warm-up iterations, then measured iterations of
//! fixed time, one throughput sample (ops/s) a line on stdout.
//!
//!   tokiopeer JOB [--warmup N] [--iterations N] [--time S]
//!
//!   spawn-join          1,000 times: tokio::spawn a child returning i + 1, await its
//!                       JoinHandle; one op, the sum checked
//!   workers             4,096 values x 64 rounds of the workload's arithmetic split over 8
//!                       spawned tasks, joined; checked against 16452561075408646571
//!   tcp-blocking        256 exchanges over 64 persistent loopback connections to
//!                       schedlab's own TCP server (1 ms before each echo), a spawned task
//!                       per connection; each exchange a tokio TcpStream write_all +
//!                       read_exact, which parks the task on the reactor while it waits:
//!                       Tokio's socket model
//!   tcp-block-in-place  the same exchanges on std's blocking sockets, each inside
//!                       tokio::task::block_in_place: the worker hands its queue (and its
//!                       LIFO slot) to another thread and blocks in the kernel itself, which
//!                       is what the `tokio` preset does with a blocking socket call
//!                       (sockets=block, blocking=handoff); shown beside tcp-blocking
//!
//! Like schedlab's harness, which submits each op to the pool from its own thread and
//! joins it, the main thread spawns each op as a task and waits for it with block_on: so
//! the op's own spawns happen inside a worker task. (A spawn made by `block_on`'s future
//! itself runs on no worker: every one is a cross-thread round trip, some 45 ops/s of
//! spawn-join on this machine against thousands inside a task.) The runtime has Tokio's
//! default worker count, one per CPU, as the presets have one worker per CPU.
//!
//! The TCP jobs' server is `$SCHEDLAB_EXE __tcp-server`, started by bench/tcpserve
//! ($SCHEDLAB_TCPSERVE, else tcpserve beside this program), which gives this peer the port
//! and the run's key on a pipe; the requests, the echo check and the folds are the
//! workload's (workloads/tcp.c).
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::runtime::Runtime;

const SPAWN_JOIN_N: u64 = 1000;
const WORKERS_TASKS: u64 = 8;
const WORKERS_VALUES: u64 = 4096;
const WORKERS_ROUNDS: u64 = 64;
const WORKERS_EXPECT: u64 = 16452561075408646571;
const TCP_CONNS: usize = 64;
const TCP_EXCHANGES: usize = 256;
const TCP_DELAY_US: u64 = 1000;
/// An exchange fails 10 s past twice the delay, as in the workload.
const TCP_TIMEOUT: Duration = Duration::from_micros(10_000_000 + 2 * TCP_DELAY_US);
const FOLD_START: u64 = 0xcbf29ce484222325; // FNV-1a's offset basis and prime
const FOLD_PRIME: u64 = 0x100000001b3;

type OpResult = Result<u64, String>;

// ---- spawn-join and workers ----------------------------------------------------------------

async fn spawn_join() -> OpResult {
    let mut sum = 0u64;
    for i in 0..SPAWN_JOIN_N {
        let child = tokio::spawn(async move { i + 1 });
        sum += child.await.map_err(|e| format!("a child failed: {}", e))?;
    }
    Ok(sum)
}

/// The workers workload's arithmetic (DESIGN.md, workloads/workers.c): value i starts at
/// i + 1, each round r does x = x * 6364136223846793005 + 1442695040888963407 + r,
/// x ^= x >> 31, all wrapping; the sum of the values. Not inlined, so that a profile shows
/// the tasks' own work by name.
#[inline(never)]
fn mix(first: u64, count: u64, rounds: u64) -> u64 {
    let mut sum = 0u64;
    for i in first..first + count {
        let mut x = i + 1;
        for r in 0..rounds {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407)
                .wrapping_add(r);
            x ^= x >> 31;
        }
        sum = sum.wrapping_add(x);
    }
    sum
}

async fn workers() -> OpResult {
    let per = WORKERS_VALUES / WORKERS_TASKS;
    let extra = WORKERS_VALUES % WORKERS_TASKS;
    let mut first = 0;
    let mut tasks = Vec::with_capacity(WORKERS_TASKS as usize);
    for k in 0..WORKERS_TASKS {
        let count = per + u64::from(k < extra);
        tasks.push(tokio::spawn(async move { mix(first, count, WORKERS_ROUNDS) }));
        first += count;
    }
    let mut sum = 0u64;
    for t in tasks {
        sum = sum.wrapping_add(t.await.map_err(|e| format!("a worker failed: {}", e))?);
    }
    Ok(sum)
}

// ---- tcp-blocking ------------------------------------------------------------------------------

fn tcp_tag(seq: u32) -> u32 {
    let mut x = (u64::from(seq) + 1).wrapping_mul(0x9e3779b97f4a7c15);
    x ^= x >> 31;
    x = x.wrapping_mul(0xbf58476d1ce4e5b9);
    (x >> 32) as u32
}

fn fold_exchange(r: u64, tag: u32) -> u64 {
    r.wrapping_mul(1000003).wrapping_add(u64::from(tag) + 1)
}

fn fold_connection(h: u64, r: u64) -> u64 {
    (h ^ r).wrapping_mul(FOLD_PRIME)
}

fn tcp_reference() -> u64 {
    let mut h = FOLD_START;
    for k in 0..TCP_CONNS {
        let mut r = 0;
        for i in (k..TCP_EXCHANGES).step_by(TCP_CONNS) {
            r = fold_exchange(r, tcp_tag(i as u32));
        }
        h = fold_connection(h, r);
    }
    h
}

/// Exchange i of connection k in op gen: 16 bytes, little-endian as the C structure.
fn tcp_request(k: usize, i: usize, gen: u32) -> [u8; 16] {
    let mut req = [0u8; 16];
    req[0..4].copy_from_slice(&(k as u32).to_le_bytes());
    req[4..8].copy_from_slice(&(i as u32).to_le_bytes());
    req[8..12].copy_from_slice(&gen.to_le_bytes());
    req[12..16].copy_from_slice(&tcp_tag(i as u32).to_le_bytes());
    req
}

fn tcp_check_echo(k: usize, i: usize, req: &[u8; 16], resp: &[u8; 16], r: u64) -> OpResult {
    if resp != req {
        return Err(format!("connection {}, exchange {}: a wrong echo", k, i));
    }
    Ok(fold_exchange(r, u32::from_le_bytes([resp[12], resp[13], resp[14], resp[15]])))
}

/// bench/tcpserve, which runs the server while its stdin stays open.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.stdin.take()); // end of file: tcpserve stops the server and exits
        let _ = self.child.wait();
    }
}

/// Start the server and open the 64 connections, each admitted by the run's key: std's
/// blocking sockets, with the workload's timeouts.
fn tcp_connect() -> Result<(Server, Vec<std::net::TcpStream>), String> {
    let path = match std::env::var_os("SCHEDLAB_TCPSERVE") {
        Some(p) => std::path::PathBuf::from(p),
        None => std::env::current_exe().map_err(|e| e.to_string())?.with_file_name("tcpserve"),
    };
    let mut child = Command::new(&path)
        .args(["--conns", &TCP_CONNS.to_string(), "--delay-us", &TCP_DELAY_US.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| {
            format!("cannot run {} (SCHEDLAB_TCPSERVE names it): {}", path.display(), e)
        })?;
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let server = Server { child, stdin };
    let mut line = String::new();
    if stdout.map(|o| BufReader::new(o).read_line(&mut line)).is_none() || line.is_empty() {
        return Err(format!("{} gave no port and key (see its message above)", path.display()));
    }
    let fields: Vec<&str> = line.split_whitespace().collect();
    let key: Vec<u8> = match fields.as_slice() {
        [_, hex] if hex.len() == 32 => (0..16)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16))
            .collect::<Result<_, _>>()
            .map_err(|_| format!("{} wrote a bad key", path.display()))?,
        _ => return Err(format!("{} wrote {:?}, not \"PORT KEY\"", path.display(), line)),
    };
    let addr = format!("127.0.0.1:{}", fields[0]);
    let mut conns = Vec::with_capacity(TCP_CONNS);
    for k in 0..TCP_CONNS {
        let fail = |e: std::io::Error| {
            format!(
                "cannot connect to the server on {} (connection {} of {}): {}",
                addr,
                k + 1,
                TCP_CONNS,
                e
            )
        };
        let mut c = std::net::TcpStream::connect(&addr).map_err(fail)?;
        c.set_nodelay(true).map_err(fail)?;
        c.set_read_timeout(Some(TCP_TIMEOUT)).map_err(fail)?;
        c.set_write_timeout(Some(TCP_TIMEOUT)).map_err(fail)?;
        let mut back = [0u8; 16];
        c.write_all(&key).and_then(|_| c.read_exact(&mut back)).map_err(fail)?;
        if back[..] != key[..] {
            return Err(format!(
                "the server did not admit connection {} with the run's key",
                k + 1
            ));
        }
        conns.push(c);
    }
    Ok((server, conns))
}

/// One connection's exchanges in op gen, parked on the reactor: its stream back, and its
/// fold or an error.
async fn tcp_connection(
    k: usize,
    mut c: tokio::net::TcpStream,
    gen: u32,
) -> (tokio::net::TcpStream, OpResult) {
    let work = async {
        let mut r = 0u64;
        let mut resp = [0u8; 16];
        for i in (k..TCP_EXCHANGES).step_by(TCP_CONNS) {
            let req = tcp_request(k, i, gen);
            let io = async {
                c.write_all(&req).await?;
                c.read_exact(&mut resp).await
            };
            io.await.map_err(|e| format!("connection {}, exchange {}: {}", k, i, e))?;
            r = tcp_check_echo(k, i, &req, &resp, r)?;
        }
        Ok(r)
    };
    let r = match tokio::time::timeout(TCP_TIMEOUT, work).await {
        Ok(r) => r,
        Err(_) => Err(format!("connection {}: no response within {:?}", k, TCP_TIMEOUT)),
    };
    (c, r)
}

/// The same on a blocking std socket, each exchange in block_in_place.
async fn tcp_connection_bip(
    k: usize,
    mut c: std::net::TcpStream,
    gen: u32,
) -> (std::net::TcpStream, OpResult) {
    let mut r = Ok(0u64);
    for i in (k..TCP_EXCHANGES).step_by(TCP_CONNS) {
        let req = tcp_request(k, i, gen);
        let mut resp = [0u8; 16];
        let io = tokio::task::block_in_place(|| {
            c.write_all(&req)?;
            c.read_exact(&mut resp)
        });
        r = match (io, r) {
            (Err(e), _) => Err(format!("connection {}, exchange {}: {}", k, i, e)),
            (Ok(()), Ok(v)) => tcp_check_echo(k, i, &req, &resp, v),
            (Ok(()), e) => e,
        };
        if r.is_err() {
            break;
        }
    }
    (c, r)
}

/// One op: a task per connection, joined in connection order; the streams come back.
async fn tcp_op<S: Send + 'static, F>(
    conns: Vec<S>,
    gen: u32,
    connection: fn(usize, S, u32) -> F,
) -> (Vec<S>, OpResult)
where
    F: std::future::Future<Output = (S, OpResult)> + Send + 'static,
{
    let tasks: Vec<_> =
        conns.into_iter().enumerate().map(|(k, c)| tokio::spawn(connection(k, c, gen))).collect();
    let mut back = Vec::with_capacity(TCP_CONNS);
    let mut h = FOLD_START;
    let mut err = None;
    for t in tasks {
        match t.await {
            Ok((c, Ok(r))) => {
                back.push(c);
                h = fold_connection(h, r);
            }
            Ok((c, Err(e))) => {
                back.push(c);
                err.get_or_insert(e);
            }
            Err(e) => {
                err.get_or_insert(format!("a connection's task failed: {}", e));
            }
        }
    }
    (back, err.map_or(Ok(h), Err))
}

// ---- the driver ------------------------------------------------------------------------------

enum Conns {
    None,
    Reactor(Vec<tokio::net::TcpStream>),
    Blocking(Vec<std::net::TcpStream>),
}

struct Peer {
    rt: Runtime,
    job: String,
    conns: Conns,
    gen: u32,
    _server: Option<Server>, // dropped after the connections: declared after them
}

impl Peer {
    /// One op, spawned as a task of the runtime from this thread and waited for.
    fn op(&mut self) -> OpResult {
        let joined = |r: Result<OpResult, tokio::task::JoinError>| {
            r.map_err(|e| format!("the op's task failed: {}", e))?
        };
        match (self.job.as_str(), std::mem::replace(&mut self.conns, Conns::None)) {
            ("spawn-join", _) => joined(self.rt.block_on(self.rt.spawn(spawn_join()))),
            ("workers", _) => joined(self.rt.block_on(self.rt.spawn(workers()))),
            (_, Conns::Reactor(conns)) => {
                self.gen = self.gen.wrapping_add(1);
                let op = self.rt.spawn(tcp_op(conns, self.gen, tcp_connection));
                let (conns, r) =
                    self.rt.block_on(op).map_err(|e| format!("the op's task failed: {}", e))?;
                self.conns = Conns::Reactor(conns);
                r
            }
            (_, Conns::Blocking(conns)) => {
                self.gen = self.gen.wrapping_add(1);
                let op = self.rt.spawn(tcp_op(conns, self.gen, tcp_connection_bip));
                let (conns, r) =
                    self.rt.block_on(op).map_err(|e| format!("the op's task failed: {}", e))?;
                self.conns = Conns::Blocking(conns);
                r
            }
            (_, Conns::None) => Err("no connections".to_string()),
        }
    }
}

fn usage() -> ! {
    eprintln!("usage: tokiopeer spawn-join|workers|tcp-blocking|tcp-block-in-place [--warmup N] [--iterations N] [--time S]");
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 2 || args.len() % 2 != 0 {
        usage();
    }
    let (mut warmup, mut iterations, mut seconds) = (3u64, 3u64, 1.0f64);
    for pair in args[2..].chunks(2) {
        let ok = match pair[0].as_str() {
            "--warmup" => pair[1].parse().map(|v| warmup = v).is_ok(),
            "--iterations" => pair[1].parse().map(|v| iterations = v).is_ok(),
            "--time" => pair[1].parse().map(|v| seconds = v).is_ok(),
            _ => false,
        };
        if !ok {
            usage();
        }
    }
    let job = args[1].as_str();
    let expect = match job {
        "spawn-join" => SPAWN_JOIN_N * (SPAWN_JOIN_N + 1) / 2,
        "workers" => WORKERS_EXPECT,
        "tcp-blocking" | "tcp-block-in-place" => tcp_reference(),
        _ => usage(),
    };
    if iterations < 1 || !(seconds > 0.0) {
        usage();
    }
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("tokiopeer: cannot start the runtime: {}", e);
            std::process::exit(1)
        }
    };
    let mut peer = Peer { rt, job: job.to_string(), conns: Conns::None, gen: 0, _server: None };
    if job.starts_with("tcp-") {
        let (server, conns) = match tcp_connect() {
            Ok(x) => x,
            Err(e) => {
                eprintln!("tokiopeer {}: setup failed: {}", job, e);
                std::process::exit(1)
            }
        };
        peer._server = Some(server);
        peer.conns = if job == "tcp-blocking" {
            // a tokio stream registers with the reactor of the runtime entered
            let _guard = peer.rt.enter();
            let mut v = Vec::with_capacity(TCP_CONNS);
            for c in conns {
                match c.set_nonblocking(true).and_then(|_| tokio::net::TcpStream::from_std(c)) {
                    Ok(c) => v.push(c),
                    Err(e) => {
                        eprintln!("tokiopeer {}: setup failed: {}", job, e);
                        std::process::exit(1)
                    }
                }
            }
            Conns::Reactor(v)
        } else {
            Conns::Blocking(conns)
        };
    }
    let limit = Duration::from_secs_f64(seconds);
    let stdout = std::io::stdout();
    for it in 0..warmup + iterations {
        let t0 = Instant::now();
        let mut ops = 0u64;
        let elapsed = loop {
            match peer.op() {
                Ok(r) if r == expect => {}
                Ok(r) => {
                    eprintln!("tokiopeer {}: result {}, expected {}", job, r, expect);
                    std::process::exit(1)
                }
                Err(e) => {
                    eprintln!("tokiopeer {}: {}", job, e);
                    std::process::exit(1)
                }
            }
            ops += 1;
            let e = t0.elapsed();
            if e >= limit {
                break e;
            }
        };
        if it >= warmup {
            let mut out = stdout.lock();
            let _ = writeln!(out, "{}", ops as f64 / elapsed.as_secs_f64());
            let _ = out.flush();
        }
    }
    // the connections close before tcpserve is told to stop the server
    peer.conns = Conns::None;
    peer._server = None;
}
