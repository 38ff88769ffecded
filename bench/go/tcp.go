// tcp-blocking in Go: the workload's exchanges (workloads/tcp.c) against the same server.
//
// Setup runs bench/tcpserve, which starts `$SCHEDLAB_EXE __tcp-server` with the listening
// socket and the control socket the server takes (as the workload's setup does) and
// writes "PORT KEY" on its stdout; this peer then opens the 64 persistent connections,
// each presenting the key and waiting for its echo. Closing tcpserve's stdin stops it
// and the server.
//
// One op: the op's generation goes up; a goroutine per connection runs exchanges k,
// k+64, ... in sequence, each a blocking conn.Write of the 16-byte request (connection,
// exchange, generation, tag; little-endian as the C structure on x86-64) and an
// io.ReadFull of its echo. In Go that is how blocking socket code is written, and the
// runtime parks the goroutine on the netpoller while it waits (no thread blocks): what
// the `go` preset models with sockets=park. Each connection folds its tags in order, and
// the op folds the connections in order, which must equal the reference.
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	tcpConns     = 64
	tcpExchanges = 256
	tcpDelayUs   = 1000
	// an exchange fails 10 s past twice the delay, as in the workload
	tcpTimeout = 10*time.Second + 2*tcpDelayUs*time.Microsecond
	foldStart  = 0xcbf29ce484222325 // FNV-1a's offset basis and prime
	foldPrime  = 0x100000001b3
)

// The server and the connections: process-wide by nature, one peer per process.
var (
	tcpServe *exec.Cmd
	tcpStdin io.WriteCloser
	tcpConn  []net.Conn
	tcpGen   uint32
)

func tcpTag(seq uint32) uint32 {
	x := (uint64(seq) + 1) * 0x9e3779b97f4a7c15
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	return uint32(x >> 32)
}

func foldExchange(r uint64, tag uint32) uint64 { return r*1000003 + uint64(tag) + 1 }

func foldConnection(h, r uint64) uint64 { return (h ^ r) * foldPrime }

func tcpReference() uint64 {
	h := uint64(foldStart)
	for k := 0; k < tcpConns; k++ {
		r := uint64(0)
		for i := k; i < tcpExchanges; i += tcpConns {
			r = foldExchange(r, tcpTag(uint32(i)))
		}
		h = foldConnection(h, r)
	}
	return h
}

// tcpservePath is $SCHEDLAB_TCPSERVE, else tcpserve beside this program.
func tcpservePath() string {
	if p := os.Getenv("SCHEDLAB_TCPSERVE"); p != "" {
		return p
	}
	exe, err := os.Executable()
	if err != nil {
		return "tcpserve"
	}
	return filepath.Join(filepath.Dir(exe), "tcpserve")
}

func tcpSetup() error {
	path := tcpservePath()
	tcpServe = exec.Command(path, "--conns", strconv.Itoa(tcpConns), "--delay-us",
		strconv.Itoa(tcpDelayUs))
	tcpServe.Stderr = os.Stderr
	stdin, err := tcpServe.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := tcpServe.StdoutPipe()
	if err != nil {
		return err
	}
	if err := tcpServe.Start(); err != nil {
		tcpServe = nil
		return fmt.Errorf("cannot run %s (SCHEDLAB_TCPSERVE names it): %v", path, err)
	}
	tcpStdin = stdin
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return fmt.Errorf("%s gave no port and key (see its message above)", path)
	}
	fields := strings.Fields(line)
	if len(fields) != 2 {
		return fmt.Errorf("%s wrote %q, not \"PORT KEY\"", path, line)
	}
	key, err := hex.DecodeString(fields[1])
	if err != nil || len(key) != 16 {
		return fmt.Errorf("%s wrote a bad key", path)
	}
	addr := net.JoinHostPort("127.0.0.1", fields[0])
	for k := 0; k < tcpConns; k++ {
		c, err := net.Dial("tcp", addr) // TCP_NODELAY is Go's default
		if err != nil {
			return fmt.Errorf("cannot connect to the server on %s (connection %d of %d): %v",
				addr, k+1, tcpConns, err)
		}
		tcpConn = append(tcpConn, c)
		back := make([]byte, len(key))
		c.SetDeadline(time.Now().Add(tcpTimeout))
		if _, err := c.Write(key); err == nil {
			_, err = io.ReadFull(c, back)
		}
		if err != nil || !bytes.Equal(back, key) {
			return fmt.Errorf("the server did not admit connection %d with the run's key", k+1)
		}
	}
	return nil
}

// tcpClose closes the connections and stops tcpserve and the server; nothing when unset.
func tcpClose() {
	for _, c := range tcpConn {
		c.Close()
	}
	tcpConn = nil
	if tcpServe != nil {
		tcpStdin.Close()
		tcpServe.Wait()
		tcpServe = nil
	}
}

// tcpConnection runs connection k's exchanges of the op gen: its fold, or an error.
func tcpConnection(k int, gen uint32) (uint64, error) {
	var req, resp [16]byte
	c := tcpConn[k]
	r := uint64(0)

	c.SetDeadline(time.Now().Add(tcpTimeout))
	for i := k; i < tcpExchanges; i += tcpConns {
		binary.LittleEndian.PutUint32(req[0:], uint32(k))
		binary.LittleEndian.PutUint32(req[4:], uint32(i))
		binary.LittleEndian.PutUint32(req[8:], gen)
		binary.LittleEndian.PutUint32(req[12:], tcpTag(uint32(i)))
		if _, err := c.Write(req[:]); err != nil {
			return 0, fmt.Errorf("connection %d, exchange %d: %v", k, i, err)
		}
		if _, err := io.ReadFull(c, resp[:]); err != nil {
			return 0, fmt.Errorf("connection %d, exchange %d: %v", k, i, err)
		}
		if resp != req {
			return 0, fmt.Errorf("connection %d, exchange %d: a wrong echo", k, i)
		}
		r = foldExchange(r, binary.LittleEndian.Uint32(resp[12:]))
	}
	return r, nil
}

func tcpBlocking() (uint64, error) {
	var wg sync.WaitGroup
	var folds [tcpConns]uint64
	var errs [tcpConns]error

	tcpGen++
	gen := tcpGen
	wg.Add(tcpConns)
	for k := 0; k < tcpConns; k++ {
		go func(k int) {
			folds[k], errs[k] = tcpConnection(k, gen)
			wg.Done()
		}(k)
	}
	wg.Wait()
	h := uint64(foldStart)
	for k := 0; k < tcpConns; k++ {
		if errs[k] != nil {
			return 0, errs[k]
		}
		h = foldConnection(h, folds[k])
	}
	return h, nil
}
