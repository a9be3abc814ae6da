// Package twiliotest stands in for Twilio in tests: a REST server that
// answers the calls the adapter makes, and Twilio's webhook signature.
package twiliotest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/callsign/callsign/adapters/twilio"
)

// Credentials the fake accepts; twilio-go checks client-side that they are alphanumeric.
const (
	AccountSID = "AC0123456789abcdef0123456789abcdef"
	AuthToken  = "authtoken0123456789abcdef0123456"
	// InvalidNumber is refused as a destination, as Twilio's test number is.
	InvalidNumber = "+15005550001"
)

// Signature is what Twilio sends in X-Twilio-Signature with form to fullURL.
func Signature(token, fullURL string, form url.Values) string {
	return twilio.Signature(token, fullURL, form)
}

// Server answers like Twilio's REST API for the calls the adapter makes: US
// numbers are available, other countries are not; a message to
// InvalidNumber is refused with error 21211, as is a call to it. Calls
// are kept with their parameters; a call needs To, From and Twiml or Url
// (error 21205 otherwise), and its update to Status=completed ends it.
// Down makes every request a 503.
type Server struct {
	Down     atomic.Bool
	mu       sync.Mutex
	numbers  map[string]url.Values // by PN sid: what each number was bought and updated with
	messages []url.Values
	calls    map[string]url.Values // by CA sid: the parameters it was placed with, and Status once updated
	seq      int
}

// NewServer makes an empty fake; serve it with httptest.NewServer.
func NewServer() *Server {
	return &Server{numbers: map[string]url.Values{}, calls: map[string]url.Values{}}
}

// Calls is what each call was placed with, by its sid; an ended call
// has Status "completed".
func (f *Server) Calls() map[string]url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]url.Values{}
	for k, v := range f.calls {
		out[k] = maps.Clone(v) // the fake updates them in place
	}
	return out
}

// Numbers is what each bought number, not released since, was set up
// with, by its sid.
func (f *Server) Numbers() map[string]url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]url.Values{}
	for k, v := range f.numbers {
		out[k] = maps.Clone(v) // the fake updates them in place
	}
	return out
}

// Messages are the parameters of every message sent, in order.
func (f *Server) Messages() []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]url.Values(nil), f.messages...)
}

func (f *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reply := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	if u, p, ok := r.BasicAuth(); !ok || u != AccountSID || p != AuthToken {
		reply(401, map[string]any{"code": 20003, "message": "Authenticate", "status": 401})
		return
	}
	if f.Down.Load() {
		reply(503, map[string]any{"code": 20500, "message": "Service Unavailable", "status": 503})
		return
	}
	_ = r.ParseForm()
	f.mu.Lock()
	defer f.mu.Unlock()
	base := "/2010-04-01/Accounts/" + AccountSID
	switch {
	case r.Method == "GET" && r.URL.Path == base+".json":
		reply(200, map[string]any{"sid": AccountSID, "status": "active", "friendly_name": "Callsign tests"})
	case r.Method == "GET" && strings.HasPrefix(r.URL.Path, base+"/AvailablePhoneNumbers/"):
		if !strings.Contains(r.URL.Path, "/US/") {
			reply(404, map[string]any{"code": 20404, "message": "The requested resource was not found", "status": 404})
			return
		}
		f.seq++
		reply(200, map[string]any{"available_phone_numbers": []map[string]any{{"phone_number": fmt.Sprintf("+1415555%04d", 1000+f.seq)}}})
	case r.Method == "POST" && r.URL.Path == base+"/IncomingPhoneNumbers.json":
		f.seq++
		sid := fmt.Sprintf("PN%032x", f.seq)
		f.numbers[sid] = r.PostForm
		reply(200, map[string]any{"sid": sid, "phone_number": r.PostForm.Get("PhoneNumber"),
			"capabilities": map[string]bool{"sms": true, "voice": true, "mms": false}})
	case r.Method == "DELETE" && strings.HasPrefix(r.URL.Path, base+"/IncomingPhoneNumbers/"):
		sid := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, base+"/IncomingPhoneNumbers/"), ".json")
		if _, ok := f.numbers[sid]; !ok {
			reply(404, map[string]any{"code": 20404, "message": "The requested resource was not found", "status": 404})
			return
		}
		delete(f.numbers, sid)
		w.WriteHeader(http.StatusNoContent)
	case r.Method == "POST" && strings.HasPrefix(r.URL.Path, base+"/IncomingPhoneNumbers/"):
		sid := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, base+"/IncomingPhoneNumbers/"), ".json")
		for k, v := range r.PostForm {
			f.numbers[sid][k] = v
		}
		reply(200, map[string]any{"sid": sid})
	case r.Method == "POST" && r.URL.Path == base+"/Messages.json":
		if r.PostForm.Get("To") == InvalidNumber {
			reply(400, map[string]any{"code": 21211, "message": "The 'To' number " + InvalidNumber + " is not a valid phone number.", "status": 400})
			return
		}
		f.messages = append(f.messages, r.PostForm)
		reply(201, map[string]any{"sid": fmt.Sprintf("SM%032x", len(f.messages)), "status": "queued"})
	case r.Method == "POST" && r.URL.Path == base+"/Calls.json":
		form := r.PostForm
		switch {
		case form.Get("To") == InvalidNumber:
			reply(400, map[string]any{"code": 21211, "message": "The 'To' number " + InvalidNumber + " is not a valid phone number.", "status": 400})
			return
		case form.Get("To") == "" || form.Get("From") == "" || form.Get("Twiml") == "" && form.Get("Url") == "":
			reply(400, map[string]any{"code": 21205, "message": "Url parameter is required.", "status": 400})
			return
		}
		f.seq++
		sid := fmt.Sprintf("CA%032x", f.seq)
		f.calls[sid] = form
		reply(201, map[string]any{"sid": sid, "status": "queued", "to": form.Get("To"), "from": form.Get("From")})
	case r.Method == "POST" && strings.HasPrefix(r.URL.Path, base+"/Calls/"):
		sid := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, base+"/Calls/"), ".json")
		c, ok := f.calls[sid]
		if !ok {
			reply(404, map[string]any{"code": 20404, "message": "The requested resource was not found", "status": 404})
			return
		}
		c.Set("Status", r.PostForm.Get("Status"))
		reply(200, map[string]any{"sid": sid, "status": r.PostForm.Get("Status")})
	default:
		http.NotFound(w, r)
	}
}
