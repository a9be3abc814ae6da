package acmecert

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/acme/autocert"

	"github.com/callsign/callsign/core"
)

// state is State in memory, with leases as core decides them.
type state struct {
	mu      sync.Mutex
	entries map[string][]byte
	leases  map[string]string // name → holder; no expiry here
}

func newState() *state { return &state{entries: map[string][]byte{}, leases: map[string]string{}} }

func (s *state) Allow(context.Context, string) error { return nil }

func (s *state) Get(_ context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.entries[key]
	if !ok {
		return nil, core.NotFound("no entry")
	}
	return v, nil
}

func (s *state) Put(_ context.Context, key string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries[key] = data
	return nil
}

func (s *state) Delete(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, key)
	return nil
}

func (s *state) Claim(_ context.Context, key, holder string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.leases[key]; ok && h != holder {
		return false, nil
	}
	s.leases[key] = holder
	return true, nil
}

func (s *state) Release(_ context.Context, key, holder string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leases[key] == holder {
		delete(s.leases, key)
	}
	return nil
}

// entry is a cache entry as autocert writes it: the key, then the
// certificate, valid from notBefore for lifetime.
func entry(t *testing.T, notBefore time.Time, lifetime time.Duration) []byte {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mx.example.com"},
		NotBefore: notBefore, NotAfter: notBefore.Add(lifetime), DNSNames: []string{"mx.example.com"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(key)
	return append(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
}

// Only the lease holder is sent to the CA; another instance waits for what
// the holder stores.
func TestCacheLeases(t *testing.T) {
	ctx := context.Background()
	st := newState()
	a := &cache{state: st, holder: "a"}
	b := &cache{state: st, holder: "b"}

	// Nothing stored: a takes the lease and is told to ask the CA.
	if _, err := a.Get(ctx, "mx.example.com"); !errors.Is(err, autocert.ErrCacheMiss) {
		t.Fatalf("a, nothing stored: %v", err)
	}
	// b waits for a's certificate, which a's Put stores and unleases.
	fresh := entry(t, time.Now().Add(-time.Hour), 90*24*time.Hour)
	got := make(chan []byte)
	go func() {
		v, err := b.Get(ctx, "mx.example.com")
		if err != nil {
			t.Error(err)
		}
		got <- v
	}()
	if err := a.Put(ctx, "mx.example.com", fresh); err != nil {
		t.Fatal(err)
	}
	if v := <-got; string(v) != string(fresh) {
		t.Fatal("b did not get a's certificate")
	}
	if len(st.leases) != 0 {
		t.Fatalf("leases after the Put: %v", st.leases)
	}

	// Due for renewal (past two thirds of its life): b leases it, and
	// autocert renews from what Get returns; a waits, with a deadline.
	due := entry(t, time.Now().Add(-70*24*time.Hour), 90*24*time.Hour)
	st.Put(ctx, "mx.example.com", due)
	if v, err := b.Get(ctx, "mx.example.com"); err != nil || string(v) != string(due) || st.leases["mx.example.com"] != "b" {
		t.Fatalf("b, due: %v %v", err, st.leases)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := a.Get(short, "mx.example.com"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a read b's due certificate while b renews it: %v", err)
	}

	// Challenge tokens are never leased: a miss is a miss.
	if _, err := a.Get(ctx, "mx.example.com+token"); !errors.Is(err, autocert.ErrCacheMiss) || len(st.leases) != 1 {
		t.Fatalf("token: %v %v", err, st.leases)
	}
}

func TestDueFollowsRenewBefore(t *testing.T) {
	young := entry(t, time.Now().Add(-time.Minute), 5*time.Minute)
	if (&cache{}).due(young) || !(&cache{renewBefore: 4*time.Minute + 30*time.Second}).due(young) {
		t.Fatal("a 1-minute-old 5-minute certificate is due only when renewed 4m30s before expiry")
	}
	if (&cache{}).due([]byte("-----BEGIN EC PRIVATE KEY-----\n")) {
		t.Fatal("an account key is never due")
	}
}

func TestRedirectToHTTPS(t *testing.T) {
	for _, tc := range []struct{ port, host, want string }{
		{"443", "callsign.example.com", "https://callsign.example.com/api/x/?a=1"},
		{"443", "callsign.example.com:80", "https://callsign.example.com/api/x/?a=1"},
		{"8443", "callsign.example.com:8080", "https://callsign.example.com:8443/api/x/?a=1"},
		{"443", "[2001:db8::1]:80", "https://[2001:db8::1]/api/x/?a=1"},
	} {
		req := httptest.NewRequest(http.MethodGet, "http://"+tc.host+"/api/x/?a=1", nil)
		rec := httptest.NewRecorder()
		RedirectToHTTPS(tc.port).ServeHTTP(rec, req)
		if rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != tc.want {
			t.Errorf("%s via %s: %d %q", tc.host, tc.port, rec.Code, rec.Header().Get("Location"))
		}
	}
	rec := httptest.NewRecorder()
	RedirectToHTTPS("443").ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "http://callsign.example.com/api/", nil))
	if rec.Code != http.StatusBadRequest {
		t.Errorf("POST over HTTP: %d", rec.Code)
	}
}
