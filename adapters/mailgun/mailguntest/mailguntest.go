// Package mailguntest stands in for Mailgun in tests: an HTTP server that
// answers the two calls Callsign makes, checking each request against
// Mailgun's published API reference, not against our adapter.
//
// Send a MIME message —
// https://documentation.mailgun.com/docs/mailgun/api-reference/openapi-final/tag/Messages/#tag/Messages/operation/POST-v3--domain-name--messages-mime:
// POST /v3/{domain_name}/messages.mime, HTTP basic auth with user "api" and
// the API key, multipart/form-data with "to" (required; one or more
// values, each possibly a comma-separated list) and the file "message"
// (required: the whole MIME message); the answer is 200
// {"id": "<…@domain>", "message": "Queued. Thank you."}. Errors
// (https://documentation.mailgun.com/docs/mailgun/api-reference/api-overview/#errors):
// 400 with {"message": …}, 401 "Forbidden", 404 {"message": "Domain not
// found: …"}, 429, 500.
//
// Get a domain — https://documentation.mailgun.com/docs/mailgun/api-reference/openapi-final/tag/Domains/
// (mailgun-go v4 calls it at GET /v3/domains/{name}, basic auth as above):
// {"domain": {"name", "state", …}, "receiving_dns_records", "sending_dns_records"}.
package mailguntest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/callsign/callsign/adapters/transporttest"
)

// APIKey is the key the fake accepts.
const APIKey = "key-callsign-test-0123456789abcdef"

// Sent is one accepted send: its envelope recipients and bytes, and the
// domain and id Mailgun sent and answered them with.
type Sent struct {
	transporttest.Sent
	Domain string
	ID     string // as Mailgun answers it, in angle brackets
}

// Server is the fake. NewServer makes one; serve it with httptest. What it
// answers to sends (transporttest.Answer: Fail is a 500, Refuse a 400 with
// Reason) and what it kept are set and read through the embedded Sends.
type Server struct {
	transporttest.Sends[Sent]
	// Reason is the text of a 400; "" says a usual one.
	Reason string

	domains map[string]bool
}

// NewServer makes a fake that sends for the domains given.
func NewServer(domains ...string) *Server {
	s := &Server{domains: map[string]bool{}}
	for _, d := range domains {
		s.domains[d] = true
	}
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if user, key, ok := r.BasicAuth(); !ok || user != "api" || key != APIKey {
		if !ok || user != "api" {
			s.Problem("no basic auth as user api")
		}
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, "Forbidden")
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.Method == http.MethodPost && len(parts) == 3 && parts[0] == "v3" && parts[2] == "messages.mime":
		s.send(w, r, parts[1])
	case r.Method == http.MethodGet && len(parts) == 3 && parts[0] == "v3" && parts[1] == "domains":
		if !s.domains[parts[2]] {
			answer(w, http.StatusNotFound, map[string]any{"message": "Domain not found: " + parts[2]})
			return
		}
		answer(w, http.StatusOK, map[string]any{"domain": map[string]any{"name": parts[2], "state": "active", "spam_action": "disabled",
			"created_at": "Tue, 01 Dec 2026 10:00:00 GMT"}, "receiving_dns_records": []any{}, "sending_dns_records": []any{}})
	default:
		s.Problem(r.Method + " " + r.URL.Path + " is not a Mailgun call the adapter makes")
		answer(w, http.StatusNotFound, map[string]any{"message": "not found"})
	}
}

func (s *Server) send(w http.ResponseWriter, r *http.Request, domain string) {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		s.Problem("Content-Type " + r.Header.Get("Content-Type") + ", want multipart/form-data")
	}
	if err := r.ParseMultipartForm(64 << 20); err != nil {
		s.Problem("body: " + err.Error())
		answer(w, http.StatusBadRequest, map[string]any{"message": "malformed form"})
		return
	}
	var rcpts []string
	for _, v := range r.MultipartForm.Value["to"] {
		for _, a := range strings.Split(v, ",") {
			if a = strings.TrimSpace(a); a != "" {
				rcpts = append(rcpts, a)
			}
		}
	}
	files := r.MultipartForm.File["message"]
	if len(rcpts) == 0 || len(files) != 1 {
		s.Problem(fmt.Sprintf("%d recipients in to and %d message files; want some and one", len(rcpts), len(files)))
		answer(w, http.StatusBadRequest, map[string]any{"message": "to parameter is missing"})
		return
	}
	if !s.domains[domain] {
		answer(w, http.StatusNotFound, map[string]any{"message": "Domain not found: " + domain})
		return
	}
	f, err := files[0].Open()
	if err != nil {
		s.Problem(err.Error())
		return
	}
	raw, _ := io.ReadAll(f)
	f.Close()
	switch s.Next() {
	case transporttest.Throttle:
		answer(w, http.StatusTooManyRequests, map[string]any{"message": "Too many requests"})
		return
	case transporttest.Fail:
		answer(w, http.StatusInternalServerError, map[string]any{"message": "Internal server error"})
		return
	case transporttest.Refuse:
		reason := s.Reason
		if reason == "" {
			reason = "to parameter is not a valid address. please check documentation"
		}
		answer(w, http.StatusBadRequest, map[string]any{"message": reason})
		return
	case transporttest.Unreachable:
		transporttest.HangUp(w)
		return
	}
	sent := s.Keep(r.Context(), func(seq int) Sent {
		return Sent{Sent: transporttest.Sent{Recipients: rcpts, Raw: raw}, Domain: domain,
			ID: fmt.Sprintf("<20261206100000.%d.callsignfake@%s>", seq, domain)}
	})
	answer(w, http.StatusOK, map[string]any{"id": sent.ID, "message": "Queued. Thank you."})
}

func answer(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}
