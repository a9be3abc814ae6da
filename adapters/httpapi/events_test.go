package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/memory"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

// eventTypesOf lists the types of a page of events.
func eventTypesOf(t *testing.T, page map[string]any) []string {
	t.Helper()
	var out []string
	for _, e := range page["results"].([]any) {
		out = append(out, e.(map[string]any)["type"].(string))
	}
	return out
}

func TestEventsListFiltersScopeAndCursor(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	h.receive("one@agents.test", mailFrom("alice@example.org", "ev-1@example.org", "Hello", "Body text\n\nof the mail"))
	all := h.do("GET", "/api/events/", nil, tn.mgmt).want(t, 200).object(t)
	if got := strings.Join(eventTypesOf(t, all), " "); got != "identity.created inbox.created identity.created inbox.created email.received" {
		t.Fatalf("events: %s", got)
	}
	results := all["results"].([]any)
	mail := results[4].(map[string]any)
	data := mail["data"].(map[string]any)
	if mail["id"] != "5" || mail["identity"] != tn.one || data["subject"] != "Hello" || data["preview"] != "Body text of the mail" {
		t.Fatalf("email.received: %v", mail)
	}
	if _, has := data["content"]; has {
		t.Fatalf("an event carries no body: %v", data)
	}
	if _, has := data["html"]; has {
		t.Fatalf("an event carries no body: %v", data)
	}
	msg := h.do("GET", path("/api/email-messages/%v/", data["id"]), nil, tn.mgmt).want(t, 200).object(t)
	for _, k := range []string{"id", "thread_id", "inbox", "from_email", "to_email", "cc", "subject", "attachments", "created_dt"} {
		if fmt.Sprint(msg[k]) != fmt.Sprint(data[k]) {
			t.Errorf("%s: message %v, event %v", k, msg[k], data[k])
		}
	}
	if all["count"] != float64(5) || all["next"] != nil || all["previous"] != nil {
		t.Fatalf("envelope: %v", all)
	}

	for _, tc := range []struct {
		query, key string
		want       string
	}{
		{"?after=2", tn.mgmt, "identity.created inbox.created email.received"},
		{"?types=email.*", tn.mgmt, "email.received"},
		{"?types=inbox.created,identity.*", tn.mgmt, "identity.created inbox.created identity.created inbox.created"},
		{"?identity=" + tn.two, tn.mgmt, "identity.created inbox.created"},
		{"", tn.keyOne, "identity.created inbox.created email.received"},
		{"?identity=" + tn.two, tn.keyOne, ""},
		{"", tn.otherAccount, ""},
	} {
		page := h.do("GET", "/api/events/"+tc.query, nil, tc.key).want(t, 200).object(t)
		if got := strings.Join(eventTypesOf(t, page), " "); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.query, got, tc.want)
		}
	}
	page := h.do("GET", "/api/events/?limit=2&after=1", nil, tn.mgmt).want(t, 200).object(t)
	if next, _ := page["next"].(string); page["count"] != float64(2) || !strings.Contains(next, "after=3") {
		t.Fatalf("a full page: %v", page)
	}
	for _, q := range []string{"?after=x", "?after=-1", "?types=email", "?types=mail.*", "?types=email.rec*", "?wait=61", "?limit=0", "?identity=nope", "?since=1"} {
		h.do("GET", "/api/events/"+q, nil, tn.mgmt).want(t, 400)
	}
	h.do("GET", "/api/events/", nil, "").want(t, 401)
}

func TestEventsLongPollEndsWhenAnEventArrives(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	start := time.Now()
	empty := h.do("GET", "/api/events/?after=4&wait=1", nil, tn.mgmt).want(t, 200).object(t)
	if empty["count"] != float64(0) || time.Since(start) < time.Second {
		t.Fatalf("an empty wait: %v after %v", empty, time.Since(start))
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		h.receive("two@agents.test", mailFrom("alice@example.org", "ev-2@example.org", "Later", "x"))
	}()
	start = time.Now()
	got := h.do("GET", "/api/events/?after=4&wait=30&types=email.*", nil, tn.keyTwo).want(t, 200).object(t)
	if eventTypesOf(t, got)[0] != "email.received" || time.Since(start) > 10*time.Second {
		t.Fatalf("the wait answered %v after %v", got, time.Since(start))
	}
}

