package main

// create: ursa_create_join.c with goroutines: `go` an empty function and wait for it with a
// sync.WaitGroup, N times one after another (a goroutine has no join; Wait is its join).  10,000
// unmeasured iterations first warm the runtime's free goroutine and stack lists.
//   value = ns per go + Wait = interval / N                                 unit ns/op

import (
	"sync"
	"time"
)

func createJoinLoop(count uint64, ran *uint64) {
	var wg sync.WaitGroup
	for i := uint64(0); i < count; i++ {
		wg.Add(1)
		go func() {
			*ran++ // ordered by wg: Done happens before Wait returns
			wg.Done()
		}()
		wg.Wait()
	}
}

func createJoin(n uint64) {
	var ran uint64
	createJoinLoop(10000, &ran)
	t0 := time.Now()
	createJoinLoop(n, &ran)
	elapsed := time.Since(t0)
	if ran != n+10000 {
		die("create: %d goroutines ran, expected %d", ran, n+10000)
	}
	result("create-join", nsPer(elapsed, n), "ns/op", -1, n)
}
