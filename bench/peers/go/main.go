// Command go_peers - the Go peers of ursa's micro-benchmarks (bench/run.py, `make bench`):
// goroutines and channels timing what the ursa programs of bench/ time.  One binary, one benchmark
// per run, chosen by the first argument:
//
//	go_peers ring   [N = 1,000,000]   thread-ring: 503 goroutines, one unbuffered channel each
//	go_peers yield  [N = 2,000,000]   two goroutines alternating runtime.Gosched(), shared turn
//	go_peers chan   [N = 1,000,000]   channel ping-pong: two goroutines, two unbuffered channels
//	go_peers create [N = 1,000,000]   go + sync.WaitGroup of an empty goroutine, one at a time
//	go_peers rss    [K = 100,000]     KiB of VmRSS per goroutine blocked on a channel
//	go_peers radix  [r: all | r | r1,r2,..] [log2 keys = 22] [log2 goroutines = 8]
//	                                  radix_sort.c's parallel radix sort, a goroutine per slice
//	                                  per phase
//	go_peers http   PORT              net/http serving "Hello, world\n" (bench/load_suite.py)
//
// The number of Ps is the runtime's: run it with GOMAXPROCS=1 and GOMAXPROCS=<CPUs>; the impl
// printed is go<P> (go1, go2, ...).  Every run prints one line per measured figure, as the C
// programs do (bench/bench_common.h):
//
//	RESULT bench=<name> impl=go<P> value=<float> unit=<unit> [answer=<n>] n=<count> [key=value...]
//
// and exits 1 when a check fails (wrong ring answer, goroutines that did not alternate, a sort
// that is not sorted or not a permutation of its input), 2 on a usage error.  Standard library
// only; the clock is Go's monotonic clock around the measured loop only.
package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

const usage = "usage: go_peers ring|yield|chan|create|rss [count > 0]\n" +
	"       go_peers radix [all | r | r1,r2,... (1..12)] [log2 keys = 22] [log2 goroutines = 8]\n" +
	"       go_peers http PORT"

// impl is the implementation name: go<GOMAXPROCS>.
func impl() string { return "go" + strconv.Itoa(runtime.GOMAXPROCS(0)) }

// die prints "go_peers: <message>" on stderr and exits with status 1 (run.py: the run failed).
func die(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "go_peers: "+format+"\n", a...)
	os.Exit(1)
}

func usageExit() {
	fmt.Fprintln(os.Stderr, usage)
	os.Exit(2)
}

// count is args[0] as a positive integer, or dflt when absent.
func count(args []string, dflt uint64) uint64 {
	if len(args) == 0 {
		return dflt
	}
	v, err := strconv.ParseUint(args[0], 10, 64)
	if len(args) > 1 || err != nil || v == 0 {
		usageExit()
	}
	return v
}

// result prints the RESULT line (answer < 0: no answer field), extra "key=value" fields after n.
func result(bench string, value float64, unit string, answer int64, n uint64, extra ...string) {
	line := fmt.Sprintf("RESULT bench=%s impl=%s value=%.4f unit=%s", bench, impl(), value, unit)
	if answer >= 0 {
		line += fmt.Sprintf(" answer=%d", answer)
	}
	line += fmt.Sprintf(" n=%d", n)
	for _, e := range extra {
		line += " " + e
	}
	fmt.Println(line)
}

// countName is "<prefix>-<count>" with the count as 100k or 1M when round (bench_count_name).
func countName(prefix string, c uint64) string {
	switch {
	case c%1000000 == 0:
		return fmt.Sprintf("%s-%dM", prefix, c/1000000)
	case c%1000 == 0:
		return fmt.Sprintf("%s-%dk", prefix, c/1000)
	}
	return fmt.Sprintf("%s-%d", prefix, c)
}

// vmrssKiB is the VmRSS line of /proc/self/status in KiB, as bench_vmrss_kib reads it.
func vmrssKiB() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		die("open /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "VmRSS:") {
			fields := strings.Fields(line[len("VmRSS:"):])
			if len(fields) > 0 {
				if v, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
					return v
				}
			}
		}
	}
	die("no VmRSS line in /proc/self/status")
	return 0
}

func nsPer(d time.Duration, n uint64) float64 { return float64(d.Nanoseconds()) / float64(n) }

func main() {
	if len(os.Args) < 2 {
		usageExit()
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "ring":
		ring(count(args, 1000000))
	case "yield":
		yieldPingPong(count(args, 2000000))
	case "chan":
		chanPingPong(count(args, 1000000))
	case "create":
		createJoin(count(args, 1000000))
	case "rss":
		rssBlocked(count(args, 100000))
	case "radix":
		radix(args)
	case "http":
		httpServe(args)
	default:
		usageExit()
	}
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
