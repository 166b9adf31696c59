package main

// rss: ursa_rss_blocked.c with goroutines: K goroutines that each signal a WaitGroup and block
// receiving on one shared channel (never closed); main waits for all K, then reads VmRSS.
// A collection runs before the first reading, so the heap starts from its live data.
//   value = (VmRSS after - VmRSS before) / K                                unit KiB/thread
// main then exits with the goroutines blocked.

import (
	"os"
	"runtime"
	"sync"
)

func rssBlocked(k uint64) {
	gate := make(chan struct{}) // never closed
	var ready sync.WaitGroup
	runtime.GC()
	before := vmrssKiB()
	ready.Add(int(k))
	for i := uint64(0); i < k; i++ {
		go func() {
			ready.Done()
			<-gate
		}()
	}
	ready.Wait()
	after := vmrssKiB()
	result(countName("rss-blocked", k), float64(after-before)/float64(k), "KiB/thread", -1, k)
	os.Exit(0)
}
