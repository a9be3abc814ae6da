package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/callsign/callsign/adapters/egress"
	"github.com/callsign/callsign/adapters/mailauth"
	"github.com/callsign/callsign/adapters/mailmime"
	"github.com/callsign/callsign/adapters/memory"
	"github.com/callsign/callsign/adapters/numberplan"
	"github.com/callsign/callsign/adapters/simtel"
	"github.com/callsign/callsign/adapters/totp"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

// harness is the API over the memory fakes, driven through the real router.
// Every response it sees is validated against the OpenAPI document.
type harness struct {
	t     testing.TB
	h     http.Handler
	app   *app.App
	store *memory.Store
	clock *memory.Clock
	relay *memory.Relay
	sim   *simtel.Sim
	dns   *memory.Resolver
	logs  *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func newHarness(t testing.TB) *harness { return newHarnessWith(t, func(*app.Deps) {}) }

// newHarnessWith lets a test change the app's dependencies first.
func newHarnessWith(t testing.TB, change func(*app.Deps)) *harness {
	t.Helper()
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := &harness{t: t, store: memory.NewStore(), clock: memory.NewClock(t0), relay: &memory.Relay{}, sim: simtel.New(), dns: memory.NewResolver(), logs: logs}
	h.clock.Step = time.Millisecond
	h.store.EventData = EventData("http://api.test")
	deps := app.Deps{
		Ports: app.Ports{Store: h.store, Clock: h.clock, IDs: memory.IDs{}, Cipher: &memory.Cipher{}, Log: log, Telephony: h.sim, NumberPlan: numberplan.Plan{},
			Parser: mailmime.Parser{}, Composer: mailmime.Composer{}, Relay: h.relay,
			Resolver: h.dns, MailAuth: mailauth.NewAuthenticator(h.dns, "mx.api.test"), Signer: mailauth.NewSigner(), OTP: totp.Generator{},
			Destinations: egress.New(core.DestinationPolicy{}, h.dns), EventJSON: EventJSON},
		Settings: app.Settings{MailDomains: []string{"agents.test", "bots.test"}, PublicURL: "http://api.test", MaxMessageBytes: 1 << 20,
			Retry:  app.RetryPolicy{First: time.Millisecond, Max: time.Millisecond, GiveUpAfter: time.Hour},
			Domain: core.DomainSettings{MXHost: "mx.api.test"}}}
	change(&deps)
	h.app = app.New(deps)
	t.Cleanup(h.app.Close)
	h.sim.Serves = h.app.SMS.Serves
	h.sim.Inbound = func(ctx context.Context, from, to, body, sid string) {
		if _, err := h.app.SMS.Receive(ctx, app.InboundSMS{From: from, To: to, Body: body, SID: sid}); err != nil {
			t.Errorf("simulated delivery: %v", err)
		}
	}
	t.Cleanup(h.sim.Wait)
	h.h = New(h.app, Options{Log: log, BaseURL: "http://api.test", MaxUploadBytes: 1 << 20, MCP: mcpStub,
		Mailgun: fakeMailgun{}, SNS: fakeSNS{}})
	return h
}

// mcpStub stands in for the MCP endpoint (adapters/mcpserver, tested end
// to end in e2e): it answers every request with a JSON-RPC result
// that echoes the bearer key it was given.
func mcpStub(api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{"key": r.Header.Get("Authorization")}})
	})
}

// runOutbox delivers queued mail in the background until the test ends.
func (h *harness) runOutbox() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.app.Outbox.RunOutbox(ctx, time.Second); close(done) }()
	h.t.Cleanup(func() { cancel(); <-done })
}

// accounts numbers the accounts a test run creates.
var accounts atomic.Int64

// account creates an account and returns its management key.
func (h *harness) account() string {
	h.t.Helper()
	email := fmt.Sprintf("owner-%d@example.com", accounts.Add(1))
	b, err := h.app.Accounts.Create(context.Background(), email, "")
	if err != nil {
		h.t.Fatal(err)
	}
	return b.ManagementKey
}