func TestEventsExpiredCursorIsGone(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	if _, err := h.store.PruneEvents(context.Background(), time.Now().Add(time.Hour), 1000); err != nil {
		t.Fatal(err)
	}
	gone := h.do("GET", "/api/events/?after=1", nil, tn.mgmt).want(t, 410).object(t)
	if d, _ := gone["detail"].(string); !strings.Contains(d, "no longer kept") {
		t.Fatalf("410: %v", gone)
	}
	h.do("GET", "/api/events/?after=4", nil, tn.mgmt).want(t, 200)
	h.do("GET", "/api/events/", nil, tn.mgmt).want(t, 200)
	h.do("GET", "/api/events/stream/?after=2", nil, tn.mgmt).want(t, 410)
}

// sse reads a Server-Sent Events stream.
type sse struct {
	t   *testing.T
	res *http.Response
	r   *bufio.Reader
}

func openStream(t *testing.T, url, key, lastEventID string) *sse {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %v", res.StatusCode, res.Header)
	}
	return &sse{t: t, res: res, r: bufio.NewReader(res.Body)}
}

// next reads the next event (skipping comments): its id, type and data.
func (s *sse) next() (id, typ, data string) {
	s.t.Helper()
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			s.t.Fatalf("stream ended: %v", err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "event: "):
			typ = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		case line == "" && id != "":
			return id, typ, data
		}
	}
}

func TestEventStreamResumesAndFollows(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	srv := httptest.NewServer(h.h)
	t.Cleanup(srv.Close) // after the streams' bodies close (cleanups run last first)
	s := openStream(t, srv.URL+"/api/events/stream/?after=2", tn.mgmt, "")
	if id, typ, data := s.next(); id != "3" || typ != "identity.created" || !strings.Contains(data, `"id":"3"`) || !strings.Contains(data, tn.two) {
		t.Fatalf("first: %s %s %s", id, typ, data)
	}
	if id, _, _ := s.next(); id != "4" {
		t.Fatalf("second: %s", id)
	}
	h.receive("one@agents.test", mailFrom("alice@example.org", "ev-3@example.org", "Live", "x"))
	if id, typ, data := s.next(); id != "5" || typ != "email.received" || !strings.Contains(data, `"subject":"Live"`) || !strings.HasPrefix(data, `{"id":"5","type":"email.received"`) {
		t.Fatalf("live: %s %s %s", id, typ, data)
	}
	// Last-Event-ID wins over after, and the identity key sees its own only.
	own := openStream(t, srv.URL+"/api/events/stream/?after=0&types=email.*", tn.keyOne, "4")
	if id, typ, _ := own.next(); id != "5" || typ != "email.received" {
		t.Fatalf("resumed: %s %s", id, typ)
	}
	req, _ := http.NewRequest("GET", srv.URL+"/api/events/stream/?types=nope", nil)
	req.Header.Set("Authorization", "Bearer "+tn.mgmt)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 400 {
		t.Fatalf("bad filter: %d", res.StatusCode)
	}
}

func TestEventsListFromTheStartPagesOn(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	first := h.do("GET", "/api/events/?limit=1", nil, tn.mgmt).want(t, 200).object(t)
	next, _ := first["next"].(string)
	if first["count"] != float64(1) || next != "http://api.test/api/events/?after=1&limit=1" {
		t.Fatalf("a full first page without after: %v", first)
	}
	second := h.do("GET", strings.TrimPrefix(next, "http://api.test"), nil, tn.mgmt).want(t, 200).object(t)
	if ids := second["results"].([]any); len(ids) != 1 || ids[0].(map[string]any)["id"] != "2" {
		t.Fatalf("the page after: %v", second)
	}
}

// cancelledEvents is a store whose event reads fail as a database driver's
// do when the request's context is cancelled.
type cancelledEvents struct{ *memory.Store }

