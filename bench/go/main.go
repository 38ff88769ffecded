// gopeer: the Go peers of the runtime's workloads, for `make bench`. Each job is the
// runtime's op written with goroutines, channels and sync.WaitGroup, and runs the
// iteration structure of bench/peer.h: warm-up iterations, then measured iterations of
// fixed time, one throughput sample (ops/s) a line on stdout.
//
//	gopeer JOB [--warmup N] [--iterations N] [--time S]
//
//	spawn-join     1,000 times: start a goroutine, wait for it (WaitGroup); one op
//	workers        4,096 values x 64 rounds of the workload's arithmetic, split over 8
//	               goroutines and joined (WaitGroup); one op, checked against the
//	               checksum 16452561075408646571
//	tcp-blocking   256 exchanges over 64 persistent loopback connections to schedlab's
//	               own TCP server, which waits 1 ms before each echo; a goroutine per
//	               connection runs its 4 exchanges in sequence, each a blocking
//	               conn.Write + io.ReadFull; one op. Every echo must match its request
//	               and the folds match the workload's (workloads/tcp.c).
//	chan-spsc      one producer goroutine sends 1..10,000 through a new channel of
//	               capacity 1024 to one consumer goroutine, which sums them; one op
//	waiting-tasks  100,000 goroutines each allocate (on the heap) and fill a 1 KiB
//	               payload, then all wait on one channel; when every one waits, the channel is closed and
//	               each adds up its payload; one op. After the last iteration it prints
//	               "memory RSS_MIB PSS_MIB" (to stderr): the process's resident and
//	               proportional set, read from /proc/self/smaps_rollup while the
//	               goroutines waited, the largest over the measured iterations.
//
// Only the standard library; GOMAXPROCS is Go's default (one P per CPU). The ops run on
// the main goroutine, which is a goroutine like any other on a P (unlike Tokio's block_on
// thread, say): a spawn there is what a spawn inside a task is in the other runtimes.
//
// tcp-blocking's server is schedlab's (`$SCHEDLAB_EXE __tcp-server`), started through
// bench/tcpserve (SCHEDLAB_TCPSERVE, else tcpserve beside this program), which hands it
// the listening and control sockets as the workload does and gives this peer the port
// and the run's key on a pipe; see tcp.go.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	spawnJoinN    = 1000
	chanItems     = 10000
	chanCap       = 1024
	waitingN      = 100000
	workersTasks  = 8
	workersValues = 4096
	workersRounds = 64
	workersExpect = 16452561075408646571
)

// payloadSize is a variable, not a constant, so that make() puts each payload on the
// heap, as the workload's rt_alloc() does, and not on the goroutine's stack.
var payloadSize = 1024

// peakRSS and peakPSS are the largest figures seen by waitingTasks, in KiB.
var peakRSS, peakPSS uint64

func spawnJoin() uint64 {
	var wg sync.WaitGroup
	var sum uint64

	for i := uint64(0); i < spawnJoinN; i++ {
		var r uint64

		wg.Add(1)
		go func(i uint64) {
			r = i + 1
			wg.Done()
		}(i)
		wg.Wait()
		sum += r
	}
	return sum
}

// mix is the workers workload's arithmetic (DESIGN.md, workloads/workers.c): value i
// starts at i + 1, each round r does x = x*6364136223846793005 + 1442695040888963407 + r,
// x ^= x >> 31, all wrapping; the sum of the values. Not inlined, so that a profile shows
// the tasks' own work by name.
//
//go:noinline
func mix(first, count, rounds uint64) uint64 {
	var sum uint64
	for i := first; i < first+count; i++ {
		x := i + 1
		for r := uint64(0); r < rounds; r++ {
			x = x*6364136223846793005 + 1442695040888963407 + r
			x ^= x >> 31
		}
		sum += x
	}
	return sum
}

func workers() uint64 {
	var wg sync.WaitGroup
	var sums [workersTasks]uint64
	per := uint64(workersValues / workersTasks)
	extra := uint64(workersValues % workersTasks)
	first := uint64(0)

	for k := 0; k < workersTasks; k++ {
		count := per
		if uint64(k) < extra {
			count++
		}
		wg.Add(1)
		go func(k int, first, count uint64) {
			sums[k] = mix(first, count, workersRounds)
			wg.Done()
		}(k, first, count)
		first += count
	}
	wg.Wait()
	var sum uint64
	for _, v := range sums {
		sum += v
	}
	return sum
}

func chanSPSC() uint64 {
	ch := make(chan uint64, chanCap)
	var wg sync.WaitGroup
	var sum uint64

	// as the workload: the consumer starts first, the producer sends 1..n
	wg.Add(2)
	go func() {
		for v := range ch {
			sum += v
		}
		wg.Done()
	}()
	go func() {
		for i := uint64(1); i <= chanItems; i++ {
			ch <- i
		}
		close(ch)
		wg.Done()
	}()
	wg.Wait()
	return sum
}

