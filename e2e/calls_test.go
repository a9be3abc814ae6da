package e2e

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/twilio/twiliotest"
)

type apiCall struct {
	ID              int64      `json:"id"`
	Identity        string     `json:"identity"`
	Phone           string     `json:"phone"`
	Direction       string     `json:"direction"`
	FromNumber      string     `json:"from_number"`
	ToNumber        string     `json:"to_number"`
	Status          string     `json:"status"`
	StartedDT       time.Time  `json:"started_dt"`
	EndedDT         *time.Time `json:"ended_dt"`
	DurationSeconds *int       `json:"duration_seconds"`
	ProviderSID     string     `json:"provider_sid"`
}

// TestCallRecordsWithTheSimulator places calls through the simulator: in
// progress at once, completed after Duration, also across a restart;
// listed and shown in scope; bad requests are 4xx.
func TestCallRecordsWithTheSimulator(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, nil)
		mgmt := r.bootstrap("calls@example.com")
		var ann, bob struct{ UUID, Phone string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "ann", "provision_phone": true}, &ann)
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "bob", "provision_phone": true}, &bob)
		annKey := identityKey(r, mgmt, ann.UUID)

		var placed apiCall
		if s := r.call("POST", "/webhooks/sim/call/", mgmt, map[string]any{"From": "+14155550142", "To": ann.Phone, "Duration": "1"}, &placed); s != 201 ||
			placed.Status != "in-progress" || placed.EndedDT != nil || placed.DurationSeconds != nil || placed.Identity != ann.UUID ||
			placed.Phone != ann.Phone || placed.Direction != "incoming" || placed.FromNumber != "+14155550142" || placed.ToNumber != ann.Phone ||
			!strings.HasPrefix(placed.ProviderSID, "CA") {
			t.Fatalf("placed: %d %+v", s, placed)
		}
		var got apiCall
		poll(t, "the call completed", func() bool {
			r.call("GET", fmt.Sprintf("/api/calls/%d/", placed.ID), annKey, nil, &got)
			return got.Status == "completed"
		})
		if got.DurationSeconds == nil || *got.DurationSeconds != 1 || got.EndedDT == nil || !got.EndedDT.Equal(got.StartedDT.Add(time.Second)) {
			t.Fatalf("completed: %+v", got)
		}

		// Another call, to bob; the list is newest first, in scope, after a time.
		var second apiCall
		r.call("POST", "/webhooks/sim/call/", mgmt, map[string]any{"From": "+14155550143", "To": bob.Phone, "Duration": "0"}, &second)
		var page struct {
			Count   int
			Results []apiCall
		}
		r.call("GET", "/api/calls/?limit=50", mgmt, nil, &page)
		if page.Count != 2 || page.Results[0].ID != second.ID || page.Results[1].ID != placed.ID {
			t.Fatalf("the account's calls: %+v", page)
		}
		r.call("GET", "/api/calls/?limit=50", annKey, nil, &page)
		if page.Count != 1 || page.Results[0].ID != placed.ID {
			t.Fatalf("ann's calls: %+v", page)
		}
		r.call("GET", "/api/calls/?limit=50&identity="+bob.UUID, annKey, nil, &page)
		if page.Count != 0 {
			t.Fatalf("ann sees bob's calls: %+v", page)
		}
		if s := r.call("GET", fmt.Sprintf("/api/calls/%d/", second.ID), annKey, nil, nil); s != 404 {
			t.Fatalf("ann reads bob's call: %d", s)
		}
		r.call("GET", "/api/calls/?limit=50&after="+url.QueryEscape(placed.StartedDT.Format(time.RFC3339Nano)), mgmt, nil, &page)
		if page.Count != 1 || page.Results[0].ID != second.ID {
			t.Fatalf("calls after the first: %+v", page)
		}
		other := r.bootstrap("other-calls@example.com")
		if s := r.call("GET", fmt.Sprintf("/api/calls/%d/", placed.ID), other, nil, nil); s != 404 {
			t.Fatalf("another account reads the call: %d", s)
		}
		r.call("GET", "/api/calls/?limit=50", other, nil, &page)
		if page.Count != 0 {
			t.Fatalf("another account lists the calls: %+v", page)
		}

		// Bad requests.
		for _, bad := range []struct {
			key    string
			form   map[string]any
			status int
			field  string
		}{
			{mgmt, map[string]any{"From": "nobody", "To": ann.Phone}, 400, "From"},
			{mgmt, map[string]any{"From": "+14155550142", "To": ann.Phone, "Duration": "soon"}, 400, "Duration"},
			{mgmt, map[string]any{"From": "+14155550142", "To": ann.Phone, "Duration": "-1"}, 400, "Duration"},
			{mgmt, map[string]any{"From": "+14155550142", "To": ann.Phone, "Duration": "99999999999999999"}, 400, "Duration"},
			{annKey, map[string]any{"From": "+14155550142", "To": ann.Phone}, 403, ""},
			{other, map[string]any{"From": "+14155550142", "To": ann.Phone}, 404, ""},
		} {
			s, body := r.callRaw("POST", "/webhooks/sim/call/", bad.key, bad.form)
			if s != bad.status || !strings.Contains(string(body), bad.field) {
				t.Errorf("%v: %d %s", bad.form, s, body)
			}
		}
		for _, q := range []string{"?after=yesterday", "?identity=x", "?colour=blue"} {
			if s := r.call("GET", "/api/calls/"+q, mgmt, nil, nil); s != 400 {
				t.Errorf("GET /api/calls/%s: %d", q, s)
			}
		}
		if s := r.call("GET", "/api/calls/x/", mgmt, nil, nil); s != 404 { // as every malformed numeric id
			t.Errorf("a malformed call id: %d", s)
		}

		// A call under way when the service stops ends when it is back,
		// at the time it was due.
		var long apiCall
		r.call("POST", "/webhooks/sim/call/", mgmt, map[string]any{"From": "+14155550144", "To": ann.Phone, "Duration": "3"}, &long)
		r.stop()
		r2 := start(t, d, r.env)
		poll(t, "the call completed after the restart", func() bool {
			r2.call("GET", fmt.Sprintf("/api/calls/%d/", long.ID), mgmt, nil, &got)
			return got.Status == "completed"
		})
		if *got.DurationSeconds != 3 || !got.EndedDT.Equal(got.StartedDT.Add(3*time.Second)) {
			t.Fatalf("after the restart: %+v", got)
		}
		evs := r2.eventsUntil(mgmt, "&types=call.*", "0", 6)
		if !slices.Equal(typesOf(evs), []string{"call.received", "call.completed", "call.received", "call.completed", "call.received", "call.completed"}) {
			t.Fatalf("call events: %v", typesOf(evs))
		}
	})
}

