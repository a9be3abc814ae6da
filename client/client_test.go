package client

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// A refusal reads as the API wrote it: the detail, or one "field: message"
// line per message, fields in name order; Retry-After is kept.
func TestErrorsAreTheAPIsWords(t *testing.T) {
	h := http.NewServeMux()
	h.HandleFunc("/detail", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(429)
		w.Write([]byte(`{"detail": "Request was throttled. Expected available in 3 seconds."}`))
	})
	h.HandleFunc("/fields", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(400)
		w.Write([]byte(`{"to_email": ["Enter a valid email address."], "content": ["This field is required.", "Too short."]}`))
	})
	h.HandleFunc("/text", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "session not found", 404) })
	c := New("http://callsign.test", "key", &http.Client{Transport: InProcess(h)})
	for path, want := range map[string]string{
		"/detail": "Request was throttled. Expected available in 3 seconds.",
		"/fields": "content: This field is required.\ncontent: Too short.\nto_email: Enter a valid email address.",
		"/text":   "the server answered 404 Not Found",
	} {
		err := c.call(context.Background(), "GET", path, nil, nil, nil)
		e, ok := err.(*Error)
		if !ok || err.Error() != want {
			t.Errorf("%s: %q, want %q", path, err, want)
		}
		if path == "/detail" && e.RetryAfter != 3*time.Second {
			t.Errorf("Retry-After: %v", e.RetryAfter)
		}
	}
	if !NotFound(c.call(context.Background(), "GET", "/text", nil, nil, nil)) {
		t.Error("a 404 is not found")
	}
}