// smapsRollup returns Rss and Pss of the whole process in KiB.
func smapsRollup() (rss, pss uint64) {
	f, err := os.Open("/proc/self/smaps_rollup")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		v, _ := strconv.ParseUint(fields[1], 10, 64)
		switch fields[0] {
		case "Rss:":
			rss = v
		case "Pss:":
			pss = v
		}
	}
	return rss, pss
}

func waitingTasks() uint64 {
	var ready, done sync.WaitGroup
	var mu sync.Mutex
	var total uint64
	release := make(chan struct{})

	ready.Add(waitingN)
	done.Add(waitingN)
	for i := 0; i < waitingN; i++ {
		go func(i int) {
			payload := make([]byte, payloadSize)
			for k := range payload {
				payload[k] = byte(i + k)
			}
			ready.Done()
			<-release
			var s uint64
			for _, b := range payload {
				s += uint64(b)
			}
			mu.Lock()
			total += s
			mu.Unlock()
			done.Done()
		}(i)
	}
	ready.Wait()
	rss, pss := smapsRollup()
	if rss > peakRSS {
		peakRSS, peakPSS = rss, pss
	}
	close(release)
	done.Wait()
	return total
}

// waitingExpect is what waitingTasks returns: payload byte k of goroutine i is
// (i + k) mod 256.
func waitingExpect() uint64 {
	var sum uint64
	for i := 0; i < waitingN; i++ {
		for k := 0; k < payloadSize; k++ {
			sum += uint64(byte(i + k))
		}
	}
	return sum
}

type job struct {
	op     func() (uint64, error)
	expect func() uint64
	setup  func() error // optional, once before the warm-up
}

// plain makes an op that cannot fail otherwise than by its result.
func plain(op func() uint64) func() (uint64, error) {
	return func() (uint64, error) { return op(), nil }
}

func main() {
	jobs := map[string]job{
		"spawn-join":    {plain(spawnJoin), func() uint64 { return spawnJoinN * (spawnJoinN + 1) / 2 }, nil},
		"chan-spsc":     {plain(chanSPSC), func() uint64 { return chanItems * (chanItems + 1) / 2 }, nil},
		"waiting-tasks": {plain(waitingTasks), waitingExpect, nil},
		"workers":       {plain(workers), func() uint64 { return workersExpect }, nil},
		"tcp-blocking":  {tcpBlocking, tcpReference, tcpSetup},
	}
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: gopeer spawn-join|workers|tcp-blocking|chan-spsc|waiting-tasks [--warmup N] [--iterations N] [--time S]")
		os.Exit(2)
	}
	job, ok := jobs[os.Args[1]]
	fs := flag.NewFlagSet("gopeer", flag.ContinueOnError)
	warmup := fs.Int("warmup", 3, "warm-up iterations, discarded")
	iterations := fs.Int("iterations", 3, "measured iterations")
	seconds := fs.Float64("time", 1, "length of each iteration in seconds")
	if err := fs.Parse(os.Args[2:]); err != nil || fs.NArg() > 0 {
		os.Exit(2)
	}
	if !ok || *warmup < 0 || *iterations < 1 || !(*seconds > 0) {
		fmt.Fprintf(os.Stderr, "gopeer: unknown job %q or bad counts\n", os.Args[1])
		os.Exit(2)
	}
	if job.setup != nil {
		if err := job.setup(); err != nil {
			fmt.Fprintf(os.Stderr, "gopeer %s: setup failed: %v\n", os.Args[1], err)
			os.Exit(1)
		}
	}
	status := run(os.Args[1], job, *warmup, *iterations, *seconds)
	tcpClose()
	os.Exit(status)
}

// run is the iteration structure of bench/peer.h: 0, or 1 after a wrong result.
func run(name string, job job, warmup, iterations int, seconds float64) int {
	want := job.expect()
	limit := time.Duration(seconds * float64(time.Second))
	for it := 0; it < warmup+iterations; it++ {
		if it == warmup {
			peakRSS, peakPSS = 0, 0 // the peak over the measured iterations only
		}
		t0 := time.Now()
		ops := 0
		var elapsed time.Duration
		for {
			r, err := job.op()
			if err != nil {
				fmt.Fprintf(os.Stderr, "gopeer %s: %v\n", name, err)
				return 1
			}
			if r != want {
				fmt.Fprintf(os.Stderr, "gopeer %s: result %d, expected %d\n", name, r, want)
				return 1
			}
			ops++
			if elapsed = time.Since(t0); elapsed >= limit {
				break
			}
		}
		if it >= warmup {
			fmt.Printf("%.17g\n", float64(ops)/elapsed.Seconds())
		}
	}
	if peakRSS > 0 {
		fmt.Fprintf(os.Stderr, "memory %.1f %.1f\n", float64(peakRSS)/1024, float64(peakPSS)/1024)
	}
	return 0
}
