package mediastream_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/callsign/callsign/adapters/mediastream"
)

// benchServerEnv, set to the agent's URL, makes the test binary the
// benchmark's media endpoint: the bridge alone in a process, so its RSS
// and CPU are measured apart from the simulated provider and agent.
const benchServerEnv = "MEDIASTREAM_BENCH_AGENT"

func serveBenchMedia(agentURL string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Println(l.Addr())
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); os.Exit(0) }() // the parent's end
	quiet := slog.New(slog.DiscardHandler)
	_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stats" {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			fmt.Fprintln(w, ms.NumGC, ms.Mallocs)
			return
		}
		provider, err := mediastream.Accept(w, r)
		if err != nil {
			return
		}
		agent, err := mediastream.DialAgent(context.Background(), agentURL, mediastream.DialOptions{Secrets: []string{secret}})
		if err != nil {
			provider.CloseNow()
			return
		}
		mediastream.Bridge(context.Background(), provider, agent, mediastream.BridgeOptions{Log: quiet})
	}))
}

// BenchmarkBridge: 1, 10 and 100 calls at the real rate (50 frames a
// second each way: the provider's tone, the agent's echo) through a bridge
// in its own process, for MEDIASTREAM_BENCH_SECONDS (default 5) each.
//
// Latency is a frame's time from just before the provider's write to just
// after the agent's read: the bridge's read, check, queue and write, two
// loopback hops, and the wake-up of the simulated agent. The simulated
// provider and agent (in this process, on the same CPUs) send prepared
// bytes and find the send time in what they read without decoding JSON or
// base64, so that their own work inflates the figure as little as it can.
// MEDIASTREAM_BENCH_DIRECT=1 connects them without the bridge: one hop,
// the harness alone, its own floor.
//
// Over the steady part, per call: the bridge process's RSS and CPU (and
// the CPU of the simulated provider and agent, which share the machine);
// per frame relayed (each way counts, at the nominal 100 a second a call):
// its heap allocations, read and write system calls and context switches;
// and its GC cycles a second.
func BenchmarkBridge(b *testing.B) {
	seconds, _ := strconv.Atoi(os.Getenv("MEDIASTREAM_BENCH_SECONDS"))
	if seconds < 3 { // a second to ramp up and one to end around the steady part
		seconds = 5
	}
	d := time.Duration(seconds) * time.Second
	for _, calls := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("calls=%d", calls), func(b *testing.B) {
			for range b.N {
				benchCalls(b, calls, d)
			}
		})
	}
}

// The provider's frames, with the send time (Unix ns) as the chunk, and
// the agent's echo.
var (
	benchPayload     = base64.StdEncoding.EncodeToString(mediastream.Tone440(20 * time.Millisecond))
	benchChunk       = []byte(`"chunk":"`)
	benchEcho        = []byte(`{"event":"media","streamSid":"MZ","media":{"payload":"` + benchPayload + `"}}`)
	benchMediaPrefix = []byte(`{"event":"media"`)
	benchStopPrefix  = []byte(`{"event":"stop"`)
)

