// Package telnyxtest stands in for Telnyx in tests: a server that answers
// the REST API v2 calls the adapter makes, checking their shape against
// Telnyx's published API reference, and the account's webhook signing key.
package telnyxtest

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/callsign/callsign/adapters/telnyx"
)

// Settings the fake accepts.
const (
	APIKey             = "KEY0123456789ABCDEF_test"
	MessagingProfileID = "40017a0c-7c1e-4f4b-9d1a-6c0f0e7b6a11"
	ConnectionID       = "1494404757140276705"
	// InvalidNumber is refused as a destination.
	InvalidNumber = "+15005550001"
)

// key is the account's webhook signing key: fixed, so that PublicKey is a
// constant a test can put in its configuration.
var key = ed25519.NewKeyFromSeed([]byte("callsign-telnyx-test-signing-key"))

// PublicKey is the account's public key as Telnyx shows it (base64), the
// value of TELNYX_PUBLIC_KEY.
var PublicKey = base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey))

// Sign is what Telnyx sends in telnyx-timestamp and
// telnyx-signature-ed25519 with body at time at.
func Sign(at time.Time, body []byte) (timestamp, signature string) {
	return telnyx.Sign(key, at, body)
}

// Message is a message the fake accepted: its id and the JSON it was sent.
type Message struct {
	ID   string
	Body map[string]any
}

// Number is one of the account's numbers, as ordered and updated.
type Number struct {
	ID, PhoneNumber, MessagingProfileID, ConnectionID string
}

// Server answers like Telnyx's API v2 for the calls the adapter makes: US
// numbers are available, other countries have none; a message to
// InvalidNumber is refused. Down makes every call a 503. A request whose
// shape the API reference does not allow is a 422 naming the problem, and
// is listed in Problems so that a test can fail on it.
type Server struct {
	Down     atomic.Bool
	mu       sync.Mutex
	numbers  map[string]*Number // by id
	messages []Message
	calls    map[string]*Call // by call_sid
	problems []string
	seq      int
}

// Call is a TeXML call placed through the fake.
type Call struct {
	SID, From, To, Texml string
	HungUp               bool
}

// Calls are the calls placed, by call_sid.
func (f *Server) Calls() map[string]Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]Call{}
	for k, c := range f.calls {
		out[k] = *c
	}
	return out
}

// NewServer makes an empty fake; serve it with httptest.NewServer, with
// "/v2" as the adapter's API base.
func NewServer() *Server { return &Server{numbers: map[string]*Number{}, calls: map[string]*Call{}} }

// Numbers are the account's numbers, not released.
func (f *Server) Numbers() []Number {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Number, 0, len(f.numbers))
	for _, n := range f.numbers {
		out = append(out, *n)
	}
	return out
}

// Messages are the messages sent, in order.
func (f *Server) Messages() []Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.messages)
}

// Problems are the requests refused for their shape.
func (f *Server) Problems() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.problems)
}

var e164 = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)

