package main

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
)

// runConcurrent spreads b.N calls of op over c workers and reports latency
// percentiles and throughput as benchmark metrics.
func runConcurrent(b *testing.B, c int, op func() error) {
	b.Helper()
	var lat latencies
	var wg sync.WaitGroup
	var failures sync.Map
	next := make(chan struct{}, b.N)
	for range b.N {
		next <- struct{}{}
	}
	close(next)
	b.ResetTimer()
	start := time.Now()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				t := time.Now()
				if err := op(); err != nil {
					failures.Store(err.Error(), true)
					continue
				}
				lat.add(time.Since(t))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	failures.Range(func(k, _ any) bool { b.Fatalf("operation failed: %v", k); return false })
	reportLatencies(b, lat.d, elapsed)
}

func reportLatencies(b *testing.B, d []time.Duration, elapsed time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	pct := func(p float64) float64 {
		i := int(float64(len(d))*p+0.5) - 1
		i = max(0, min(i, len(d)-1))
		return float64(d[i].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50_ms")
	b.ReportMetric(pct(0.99), "p99_ms")
	b.ReportMetric(float64(len(d))/elapsed.Seconds(), "ops/s")
	b.ReportMetric(0, "ns/op") // wall time per op is meaningless across workers
}

// BenchmarkIdentityGet measures an authenticated GET /api/identities/{uuid}/
// over real HTTP, at 1 and 16 concurrent clients, on each database.
func BenchmarkIdentityGet(b *testing.B) {
	for _, d := range sqlstoretest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			r := start(b, d, nil)
			mgmt := r.bootstrap("bench@example.com")
			var ident struct{ UUID string }
			r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "bench"}, &ident)
			var key struct{ Key string }
			r.call("POST", "/api/auth/keys/identity/", mgmt, map[string]any{"identity": ident.UUID}, &key)
			path := "/api/identities/" + ident.UUID + "/"
			for _, c := range []int{1, 16} {
				b.Run(fmt.Sprintf("clients=%d", c), func(b *testing.B) {
					runConcurrent(b, c, func() error {
						if s, body := r.callRaw("GET", path, key.Key, nil); s != 200 {
							return fmt.Errorf("status %d: %s", s, body)
						}
						return nil
					})
				})
			}
		})
	}
}
