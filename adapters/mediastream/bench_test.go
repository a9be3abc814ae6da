package mediastream_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
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
	_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		provider, err := mediastream.Accept(w, r)
		if err != nil {
			return
		}
		agent, err := mediastream.DialAgent(context.Background(), agentURL, mediastream.DialOptions{Secrets: []string{secret}})
		if err != nil {
			provider.CloseNow()
			return
		}
		mediastream.Bridge(context.Background(), provider, agent, mediastream.BridgeOptions{})
	}))
}

// BenchmarkBridge: 1, 10 and 100 calls at the real rate (50 frames a
// second each way: the provider's tone, the agent's echo) through a bridge
// in its own process, for MEDIASTREAM_BENCH_SECONDS (default 5) each.
// Latency is a frame's time from the provider's write to the agent's read
// (two loopback hops and the bridge); RSS and CPU are the bridge
// process's, per call, over the steady part.
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

func benchCalls(b *testing.B, calls int, d time.Duration) {
	var mu sync.Mutex
	var oneWay []time.Duration
	agentSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		var got []time.Duration
		defer func() { mu.Lock(); oneWay = append(oneWay, got...); mu.Unlock() }()
		for {
			_, data, err := c.Read(context.Background())
			if err != nil {
				return
			}
			m, err := mediastream.ParseMessage(data)
			if err != nil || m.Event == mediastream.EventStop {
				return
			}
			if m.Event != mediastream.EventMedia {
				continue
			}
			if sent, err := strconv.ParseInt(m.Media.Chunk, 10, 64); err == nil {
				got = append(got, time.Duration(time.Now().UnixNano()-sent))
			}
			echo, _ := json.Marshal(mediastream.Message{Event: mediastream.EventMedia, StreamSid: m.StreamSid, Media: &mediastream.Media{Payload: m.Media.Payload}})
			if c.Write(context.Background(), websocket.MessageText, echo) != nil {
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
	mediaURL := "ws://" + strings.TrimSpace(addr) + "/media"
	rssBefore := rssKB(b, child.Process.Pid)

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
	cpuStart, steadyStart := cpuTicks(b, child.Process.Pid), time.Now()
	time.Sleep(d - 2*time.Second)
	cpuTicksUsed, steady := cpuTicks(b, child.Process.Pid)-cpuStart, time.Since(steadyStart)
	rssDuring := rssKB(b, child.Process.Pid)
	wg.Wait()
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
	b.ReportMetric(pct(0.50), "p50-us")
	b.ReportMetric(pct(0.99), "p99-us")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-us")
	b.ReportMetric(float64(rssDuring-rssBefore)/float64(calls), "rss-KB/call")
	b.ReportMetric(float64(rssDuring)/1024, "rss-MB")
	b.ReportMetric(float64(cpuTicksUsed)*10/steady.Seconds()/float64(calls), "cpu-ms/s/call")
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
		for {
			if _, _, err := c.Read(context.Background()); err != nil {
				return
			}
			echoes++
		}
	}()
	send := func(m mediastream.Message) bool {
		data, _ := json.Marshal(m)
		return c.Write(context.Background(), websocket.MessageText, data) == nil
	}
	send(mediastream.Message{Event: mediastream.EventConnected, Protocol: "Call", Version: "1.0.0"})
	send(mediastream.Message{Event: mediastream.EventStart, SequenceNumber: "1", StreamSid: sid, Start: &mediastream.Start{StreamSid: sid,
		CallSid: "CA1", Tracks: []string{"inbound"}, MediaFormat: mediastream.PhoneFormat}})
	payload := base64.StdEncoding.EncodeToString(mediastream.Tone440(20 * time.Millisecond))
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	frames := int(d / (20 * time.Millisecond))
	sent := 0
	for i := range frames {
		<-tick.C
		if !send(mediastream.Message{Event: mediastream.EventMedia, SequenceNumber: strconv.Itoa(i + 2), StreamSid: sid,
			Media: &mediastream.Media{Track: "inbound", Chunk: strconv.FormatInt(time.Now().UnixNano(), 10), Timestamp: strconv.Itoa(i * 20), Payload: payload}}) {
			break
		}
		sent++
	}
	time.Sleep(200 * time.Millisecond) // the last echoes
	send(mediastream.Message{Event: mediastream.EventStop, StreamSid: sid, Stop: &mediastream.Stop{CallSid: "CA1"}})
	_ = c.Close(websocket.StatusNormalClosure, "")
	<-done
	return sent, echoes
}

func rssKB(b *testing.B, pid int) int64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return kb
		}
	}
	b.Fatal("no VmRSS")
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
