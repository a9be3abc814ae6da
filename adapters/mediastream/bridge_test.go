package mediastream_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/callsign/callsign/adapters/mediastream"
	"github.com/callsign/callsign/adapters/mediastream/mediastreamtest"
)

func TestMain(m *testing.M) {
	if agentURL := os.Getenv(benchServerEnv); agentURL != "" {
		serveBenchMedia(agentURL) // the benchmark's bridge, in a process of its own
		return
	}
	goleak.VerifyTestMain(m)
}

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// media is our media endpoint for one call: it accepts the provider,
// dials the agent and bridges them; the call's stats arrive on stats.
type media struct {
	url   string
	stats chan mediastream.Stats
	log   *syncBuffer
}

func serveMedia(t *testing.T, agentURL string, dial mediastream.DialOptions, rec *mediastream.Recorder) *media {
	t.Helper()
	m := &media{stats: make(chan mediastream.Stats, 1), log: &syncBuffer{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		provider, err := mediastream.Accept(w, r)
		if err != nil {
			t.Error(err)
			return
		}
		agent, err := mediastream.DialAgent(context.Background(), agentURL, dial)
		if err != nil {
			t.Error(err)
			provider.CloseNow()
			return
		}
		m.stats <- mediastream.Bridge(context.Background(), provider, agent, mediastream.BridgeOptions{
			CustomParameters: map[string]string{"identity": "id-1", "call": "call-1", "from": "+15005550006", "to": "+15005550001", "direction": "incoming"},
			Recorder:         rec, Log: slog.New(slog.NewTextHandler(m.log, nil))})
	}))
	t.Cleanup(srv.Close)
	m.url = "ws" + strings.TrimPrefix(srv.URL, "http")
	return m
}

// greetedAgent is an agent that reads our connected and start, then does
// as says.
func greetedAgent(says func(ctx context.Context, c *websocket.Conn)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for range 2 { // connected, start
			if _, _, err := c.Read(r.Context()); err != nil {
				return
			}
		}
		says(r.Context(), c)
	})
}

func serveAgent(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/agent?call=1"
}

