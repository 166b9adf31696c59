package main

// ring: the thread-ring of ursa_ring_sem.c with goroutines and channels (the Benchmarks Game's
// Go thread-ring).  503 goroutines, member i receives on its own unbuffered channel and sends to
// member i+1's.  main sends token N to member 1; a member receiving t reports its 1-based id when
// t is 0, else sends t - 1 on.  Answer N mod 503 + 1 (37 for N = 10^6).  Every member has started
// before the clock (a WaitGroup), and main sleeps 10 ms so that each is blocked in its receive.
//   value = ns per pass = interval / N                                      unit ns/pass

import (
	"sync"
	"time"
)

const ringSize = 503

func ring(n uint64) {
	var chans [ringSize]chan uint64
	for i := range chans {
		chans[i] = make(chan uint64)
	}
	done := make(chan int64)
	var started sync.WaitGroup
	started.Add(ringSize)
	for i := 0; i < ringSize; i++ {
		go func(me int) {
			in, out := chans[me], chans[(me+1)%ringSize]
			started.Done()
			for t := range in {
				if t == 0 {
					done <- int64(me + 1)
					continue // wait again: main closes the channels to stop
				}
				out <- t - 1
			}
		}(i)
	}
	started.Wait()
	time.Sleep(10 * time.Millisecond) // every member reaches its receive

	t0 := time.Now()
	chans[0] <- n
	answer := <-done
	elapsed := time.Since(t0)

	result("ring-sem", nsPer(elapsed, n), "ns/pass", answer, n)
	for _, c := range chans {
		close(c)
	}
	if answer != int64(n%ringSize)+1 {
		die("ring: answer %d, expected %d", answer, n%ringSize+1)
	}
}