// TestCallRecordsWithTwilio: a number bought at Twilio points its calls at
// our webhooks; an incoming call is recorded and sent on to the voice
// agent; Twilio's status callback ends it.
func TestCallRecordsWithTwilio(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r, fake := startWithTwilio(t, d)
		public := r.svc.Config().BaseURL
		mgmt := r.bootstrap("twilio-calls@example.com")
		var ident struct{ UUID, Phone string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Caller", "provision_phone": true}, &ident)
		for _, bought := range fake.Numbers() {
			if bought.Get("VoiceUrl") != public+"/webhooks/twilio/voice/" || bought.Get("VoiceMethod") != "POST" ||
				bought.Get("StatusCallback") != public+"/webhooks/twilio/call-status/" || bought.Get("StatusCallbackMethod") != "POST" {
				t.Fatalf("the number's calls point at %v", bought)
			}
		}
		twilioPost := func(path string, form url.Values) (int, string) {
			s, body := r.signedPost(path, form, twiliotest.Signature(twiliotest.AuthToken, public+path, form))
			return s, body
		}
		call := url.Values{"CallSid": {"CA0001"}, "AccountSid": {twiliotest.AccountSID}, "From": {"+14155550142"}, "To": {ident.Phone},
			"CallStatus": {"ringing"}, "Direction": {"inbound"}}
		// No voice agent yet: recorded, and refused.
		if s, body := twilioPost("/webhooks/twilio/voice/", call); s != 200 || !strings.Contains(body, "<Reject/>") {
			t.Fatalf("a call without an agent: %d %s", s, body)
		}
		r.call("PUT", "/api/identities/"+ident.UUID+"/voice-agent/", mgmt, map[string]any{"response_url": "https://agent.example/call?a=1&b=2", "method": "GET"}, nil)
		call.Set("CallSid", "CA0002")
		if s, body := twilioPost("/webhooks/twilio/voice/", call); s != 200 ||
			!strings.Contains(body, `<Redirect method="GET">https://agent.example/call?a=1&amp;b=2</Redirect>`) {
			t.Fatalf("a call to the agent: %d %s", s, body)
		}
		if s, _ := twilioPost("/webhooks/twilio/voice/", call); s != 200 { // Twilio asks again: still one call
			t.Fatalf("a repeated call webhook: %d", s)
		}
		status := url.Values{"CallSid": {"CA0002"}, "AccountSid": {twiliotest.AccountSID}, "CallStatus": {"in-progress"}}
		if s, _ := twilioPost("/webhooks/twilio/call-status/", status); s != 204 {
			t.Fatalf("in progress: %d", s)
		}
		status.Set("CallStatus", "completed")
		status.Set("CallDuration", "42")
		if s, _ := twilioPost("/webhooks/twilio/call-status/", status); s != 204 {
			t.Fatalf("completed: %d", s)
		}
		status.Set("CallStatus", "in-progress") // late: ignored
		twilioPost("/webhooks/twilio/call-status/", status)
		status.Set("CallSid", "CA0001")
		status.Set("CallStatus", "busy")
		status.Del("CallDuration")
		twilioPost("/webhooks/twilio/call-status/", status)
		status.Set("CallSid", "CAunknown")
		if s, _ := twilioPost("/webhooks/twilio/call-status/", status); s != 204 {
			t.Fatalf("a report on an unknown call: %d", s)
		}
		status.Set("CallStatus", "exploded")
		if s, _ := twilioPost("/webhooks/twilio/call-status/", status); s != 400 {
			t.Fatalf("an unknown status: %d", s)
		}
		if s, _ := r.signedPost("/webhooks/twilio/voice/", call, "forged"); s != 403 {
			t.Fatalf("a forged call: %d", s)
		}

		var page struct {
			Count   int
			Results []apiCall
		}
		r.call("GET", "/api/calls/?limit=50", mgmt, nil, &page)
		if page.Count != 2 {
			t.Fatalf("calls: %+v", page)
		}
		byID := map[string]apiCall{}
		for _, c := range page.Results {
			byID[c.ProviderSID] = c
		}
		if c := byID["CA0002"]; c.Status != "completed" || *c.DurationSeconds != 42 || c.EndedDT == nil || c.Identity != ident.UUID {
			t.Fatalf("the answered call: %+v", c)
		}
		if c := byID["CA0001"]; c.Status != "busy" || c.DurationSeconds == nil || c.EndedDT == nil {
			t.Fatalf("the refused call: %+v", c)
		}
		evs := r.eventsUntil(mgmt, "&types=call.*", "0", 4)
		if !slices.Equal(typesOf(evs), []string{"call.received", "call.received", "call.completed", "call.completed"}) {
			t.Fatalf("call events: %v", typesOf(evs))
		}
	})
}