func TestBridgeEchoesInOrderWithDTMFAndRecording(t *testing.T) {
	agent := &mediastreamtest.EchoAgent{Secret: secret}
	agent.URL = serveAgent(t, agent)
	path := filepath.Join(t.TempDir(), "call.wav")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rec, err := mediastream.NewRecorder(f, 0)
	if err != nil {
		t.Fatal(err)
	}
	m := serveMedia(t, agent.URL, mediastream.DialOptions{Secrets: []string{secret}}, rec)

	// One second at the real rate: the bridge's queues hold a second, so
	// nothing is dropped however the machine is loaded.
	play, err := mediastream.PlayProvider(context.Background(), m.url, nil, mediastream.PlayOptions{CallSID: "CA1", StreamSID: "MZ1",
		AccountSID: "AC1", Duration: time.Second, Digits: "12#", Realtime: true, EchoWait: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	stats := <-m.stats
	<-agent.Done()
	if play.FramesSent != 50 || play.FramesReceived != 50 || play.Marks != 3 {
		t.Errorf("provider side: %+v, want 50 frames out, 50 back, a mark per digit", play)
	}
	if stats.FramesFromCaller != 50 || stats.FramesToCaller != 50 || stats.DTMF != 3 || stats.FramesDropped != 0 ||
		stats.Reason != mediastream.ReasonStop || stats.ConnectedAt.IsZero() {
		t.Errorf("stats = %+v", stats)
	}
	got := agent.Received()
	want := mediastream.Tone440(time.Second)
	if !bytes.Equal(got.Audio, want) || got.Frames != 50 || got.Digits != "12#" || !got.Stopped {
		t.Errorf("agent got %d frames (audio in order: %v), digits %q, stop %v", got.Frames, bytes.Equal(got.Audio, want), got.Digits, got.Stopped)
	}
	s := got.Start
	if s == nil || s.StreamSid != "MZ1" || s.CallSid != "CA1" || s.AccountSid != "" || s.MediaFormat != mediastream.PhoneFormat ||
		s.CustomParameters["identity"] != "id-1" || s.CustomParameters["call"] != "call-1" || s.CustomParameters["direction"] != "incoming" {
		t.Errorf("agent's start = %+v", s)
	}

	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	left, right, err := mediastream.DecodeWAV(raw)
	if err != nil {
		t.Fatal(err)
	}
	var sent []int16
	for _, u := range want {
		sent = append(sent, mediastream.MulawToPCM(u))
	}
	// The caller's frames sit at their timestamps: exactly the input.
	if len(left) < len(sent) || !slices.Equal(left[:len(sent)], sent) {
		t.Errorf("left channel is not the caller's audio sample by sample (%d samples)", len(left))
	}
	// The echo plays when it came back: the input, after silence.
	if !slices.Equal(nonZero(right), nonZero(sent)) {
		t.Errorf("right channel is not the agent's audio sample by sample")
	}
}

func nonZero(s []int16) []int16 {
	return slices.DeleteFunc(slices.Clone(s), func(v int16) bool { return v == 0 })
}

// A stalled agent, on sockets with small buffers: frames beyond the
// queue's second are dropped and counted, and the call still ends.
func TestBridgeDropsForAStalledAgent(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	accepted := make(chan struct{}, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		accepted <- struct{}{}
		<-release // never reads
	}))
	srv.Listener = smallBuffers{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)
	dial := mediastream.DialOptions{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			_ = c.(*net.TCPConn).SetWriteBuffer(4096)
		}
		return c, err
	}}
	m := serveMedia(t, "ws"+strings.TrimPrefix(srv.URL, "http"), dial, nil)

	const frames = 3000
	play, err := mediastream.PlayProvider(context.Background(), m.url, nil, mediastream.PlayOptions{StreamSID: "MZ1", Duration: frames * 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	stats := <-m.stats
	<-accepted
	// At most the queue (50) and what a few KB of socket buffers hold
	// can have been taken; the rest was dropped, not queued.
	if play.FramesSent != frames || stats.FramesFromCaller != frames || stats.FramesDropped < frames-50-250 || stats.Reason != mediastream.ReasonStop {
		t.Errorf("sent %d, stats %+v", play.FramesSent, stats)
	}
}

type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		_ = c.(*net.TCPConn).SetReadBuffer(4096)
	}
	return c, err
}