// t0 is when every test's clock starts.
var t0 = time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)

type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// decode unmarshals the body into v.
func (r *response) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decoding %s: %v", r.Body, err)
	}
}

// object is the body as a JSON object.
func (r *response) object(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	r.decode(t, &m)
	return m
}

// list is the body as a JSON array of objects.
func (r *response) list(t testing.TB) []map[string]any {
	t.Helper()
	var l []map[string]any
	r.decode(t, &l)
	return l
}

// do sends a JSON body (nil for none) with a bearer key ("" for none).
func (h *harness) do(method, path string, body any, key string) *response {
	h.t.Helper()
	var r io.Reader
	ct := ""
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			h.t.Fatal(err)
		}
		r, ct = bytes.NewReader(b), "application/json"
	}
	return h.raw(method, path, ct, r, key)
}

// raw sends a body of any content type.
func (h *harness) raw(method, path, contentType string, body io.Reader, key string) *response {
	h.t.Helper()
	req := httptest.NewRequest(method, path, body)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return h.serve(req)
}

// serve sends a prepared request.
func (h *harness) serve(req *http.Request) *response {
	h.t.Helper()
	rec := httptest.NewRecorder()
	h.h.ServeHTTP(rec, req)
	res := &response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	validateResponse(h.t, req, res)
	return res
}

// path formats a request path.
func path(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// want fails unless the response has the status.
func (r *response) want(t testing.TB, status int) *response {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	return r
}

var (
	docOnce   sync.Once
	docRouter routers.Router
	docLoaded *openapi3.T
	docErr    error
)

// openAPI loads and checks the document once.
func openAPI(t testing.TB) (*openapi3.T, routers.Router) {
	t.Helper()
	docOnce.Do(func() {
		openapi3filter.RegisterBodyDecoder("application/vnd.oai.openapi", openapi3filter.PlainBodyDecoder)
		openapi3filter.RegisterBodyDecoder("text/xml", openapi3filter.PlainBodyDecoder)
		openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
		loader := openapi3.NewLoader()
		docLoaded, docErr = loader.LoadFromData(OpenAPIDocument)
		if docErr != nil {
			return
		}
		if docErr = docLoaded.Validate(context.Background()); docErr != nil {
			return
		}
		// kin-openapi's router matches only requests to the hosts of
		// servers[], and ours is a variable (the operator's base URL): the
		// tests' requests have no host, so they are matched against "/".
		// Without this every response would go unchecked.
		routed := *docLoaded
		routed.Servers = openapi3.Servers{{URL: "/"}}
		if docRouter, docErr = gorillamux.NewRouter(&routed); docErr != nil {
			return
		}
		probe := httptest.NewRequest("GET", "/api/identities/", nil)
		probe.URL.Scheme, probe.URL.Host = "", ""
		if _, _, err := docRouter.FindRoute(probe); err != nil {
			docErr = fmt.Errorf("the router finds no documented route: %w", err)
		}
	})
	if docErr != nil {
		t.Fatalf("the OpenAPI document: %v", docErr)
	}
	return docLoaded, docRouter
}

// validateResponse checks a response against the OpenAPI document: its
// status must be documented for the operation and its body must match.
// Requests to routes the document does not have are left to the route test.
func validateResponse(t testing.TB, req *http.Request, res *response) {
	t.Helper()
	_, router := openAPI(t)
	vreq := req.Clone(context.Background())
	vreq.URL.Scheme, vreq.URL.Host = "", ""
	route, params, err := router.FindRoute(vreq)
	if err != nil {
		return
	}
	in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: res.Status, Header: res.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
	out.SetBodyBytes(res.Body)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("%s %s → %d does not match the OpenAPI document: %v\nbody: %s", req.Method, req.URL.Path, res.Status, err, res.Body)
	}
}