// The fields each call may carry, from Telnyx's API reference:
//
//   - GET /v2/available_phone_numbers
//     (https://developers.telnyx.com/api/numbers/list-available-phone-numbers):
//     query filter[country_code] (ISO alpha-2), filter[features] (sms, mms,
//     voice, fax, emergency, hd_voice, international_sms, local_calling;
//     repeated as filter[features][]), filter[limit], among others.
//   - POST /v2/number_orders
//     (https://developers.telnyx.com/api/numbers/create-number-order): JSON
//     phone_numbers (required, [{phone_number}]), connection_id,
//     messaging_profile_id, billing_group_id, customer_reference.
//   - GET /v2/phone_numbers (https://developers.telnyx.com/api/numbers/list-phone-numbers):
//     query filter[phone_number], page[number], page[size], among others.
//   - PATCH /v2/phone_numbers/{id}
//     (https://developers.telnyx.com/api/numbers/update-phone-number): JSON
//     connection_id, billing_group_id, customer_reference, tags,
//     external_pin, hd_voice_enabled, address_id.
//   - DELETE /v2/phone_numbers/{id}
//     (https://developers.telnyx.com/api/numbers/delete-phone-number).
//   - POST /v2/messages (https://developers.telnyx.com/api/messaging/send-message):
//     JSON to (required, E.164), from (E.164, or messaging_profile_id),
//     text or media_urls (one required), subject, messaging_profile_id,
//     webhook_url, webhook_failover_url, use_profile_webhooks, type,
//     auto_detect.
//   - GET /v2/messaging_profiles/{id}
//     (https://developers.telnyx.com/api/messaging/retrieve-messaging-profile).
//
// Every call authenticates with "Authorization: Bearer {API key}"
// (https://developers.telnyx.com/docs/overview/authentication); errors are
// {"errors": [{"code", "title", "detail"}]}
// (https://developers.telnyx.com/docs/overview/errors).
var (
	orderFields  = []string{"phone_numbers", "connection_id", "messaging_profile_id", "billing_group_id", "customer_reference"}
	updateFields = []string{"connection_id", "billing_group_id", "customer_reference", "tags", "external_pin", "hd_voice_enabled", "address_id"}
	sendFields   = []string{"to", "from", "text", "media_urls", "subject", "messaging_profile_id", "webhook_url",
		"webhook_failover_url", "use_profile_webhooks", "type", "auto_detect"}
	features = []string{"sms", "mms", "voice", "fax", "emergency", "hd_voice", "international_sms", "local_calling"}
)

