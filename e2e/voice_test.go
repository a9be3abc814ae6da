package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/callsign/callsign/adapters/mediastream"
	"github.com/callsign/callsign/adapters/mediastream/mediastreamtest"
	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/twilio"
	"github.com/callsign/callsign/adapters/twilio/twiliotest"
	"github.com/callsign/callsign/app"
)

type streamedCall struct {
	apiCall
	Mode   *string `json:"mode"`
	Stream *struct {
		ConnectedDT      time.Time `json:"connected_dt"`
		FramesFromCaller int64     `json:"frames_from_caller"`
		FramesToCaller   int64     `json:"frames_to_caller"`
		FramesDropped    int64     `json:"frames_dropped"`
		DTMF             int64     `json:"dtmf"`
	} `json:"stream"`
	RecordingURL *string `json:"recording_url"`
	EndReason    *string `json:"end_reason"`
}

type voiceAgent struct {
	Mode         string  `json:"mode"`
	StreamURL    *string `json:"stream_url"`
	RecordCalls  bool    `json:"record_calls"`
	StreamSecret *string `json:"stream_secret"`
}

// agentServer serves one echo agent per call, in order, at ws://…/agent;
// an agent that says speak, when given, rather than echoing.
func agentServer(t *testing.T, speak []byte) (string, func() *mediastreamtest.EchoAgent) {
	t.Helper()
	agents := make(chan *mediastreamtest.EchoAgent, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := &mediastreamtest.EchoAgent{Speak: speak}
		agents <- a
		a.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/agent", func() *mediastreamtest.EchoAgent {
		select {
		case a := <-agents:
			<-a.Done()
			return a
		case <-time.After(30 * time.Second):
			t.Fatal("no agent was called")
			return nil
		}
	}
}

// pcmOf decodes a 16-bit stereo WAV into its two channels.
func pcmOf(t *testing.T, wav []byte) (left, right []int16) {
	t.Helper()
	if len(wav) < 44 || string(wav[:4]) != "RIFF" || string(wav[8:12]) != "WAVE" || binary.LittleEndian.Uint16(wav[22:]) != 2 ||
		binary.LittleEndian.Uint32(wav[24:]) != 8000 || binary.LittleEndian.Uint16(wav[34:]) != 16 {
		t.Fatalf("not an 8 kHz 16-bit stereo WAV: % x", wav[:min(len(wav), 44)])
	}
	data := wav[44:]
	for i := 0; i+4 <= len(data); i += 4 {
		left = append(left, int16(binary.LittleEndian.Uint16(data[i:])))
		right = append(right, int16(binary.LittleEndian.Uint16(data[i+2:])))
	}
	return left, right
}

// speech is n samples of μ-law that is never silence (0xff and 0x7f are
// both the sample 0) and differs from a tone: an agent's words that can be
// found, sample by sample, in a recording or in what the other side heard.
func speech(n int, seed byte) []byte {
	out := make([]byte, n)
	x := uint32(seed) + 1
	for i := range out {
		x = x*1664525 + 1013904223
		if out[i] = byte(x >> 24); out[i]&0x7f == 0x7f {
			out[i] ^= 0x01
		}
	}
	return out
}

// decoded is μ-law as 16-bit samples.
func decoded(mulaw []byte) []int16 {
	out := make([]int16, len(mulaw))
	for i, u := range mulaw {
		out[i] = mediastream.MulawToPCM(u)
	}
	return out
}

// holds checks that a channel is silence, then exactly audio decoded from
// sample at on, then silence.
func holds(t *testing.T, what string, channel []int16, at int, audio []byte) {
	t.Helper()
	if at < 0 || at+len(audio) > len(channel) {
		t.Fatalf("%s: %d samples; want %d samples of audio from %d", what, len(channel), len(audio), at)
	}
	if i := slices.IndexFunc(channel[:at], func(v int16) bool { return v != 0 }); i >= 0 {
		t.Fatalf("%s: sound at %d, before the audio", what, i)
	}
	for i, want := range decoded(audio) {
		if channel[at+i] != want {
			t.Fatalf("%s: sample %d (at %d) is %d, want %d", what, i, at+i, channel[at+i], want)
		}
	}
	if i := slices.IndexFunc(channel[at+len(audio):], func(v int16) bool { return v != 0 }); i >= 0 {
		t.Fatalf("%s: sound at %d, after the audio", what, at+len(audio)+i)
	}
}

