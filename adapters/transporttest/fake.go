package transporttest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Envelope is what a provider's own record of a send says of the envelope
// and bytes; a provider fake's Sent embeds Sent to have it.
func (s Sent) Envelope() Sent { return s }

// Sends is the bookkeeping every provider fake (sestest, mailguntest)
// keeps of the sends it is asked for: what to answer them, what it
// accepted, and every request that broke the provider's published
// reference. A fake embeds it and keeps its own request checks and answer
// shapes; S is its record of one accepted send. The zero value accepts.
type Sends[S interface{ Envelope() Sent }] struct {
	mu       sync.Mutex
	answer   Answer
	failures int // sends left to answer with answer before accepting again; <0: all
	sent     []S
	requests int // sends answered, whatever the answer
	problems []string
	seq      int
	hold     time.Duration // between keeping a send and answering it
}

// Answer makes every following send answer a.
func (s *Sends[S]) Answer(a Answer) { s.mu.Lock(); s.answer, s.failures = a, -1; s.mu.Unlock() }

// FailNext makes the next n sends answer a, then accepts again.
func (s *Sends[S]) FailNext(n int, a Answer) { s.mu.Lock(); s.answer, s.failures = a, n; s.mu.Unlock() }

// HoldAnswers makes every following accepted send wait d between being
// kept (listed by Sent) and being answered: a provider that has taken the
// message and not yet said so, the window in which a sender that dies
// sends it again. The wait ends early if the sender goes away.
func (s *Sends[S]) HoldAnswers(d time.Duration) { s.mu.Lock(); s.hold = d; s.mu.Unlock() }

// Sent lists the accepted messages, in order.
func (s *Sends[S]) Sent() []S {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]S(nil), s.sent...)
}

// Received lists the accepted messages as the contract suite reads them.
func (s *Sends[S]) Received() []Sent {
	var out []Sent
	for _, m := range s.Sent() {
		out = append(out, m.Envelope())
	}
	return out
}

// Requests counts the sends answered so far, refused ones included.
func (s *Sends[S]) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Problems lists every request that broke the published reference; a test
// ends by wanting none.
func (s *Sends[S]) Problems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.problems...)
}

// Problem records a request that broke the published reference.
func (s *Sends[S]) Problem(p string) {
	s.mu.Lock()
	s.problems = append(s.problems, p)
	s.mu.Unlock()
}

// Next counts a well-formed send and says what to answer it: Accept, or
// the answer set by Answer or FailNext.
func (s *Sends[S]) Next() Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	if s.failures == 0 {
		return Accept
	}
	if s.failures > 0 {
		s.failures--
	}
	return s.answer
}

// Keep records an accepted send, made by record from the send's number
// (1, 2, … for the fake's ids), then waits out HoldAnswers or until ctx
// (the request's) ends, and returns the record for the answer.
func (s *Sends[S]) Keep(ctx context.Context, record func(seq int) S) S {
	s.mu.Lock()
	s.seq++
	m := record(s.seq)
	s.sent = append(s.sent, m)
	hold := s.hold
	s.mu.Unlock()
	if hold > 0 {
		select {
		case <-time.After(hold):
		case <-ctx.Done():
		}
	}
	return m
}

// HangUp closes the request's connection without an answer: Unreachable.
func HangUp(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		conn.Close()
	}
}

// ServeFake serves a provider fake on loopback until the test ends, then
// fails the test for each request that broke the provider's reference.
func ServeFake(tb testing.TB, provider string, fake interface {
	http.Handler
	Problems() []string
}) *httptest.Server {
	hs := httptest.NewServer(fake)
	tb.Cleanup(func() {
		hs.Close()
		for _, p := range fake.Problems() {
			tb.Errorf("the request broke %s's reference: %s", provider, p)
		}
	})
	return hs
}
