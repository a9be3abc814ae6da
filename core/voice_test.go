package core

import (
	"strings"
	"testing"
)

func TestValidateVoiceAgentByMode(t *testing.T) {
	base := VoiceAgent{Method: "POST", Enabled: true}
	for _, c := range []struct {
		v     VoiceAgent
		field string // "" when valid
	}{
		{VoiceAgent{Mode: VoiceRedirect, ResponseURL: "https://a.example/"}, ""},
		{VoiceAgent{Mode: VoiceRedirect}, "response_url"},
		{VoiceAgent{Mode: VoiceStream, StreamURL: "wss://a.example/media"}, ""},
		{VoiceAgent{Mode: VoiceStream, StreamURL: "ws://127.0.0.1:9/"}, ""},
		{VoiceAgent{Mode: VoiceStream, ResponseURL: "https://a.example/"}, "stream_url"},
		{VoiceAgent{Mode: VoiceStream, StreamURL: "https://a.example/"}, "stream_url"},
		{VoiceAgent{Mode: VoiceStream, StreamURL: "wss://user:pw@a.example/"}, "stream_url"},
		{VoiceAgent{Mode: "phone", ResponseURL: "https://a.example/"}, "mode"},
	} {
		v := c.v
		v.Method, v.Enabled = base.Method, base.Enabled
		err := ValidateVoiceAgent(v)
		if c.field == "" && err != nil || c.field != "" && (err == nil || err.(*Error).Fields[c.field] == nil) {
			t.Errorf("%+v: %v, want a problem on %q", c.v, err, c.field)
		}
	}
}

func TestValidatePlacedCallFallsBackOnTheSetting(t *testing.T) {
	setting := VoiceAgent{Mode: VoiceStream, StreamURL: "wss://agent.example/", ResponseURL: "https://agent.example/twiml"}
	for _, c := range []struct {
		in           PlacedCall
		mode, target string
	}{
		{PlacedCall{To: "+14155550100"}, "stream", "wss://agent.example/"},
		{PlacedCall{To: "+14155550100", ResponseURL: "https://other.example/"}, "redirect", "https://other.example/"},
		{PlacedCall{To: "+14155550100", Mode: VoiceRedirect}, "redirect", "https://agent.example/twiml"},
		{PlacedCall{To: "+14155550100", StreamURL: "ws://other.example/"}, "stream", "ws://other.example/"},
	} {
		mode, target, err := ValidatePlacedCall(c.in, setting)
		if err != nil || string(mode) != c.mode || target != c.target {
			t.Errorf("%+v: %s %s %v", c.in, mode, target, err)
		}
	}
	if _, _, err := ValidatePlacedCall(PlacedCall{To: "4155550100"}, VoiceAgent{Mode: VoiceRedirect}); err == nil ||
		err.(*Error).Fields["to"] == nil || err.(*Error).Fields["response_url"] == nil {
		t.Errorf("no number and no agent: %v", err)
	}
}

func TestCallAnswerTwiML(t *testing.T) {
	streamed := string(CallAnswer{StreamURL: MediaURL("https://cs.example/", "tok&1"), Greeting: Greeting(true)}.TwiML())
	if !strings.Contains(streamed, `<Say>This call is recorded. Connecting you now.</Say><Connect><Stream url="wss://cs.example/media/tok&amp;1/"/></Connect><Say>Sorry`) {
		t.Errorf("streamed: %s", streamed)
	}
	if got := MediaURL("http://127.0.0.1:8080", "t"); got != "ws://127.0.0.1:8080/media/t/" {
		t.Errorf("media URL over http: %s", got)
	}
	if got := string(CallAnswer{Redirect: "https://a.example/?a=1&b=2", Method: "GET"}.TwiML()); !strings.Contains(got,
		`<Redirect method="GET">https://a.example/?a=1&amp;b=2</Redirect>`) {
		t.Errorf("redirect: %s", got)
	}
	if got := string(CallAnswer{}.TwiML()); !strings.Contains(got, "<Reject/>") {
		t.Errorf("refused: %s", got)
	}
}

func TestCallEndsAndLimits(t *testing.T) {
	c := Call{Status: CallQueued}
	if !CallStatusFollows(CallQueued, CallRinging) || CallStatusFollows(CallRinging, CallQueued) || !c.Active() {
		t.Error("queued comes first and is active")
	}
	if !c.NoteEndReason(EndHangUpAPI) || c.NoteEndReason(EndMaxDuration) || c.EndReason != EndHangUpAPI {
		t.Errorf("the first end reason stands: %s", c.EndReason)
	}
	busy := Call{Status: CallRinging}
	CallReport{Status: CallBusy, DurationSeconds: -1}.Apply(&busy)
	if busy.EndReason != EndProvider {
		t.Errorf("busy: %s", busy.EndReason)
	}
	if ActiveCallsRoom(9, 10) != nil || ActiveCallsRoom(100, 0) != nil {
		t.Error("room under the limit, or with none")
	}
	err := ActiveCallsRoom(10, 10)
	if e, ok := err.(*Error); !ok || e.Kind != KindRateLimited || e.RetryAfterSeconds <= 0 || e.Quota != QuotaActiveCalls {
		t.Errorf("at the limit: %#v", err)
	}
}