func benchCalls(b *testing.B, calls int, d time.Duration) {
	var mu sync.Mutex
	var oneWay []time.Duration
	var agents sync.WaitGroup // each call's agent, until it has kept its figures
	agents.Add(calls)
	agentSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer agents.Done()
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		got := make([]time.Duration, 0, int(d/(20*time.Millisecond)))
		defer func() { mu.Lock(); oneWay = append(oneWay, got...); mu.Unlock() }()
		buf := make([]byte, mediastream.MaxMessageBytes)
		for {
			data, err := readInto(c, buf)
			now := time.Now().UnixNano()
			if err != nil || bytes.HasPrefix(data, benchStopPrefix) {
				return
			}
			if !bytes.HasPrefix(data, benchMediaPrefix) {
				continue
			}
			if i := bytes.Index(data, benchChunk); i >= 0 {
				rest := data[i+len(benchChunk):]
				if sent, err := strconv.ParseInt(string(rest[:bytes.IndexByte(rest, '"')]), 10, 64); err == nil {
					got = append(got, time.Duration(now-sent))
				}
			}
			if c.Write(context.Background(), websocket.MessageText, benchEcho) != nil {
				return
			}
		}
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = agentSrv.Serve(l) }()
	defer agentSrv.Close()

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), benchServerEnv+"=ws://"+l.Addr().String()+"/agent")
	stdin, _ := child.StdinPipe()
	stdout, _ := child.StdoutPipe()
	if err := child.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { stdin.Close(); _ = child.Wait() }()
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	addr = strings.TrimSpace(addr)
	mediaURL := "ws://" + addr + "/media"
	if os.Getenv("MEDIASTREAM_BENCH_DIRECT") != "" { // the harness's floor: no bridge between
		mediaURL = "ws://" + l.Addr().String() + "/agent"
	}
	pid := child.Process.Pid
	rssBefore := procField(b, pid, "status", "VmRSS:")

	b.ResetTimer()
	var wg sync.WaitGroup
	var echoes, sent sync.Map
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(rand.N(20 * time.Millisecond)) // calls are not in step
			s, e := benchProvider(b, mediaURL, i, d)
			sent.Store(i, s)
			echoes.Store(i, e)
		}()
	}
	// the steady part: all calls up, until a second before the end
	time.Sleep(time.Second)
	before, harnessBefore := childCounters(b, addr, pid), cpuTicks(b, os.Getpid())
	steadyStart := time.Now()
	time.Sleep(d - 2*time.Second)
	steady := time.Since(steadyStart)
	after, harnessAfter := childCounters(b, addr, pid), cpuTicks(b, os.Getpid())
	rssDuring := procField(b, pid, "status", "VmRSS:")
	wg.Wait()
	agentsDone := make(chan struct{})
	go func() { agents.Wait(); close(agentsDone) }()
	select {
	case <-agentsDone:
	case <-time.After(5 * time.Second):
		b.Fatal("an agent did not get its stop")
	}
	b.StopTimer()
	agentSrv.Close()

	var framesSent, framesBack int
	sent.Range(func(_, v any) bool { framesSent += v.(int); return true })
	echoes.Range(func(_, v any) bool { framesBack += v.(int); return true })
	mu.Lock()
	slices.Sort(oneWay)
	lat := oneWay
	mu.Unlock()
	if len(lat) == 0 {
		b.Fatal("no frame reached the agent")
	}
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	frames := steady.Seconds() * float64(calls) * 100 // relayed, both ways
	b.ReportMetric(pct(0.50), "p50-us")
	b.ReportMetric(pct(0.99), "p99-us")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-us")
	b.ReportMetric(float64(rssDuring-rssBefore)/float64(calls), "rss-KB/call")
	b.ReportMetric(float64(rssDuring)/1024, "rss-MB")
	b.ReportMetric(float64(after.cpuTicks-before.cpuTicks)*10/steady.Seconds()/float64(calls), "cpu-ms/s/call")
	b.ReportMetric(float64(harnessAfter-harnessBefore)*10/steady.Seconds()/float64(calls), "harness-cpu-ms/s/call")
	b.ReportMetric(float64(after.mallocs-before.mallocs)/frames, "allocs/frame")
	b.ReportMetric(float64(after.gcs-before.gcs)/steady.Seconds(), "gc/s")
	b.ReportMetric(float64(after.syscalls-before.syscalls)/frames, "rw-syscalls/frame")
	b.ReportMetric(float64(after.switches-before.switches)/frames, "ctxsw/frame")
	b.ReportMetric(float64(framesSent-len(lat)), "frames-lost")
	b.ReportMetric(float64(framesSent-framesBack), "echoes-lost")
}

// benchProvider plays one call at the real rate, the send time in each
// frame's chunk; it returns the frames sent and the echoes received.
func benchProvider(b *testing.B, url string, call int, d time.Duration) (int, int) {
	c, _, err := websocket.Dial(context.Background(), url, nil)
	if err != nil {
		b.Error(err)
		return 0, 0
	}
	defer c.CloseNow()
	sid := fmt.Sprintf("MZ%032d", call)
	var echoes int
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, mediastream.MaxMessageBytes)
		for {
			if _, err := readInto(c, buf); err != nil {
				return
			}
			echoes++
		}
	}()
	send := func(m []byte) bool { return c.Write(context.Background(), websocket.MessageText, m) == nil }
	send([]byte(twilioConnected))
	start, _ := json.Marshal(mediastream.Message{Event: mediastream.EventStart, SequenceNumber: "1", StreamSid: sid, Start: &mediastream.Start{StreamSid: sid,
		CallSid: "CA1", Tracks: []string{"inbound"}, MediaFormat: mediastream.PhoneFormat}})
	send(start)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	frames := int(d / (20 * time.Millisecond))
	sent := 0
	var frame []byte
	for i := range frames {
		<-tick.C
		frame = append(frame[:0], `{"event":"media","sequenceNumber":"`...)
		frame = strconv.AppendInt(frame, int64(i+2), 10)
		frame = append(frame, `","streamSid":"`+sid+`","media":{"track":"inbound","chunk":"`...)
		frame = strconv.AppendInt(frame, time.Now().UnixNano(), 10)
		frame = append(frame, `","timestamp":"`...)
		frame = strconv.AppendInt(frame, int64(i*20), 10)
		frame = append(frame, `","payload":"`+benchPayload+`"}}`...)
		if !send(frame) {
			break
		}
		sent++
	}
	time.Sleep(200 * time.Millisecond) // the last echoes
	send([]byte(`{"event":"stop","streamSid":"` + sid + `","stop":{"callSid":"CA1"}}`))
	_ = c.Close(websocket.StatusNormalClosure, "")
	<-done
	return sent, echoes
}

