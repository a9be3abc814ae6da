package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
)

type apiEvent struct {
	ID       string          `json:"id"`
	Type     string          `json:"type"`
	Identity *string         `json:"identity"`
	Data     json.RawMessage `json:"data"`
}

// eventsUntil long-polls the log after a cursor until it holds n events
// (or 20 s pass) and returns them.
func (r *running) eventsUntil(key, query string, after string, n int) []apiEvent {
	r.t.Helper()
	var got []apiEvent
	deadline := time.Now().Add(20 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		var page struct{ Results []apiEvent }
		if s := r.call("GET", "/api/events/?wait=5&after="+after+query, key, nil, &page); s != 200 {
			r.t.Fatalf("events: %d", s)
		}
		for _, e := range page.Results {
			got = append(got, e)
			after = e.ID
		}
	}
	return got
}

func typesOf(evs []apiEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

// TestEventsFromRealActions makes every event type the service writes
// today by doing what causes it, through the real router, SMTP listener,
// outbox and simulator, and reads them back in order.
func TestEventsFromRealActions(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, nil, fastRetry)
		mgmt := r.bootstrap("events@example.com")
		var ev, other struct{ UUID, Inbox, Phone string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "ev", "provision_phone": true}, &ev)
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "other"}, &other)
		key := identityKey(r, mgmt, ev.UUID)
		if s := r.call("POST", "/api/email/", key, map[string]any{}, nil); s != 201 {
			t.Fatalf("second inbox: %d", s)
		}
		want := []string{"identity.created", "inbox.created", "phone.provisioned", "identity.created", "inbox.created", "inbox.created"}
		evs := r.eventsUntil(mgmt, "", "0", len(want))
		if !slices.Equal(typesOf(evs), want) {
			t.Fatalf("setup events: %v", typesOf(evs))
		}
		cursor := evs[len(evs)-1].ID

		sendSMTP(t, r.svc.SMTPAddr(), "alice@example.org", []string{ev.Inbox},
			"From: alice@example.org\r\nTo: "+ev.Inbox+"\r\nSubject: Over SMTP\r\nMessage-ID: <ev-smtp@example.org>\r\n\r\nHello   there,\r\nagent.\r\n")
		got := r.eventsUntil(key, "", cursor, 1)
		var data map[string]any
		if err := json.Unmarshal(got[0].Data, &data); err != nil || got[0].Type != "email.received" || data["subject"] != "Over SMTP" ||
			data["preview"] != "Hello there, agent." || data["content"] != nil || *got[0].Identity != ev.UUID {
			t.Fatalf("email.received: %+v %v", got[0], data)
		}
		var msg map[string]any
		r.call("GET", fmt.Sprintf("/api/email-messages/%v/", data["id"]), key, nil, &msg)
		for _, k := range []string{"thread_id", "inbox", "from_email", "to_email", "message_id", "created_dt", "url"} {
			if fmt.Sprint(msg[k]) != fmt.Sprint(data[k]) {
				t.Errorf("%s: message %v, event %v", k, msg[k], data[k])
			}
		}
		cursor = got[0].ID

		// Mail to another identity of ours is delivered locally (received,
		// then sent); mail out without a relay fails for good.
		r.call("POST", "/api/email-messages/compose/", key, map[string]any{"to_email": other.Inbox, "subject": "Local", "content": "x"}, nil)
		local := r.eventsUntil(mgmt, "&types=email.*", cursor, 2)
		if !slices.Equal(typesOf(local), []string{"email.received", "email.sent"}) || *local[0].Identity != other.UUID {
			t.Fatalf("local delivery: %v", typesOf(local))
		}
		cursor = local[1].ID
		r.call("POST", "/api/email-messages/compose/", key, map[string]any{"to_email": "bob@example.net", "subject": "Out", "content": "x"}, nil)
		failed := r.eventsUntil(key, "&types=email.failed", cursor, 1)
		if err := json.Unmarshal(failed[0].Data, &data); err != nil || data["delivery_status"] != "failed" {
			t.Fatalf("email.failed: %s", failed[0].Data)
		}
		recipients := data["recipients"].([]any)
		if rc := recipients[0].(map[string]any); rc["email"] != "bob@example.net" || rc["error"] == nil {
			t.Fatalf("email.failed names the recipient and the reason: %v", recipients)
		}
		cursor = failed[0].ID

		// Texts: one out through the simulator, one in through its webhook.
		if s := r.call("POST", "/api/messages/send/", key, map[string]any{"to": "+14155550142", "body": "hi"}, nil); s != 201 {
			t.Fatalf("send: %d", s)
		}
		if s, b := r.callRaw("POST", "/webhooks/sim/sms/", mgmt, map[string]any{"From": "+14155550142", "To": ev.Phone, "Body": "back"}); s/100 != 2 {
			t.Fatalf("inbound: %d %s", s, b)
		}
		// The simulator reports the text delivered as Twilio would, at
		// a moment of its own beside the inbound one.
		texts := r.eventsUntil(key, "&types=sms.*", cursor, 3)
		byType := map[string]apiEvent{}
		for _, e := range texts {
			byType[e.Type] = e
		}
		if len(texts) != 3 || texts[0].Type != "sms.sent" || len(byType) != 3 {
			t.Fatalf("texts: %v", typesOf(texts))
		}
		if err := json.Unmarshal(byType["sms.received"].Data, &data); err != nil || data["body"] != "back" || data["direction"] != "incoming" {
			t.Fatalf("sms.received: %s", byType["sms.received"].Data)
		}
		if err := json.Unmarshal(byType["sms.status"].Data, &data); err != nil || data["status"] != "delivered" || data["body"] != "hi" {
			t.Fatalf("sms.status: %s", byType["sms.status"].Data)
		}
		cursor = texts[2].ID

		// Calls: one placed through the simulator, ended a second later.
		var call struct{ ID int64 }
		if s := r.call("POST", "/webhooks/sim/call/", mgmt, map[string]any{"From": "+14155550142", "To": ev.Phone}, &call); s != 201 {
			t.Fatalf("call: %d", s)
		}
		calls := r.eventsUntil(key, "&types=call.*", cursor, 2)
		if !slices.Equal(typesOf(calls), []string{"call.received", "call.completed"}) {
			t.Fatalf("calls: %v", typesOf(calls))
		}
		if err := json.Unmarshal(calls[1].Data, &data); err != nil || data["status"] != "completed" || data["duration_seconds"] != 1.0 ||
			data["id"] != float64(call.ID) {
			t.Fatalf("call.completed: %s", calls[1].Data)
		}
		cursor = calls[1].ID

		if s := r.call("DELETE", "/api/identities/"+ev.UUID+"/?confirm=true", mgmt, nil, nil); s != 204 {
			t.Fatalf("delete: %d", s)
		}
		gone := r.eventsUntil(mgmt, "&types=identity.*,phone.*", cursor, 2)
		if !slices.Equal(typesOf(gone), []string{"phone.released", "identity.deleted"}) {
			t.Fatalf("delete: %v", typesOf(gone))
		}
		// The deleted identity's key is refused; its events stay for the account.
		var all struct{ Count int }
		r.call("GET", "/api/events/?limit=200&identity="+ev.UUID, mgmt, nil, &all)
		if all.Count < 10 {
			t.Fatalf("the deleted identity's events: %d", all.Count)
		}
	})
}

