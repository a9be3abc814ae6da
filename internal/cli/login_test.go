package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestLoginPollsPolitely runs the client's polling against a scripted
// server and records every wait instead of sleeping.
func TestLoginPollsPolitely(t *testing.T) {
	t.Parallel()
	script := []func(w http.ResponseWriter){
		oauthAnswer("authorization_pending"),
		oauthAnswer("slow_down"),
		func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "9")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"detail": "Request was throttled. Expected available in 9 seconds."}`)
		},
		func(w http.ResponseWriter) { http.Error(w, "upstream down", http.StatusBadGateway) },
		oauthAnswer("authorization_pending"),
		func(w http.ResponseWriter) {
			fmt.Fprint(w, `{"management_key": "svc_mgmt_x", "identity_key": "svc_id_x", "identity": {"uuid": "u", "name": "n", "inbox": "n@x"}}`)
		},
	}
	var polls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ParseForm() != nil || r.PostForm.Get("device_code") != "dc" || r.PostForm.Get("grant_type") != DeviceGrantType {
			http.Error(w, "bad poll", http.StatusTeapot)
			return
		}
		script[polls.Add(1)-1](w)
	}))
	defer srv.Close()
	var waits []time.Duration
	dc := &deviceClient{base: srv.URL, http: srv.Client(), wait: func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}}
	keys, err := dc.poll(context.Background(), DeviceStart{DeviceCode: "dc", Interval: 2, ExpiresIn: 900})
	if err != nil || keys.IdentityKey != "svc_id_x" {
		t.Fatalf("poll: %+v %v", keys, err)
	}
	// 2 s, pending: 2 s, slow_down: 7 s from then on, 429: Retry-After 9 s,
	// 502: twice the interval, pending: the interval.
	want := []time.Duration{2, 2, 7, 9, 14, 7}
	for i := range want {
		want[i] *= time.Second
	}
	if fmt.Sprint(waits) != fmt.Sprint(want) {
		t.Fatalf("waits %v, want %v", waits, want)
	}

	for answer, message := range map[string]string{"access_denied": "denied", "expired_token": "expired", "invalid_grant": "refused"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { oauthAnswer(answer)(w) }))
		dc := &deviceClient{base: srv.URL, http: srv.Client(), wait: func(context.Context, time.Duration) error { return nil }}
		if _, err := dc.poll(context.Background(), DeviceStart{DeviceCode: "dc", Interval: 1}); err == nil || !strings.Contains(err.Error(), message) {
			t.Errorf("%s: %v", answer, err)
		}
		srv.Close()
	}
}

func oauthAnswer(code string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error": %q, "error_description": "x"}`, code)
	}
}