func withoutZeros(s []int16) []int16 {
	return slices.DeleteFunc(slices.Clone(s), func(v int16) bool { return v == 0 })
}

var streamURL = regexp.MustCompile(`<Stream url="([^"]+)"/>`)

// twilioVoice is the service on the Twilio adapter, whose REST API is
// twiliotest's fake; streamed calls' agents may be on loopback.
type twilioVoice struct {
	*running
	fake   *twiliotest.Server
	public string // the base URL Twilio signs
}

func startTwilioVoice(t *testing.T, d sqlstore.Dialect, env map[string]string) *twilioVoice {
	t.Helper()
	fake := twiliotest.NewServer()
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	e := map[string]string{"CALLSIGN_TELEPHONY": "twilio", "TWILIO_ACCOUNT_SID": twiliotest.AccountSID,
		"TWILIO_AUTH_TOKEN": twiliotest.AuthToken, "CALLSIGN_WEBHOOK_ALLOW_PRIVATE": "true"}
	maps.Copy(e, env)
	r := startPublic(t, d, e, func(deps *app.Deps) {
		deps.Telephony = twilio.New(twilio.Config{AccountSID: twiliotest.AccountSID, AuthToken: twiliotest.AuthToken,
			APIBaseURL: srv.URL, HTTPClient: &http.Client{Timeout: 5 * time.Second}})
	})
	return &twilioVoice{running: r, fake: fake, public: r.svc.Config().BaseURL}
}

// post is a webhook from Twilio, signed.
func (v *twilioVoice) post(path string, form url.Values) (int, string) {
	return v.signedPost(path, form, twiliotest.Signature(twiliotest.AuthToken, v.public+path, form))
}

// incoming is Twilio's voice webhook for a call from +14155550142 to our
// number to, answered with a stream: its media URL and the TwiML.
func (v *twilioVoice) incoming(sid, to string) (media, twiml string) {
	v.t.Helper()
	s, body := v.post("/webhooks/twilio/voice/", url.Values{"CallSid": {sid}, "AccountSid": {twiliotest.AccountSID},
		"From": {"+14155550142"}, "To": {to}, "CallStatus": {"ringing"}, "Direction": {"inbound"}})
	m := streamURL.FindStringSubmatch(body)
	if s != 200 || m == nil {
		v.t.Fatalf("a streamed call's TwiML: %d %s", s, body)
	}
	return strings.ReplaceAll(m[1], "&amp;", "&"), body
}

// twilioSigned is Twilio's signature of a media WebSocket's upgrade.
func twilioSigned(mediaURL string) http.Header {
	return http.Header{"X-Twilio-Signature": {twiliotest.Signature(twiliotest.AuthToken, mediaURL, nil)}}
}