// stream is an SSE client of the service.
type stream struct {
	t    *testing.T
	res  *http.Response
	read *bufio.Reader
}

func (r *running) stream(key, query, lastEventID string) *stream {
	r.t.Helper()
	req, _ := http.NewRequest("GET", r.baseURL+"/api/events/stream/"+query, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	res, err := (&http.Client{}).Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	if res.StatusCode != 200 {
		r.t.Fatalf("stream: %d", res.StatusCode)
	}
	s := &stream{t: r.t.(*testing.T), res: res, read: bufio.NewReader(res.Body)}
	r.t.Cleanup(func() { res.Body.Close() })
	return s
}

// next is the next event's id and type; ok is false when the stream ended.
func (s *stream) next() (id, typ string, ok bool) {
	for {
		line, err := s.read.ReadString('\n')
		if err != nil {
			return "", "", false
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "event: "):
			typ = line[7:]
		case line == "" && id != "":
			return id, typ, true
		}
	}
}

// TestEventStreamResumesAcrossARestart follows the stream, restarts the
// service on the same database while mail keeps arriving, and resumes with
// Last-Event-ID: every event arrives once, in order.
func TestEventStreamResumesAcrossARestart(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, nil)
		mgmt := r.bootstrap("stream@example.com")
		var ident struct{ UUID, Inbox string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "streamer"}, &ident)
		s := r.stream(mgmt, "?types=email.*", "")
		mail := func(r *running, i int) {
			sendSMTP(t, r.svc.SMTPAddr(), "a@example.org", []string{ident.Inbox},
				fmt.Sprintf("From: a@example.org\r\nSubject: %d\r\nMessage-ID: <s%d@example.org>\r\n\r\nx\r\n", i, i))
		}
		var seen []string
		for i := range 3 {
			mail(r, i)
			id, typ, ok := s.next()
			if !ok || typ != "email.received" {
				t.Fatalf("live event %d: %s %s %v", i, id, typ, ok)
			}
			seen = append(seen, id)
		}
		r.stop()
		if _, _, ok := s.next(); ok {
			t.Fatal("the stream outlived the service")
		}
		r2 := start(t, d, r.env)
		for i := 3; i < 6; i++ {
			mail(r2, i) // arrives while no stream is open
		}
		s2 := r2.stream(mgmt, "?types=email.*&after=0", seen[len(seen)-1])
		for i := 3; i < 8; i++ {
			if i >= 6 {
				mail(r2, i)
			}
			id, _, ok := s2.next()
			if !ok {
				t.Fatal("the resumed stream ended")
			}
			seen = append(seen, id)
		}
		for i := 1; i < len(seen); i++ {
			var a, b int
			fmt.Sscan(seen[i-1], &a)
			fmt.Sscan(seen[i], &b)
			if b <= a {
				t.Fatalf("ids out of order or repeated: %v", seen)
			}
		}
		var page struct{ Count int }
		r2.call("GET", "/api/events/?types=email.*&limit=200", mgmt, nil, &page)
		if page.Count != len(seen) || len(seen) != 8 {
			t.Fatalf("streamed %d events of %d: %v", len(seen), page.Count, seen)
		}
	})
}

