package main

// yield: ursa_yield_pingpong.c with goroutines.  Two goroutines take turns through a shared turn
// variable: the one whose turn it is flips it and then calls runtime.Gosched() until the turn is
// back.  With one P each Gosched switches to the other goroutine (one switch per hand-off, as
// ursa's ping-pong); with several Ps the two run in parallel and hand the turn over through the
// cache, so their Gosched calls mostly find nothing else to run.  gosched_per_turn tells which.
// Goroutine A reads the clock before its first turn and after its last; 2N hand-offs.
//   value = ns per hand-off = interval / (2 N)                             unit ns/switch
//
// chan: ursa_sem_pingpong.c with goroutines: two unbuffered channels, A sends on B's and receives
// on its own, N round trips: 2N hand-offs, each a blocking channel operation.
//   value = ns per hand-off = interval / (2 N)                             unit ns/pass

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

func yieldPingPong(n uint64) {
	var turn int32 // 0: A's turn, 1: B's
	var goscheds [2]uint64
	var done [2]uint64
	var elapsed time.Duration
	var wg sync.WaitGroup
	wg.Add(2)
	player := func(me int32) {
		defer wg.Done()
		var t0 time.Time
		if me == 0 {
			t0 = time.Now()
		}
		var i uint64
		for i = 0; i < n; i++ {
			for atomic.LoadInt32(&turn) != me {
				runtime.Gosched()
				goscheds[me]++
			}
			atomic.StoreInt32(&turn, 1-me)
		}
		if me == 0 {
			elapsed = time.Since(t0)
		}
		done[me] = i
	}
	go player(0)
	go player(1)
	wg.Wait()
	if done[0] != n || done[1] != n {
		die("yield: %d + %d turns, expected %d each", done[0], done[1], n)
	}
	g := float64(goscheds[0]+goscheds[1]) / float64(2*n)
	result("yield-pingpong", nsPer(elapsed, 2*n), "ns/switch", -1, 2*n,
		"gosched_per_turn="+fmtFloat(g))
}

func chanPingPong(n uint64) {
	a, b := make(chan uint64), make(chan uint64)
	var got uint64
	go func() { // B: receive on its own, send back on A's
		for v := range b {
			a <- v + 1
		}
	}()
	// one unmeasured round trip: B is running and blocked in its receive
	b <- 0
	<-a
	t0 := time.Now()
	var v uint64
	for i := uint64(0); i < n; i++ {
		b <- v
		v = <-a
	}
	elapsed := time.Since(t0)
	got = v
	close(b)
	if got != n {
		die("chan: %d round trips counted, expected %d", got, n)
	}
	result("sem-pingpong", nsPer(elapsed, 2*n), "ns/pass", -1, 2*n)
}