// counters are the bridge process's, cumulative.
type counters struct{ cpuTicks, gcs, mallocs, syscalls, switches int64 }

func childCounters(b *testing.B, addr string, pid int) counters {
	res, err := http.Get("http://" + addr + "/stats")
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	var c counters
	if _, err := fmt.Fscan(res.Body, &c.gcs, &c.mallocs); err != nil {
		b.Fatal(err)
	}
	c.cpuTicks = cpuTicks(b, pid)
	c.syscalls = procField(b, pid, "io", "syscr:") + procField(b, pid, "io", "syscw:")
	threads, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range threads { // a process's status counts its first thread's alone
		status := "task/" + t.Name() + "/status"
		c.switches += procField(b, pid, status, "voluntary_ctxt_switches:") + procField(b, pid, status, "nonvoluntary_ctxt_switches:")
	}
	return c
}

// procField is a number from /proc/{pid}/{file}: the first after name.
func procField(b *testing.B, pid int, file, name string) int64 {
	text, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(text)) {
		if rest, ok := strings.CutPrefix(line, name); ok {
			n, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return n
		}
	}
	b.Fatalf("no %s in /proc/%d/%s", name, pid, file)
	return 0
}

// cpuTicks is the process's user and system time in clock ticks (1/100 s).
func cpuTicks(b *testing.B, pid int) int64 {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64) // fields 14 and 15 of stat(5)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return utime + stime
}

// BenchmarkRelay is the bridge's cost per frame: each op is one media
// frame from the provider to the agent and its echo back, one frame in
// flight, through a bridge in this process on loopback. The simulated
// provider and agent send prepared bytes and read into reused buffers, so
// they allocate nothing of their own: allocs/op is the bridge's (and the
// websocket library's under it). "direct" is the same provider and agent
// without the bridge: the harness's own floor; "bridge-recorded" records
// the call too.
func BenchmarkRelay(b *testing.B) {
	frame := []byte(`{"event":"media","sequenceNumber":"2","streamSid":"MZ1","media":{"track":"inbound","chunk":"1","timestamp":"0","payload":"` + benchPayload + `"}}`)
	agentURL := listen(b, func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		buf := make([]byte, mediastream.MaxMessageBytes)
		for {
			data, err := readInto(c, buf)
			if err != nil {
				return
			}
			if bytes.HasPrefix(data, benchMediaPrefix) && c.Write(context.Background(), websocket.MessageText, benchEcho) != nil {
				return
			}
		}
	})
	for _, via := range []string{"direct", "bridge", "bridge-recorded"} {
		b.Run(via, func(b *testing.B) {
			url := agentURL
			var rec *mediastream.Recorder
			if via == "bridge-recorded" {
				f, err := os.Create(b.TempDir() + "/call.wav")
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				if rec, err = mediastream.NewRecorder(f, 0); err != nil {
					b.Fatal(err)
				}
			}
			if via != "direct" {
				url = listen(b, func(w http.ResponseWriter, r *http.Request) {
					provider, err := mediastream.Accept(w, r)
					if err != nil {
						return
					}
					agent, err := mediastream.DialAgent(context.Background(), agentURL, mediastream.DialOptions{})
					if err != nil {
						provider.CloseNow()
						return
					}
					mediastream.Bridge(context.Background(), provider, agent, mediastream.BridgeOptions{Recorder: rec, Log: slog.New(slog.DiscardHandler)})
				})
			}
			c, _, err := websocket.Dial(context.Background(), url, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer c.CloseNow()
			for _, m := range []string{twilioConnected, `{"event":"start","sequenceNumber":"1","streamSid":"MZ1","start":{"streamSid":"MZ1","callSid":"CA1","tracks":["inbound"],"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}}}`} {
				if err := c.Write(context.Background(), websocket.MessageText, []byte(m)); err != nil {
					b.Fatal(err)
				}
			}
			buf := make([]byte, mediastream.MaxMessageBytes)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := c.Write(context.Background(), websocket.MessageText, frame); err != nil {
					b.Fatal(err)
				}
				if _, err := readInto(c, buf); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			_ = c.Write(context.Background(), websocket.MessageText, []byte(`{"event":"stop","streamSid":"MZ1","stop":{}}`))
			_ = c.Close(websocket.StatusNormalClosure, "")
		})
	}
}

// listen serves h on loopback until the benchmark ends; it returns the
// WebSocket URL.
func listen(b *testing.B, h http.HandlerFunc) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(l) }()
	b.Cleanup(func() { _ = srv.Close() })
	return "ws://" + l.Addr().String() + "/"
}

// readInto reads one message into buf, without allocating.
func readInto(c *websocket.Conn, buf []byte) ([]byte, error) {
	_, r, err := c.Reader(context.Background())
	if err != nil {
		return nil, err
	}
	n, err := io.ReadFull(r, buf)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = nil
	}
	return buf[:n], err
}
