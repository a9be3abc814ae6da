package httpapi

import (
	"bufio"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkEventStreamMemory opens event streams over loopback and reports
// what each costs the process while it idles: Go's heap and goroutine
// stacks, and the resident set (Linux), both per stream. The clients are
// bare connections (a socket and a small read buffer), so the figures are
// mostly the server's side. Run with -benchtime=1x.
func BenchmarkEventStreamMemory(b *testing.B) {
	for _, n := range []int{1, 1000} {
		b.Run(fmt.Sprintf("streams=%d", n), func(b *testing.B) {
			h := newHarness(b)
			key := h.account()
			srv := httptest.NewServer(New(h.app, Options{BaseURL: "http://api.test", Streams: StreamLimits{PerKey: n, PerAccount: n}}))
			defer srv.Close()
			request := "GET /api/events/stream/?after=latest HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer " + key + "\r\n\r\n"
			for b.Loop() {
				heap0, rss0 := memoryInUse()
				conns := make([]net.Conn, 0, n)
				for range n {
					c, err := net.Dial("tcp", srv.Listener.Addr().String())
					if err != nil {
						b.Fatal(err)
					}
					conns = append(conns, c)
					if _, err := c.Write([]byte(request)); err != nil {
						b.Fatal(err)
					}
					// The stream is open once its first comment came.
					r := bufio.NewReaderSize(c, 512)
					for {
						line, err := r.ReadString('\n')
						if err != nil {
							b.Fatal(err)
						}
						if strings.HasPrefix(line, ": stream of events") {
							break
						}
						if strings.HasPrefix(line, "HTTP/1.1 ") && !strings.HasPrefix(line, "HTTP/1.1 200") {
							b.Fatalf("stream %d: %s", len(conns), line)
						}
					}
				}
				time.Sleep(100 * time.Millisecond) // let every handler reach its wait
				heap1, rss1 := memoryInUse()
				b.ReportMetric(float64(heap1-heap0)/float64(n), "heap+stack-B/stream")
				b.ReportMetric(float64(rss1-rss0)/float64(n), "rss-B/stream")
				b.ReportMetric(float64(rss1)/(1<<20), "rss-MiB")
				for _, c := range conns {
					c.Close()
				}
			}
		})
	}
}

// memoryInUse is Go's heap and stacks in use after a collection, and the
// process's resident set (0 where /proc is not there).
func memoryInUse() (heapAndStacks, rss int64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if statm, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(statm)); len(f) > 1 {
			pages, _ := strconv.ParseInt(f[1], 10, 64)
			rss = pages * int64(os.Getpagesize())
		}
	}
	return int64(m.HeapInuse + m.StackInuse), rss
}
