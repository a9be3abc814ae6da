package client

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// InProcess hands a request to the handler and streams its answer: the
// status and headers as first written, then the body as it comes; a
// handler that writes nothing answered 200; a caller that gives up before
// the headers gets its context's error.
func TestInProcess(t *testing.T) {
	release := make(chan struct{})
	h := http.NewServeMux()
	h.HandleFunc("GET /created", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Seen", r.Header.Get("Authorization")+" "+r.URL.RawQuery)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "first ")
		w.Header().Set("X-Late", "ignored") // after the headers went
		io.WriteString(w, "second")
	})
	h.HandleFunc("GET /silent", func(http.ResponseWriter, *http.Request) {})
	h.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) { <-release })
	hc := &http.Client{Transport: InProcess(h)}

	res, err := hc.Get("http://callsign.test/created?a=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 201 || string(body) != "first second" || res.Header.Get("X-Seen") != " a=1" || res.Header.Get("X-Late") != "" {
		t.Errorf("%d %q %v", res.StatusCode, body, res.Header)
	}
	if res, err := hc.Get("http://callsign.test/silent"); err != nil || res.StatusCode != 200 {
		t.Errorf("a handler that wrote nothing: %v %v", res, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://callsign.test/slow", nil)
	cancel()
	if _, err := hc.Do(req); err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Errorf("a cancelled request: %v", err)
	}
	close(release)
}