func (s cancelledEvents) Events(ctx context.Context, f core.EventFilter) ([]core.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("reading events: %w", err)
	}
	return s.Store.Events(ctx, f)
}

func TestEventsListCancelledByTheClientIsNoServerError(t *testing.T) {
	var store cancelledEvents
	h := newHarnessWith(t, func(d *app.Deps) {
		store = cancelledEvents{d.Store.(*memory.Store)}
		d.Store = store
	})
	key := h.account()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequestWithContext(ctx, "GET", "/api/events/", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	rec := httptest.NewRecorder()
	h.h.ServeHTTP(rec, req) // not validated: nobody reads the answer
	if rec.Code != statusClientClosedRequest {
		t.Errorf("status %d, want %d", rec.Code, statusClientClosedRequest)
	}
	logs := h.logs.String()
	if strings.Contains(logs, `"level":"ERROR"`) || !strings.Contains(logs, `"cancelled":true`) {
		t.Errorf("a cancelled request is logged as one, not as an error:\n%s", logs)
	}
}

func TestEventStreamsAndLongPollsAreCappedPerKeyAndAccount(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	h.h = New(h.app, Options{BaseURL: "http://api.test", Streams: StreamLimits{PerKey: 2, PerAccount: 3}})
	srv := httptest.NewServer(h.h)
	t.Cleanup(srv.Close)
	// refused asks over the network, so that a stream let through answers
	// at once (200, then the stream, closed here) rather than hold the test.
	refused := func(path, key, setting string) {
		t.Helper()
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		out := req.Clone(context.Background())
		out.RequestURI, out.URL.Scheme, out.URL.Host = "", "http", srv.Listener.Addr().String()
		got, err := http.DefaultClient.Do(out)
		if err != nil {
			t.Fatal(err)
		}
		var body []byte
		if got.StatusCode != 200 {
			body, _ = io.ReadAll(got.Body)
		}
		got.Body.Close()
		res := &response{Status: got.StatusCode, Header: got.Header, Body: body}
		validateResponse(t, req, res)
		res.want(t, 429)
		d, _ := res.object(t)["detail"].(string)
		if res.Header.Get("Retry-After") != "5" || !strings.Contains(d, setting) {
			t.Errorf("%s: Retry-After %q, detail %q, want one naming %s", path, res.Header.Get("Retry-After"), d, setting)
		}
	}
	verifications := path("/api/identities/%s/verifications/?wait=1", tn.one)

	first := openStream(t, srv.URL+"/api/events/stream/", tn.keyOne, "")
	openStream(t, srv.URL+"/api/events/stream/", tn.keyOne, "")
	refused("/api/events/stream/", tn.keyOne, "at most 2 at once (CALLSIGN_MAX_STREAMS_PER_KEY)")
	refused("/api/events/?wait=1", tn.keyOne, "CALLSIGN_MAX_STREAMS_PER_KEY")
	refused(verifications, tn.keyOne, "CALLSIGN_MAX_STREAMS_PER_KEY")
	h.do("GET", "/api/events/", nil, tn.keyOne).want(t, 200) // no wait: not held open, not counted
	h.do("GET", path("/api/identities/%s/verifications/", tn.one), nil, tn.keyOne).want(t, 200)

	openStream(t, srv.URL+"/api/events/stream/", tn.keyTwo, "")
	refused("/api/events/stream/", tn.mgmt, "at most 3 at once (CALLSIGN_MAX_STREAMS_PER_ACCOUNT)")
	refused("/api/events/?wait=1", tn.keyTwo, "CALLSIGN_MAX_STREAMS_PER_ACCOUNT")
	openStream(t, srv.URL+"/api/events/stream/", tn.otherAccount, "") // another account's room is its own

	// A stream that ends gives its slot back.
	first.res.Body.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		req := httptest.NewRequest("GET", "/api/events/?wait=1&after=latest", nil)
		req.Header.Set("Authorization", "Bearer "+tn.keyOne)
		if got := h.serve(req); got.Status == 200 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the closed stream's slot was not given back: %d %s", got.Status, got.Body)
		}
	}
}
