// A CPU-bound Go program whose CPU profile is tests/data/pprof/go_cpu.pb.gz (see README there).
package main

import (
	"os"
	"runtime/pprof"
)

//go:noinline
func hot(n int) float64 {
	x := 0.0
	for i := 0; i < n; i++ {
		x += float64(i) * 0.5
	}
	return x
}

//go:noinline
func cold(n int) float64 { return hot(n / 4) }

func main() {
	f, _ := os.Create(os.Args[1])
	pprof.StartCPUProfile(f)
	s := 0.0
	for i := 0; i < 40; i++ {
		s += hot(20000000) + cold(20000000)
	}
	pprof.StopCPUProfile()
	f.Close()
	if s < 0 {
		println(s)
	}
}
