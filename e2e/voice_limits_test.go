package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/callsign/callsign/adapters/mediastream"
	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/twilio/twiliotest"
)

// stalledAgent serves agents that take a call (connected and start) and
// then never read again.
func stalledAgent(t *testing.T) string {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for range 2 {
			if _, _, err := c.Read(context.Background()); err != nil {
				return
			}
		}
		<-release
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // before Close: the handlers return
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/stalled"
}

// settledHeap is the heap in use once it stops changing (at most 2 s):
// a pause lets the service take what was sent.
func settledHeap() uint64 {
	var last uint64
	for range 20 {
		time.Sleep(100 * time.Millisecond)
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		if d := int64(m.HeapAlloc) - int64(last); d > -64<<10 && d < 64<<10 {
			return m.HeapAlloc
		}
		last = m.HeapAlloc
	}
	return last
}

// rawCaller is Twilio's side of a media stream, played a batch at a time.
type rawCaller struct {
	t      *testing.T
	c      *websocket.Conn
	seq    int
	frames int
	read   chan struct{}
}

// dialMedia opens a call's media stream as Twilio does (signed), sends
// connected and start, and reads all the time.
func dialMedia(t *testing.T, mediaURL, callSID string) *rawCaller {
	t.Helper()
	c, _, err := websocket.Dial(context.Background(), mediaURL, &websocket.DialOptions{HTTPHeader: twilioSigned(mediaURL)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	r := &rawCaller{t: t, c: c, read: make(chan struct{})}
	go func() {
		defer close(r.read)
		for {
			if _, _, err := c.Read(context.Background()); err != nil {
				return
			}
		}
	}()
	r.send(mediastream.Message{Event: mediastream.EventConnected, Protocol: "Call", Version: "1.0.0"})
	r.send(mediastream.Message{Event: mediastream.EventStart, Start: &mediastream.Start{AccountSid: twiliotest.AccountSID,
		StreamSid: "MZ" + callSID, CallSid: callSID, Tracks: []string{"inbound"}, MediaFormat: mediastream.PhoneFormat}})
	return r
}

func (r *rawCaller) send(m mediastream.Message) {
	r.t.Helper()
	if m.Event != mediastream.EventConnected {
		r.seq++
		m.SequenceNumber = strconv.Itoa(r.seq)
	}
	data, _ := json.Marshal(m)
	if err := r.c.Write(context.Background(), websocket.MessageText, data); err != nil {
		r.t.Fatalf("the caller's frame %d: %v", r.frames, err)
	}
}

// media sends n frames of a tone.
func (r *rawCaller) media(n int) {
	r.t.Helper()
	payload := base64.StdEncoding.EncodeToString(mediastream.Tone440(20 * time.Millisecond))
	for range n {
		r.send(mediastream.Message{Event: mediastream.EventMedia, Media: &mediastream.Media{Track: "inbound",
			Chunk: strconv.Itoa(r.frames + 1), Timestamp: strconv.Itoa(r.frames * 20), Payload: payload}})
		r.frames++
	}
}

// stop ends the call as Twilio does, and waits for our side to close.
func (r *rawCaller) stop() {
	r.t.Helper()
	r.send(mediastream.Message{Event: mediastream.EventStop, Stop: &mediastream.Stop{AccountSid: twiliotest.AccountSID}})
	_ = r.c.Close(websocket.StatusNormalClosure, "")
	<-r.read
}

// callOf is the newest call of an identity.
func callOf(r *running, key, identity string) streamedCall {
	var page struct{ Results []streamedCall }
	r.call("GET", "/api/calls/?limit=1&identity="+identity, key, nil, &page)
	if len(page.Results) == 0 {
		return streamedCall{}
	}
	return page.Results[0]
}

// TestStreamedCallWithAStalledAgent: an agent takes the call, then never
// reads again, and the caller sends ten minutes of frames as fast as the
// socket takes them. Callsign reads every frame, drops what the agent
// cannot take (counted in frames_dropped) rather than queueing it, so the
// live heap stays flat, and ends the call cleanly at the caller's stop;
// a second call, at the real rate all along, is echoed whole.
func TestStreamedCallWithAStalledAgent(t *testing.T) {
	// Not parallel: the live heap is measured with no other test running.
	forEachDialectInTurn(t, func(t *testing.T, d sqlstore.Dialect) {
		v := startTwilioVoice(t, d, nil)
		mgmt := v.bootstrap("stalled@example.com")
		var ann, bob struct{ UUID, Phone string }
		v.call("POST", "/api/identities/", mgmt, map[string]any{"name": "ann", "provision_phone": true}, &ann)
		v.call("POST", "/api/identities/", mgmt, map[string]any{"name": "bob", "provision_phone": true}, &bob)
		echoURL, nextAgent := agentServer(t, nil)
		v.call("PUT", "/api/identities/"+ann.UUID+"/voice-agent/", mgmt, map[string]any{"mode": "stream", "stream_url": stalledAgent(t)}, nil)
		v.call("PUT", "/api/identities/"+bob.UUID+"/voice-agent/", mgmt, map[string]any{"mode": "stream", "stream_url": echoURL}, nil)
		ctx := context.Background()

		// Bob's call: eight seconds at the real rate, from before the flood
		// to after it.
		bobMedia, _ := v.incoming("CA3002", bob.Phone)
		type played struct {
			mediastream.PlayStats
			err error
		}
		bobPlayed := make(chan played, 1)
		go func() {
			p, err := mediastream.PlayProvider(ctx, bobMedia, twilioSigned(bobMedia), mediastream.PlayOptions{CallSID: "CA3002",
				StreamSID: "MZ3002", AccountSID: twiliotest.AccountSID, Duration: 8 * time.Second, Realtime: true, EchoWait: 5 * time.Second})
			bobPlayed <- played{p, err}
		}()
		poll(t, "bob's agent connected", func() bool { return callOf(v.running, mgmt, bob.UUID).Stream != nil })

		// Ann's caller sends frames as fast as the socket takes them, in two
		// batches; the live heap is measured in the pauses (while frames
		// flow, what was allocated during a collection counts as live).
		annMedia, _ := v.incoming("CA3001", ann.Phone)
		caller := dialMedia(t, annMedia, "CA3001")
		before := settledHeap()
		caller.media(10000)
		filled := settledHeap() // the agent's socket buffers and our queue are full by now
		caller.media(20000)
		flooded := settledHeap()
		caller.stop()
		const frames = 30000 // ten minutes, about 10 MB of messages
		bobs := <-bobPlayed
		if bobs.err != nil || bobs.FramesSent != 400 || bobs.FramesReceived != 400 {
			t.Fatalf("bob's call beside the stalled one: %+v %v", bobs.PlayStats, bobs.err)
		}
		if got := nextAgent().Received(); got.Frames != 400 || !got.Stopped {
			t.Fatalf("bob's agent got %d frames, stop %v", got.Frames, got.Stopped)
		}

		for _, sid := range []string{"CA3001", "CA3002"} {
			v.post("/webhooks/twilio/call-status/", url.Values{"CallSid": {sid}, "CallStatus": {"completed"}, "CallDuration": {"3"}})
		}
		var anns, bobsCall streamedCall
		poll(t, "both calls' streams recorded", func() bool {
			anns, bobsCall = callOf(v.running, mgmt, ann.UUID), callOf(v.running, mgmt, bob.UUID)
			return anns.Stream != nil && anns.Stream.FramesFromCaller > 0 && bobsCall.Stream != nil && bobsCall.Stream.FramesFromCaller > 0
		})
		// The queue holds a second (50 frames); the agent's socket buffers
		// what the kernel lets it; the rest is dropped.
		st := anns.Stream
		if st.FramesFromCaller != frames || st.FramesDropped < frames/4 || st.FramesToCaller != 0 || anns.Status != "completed" ||
			*anns.EndReason != "completed" {
			t.Fatalf("ann's call: %s %s %+v", anns.Status, *anns.EndReason, *st)
		}
		if bobsCall.Stream.FramesDropped != 0 || bobsCall.Stream.FramesToCaller != 400 {
			t.Fatalf("bob's call: %+v", *bobsCall.Stream)
		}
		growth := int64(flooded) - int64(filled)
		t.Logf("%d frames, %d dropped; live heap %.2f MiB before the call, %.2f MiB after 10000 frames, %.2f MiB after 30000 (%+.3f MiB)",
			frames, st.FramesDropped, mib(before), mib(filled), mib(flooded), float64(growth)/(1<<20))
		// Queued, the last 20000 frames would hold over 5 MB.
		if growth > 1<<20 {
			t.Errorf("the live heap grew %d bytes over 20000 frames to a stalled agent", growth)
		}
	})
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// TestStreamedCallAtMaxDuration: with CALLSIGN_CALL_MAX_DURATION 5s, a
// placed, streamed call whose caller would talk for ten seconds is ended
// by us at five: the agent gets stop, Twilio is told to hang up, and the
// record says max_duration. (At 2s, a run under load once connected the
// stream after the deadline, which counts from placing the call.)
func TestStreamedCallAtMaxDuration(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		v := startTwilioVoice(t, d, map[string]string{"CALLSIGN_CALL_MAX_DURATION": "5s"})
		mgmt := v.bootstrap("max-duration@example.com")
		var ann struct{ UUID, Phone string }
		v.call("POST", "/api/identities/", mgmt, map[string]any{"name": "ann", "provision_phone": true}, &ann)
		agentURL, nextAgent := agentServer(t, nil)
		v.call("PUT", "/api/identities/"+ann.UUID+"/voice-agent/", mgmt, map[string]any{"mode": "stream", "stream_url": agentURL}, nil)

		var placed streamedCall
		if s := v.call("POST", "/api/calls/", mgmt, map[string]any{"to": "+14155550100", "identity": ann.UUID}, &placed); s != 201 {
			t.Fatalf("placed: %d", s)
		}
		form := v.fake.Calls()[placed.ProviderSID]
		m := streamURL.FindStringSubmatch(form.Get("Twiml"))
		if m == nil || form.Get("TimeLimit") != "5" {
			t.Fatalf("CreateCall got %v", form)
		}
		v.post("/webhooks/twilio/call-status/", url.Values{"CallSid": {placed.ProviderSID}, "CallStatus": {"in-progress"}})
		media := strings.ReplaceAll(m[1], "&amp;", "&")
		played, err := mediastream.PlayProvider(context.Background(), media, twilioSigned(media), mediastream.PlayOptions{
			CallSID: placed.ProviderSID, StreamSID: "MZ4001", AccountSID: twiliotest.AccountSID, Duration: 10 * time.Second, Realtime: true})
		// The call was placed before the caller's first frame: it ends
		// before its fifth second of audio has all been sent.
		if played.FramesSent == 0 || played.FramesSent >= 250 {
			t.Fatalf("the caller sent %d frames (%v); want the call ended before 5 s of them", played.FramesSent, err)
		}
		if got := nextAgent().Received(); !got.Stopped {
			t.Fatal("the agent was not sent stop")
		}
		poll(t, "Twilio told to hang up", func() bool { return v.fake.Calls()[placed.ProviderSID].Get("Status") == "completed" })
		v.post("/webhooks/twilio/call-status/", url.Values{"CallSid": {placed.ProviderSID}, "CallStatus": {"completed"}, "CallDuration": {"5"}})
		var got streamedCall
		poll(t, "the call ended", func() bool {
			v.call("GET", fmt.Sprintf("/api/calls/%d/", placed.ID), mgmt, nil, &got)
			return got.Status == "completed"
		})
		if got.EndReason == nil || *got.EndReason != "max_duration" || got.Stream == nil ||
			got.Stream.FramesFromCaller == 0 || got.Stream.FramesFromCaller > int64(played.FramesSent) {
			t.Fatalf("the call: %+v %+v", got, got.Stream)
		}
	})
}

// TestVoiceFences: another identity of the account, and another account,
// find none of an identity's calls, recording, hang-up, voice agent or
// stream secret: each is 404 (or an empty list), and changes nothing.
func TestVoiceFences(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := startPublic(t, d, map[string]string{"CALLSIGN_WEBHOOK_ALLOW_PRIVATE": "true"})
		mgmt := r.bootstrap("fenced@example.com")
		other := r.bootstrap("other-account@example.com")
		var ann, bob struct{ UUID, Phone string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "ann", "provision_phone": true}, &ann)
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "bob"}, &bob)
		annKey, bobKey := identityKey(r, mgmt, ann.UUID), identityKey(r, mgmt, bob.UUID)
		agentURL, nextAgent := agentServer(t, nil)
		var setting voiceAgent
		r.call("PUT", "/api/identities/"+ann.UUID+"/voice-agent/", annKey, map[string]any{"mode": "stream", "stream_url": agentURL,
			"record_calls": true}, &setting)

		// A recorded call that has ended, and a placed one in progress.
		var received, placed streamedCall
		if s := r.call("POST", "/webhooks/sim/call/", mgmt, map[string]any{"From": "+14155550142", "To": ann.Phone, "Duration": "1",
			"Stream": true}, &received); s != 201 {
			t.Fatalf("simulated: %d", s)
		}
		nextAgent()
		poll(t, "the recording", func() bool {
			r.call("GET", fmt.Sprintf("/api/calls/%d/", received.ID), annKey, nil, &received)
			return received.RecordingURL != nil
		})
		if s := r.call("POST", "/api/calls/", annKey, map[string]any{"to": "+14155550100"}, &placed); s != 201 {
			t.Fatalf("placed: %d", s)
		}
		poll(t, "the placed call answered", func() bool {
			r.call("GET", fmt.Sprintf("/api/calls/%d/", placed.ID), annKey, nil, &placed)
			return placed.Status == "in-progress"
		})

		// What ann's key sees, and the others must not.
		var annsCalls []streamedCall
		var annsEvents struct{ Results []apiEvent }
		if r.call("GET", "/api/calls/?identity="+ann.UUID, annKey, nil, &annsCalls); len(annsCalls) != 2 {
			t.Fatalf("ann lists %d calls", len(annsCalls))
		}
		if s := r.call("GET", "/api/events/?types=call.*", annKey, nil, &annsEvents); s != 200 || len(annsEvents.Results) == 0 {
			t.Fatalf("ann's call events: %d %v", s, typesOf(annsEvents.Results))
		}
		for who, key := range map[string]string{"bob": bobKey, "another account": other} {
			for _, req := range []struct {
				method, path string
				body         any
			}{
				{"GET", fmt.Sprintf("/api/calls/%d/", received.ID), nil},
				{"GET", fmt.Sprintf("/api/calls/%d/recording/", received.ID), nil},
				{"POST", fmt.Sprintf("/api/calls/%d/hangup/", placed.ID), nil},
				{"GET", "/api/identities/" + ann.UUID + "/voice-agent/", nil},
				{"PATCH", "/api/identities/" + ann.UUID + "/voice-agent/", map[string]any{"stream_url": "ws://127.0.0.1:1/theirs"}},
				{"PUT", "/api/identities/" + ann.UUID + "/voice-agent/", map[string]any{"mode": "stream", "stream_url": "ws://127.0.0.1:1/theirs"}},
				{"POST", "/api/identities/" + ann.UUID + "/voice-agent/rotate-secret/", nil},
				{"POST", "/api/calls/", map[string]any{"to": "+14155550101", "identity": ann.UUID}},
			} {
				if s, body := r.callRaw(req.method, req.path, key, req.body); s != 404 || strings.Contains(string(body), "whsec_") {
					t.Errorf("%s: %s %s: %d %s", who, req.method, req.path, s, body)
				}
			}
			for _, query := range []string{"", "?identity=" + ann.UUID} {
				var list []streamedCall // a plain array, with no limit asked
				if r.call("GET", "/api/calls/"+query, key, nil, &list); len(list) != 0 {
					t.Errorf("%s lists %d of ann's calls (%s)", who, len(list), query)
				}
			}
			var evs struct{ Results []apiEvent }
			if s := r.call("GET", "/api/events/?types=call.*", key, nil, &evs); s != 200 || len(evs.Results) != 0 {
				t.Errorf("%s reads %d of ann's call events", who, len(evs.Results))
			}
		}
		var now voiceAgent
		r.call("GET", "/api/identities/"+ann.UUID+"/voice-agent/", annKey, nil, &now)
		if *now.StreamURL != agentURL || *now.StreamSecret != *setting.StreamSecret {
			t.Fatalf("ann's agent after the others tried: %+v", now)
		}
		if r.call("GET", fmt.Sprintf("/api/calls/%d/", placed.ID), annKey, nil, &placed); placed.Status != "in-progress" {
			t.Fatalf("ann's call after the others tried to hang it up: %s", placed.Status)
		}
		if s := r.call("POST", fmt.Sprintf("/api/calls/%d/hangup/", placed.ID), annKey, nil, nil); s != 200 {
			t.Fatalf("ann hangs up: %d", s)
		}

		// The console of another account: ann's phone page is not found.
		if _, errOut, code := r.cli(ownerPassword+"\n", "account", "set-password", "--account", "other-account@example.com", "--password-stdin"); code != 0 {
			t.Fatalf("set-password: %s", errOut)
		}
		person := r.person(t)
		person.signIn("other-account@example.com")
		if s, _, page := person.get("/console/identities/" + ann.UUID + "/phone/"); s != 404 || strings.Contains(page, agentURL) {
			t.Errorf("another account's console shows ann's phone page: %d", s)
		}
	})
}
