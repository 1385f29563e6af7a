// The Go side of `schedkit bench runtime`: the same workloads on goroutines, so that Go's
// scheduler (per-P run queues, 10 ms async preemption since 1.14) is measured in the same run.
// Usage: peer <workload> <procs> <duration_ms>; prints one JSON object. The server workload
// (peer server <procs> <duration_ms> <heavy_ms>) prints {"port": N} and serves HTTP/1.1 on
// 127.0.0.1:N until its standard input closes.
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	w := os.Args[1]
	procs, _ := strconv.Atoi(os.Args[2])
	ms, _ := strconv.Atoi(os.Args[3])
	d := time.Duration(ms) * time.Millisecond
	runtime.GOMAXPROCS(procs)
	switch w {
	case "yield":
		var stop atomic.Bool
		var total atomic.Int64
		var wg sync.WaitGroup
		for i := 0; i < 2*procs; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n := int64(0)
				for !stop.Load() {
					runtime.Gosched()
					n++
				}
				total.Add(n)
			}()
		}
		time.Sleep(d)
		stop.Store(true)
		wg.Wait()
		fmt.Printf("{\"value\": %f}\n", float64(total.Load())/d.Seconds()/float64(procs))
	case "pingpong":
		var stop atomic.Bool
		var total atomic.Int64
		var wg sync.WaitGroup
		for p := 0; p < procs; p++ {
			a := make(chan int, 1)
			b := make(chan int, 1)
			wg.Add(1)
			go func() {
				for v := range a {
					b <- v + 1
				}
			}()
			go func() {
				defer wg.Done()
				n := int64(0)
				for !stop.Load() {
					a <- 1
					<-b
					n++
				}
				close(a)
				total.Add(n)
			}()
		}
		time.Sleep(d)
		stop.Store(true)
		wg.Wait()
		rtt := d.Seconds() * float64(procs) / float64(total.Load()) * 1e9
		fmt.Printf("{\"value\": %f}\n", rtt)
	case "chat":
		rooms, users, msgs := 5*procs, 5, 200
		start := time.Now()
		var wg sync.WaitGroup
		for r := 0; r < rooms; r++ {
			inbox := make([]chan int, users)
			for u := range inbox {
				inbox[u] = make(chan int, 64)
			}
			for u := 0; u < users; u++ {
				wg.Add(2)
				go func(me int) {
					defer wg.Done()
					for i := 0; i < msgs*(users-1); i++ {
						<-inbox[me]
					}
				}(u)
				go func(me int) {
					defer wg.Done()
					for m := 0; m < msgs; m++ {
						for o := 0; o < users; o++ {
							if o != me {
								inbox[o] <- m
							}
						}
					}
				}(u)
			}
		}
		wg.Wait()
		total := rooms * users * msgs * (users - 1)
		fmt.Printf("{\"value\": %f}\n", float64(total)/time.Since(start).Seconds())
	case "wakeup":
		// The interactive goroutine runs alone for 300 ms first; only wakeups that end after the
		// hogs started are recorded (as in the Rust runners).
		var stop, loaded atomic.Bool
		lat := []float64{}
		done := make(chan bool)
		go func() {
			for !stop.Load() {
				due := time.Now().Add(2 * time.Millisecond)
				time.Sleep(2 * time.Millisecond)
				if loaded.Load() {
					lat = append(lat, float64(time.Since(due).Nanoseconds()))
				}
			}
			done <- true
		}()
		time.Sleep(300 * time.Millisecond)
		var wg sync.WaitGroup
		for i := 0; i < 2*procs; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				x := 0
				for !stop.Load() {
					x++
				}
				_ = x
			}()
		}
		loaded.Store(true)
		time.Sleep(d)
		stop.Store(true)
		wg.Wait()
		<-done
		if len(lat) == 0 {
			lat = append(lat, float64(d.Nanoseconds()))
		}
		sort.Float64s(lat)
		q := func(p float64) float64 { return lat[int(p*float64(len(lat)-1))] }
		fmt.Printf("{\"p50\": %f, \"p99\": %f, \"max\": %f, \"samples\": %d}\n", q(0.5), q(0.99), lat[len(lat)-1], len(lat))
	case "spawn":
		n := 20000
		start := time.Now()
		for i := 0; i < n; i++ {
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { wg.Done() }()
			wg.Wait()
		}
		fmt.Printf("{\"value\": %f}\n", float64(time.Since(start).Nanoseconds())/float64(n))
	case "server":
		heavyMs, _ := strconv.Atoi(os.Args[4])
		// Rounds of burn that take heavyMs on this core: the fastest of three probes.
		probe := uint64(1 << 20)
		best := time.Hour
		for i := 0; i < 3; i++ {
			t := time.Now()
			sink += burn(probe)
			if e := time.Since(t); e < best {
				best = e
			}
		}
		iters := uint64(float64(probe) * float64(heavyMs) / 1e3 / best.Seconds())
		mux := http.NewServeMux()
		mux.HandleFunc("/short", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("ok"))
		})
		mux.HandleFunc("/heavy", func(w http.ResponseWriter, r *http.Request) {
			// In the handler's goroutine: Go has no lower priority to give it.
			sink += burn(iters)
			w.Write([]byte("ok"))
		})
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		go http.Serve(l, mux)
		fmt.Printf("{\"port\": %d}\n", l.Addr().(*net.TCPAddr).Port)
		io.ReadAll(os.Stdin)
	default:
		fmt.Fprintf(os.Stderr, "unknown workload %s\n", w)
		os.Exit(2)
	}
}

var sink uint64

// burn is the heavy request's work, the same integer mix as the Rust runners'.
func burn(iters uint64) uint64 {
	x := uint64(0x9e3779b97f4a7c15)
	for i := uint64(0); i < iters; i++ {
		x = (x ^ i) * 0xff51afd7ed558ccd
		x ^= x >> 29
	}
	return x
}