func (f *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+APIKey {
		reply(w, 401, errorBody("10009", "Authentication failed", "The API key is missing or invalid."))
		return
	}
	if f.Down.Load() {
		reply(w, 503, errorBody("10011", "Service unavailable", "Try again later."))
		return
	}
	path, ok := strings.CutPrefix(r.URL.Path, "/v2/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var body map[string]any
	if r.Method == http.MethodPost || r.Method == http.MethodPatch {
		var problem string
		if body, problem = readJSON(r); problem != "" {
			f.refuse(w, r, problem)
			return
		}
	}
	id, hasID := strings.CutPrefix(path, "phone_numbers/")
	switch {
	case r.Method == "GET" && strings.HasPrefix(path, "messaging_profiles/"):
		if strings.TrimPrefix(path, "messaging_profiles/") != MessagingProfileID {
			reply(w, 404, errorBody("10005", "Resource not found", "No messaging profile with that id."))
			return
		}
		reply(w, 200, map[string]any{"data": map[string]any{"record_type": "messaging_profile", "id": MessagingProfileID,
			"name": "Callsign tests", "enabled": true}})
	case r.Method == "GET" && path == "available_phone_numbers":
		f.available(w, r)
	case r.Method == "POST" && path == "number_orders":
		f.order(w, r, body)
	case r.Method == "GET" && path == "phone_numbers":
		want := r.URL.Query().Get("filter[phone_number]")
		list := []map[string]any{}
		for _, n := range f.numbers {
			if want == "" || n.PhoneNumber == want {
				list = append(list, numberJSON(n))
			}
		}
		reply(w, 200, map[string]any{"data": list, "meta": map[string]any{"total_results": len(list)}})
	case hasID && (r.Method == "DELETE" || r.Method == "PATCH"):
		n := f.numbers[id]
		if n == nil {
			reply(w, 404, errorBody("10005", "Resource not found", "No phone number with that id."))
			return
		}
		if r.Method == "DELETE" {
			delete(f.numbers, id)
			reply(w, 200, map[string]any{"data": numberJSON(n)})
			return
		}
		if p := unknownFields(body, updateFields); p != "" {
			f.refuse(w, r, p)
			return
		}
		if c, ok := body["connection_id"].(string); ok {
			n.ConnectionID = c
		}
		reply(w, 200, map[string]any{"data": numberJSON(n)})
	case r.Method == "POST" && path == "messages":
		f.send(w, r, body)
	case r.Method == "POST" && strings.HasPrefix(path, "texml/calls/"):
		f.placeCall(w, r, strings.TrimPrefix(path, "texml/calls/"), body)
	case r.Method == "POST" && strings.HasPrefix(path, "calls/") && strings.HasSuffix(path, "/actions/hangup"):
		c := f.calls[strings.TrimSuffix(strings.TrimPrefix(path, "calls/"), "/actions/hangup")]
		if c == nil || c.HungUp {
			reply(w, 422, errorBody("90018", "Call has already ended", "This call is no longer active."))
			return
		}
		c.HungUp = true
		reply(w, 200, map[string]any{"data": map[string]any{"result": "ok"}})
	default:
		reply(w, 404, errorBody("10005", "Resource not found", r.Method+" "+r.URL.Path))
	}
}

// placeCall is the connection-scoped TeXML call: From, To and Texml (or
// Url), names case-sensitive as the reference says.
func (f *Server) placeCall(w http.ResponseWriter, r *http.Request, connection string, body map[string]any) {
	if p := unknownFields(body, []string{"From", "To", "Texml", "Url", "Method", "StatusCallback"}); p != "" {
		f.refuse(w, r, p)
		return
	}
	from, _ := body["From"].(string)
	to, _ := body["To"].(string)
	texml, _ := body["Texml"].(string)
	switch {
	case connection != ConnectionID:
		reply(w, 404, errorBody("10005", "Resource not found", "No TeXML application with that connection id."))
		return
	case !e164.MatchString(from) || !e164.MatchString(to):
		f.refuse(w, r, "From and To must be E.164 numbers")
		return
	case texml == "" && body["Url"] == nil:
		f.refuse(w, r, "Texml or Url is required")
		return
	}
	f.seq++
	c := &Call{SID: fmt.Sprintf("v3:call-%d", f.seq), From: from, To: to, Texml: texml}
	f.calls[c.SID] = c
	reply(w, 200, map[string]any{"call_sid": c.SID, "from": from, "to": to, "status": "queued"})
}

func (f *Server) available(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	country := q.Get("filter[country_code]")
	asked := append(q["filter[features][]"], q["filter[features]"]...)
	for _, feat := range asked {
		if !slices.Contains(features, feat) {
			f.refuse(w, r, fmt.Sprintf("filter[features] %q is not a feature", feat))
			return
		}
	}
	if len(country) != 2 || strings.ToUpper(country) != country {
		f.refuse(w, r, fmt.Sprintf("filter[country_code] %q is not an ISO 3166-1 alpha-2 code", country))
		return
	}
	list := []map[string]any{}
	if country == "US" {
		f.seq++
		list = append(list, map[string]any{"record_type": "available_phone_number", "phone_number": fmt.Sprintf("+1415555%04d", 2000+f.seq),
			"features": []map[string]string{{"name": "sms"}, {"name": "voice"}, {"name": "mms"}}, "reservable": true})
	}
	reply(w, 200, map[string]any{"data": list, "metadata": map[string]any{"total_results": len(list)}})
}

func (f *Server) order(w http.ResponseWriter, r *http.Request, body map[string]any) {
	if p := unknownFields(body, orderFields); p != "" {
		f.refuse(w, r, p)
		return
	}
	wanted, _ := body["phone_numbers"].([]any)
	if len(wanted) == 0 {
		f.refuse(w, r, "phone_numbers is required")
		return
	}
	profile, _ := body["messaging_profile_id"].(string)
	connection, _ := body["connection_id"].(string)
	ordered := []map[string]any{}
	for _, entry := range wanted {
		pn, _ := entry.(map[string]any)["phone_number"].(string)
		if !e164.MatchString(pn) {
			f.refuse(w, r, fmt.Sprintf("phone_numbers[].phone_number %q is not E.164", pn))
			return
		}
		f.seq++
		n := &Number{ID: fmt.Sprint(1293384261075731000 + f.seq), PhoneNumber: pn, MessagingProfileID: profile, ConnectionID: connection}
		f.numbers[n.ID] = n
		ordered = append(ordered, map[string]any{"id": fmt.Sprintf("dc8e4d67-33a0-4cbb-af74-7b58f05bd%03d", f.seq), "phone_number": pn, "status": "success"})
	}
	f.seq++
	reply(w, 200, map[string]any{"data": map[string]any{"record_type": "number_order", "id": fmt.Sprintf("12ade33a-21c0-473b-b055-b3c836e1c%03d", f.seq),
		"status": "success", "phone_numbers": ordered, "phone_numbers_count": len(ordered), "messaging_profile_id": profile, "connection_id": connection}})
}

func (f *Server) send(w http.ResponseWriter, r *http.Request, body map[string]any) {
	if p := unknownFields(body, sendFields); p != "" {
		f.refuse(w, r, p)
		return
	}
	to, _ := body["to"].(string)
	from, _ := body["from"].(string)
	text, _ := body["text"].(string)
	switch {
	case !e164.MatchString(to):
		f.refuse(w, r, fmt.Sprintf("to %q is not E.164", to))
		return
	case !e164.MatchString(from) && body["messaging_profile_id"] == nil:
		f.refuse(w, r, fmt.Sprintf("from %q is not E.164 and there is no messaging_profile_id", from))
		return
	case text == "" && body["media_urls"] == nil:
		f.refuse(w, r, "text or media_urls is required")
		return
	case to == InvalidNumber:
		reply(w, 400, errorBody("40310", "Invalid 'to' address", "The 'to' address "+InvalidNumber+" is not a valid phone number."))
		return
	}
	f.seq++
	id := fmt.Sprintf("40385f64-5717-4562-b3fc-2c963f66a%03d", f.seq)
	f.messages = append(f.messages, Message{ID: id, Body: body})
	reply(w, 200, map[string]any{"data": map[string]any{"record_type": "message", "direction": "outbound", "id": id, "type": "SMS",
		"from": map[string]any{"phone_number": from}, "to": []map[string]any{{"phone_number": to, "status": "queued"}}, "text": text}})
}

// refuse answers a request the API reference does not allow, and notes it.
func (f *Server) refuse(w http.ResponseWriter, r *http.Request, problem string) {
	f.problems = append(f.problems, r.Method+" "+r.URL.Path+": "+problem)
	reply(w, 422, errorBody("10015", "Invalid request", problem))
}

func readJSON(r *http.Request) (map[string]any, string) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return nil, fmt.Sprintf("Content-Type %q, want application/json", r.Header.Get("Content-Type"))
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var body map[string]any
	if err != nil || json.Unmarshal(raw, &body) != nil {
		return nil, "the body is not a JSON object"
	}
	return body, ""
}

func unknownFields(body map[string]any, allowed []string) string {
	for k := range body {
		if !slices.Contains(allowed, k) {
			return fmt.Sprintf("%q is not a field of this request", k)
		}
	}
	return ""
}

func numberJSON(n *Number) map[string]any {
	return map[string]any{"record_type": "phone_number", "id": n.ID, "phone_number": n.PhoneNumber, "status": "active",
		"messaging_profile_id": n.MessagingProfileID, "connection_id": n.ConnectionID}
}

func errorBody(code, title, detail string) map[string]any {
	return map[string]any{"errors": []map[string]string{{"code": code, "title": title, "detail": detail}}}
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// NewVerifier checks webhooks signed with Sign, as the service checks
// Telnyx's with TELNYX_PUBLIC_KEY = PublicKey.
func NewVerifier() *telnyx.Verifier {
	v, err := telnyx.NewVerifier(PublicKey, nil)
	if err != nil {
		panic(err) // PublicKey is a valid key
	}
	return v
}