// TestEventStreamSeesAnotherInstance runs two services on one PostgreSQL
// database: a stream on B shows what A committed (NOTIFY at commit).
func TestEventStreamSeesAnotherInstance(t *testing.T) {
	t.Parallel()
	for _, d := range []sqlstore.Dialect{sqlstore.Postgres} {
		if !slices.Contains(sqlstoretest.Dialects(), d) {
			t.Skip("PostgreSQL is not configured (CALLSIGN_TEST_POSTGRES_URL)")
		}
		a := start(t, d, nil)
		b := start(t, d, map[string]string{"CALLSIGN_DATABASE_URL": a.env["CALLSIGN_DATABASE_URL"], "CALLSIGN_DATA_DIR": a.env["CALLSIGN_DATA_DIR"]})
		mgmt := a.bootstrap("two@example.com")
		s := b.stream(mgmt, "", "")
		var ident struct{ UUID string }
		started := time.Now()
		a.call("POST", "/api/identities/", mgmt, map[string]any{"name": "across"}, &ident)
		if _, typ, ok := s.next(); !ok || typ != "identity.created" {
			t.Fatalf("B's stream: %s %v", typ, ok)
		}
		t.Logf("B saw A's event %v after the request began", time.Since(started)) // measured in BenchmarkEvents, not asserted
	}
}

// TestEventsFromNow: after=latest reads only what is committed after the
// request, on the list (with and without wait, its next carrying the
// cursor even when nothing came) and on the stream.
func TestEventsFromNow(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, nil)
		mgmt := r.bootstrap("fromnow@example.com")
		var ident struct{ UUID, Inbox string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "follower"}, &ident)
		mails := 0
		mail := func() {
			mails++
			sendSMTP(t, r.svc.SMTPAddr(), "a@example.org", []string{ident.Inbox},
				fmt.Sprintf("From: a@example.org\r\nSubject: %d\r\nMessage-ID: <now%d@example.org>\r\n\r\nx\r\n", mails, mails))
		}
		mail()
		history := r.eventsUntil(mgmt, "", "0", 3)
		newest := history[len(history)-1].ID

		var page struct {
			Count   int
			Next    *string
			Results []apiEvent
		}
		if s := r.call("GET", "/api/events/?after=latest", mgmt, nil, &page); s != 200 || page.Count != 0 || page.Next == nil ||
			!strings.Contains(*page.Next, "after="+newest) {
			t.Fatalf("from now, nothing new: %d %+v", s, page)
		}
		mail()
		next, err := url.Parse(*page.Next)
		if err != nil {
			t.Fatal(err)
		}
		if s := r.call("GET", next.RequestURI(), mgmt, nil, &page); s != 200 || page.Count != 1 ||
			page.Results[0].Type != "email.received" {
			t.Fatalf("the next address: %d %+v", s, page)
		}
		seq := func(id string) (n int) { fmt.Sscan(id, &n); return n }
		seen := seq(page.Results[0].ID)

		// With wait, the request is held until the next event: mail until it answers.
		answered := make(chan int)
		var waited struct{ Results []apiEvent }
		go func() { answered <- r.call("GET", "/api/events/?after=latest&wait=30", mgmt, nil, &waited) }()
		var status int
	waiting:
		for {
			mail()
			select {
			case status = <-answered:
				break waiting
			case <-time.After(500 * time.Millisecond):
			}
		}
		if status != 200 || len(waited.Results) == 0 || waited.Results[0].Type != "email.received" || seq(waited.Results[0].ID) <= seen {
			t.Fatalf("the wait from now: %d %+v (last seen %d)", status, waited, seen)
		}

		s := r.stream(mgmt, "?after=latest", "")
		mail()
		id, typ, ok := s.next()
		last := seq(waited.Results[len(waited.Results)-1].ID)
		if !ok || typ != "email.received" || seq(id) <= last {
			t.Fatalf("the stream from now began with %s %s %v (last seen %d)", id, typ, ok, last)
		}
		if s := r.call("GET", "/api/events/?after=latest1", mgmt, nil, nil); s != 400 {
			t.Fatalf("a bad cursor: %d", s)
		}
	})
}