// TestStreamedCallsWithTwilio: a call to an agent in stream mode is
// answered with <Connect><Stream>; Twilio's signed upgrade of the media
// URL is bridged to the agent (signed by us), once; a forged upgrade is
// 403, a reused token 404; an unreachable agent is recorded; placed calls
// go through CreateCall with our TwiML and hang up through the API; the
// active-calls limit is 429; another identity sees none of it.
func TestStreamedCallsWithTwilio(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		v := startTwilioVoice(t, d, map[string]string{"CALLSIGN_QUOTA_ACTIVE_CALLS": "2"})
		r, fake, public := v.running, v.fake, v.public
		mgmt := r.bootstrap("streams@example.com")
		var ann, bob struct{ UUID, Phone string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "ann", "provision_phone": true}, &ann)
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "bob"}, &bob)
		annKey, bobKey := identityKey(r, mgmt, ann.UUID), identityKey(r, mgmt, bob.UUID)
		agentURL, nextAgent := agentServer(t, nil)

		var setting voiceAgent
		if s := r.call("PUT", "/api/identities/"+ann.UUID+"/voice-agent/", annKey, map[string]any{"mode": "stream",
			"stream_url": agentURL, "record_calls": true}, &setting); s != 200 || setting.Mode != "stream" || !setting.RecordCalls ||
			setting.StreamSecret == nil || !strings.HasPrefix(*setting.StreamSecret, "whsec_") {
			t.Fatalf("stream setting: %d %+v", s, setting)
		}
		if s := r.call("PATCH", "/api/identities/"+ann.UUID+"/voice-agent/", annKey, map[string]any{"stream_url": "http://x/"}, nil); s != 400 {
			t.Fatalf("an http stream_url: %d", s)
		}
		if s := r.call("GET", "/api/identities/"+ann.UUID+"/voice-agent/", bobKey, nil, nil); s != 404 {
			t.Fatalf("bob reads ann's stream secret: %d", s)
		}
		var rotated voiceAgent
		r.call("POST", "/api/identities/"+ann.UUID+"/voice-agent/rotate-secret/", annKey, nil, &rotated)
		if rotated.StreamSecret == nil || *rotated.StreamSecret == *setting.StreamSecret {
			t.Fatalf("rotated: %+v", rotated)
		}
		if s := r.call("POST", "/api/identities/"+ann.UUID+"/voice-agent/rotate-secret/", bobKey, nil, nil); s != 404 {
			t.Fatalf("bob rotates ann's secret: %d", s)
		}

		twilioPost, signed := v.post, twilioSigned
		incoming := func(sid string) string {
			media, twiml := v.incoming(sid, ann.Phone)
			if !strings.Contains(twiml, "<Say>This call is recorded.") {
				t.Fatalf("a recorded call's TwiML: %s", twiml)
			}
			return media
		}
		ctx := context.Background()

		// Inbound: forged upgrades are refused before the token is spent.
		media := incoming("CA1001")
		if !strings.HasPrefix(media, strings.Replace(public, "http://", "ws://", 1)+"/media/") {
			t.Fatalf("media URL %s", media)
		}
		for _, h := range []http.Header{nil, {"X-Twilio-Signature": {"forged"}}} {
			if _, res, err := websocket.Dial(ctx, media, &websocket.DialOptions{HTTPHeader: h}); err == nil || res == nil || res.StatusCode != 403 {
				t.Fatalf("a forged upgrade: %v %v", res, err)
			}
		}
		audio := mediastream.Tone440(400 * time.Millisecond)
		played, err := mediastream.PlayProvider(ctx, media, signed(media), mediastream.PlayOptions{CallSID: "CA1001", StreamSID: "MZ1001",
			AccountSID: twiliotest.AccountSID, Duration: 400 * time.Millisecond, Audio: audio, Digits: "4#", EchoWait: 10 * time.Second})
		if err != nil || played.FramesSent != 20 || played.FramesReceived != 20 || played.Marks != 2 {
			t.Fatalf("played %+v, %v", played, err)
		}
		agent := nextAgent().Received()
		p := agent.Start.CustomParameters
		if agent.Frames != 20 || string(agent.Audio) != string(audio) || agent.Digits != "4#" || !agent.Stopped ||
			p["identity"] != ann.UUID || p["from"] != "+14155550142" || p["to"] != ann.Phone || p["direction"] != "incoming" {
			t.Fatalf("the agent got %d frames, digits %q, stop %v, parameters %v", agent.Frames, agent.Digits, agent.Stopped, p)
		}
		if _, res, err := websocket.Dial(ctx, media, &websocket.DialOptions{HTTPHeader: signed(media)}); err == nil || res == nil || res.StatusCode != 404 {
			t.Fatalf("a reused token: %v %v", res, err)
		}
		var got streamedCall
		poll(t, "the stream recorded", func() bool {
			r.call("GET", "/api/calls/?limit=1", annKey, nil, &struct{ Results []*streamedCall }{[]*streamedCall{&got}})
			return got.Stream != nil && got.RecordingURL != nil
		})
		if got.Stream.FramesFromCaller != 20 || got.Stream.FramesToCaller != 20 || got.Stream.DTMF != 2 || *got.Mode != "stream" {
			t.Fatalf("the call's stream: %+v", got.Stream)
		}
		rec := fmt.Sprintf("/api/calls/%d/recording/", got.ID)
		if *got.RecordingURL != public+rec {
			t.Fatalf("recording_url %s", *got.RecordingURL)
		}
		s, wav := r.callRaw("GET", rec, annKey, nil)
		if s != 200 {
			t.Fatalf("recording: %d", s)
		}
		// The caller's channel is its audio from the start, by timestamp;
		// the echo's is each frame when it came back (gaps are silence).
		left, right := pcmOf(t, wav)
		holds(t, "the caller's channel", left, 0, audio)
		if !slices.Equal(withoutZeros(right), withoutZeros(decoded(audio))) {
			t.Fatalf("the agent's channel holds %d samples of sound, not the echo's %d", len(withoutZeros(right)), len(withoutZeros(decoded(audio))))
		}
		if s := r.call("GET", rec, bobKey, nil, nil); s != 404 {
			t.Fatalf("bob reads ann's recording: %d", s)
		}
		if s := r.call("GET", fmt.Sprintf("/api/calls/%d/", got.ID), bobKey, nil, nil); s != 404 {
			t.Fatalf("bob reads ann's call: %d", s)
		}

		// An agent that says words of its own, all at once: the recorder
		// plays them from when they came, as the provider would; each
		// channel holds exactly what its side sent (the agent's sample by
		// sample, with silence where a frame came later than its turn: a
		// loaded machine delays some).
		words := speech(len(audio), 1)
		speakerURL, nextSpeaker := agentServer(t, words)
		r.call("PATCH", "/api/identities/"+ann.UUID+"/voice-agent/", annKey, map[string]any{"stream_url": speakerURL}, nil)
		media = incoming("CA1003")
		// EchoWait: the caller hangs up once all the agent's frames came.
		if played, err = mediastream.PlayProvider(ctx, media, signed(media), mediastream.PlayOptions{CallSID: "CA1003", StreamSID: "MZ1003",
			AccountSID: twiliotest.AccountSID, Duration: 400 * time.Millisecond, Audio: audio, EchoWait: 10 * time.Second}); err != nil || played.FramesReceived != 20 {
			t.Fatalf("played %+v, %v", played, err)
		}
		if heard := nextSpeaker().Received(); string(heard.Audio) != string(audio) {
			t.Fatalf("the speaking agent heard %d samples", len(heard.Audio))
		}
		poll(t, "the second recording", func() bool {
			r.call("GET", "/api/calls/?limit=1", annKey, nil, &struct{ Results []*streamedCall }{[]*streamedCall{&got}})
			return got.ProviderSID == "CA1003" && got.RecordingURL != nil
		})
		if s, wav = r.callRaw("GET", fmt.Sprintf("/api/calls/%d/recording/", got.ID), annKey, nil); s != 200 {
			t.Fatalf("recording: %d", s)
		}
		left, right = pcmOf(t, wav)
		holds(t, "the caller's channel", left, 0, audio)
		if !slices.Equal(withoutZeros(right), decoded(words)) {
			t.Fatalf("the agent's channel holds %d samples of sound, not its %d words", len(withoutZeros(right)), len(words))
		}
		t.Logf("the agent's words start %d samples into the recording of %d", slices.IndexFunc(right, func(v int16) bool { return v != 0 }), len(right))

		// An agent that cannot be reached: the upgrade fails, the record says why.
		r.call("PATCH", "/api/identities/"+ann.UUID+"/voice-agent/", annKey, map[string]any{"stream_url": "ws://127.0.0.1:1/gone"}, nil)
		media = incoming("CA1002")
		if _, res, err := websocket.Dial(ctx, media, &websocket.DialOptions{HTTPHeader: signed(media)}); err == nil || res == nil || res.StatusCode != 503 {
			t.Fatalf("an unreachable agent: %v %v", res, err)
		}
		r.call("GET", "/api/calls/?limit=1", annKey, nil, &struct{ Results []*streamedCall }{[]*streamedCall{&got}})
		if got.EndReason == nil || *got.EndReason != "agent_unreachable" {
			t.Fatalf("unreachable: %+v", got)
		}
		for _, sid := range []string{"CA1001", "CA1002", "CA1003"} {
			twilioPost("/webhooks/twilio/call-status/", url.Values{"CallSid": {sid}, "CallStatus": {"completed"}, "CallDuration": {"1"}})
		}

		// Outbound: a send through CreateCall with our TwiML; hung up through the API.
		r.call("PATCH", "/api/identities/"+ann.UUID+"/voice-agent/", annKey, map[string]any{"stream_url": agentURL}, nil)
		var placed streamedCall
		if s := r.call("POST", "/api/calls/", annKey, map[string]any{"to": "+14155550100", "record": false}, &placed); s != 201 ||
			placed.Direction != "outgoing" || placed.Status != "queued" || *placed.Mode != "stream" || !strings.HasPrefix(placed.ProviderSID, "CA") {
			t.Fatalf("placed: %d %+v", s, placed)
		}
		form := fake.Calls()[placed.ProviderSID]
		m := streamURL.FindStringSubmatch(form.Get("Twiml"))
		if form.Get("From") != ann.Phone || form.Get("To") != "+14155550100" || m == nil || form.Get("TimeLimit") != "14400" ||
			form.Get("StatusCallback") != public+"/webhooks/twilio/call-status/" {
			t.Fatalf("CreateCall got %v", form)
		}
		twilioPost("/webhooks/twilio/call-status/", url.Values{"CallSid": {placed.ProviderSID}, "CallStatus": {"in-progress"}})
		if s := r.call("POST", "/api/calls/", bobKey, map[string]any{"to": "+14155550102", "stream_url": agentURL}, nil); s != 404 {
			t.Fatalf("bob has no number: %d", s)
		}
		if s := r.call("POST", "/api/calls/", mgmt, map[string]any{"to": "+14155550101", "identity": ann.UUID}, nil); s != 201 {
			t.Fatalf("a second call: %d", s)
		}
		if s, body := r.callRaw("POST", "/api/calls/", annKey, map[string]any{"to": "+14155550102"}); s != 429 || !strings.Contains(string(body), "active_calls") {
			t.Fatalf("a third call over the limit: %d %s", s, body)
		}
		if s := r.call("POST", fmt.Sprintf("/api/calls/%d/hangup/", placed.ID), bobKey, nil, nil); s != 404 {
			t.Fatalf("bob hangs up ann's call: %d", s)
		}
		for range 2 { // idempotent while the call lasts
			if s := r.call("POST", fmt.Sprintf("/api/calls/%d/hangup/", placed.ID), annKey, nil, nil); s != 200 {
				t.Fatalf("hang up: %d", s)
			}
		}
		if fake.Calls()[placed.ProviderSID].Get("Status") != "completed" {
			t.Fatalf("Twilio was not told: %v", fake.Calls()[placed.ProviderSID])
		}
		twilioPost("/webhooks/twilio/call-status/", url.Values{"CallSid": {placed.ProviderSID}, "CallStatus": {"completed"}, "CallDuration": {"3"}})
		if s := r.call("POST", fmt.Sprintf("/api/calls/%d/hangup/", placed.ID), annKey, nil, nil); s != 409 {
			t.Fatalf("hang up an ended call: %d", s)
		}
		r.call("GET", fmt.Sprintf("/api/calls/%d/", placed.ID), annKey, nil, &got)
		if got.Status != "completed" || got.EndReason == nil || *got.EndReason != "hangup_api" {
			t.Fatalf("after the hang-up: %+v", got)
		}
		evs := r.eventsUntil(mgmt, "&types=call.started", "0", 2)
		if len(evs) != 2 { // the two calls whose agent answered
			t.Fatalf("call.started: %v", typesOf(evs))
		}
	})
}

