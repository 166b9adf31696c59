package main

// radix: bench/radix_sort.c (Lesser Bear's parallel radix sort) with goroutines: the same keys
// (2^22 random 32-bit keys from splitmix64, seed 20010101), the same LSD passes of r bits
// (ceil(32 / r) passes), each pass a count phase (goroutine t histograms slice t), the serial
// exclusive prefix sum over (digit, slice) in main, and a scatter phase (goroutine t moves slice
// t, stable), over T = 2^8 slices.  Each parallel phase starts one goroutine per slice and waits
// for them with a sync.WaitGroup: fork-join by creation, as the ursa variant creates and joins
// 2^8 ursa threads per phase.  Each slice's counters start on their own 64-byte line.
//
// Measured: the sort only (keys generated and copied in before the clock).  Checked after each
// sort (exit 1 on failure): sorted, and a permutation of the input (sum and sum of a 64-bit hash).
//   RESULT bench=radix-2^<r> impl=go<P> value=<ms> unit=ms n=<keys> passes=.. phases=.. threads=..

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

const radixMax = 12

type radixSort struct {
	nkeys, nthr  uint32
	src, dst     []uint32
	hist         []uint32 // [digit*nthr + slice]
	local        []uint32 // [slice*stride ...]: a slice's private counters
	shift, radix uint32
	stride       uint32
	bufA, bufB   []uint32
}

func (s *radixSort) bounds(t uint32) (uint32, uint32) {
	return uint32(uint64(t) * uint64(s.nkeys) / uint64(s.nthr)),
		uint32(uint64(t+1) * uint64(s.nkeys) / uint64(s.nthr))
}

func (s *radixSort) countSlice(t uint32) {
	c := s.local[t*s.stride : t*s.stride+s.radix]
	lo, hi := s.bounds(t)
	mask, shift := s.radix-1, s.shift
	for d := range c {
		c[d] = 0
	}
	for _, k := range s.src[lo:hi] {
		c[(k>>shift)&mask]++
	}
	for d := uint32(0); d < s.radix; d++ {
		s.hist[d*s.nthr+t] = c[d]
	}
}

func (s *radixSort) scatterSlice(t uint32) {
	c := s.local[t*s.stride : t*s.stride+s.radix]
	lo, hi := s.bounds(t)
	mask, shift, dst := s.radix-1, s.shift, s.dst
	for d := uint32(0); d < s.radix; d++ {
		c[d] = s.hist[d*s.nthr+t]
	}
	for _, k := range s.src[lo:hi] {
		d := (k >> shift) & mask
		dst[c[d]] = k
		c[d]++
	}
}

func (s *radixSort) prefix() { // the serial part
	var sum uint32
	h := s.hist[:s.radix*s.nthr]
	for i, c := range h {
		h[i] = sum
		sum += c
	}
}

// phase starts one goroutine per slice and waits for them all.
func (s *radixSort) phase(fn func(uint32)) {
	var wg sync.WaitGroup
	wg.Add(int(s.nthr))
	for t := uint32(0); t < s.nthr; t++ {
		go func(t uint32) {
			fn(t)
			wg.Done()
		}(t)
	}
	wg.Wait()
}

// sort sorts bufA (with bufB) by radix 2^r; returns the buffer holding the result.
func (s *radixSort) sort(r uint32) []uint32 {
	passes := (32 + r - 1) / r
	a, b := s.bufA, s.bufB
	s.radix = 1 << r
	s.stride = (s.radix + 15) &^ 15
	for p := uint32(0); p < passes; p++ {
		s.src, s.dst, s.shift = a, b, p*r
		s.phase(s.countSlice)
		s.prefix()
		s.phase(s.scatterSlice)
		a, b = b, a
	}
	return a
}

func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func checksum(k []uint32) (sum, hsum uint64) {
	for _, x := range k {
		sum += uint64(x)
		hsum += mix64(uint64(x) + 0x9e3779b97f4a7c15)
	}
	return
}

func radixUsage(why string) {
	fmt.Fprintf(os.Stderr, "go_peers radix: %s\n%s\n", why, usage)
	os.Exit(2)
}

func radix(args []string) {
	var radices []uint32
	lk, lt := uint64(22), uint64(8)
	if len(args) > 3 {
		radixUsage("too many arguments")
	}
	if len(args) > 0 && args[0] != "all" {
		for _, f := range strings.Split(args[0], ",") {
			x, err := strconv.ParseUint(f, 10, 32)
			if err != nil || x < 1 || x > radixMax || len(radices) == radixMax {
				radixUsage("bad radix list '" + args[0] + "'")
			}
			radices = append(radices, uint32(x))
		}
	} else {
		for r := uint32(1); r <= 10; r++ {
			radices = append(radices, r)
		}
	}
	var err error
	if len(args) > 1 {
		if lk, err = strconv.ParseUint(args[1], 10, 32); err != nil {
			radixUsage("bad log2 keys '" + args[1] + "'")
		}
	}
	if len(args) > 2 {
		if lt, err = strconv.ParseUint(args[2], 10, 32); err != nil {
			radixUsage("bad log2 goroutines '" + args[2] + "'")
		}
	}
	if lk < 1 || lk > 28 || lt > 14 || lt > lk {
		radixUsage("sizes out of range")
	}
	s := &radixSort{nkeys: 1 << lk, nthr: 1 << lt}
	input := make([]uint32, s.nkeys)
	s.bufA = make([]uint32, s.nkeys)
	s.bufB = make([]uint32, s.nkeys)
	s.hist = make([]uint32, uint64(s.nthr)<<radixMax)
	s.local = make([]uint32, uint64(s.nthr)<<radixMax) // > 32 KiB: page-aligned by the allocator
	x := uint64(20010101)                              // splitmix64, fixed seed
	for i := range input {
		x += 0x9e3779b97f4a7c15
		input[i] = uint32(mix64(x) >> 32)
	}
	inSum, inHsum := checksum(input)
	// make zeroes the buffers; touch every page once, outside the clock, as radix_sort.c does
	for _, buf := range [][]uint32{s.bufA, s.bufB, s.hist, s.local} {
		for i := 0; i < len(buf); i += 1024 {
			buf[i] = 0
		}
	}
	for _, r := range radices {
		passes := (32 + r - 1) / r
		copy(s.bufA, input)
		t0 := time.Now()
		out := s.sort(r)
		elapsed := time.Since(t0)
		for k := 1; k < len(out); k++ {
			if out[k-1] > out[k] {
				die("radix r=%d: not sorted at %d (%d > %d)", r, k, out[k-1], out[k])
			}
		}
		if sum, hsum := checksum(out); sum != inSum || hsum != inHsum {
			die("radix r=%d: the output is not a permutation of the input", r)
		}
		result(fmt.Sprintf("radix-2^%d", r), float64(elapsed.Nanoseconds())/1e6, "ms", -1,
			uint64(s.nkeys), fmt.Sprintf("passes=%d", passes), fmt.Sprintf("phases=%d", 2*passes),
			fmt.Sprintf("threads=%d", s.nthr))
	}
}