// rawProvider dials the media endpoint and sends connected and start; it
// reads all the time, as a provider does: messages arrive on got, which is
// closed when the socket is.
func rawProvider(t *testing.T, url string) (c *websocket.Conn, got <-chan []byte) {
	t.Helper()
	c, _, err := websocket.Dial(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	for _, m := range []string{twilioConnected, `{"event":"start","sequenceNumber":"1","streamSid":"MZ1","start":{"streamSid":"MZ1","callSid":"CA1","tracks":["inbound"],"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}}}`} {
		if err := c.Write(context.Background(), websocket.MessageText, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	messages := make(chan []byte, 100)
	go func() {
		defer close(messages)
		for {
			_, data, err := c.Read(context.Background())
			if err != nil {
				return
			}
			messages <- data
		}
	}()
	return c, messages
}

// closed waits for the provider's socket to close.
func closed(got <-chan []byte) {
	for range got {
	}
}

const twilioConnected = `{"event":"connected","protocol":"Call","version":"1.0.0"}`

func TestBridgeEndsOnAnOversizedProviderMessage(t *testing.T) {
	agent := &mediastreamtest.EchoAgent{}
	m := serveMedia(t, serveAgent(t, agent), mediastream.DialOptions{}, nil)
	c, got := rawProvider(t, m.url)
	big := `{"event":"media","streamSid":"MZ1","media":{"payload":"` + strings.Repeat("A", mediastream.MaxMessageBytes) + `"}}`
	_ = c.Write(context.Background(), websocket.MessageText, []byte(big))
	stats := <-m.stats
	<-agent.Done()
	if stats.Reason != mediastream.ReasonProviderMalformed || !agent.Received().Stopped {
		t.Errorf("reason %q, agent stopped %v", stats.Reason, agent.Received().Stopped)
	}
	if line := m.log.String(); !strings.Contains(line, "over the limit") || !strings.Contains(line, "side=provider") {
		t.Errorf("log: %s", line)
	}
	closed(got)
}

func TestBridgeEndsOnMalformedAgentJSON(t *testing.T) {
	agentURL := serveAgent(t, greetedAgent(func(ctx context.Context, c *websocket.Conn) {
		_ = c.Write(ctx, websocket.MessageText, []byte(`{"event":"media","media":{"payload":`))
		_, _, _ = c.Read(ctx) // until the bridge closes
	}))
	m := serveMedia(t, agentURL, mediastream.DialOptions{}, nil)
	_, got := rawProvider(t, m.url)
	stats := <-m.stats
	if stats.Reason != mediastream.ReasonAgentMalformed {
		t.Errorf("reason %q", stats.Reason)
	}
	if line := m.log.String(); !strings.Contains(line, "malformed message") || !strings.Contains(line, "side=agent") {
		t.Errorf("log: %s", line)
	}
	closed(got)
}

func TestBridgeEndsWithItsContext(t *testing.T) {
	agent := &mediastreamtest.EchoAgent{}
	agentURL := serveAgent(t, agent)
	ctx, hangUp := context.WithCancel(context.Background())
	stats := make(chan mediastream.Stats, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		provider, _ := mediastream.Accept(w, r)
		a, err := mediastream.DialAgent(context.Background(), agentURL, mediastream.DialOptions{})
		if err != nil {
			t.Error(err)
			provider.CloseNow()
			return
		}
		stats <- mediastream.Bridge(ctx, provider, a, mediastream.BridgeOptions{})
	}))
	defer srv.Close()
	c, got := rawProvider(t, "ws"+strings.TrimPrefix(srv.URL, "http"))
	_ = c.Write(context.Background(), websocket.MessageText, []byte(`{"event":"dtmf","streamSid":"MZ1","dtmf":{"track":"inbound_track","digit":"5"}}`))
	if mark := <-got; !strings.Contains(string(mark), `{"event":"mark","streamSid":"MZ1","mark":{"name":"5"}}`) {
		t.Fatalf("the agent's mark: %s", mark)
	}
	hangUp()
	if s := <-stats; s.Reason != mediastream.ReasonContext || s.DTMF != 1 {
		t.Errorf("stats %+v", s)
	}
	<-agent.Done()
	if !agent.Received().Stopped {
		t.Error("the agent was not sent stop")
	}
	closed(got)
}

func TestDialAgentSignsTheUpgrade(t *testing.T) {
	agent := &mediastreamtest.EchoAgent{Secret: secret}
	agent.URL = serveAgent(t, agent)
	// rotated: the old secret's signature alongside the new
	c, err := mediastream.DialAgent(context.Background(), agent.URL, mediastream.DialOptions{Secrets: []string{"whsec_bmV3IHNlY3JldCBieXRlcw==", secret}})
	if err != nil {
		t.Fatal(err)
	}
	c.Close(websocket.StatusNormalClosure, "")
	<-agent.Done()

	forged := &mediastreamtest.EchoAgent{Secret: secret}
	forged.URL = serveAgent(t, forged)
	_, err = mediastream.DialAgent(context.Background(), forged.URL, mediastream.DialOptions{Secrets: []string{"whsec_bmV3IHNlY3JldCBieXRlcw=="}})
	var de *mediastream.DialError
	if !errors.As(err, &de) || de.Category != "status 403" {
		t.Errorf("wrong secret: %v", err)
	}
}

func TestDialAgentNamesFailures(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := l.Addr().String()
	l.Close()
	for url, want := range map[string]string{"http://127.0.0.1/x": "invalid url", "ws://" + closedPort + "/": "connect"} {
		_, err := mediastream.DialAgent(context.Background(), url, mediastream.DialOptions{})
		var de *mediastream.DialError
		if !errors.As(err, &de) || de.Category != want {
			t.Errorf("%s: %v, want %q", url, err, want)
		}
	}
}

func TestVerifyAgentRequest(t *testing.T) {
	const url = "wss://agent.example/stream"
	now := time.Unix(1_800_000_000, 0)
	r := httptest.NewRequest(http.MethodGet, "/stream", nil)
	r.Header = mediastream.SignedUpgradeHeader([]string{secret}, url, now)
	if err := mediastream.VerifyAgentRequest(r, url, secret, now.Add(time.Minute)); err != nil {
		t.Errorf("signed: %v", err)
	}
	for name, err := range map[string]error{
		"other URL":    mediastream.VerifyAgentRequest(r, url+"?x=1", secret, now),
		"too old":      mediastream.VerifyAgentRequest(r, url, secret, now.Add(6*time.Minute)),
		"other secret": mediastream.VerifyAgentRequest(r, url, "whsec_bmV3IHNlY3JldCBieXRlcw==", now),
	} {
		if err == nil {
			t.Errorf("%s: verified", name)
		}
	}
}

// The start the agent gets is Twilio's shape: the fields an agent written
// for Twilio reads.
func TestAgentStartIsTwilioShaped(t *testing.T) {
	starts := make(chan map[string]any, 1)
	agentURL := serveAgent(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		_, connected, _ := c.Read(r.Context())
		_, data, _ := c.Read(r.Context())
		if string(connected) != twilioConnected {
			t.Errorf("connected = %s", connected)
		}
		var start map[string]any
		_ = json.Unmarshal(data, &start)
		starts <- start
		_, _, _ = c.Read(r.Context())
	}))
	m := serveMedia(t, agentURL, mediastream.DialOptions{}, nil)
	c, got := rawProvider(t, m.url)
	_ = c.Write(context.Background(), websocket.MessageText, []byte(`{"event":"stop","sequenceNumber":"2","streamSid":"MZ1","stop":{"callSid":"CA1"}}`))
	<-m.stats
	closed(got)
	start := <-starts
	s, _ := start["start"].(map[string]any)
	if start["event"] != "start" || start["sequenceNumber"] != "1" || start["streamSid"] != "MZ1" || s["callSid"] != "CA1" ||
		s["mediaFormat"].(map[string]any)["encoding"] != "audio/x-mulaw" || s["customParameters"].(map[string]any)["to"] != "+15005550001" {
		t.Errorf("start = %v", start)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// An agent that sends three seconds of speech at once, as text-to-speech
// agents do, to a provider that reads all the time: the queue's second is
// no limit on a burst, so every frame reaches the caller and none is
// dropped.
func TestBridgeKeepsAnAgentsBurst(t *testing.T) {
	const calls, burst = 10, 150
	agentURL := serveAgent(t, greetedAgent(func(ctx context.Context, c *websocket.Conn) {
		frame := []byte(`{"event":"media","streamSid":"MZ1","media":{"payload":"` + base64.StdEncoding.EncodeToString(make([]byte, 160)) + `"}}`)
		for i := 0; i < burst; i++ {
			if err := c.Write(ctx, websocket.MessageText, frame); err != nil {
				return
			}
		}
		for { // until the bridge closes
			if _, _, err := c.Read(ctx); err != nil {
				return
			}
		}
	}))
	var wg sync.WaitGroup
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := serveMedia(t, agentURL, mediastream.DialOptions{}, nil)
			c, got := rawProvider(t, m.url)
			for heard := 0; heard < burst; heard++ {
				select {
				case <-got:
				case <-time.After(5 * time.Second): // a dropped frame never comes
					t.Errorf("the caller heard %d of %d frames", heard, burst)
				}
				if t.Failed() {
					break
				}
			}
			_ = c.Write(context.Background(), websocket.MessageText, []byte(`{"event":"stop","streamSid":"MZ1","stop":{}}`))
			if s := <-m.stats; s.FramesToCaller != burst || s.FramesDropped != 0 {
				t.Errorf("stats %+v", s)
			}
			closed(got)
		}()
	}
	wg.Wait()
}