// TestStreamedCallWithTheSimulator: the simulator plays Twilio's side of a
// streamed call (Audio, Digits) against our media endpoint; the echo agent
// answers; the call's stream counts what came back. A call placed to a
// number of this service rings that identity, streamed too.
func TestStreamedCallWithTheSimulator(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := startPublic(t, d, map[string]string{"CALLSIGN_WEBHOOK_ALLOW_PRIVATE": "true"})
		mgmt := r.bootstrap("sim-streams@example.com")
		var ann, bob struct{ UUID, Phone string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "ann", "provision_phone": true}, &ann)
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "bob", "provision_phone": true}, &bob)
		agentURL, nextAgent := agentServer(t, nil)
		for _, id := range []string{ann.UUID, bob.UUID} {
			r.call("PUT", "/api/identities/"+id+"/voice-agent/", mgmt, map[string]any{"mode": "stream", "stream_url": agentURL}, nil)
		}
		audio := mediastream.Tone440(time.Second)
		var placed streamedCall
		if s := r.call("POST", "/webhooks/sim/call/", mgmt, map[string]any{"From": "+14155550142", "To": ann.Phone, "Duration": "1",
			"Stream": true, "Audio": base64.StdEncoding.EncodeToString(audio), "Digits": "7"}, &placed); s != 201 || *placed.Mode != "stream" {
			t.Fatalf("simulated: %d %+v", s, placed)
		}
		agent := nextAgent().Received()
		if agent.Frames != 50 || string(agent.Audio) != string(audio) || agent.Digits != "7" || !agent.Stopped {
			t.Fatalf("the agent got %d frames, digits %q", agent.Frames, agent.Digits)
		}
		var got streamedCall
		poll(t, "the simulated call completed", func() bool {
			r.call("GET", fmt.Sprintf("/api/calls/%d/", placed.ID), mgmt, nil, &got)
			return got.Status == "completed" && got.Stream != nil && got.Stream.FramesToCaller > 0
		})
		if got.Stream.FramesFromCaller != 50 || got.Stream.FramesToCaller != 50 || got.Stream.DTMF != 1 || *got.EndReason != "completed" {
			t.Fatalf("the call: %+v %+v", got, got.Stream)
		}
		// The simulator reports the call ended as soon as its caller has
		// hung up, before the bridge has stored its counts: call.completed
		// waits for them.
		var ended streamedCall
		if evs := r.eventsUntil(mgmt, "&types=call.completed", "0", 1); len(evs) != 1 || json.Unmarshal(evs[0].Data, &ended) != nil ||
			ended.ID != placed.ID || ended.Status != "completed" || ended.Stream == nil || ended.Stream.FramesToCaller != 50 || ended.Stream.DTMF != 1 {
			t.Fatalf("call.completed: %v %+v", typesOf(evs), ended.Stream)
		}

		// The console's phone page shows the setting and the call, with its stream counts.
		if _, errOut, code := r.cli(ownerPassword+"\n", "account", "set-password", "--account", "sim-streams@example.com", "--password-stdin"); code != 0 {
			t.Fatalf("set-password: %s", errOut)
		}
		person := r.person(t)
		person.signIn("sim-streams@example.com")
		if _, _, page := person.get("/console/identities/" + ann.UUID + "/phone/"); !strings.Contains(page, `value="stream" selected`) ||
			!strings.Contains(page, "50 frames from the caller, 50 to the caller, 0 dropped, 1 digits") || !strings.Contains(page, "ended: completed") {
			t.Fatalf("the console's phone page:\n%s", page)
		}

		// Ann calls bob: both sides are connected, each to its agent, and
		// each agent hears what the other says (it says it at once; the
		// simulator plays it at the real rate, silence around it).
		// Each says less than a second: the bridge queues no more (what an
		// agent sends beyond it at once may be dropped).
		annWords, bobWords := speech(4800, 2), speech(6400, 3)
		annAgent, bobAgent := &mediastreamtest.EchoAgent{Speak: annWords}, &mediastreamtest.EchoAgent{Speak: bobWords}
		r.call("PATCH", "/api/identities/"+ann.UUID+"/voice-agent/", mgmt, map[string]any{"stream_url": serveAgent(t, annAgent)}, nil)
		r.call("PATCH", "/api/identities/"+bob.UUID+"/voice-agent/", mgmt, map[string]any{"stream_url": serveAgent(t, bobAgent)}, nil)
		var out streamedCall
		if s := r.call("POST", "/api/calls/", mgmt, map[string]any{"to": bob.Phone, "identity": ann.UUID}, &out); s != 201 {
			t.Fatalf("ann calls bob: %d %+v", s, out)
		}
		var bobs struct{ Results []streamedCall }
		poll(t, "both sides connected", func() bool {
			r.call("GET", fmt.Sprintf("/api/calls/%d/", out.ID), mgmt, nil, &got)
			r.call("GET", "/api/calls/?limit=5&identity="+bob.UUID, mgmt, nil, &bobs)
			return got.Status == "in-progress" && len(bobs.Results) == 1 && bobs.Results[0].Status == "in-progress"
		})
		poll(t, "each agent heard the other", func() bool {
			return bytes.Equal(sound(annAgent.Received().Audio), bobWords) && bytes.Equal(sound(bobAgent.Received().Audio), annWords)
		})
		if s := r.call("POST", fmt.Sprintf("/api/calls/%d/hangup/", out.ID), mgmt, nil, nil); s != 200 {
			t.Fatalf("hang up: %d", s)
		}
		poll(t, "both sides ended", func() bool {
			r.call("GET", fmt.Sprintf("/api/calls/%d/", out.ID), mgmt, nil, &got)
			r.call("GET", "/api/calls/?limit=5&identity="+bob.UUID, mgmt, nil, &bobs)
			return got.Status == "completed" && bobs.Results[0].Status == "completed"
		})
		if *got.EndReason != "hangup_api" || got.Direction != "outgoing" {
			t.Fatalf("ann's side: %+v", got)
		}
		<-annAgent.Done()
		<-bobAgent.Done()
		heardOnly(t, "ann's agent", annAgent.Received(), bobWords)
		heardOnly(t, "bob's agent", bobAgent.Received(), annWords)
	})
}

// serveAgent serves one agent's call at ws://…/agent.
func serveAgent(t *testing.T, a *mediastreamtest.EchoAgent) string {
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/agent"
}

// heardOnly checks an agent heard silence, then words exactly, then
// silence, in whole 20 ms frames, and got stop.
// heardOnly checks that an agent heard the other's words, in order, and
// nothing else but silence: before and after them, and between frames
// of them when they reached the simulator later than their turn to play
// (it plays at the real rate, as a phone network does, silence when it
// has nothing; a loaded machine delays some).
func heardOnly(t *testing.T, who string, got mediastreamtest.Received, words []byte) {
	t.Helper()
	at := slices.IndexFunc(got.Audio, func(u byte) bool { return u != silence })
	if !got.Stopped || got.Frames*160 != len(got.Audio) || !bytes.Equal(sound(got.Audio), words) {
		t.Fatalf("%s heard %d frames (stop %v), sound from %d; want silence and the other's %d samples", who, got.Frames, got.Stopped, at, len(words))
	}
	t.Logf("%s heard %d frames, the other's words from sample %d", who, got.Frames, at)
}

// silence is μ-law's zero, which speech never makes.
const silence = 0xff

// sound is audio without its silence.
func sound(audio []byte) []byte {
	return slices.DeleteFunc(slices.Clone(audio), func(u byte) bool { return u == silence })
}
