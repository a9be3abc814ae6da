package httpapi

import (
	"fmt"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/callsign/callsign/core"
)

// StreamLimits cap the long-lived requests (event streams and long polls)
// open at once on this instance, per key and per account: each holds a
// connection, a goroutine and its buffers for as long as the client
// likes, which the rate limit (how fast they open) does not bound. Zero
// takes the default.
type StreamLimits struct {
	PerKey, PerAccount int
}

// The defaults of CALLSIGN_MAX_STREAMS_PER_KEY and _PER_ACCOUNT.
const (
	DefaultMaxStreamsPerKey     = 10
	DefaultMaxStreamsPerAccount = 100
)

// streamRetryAfter is the Retry-After of a refused stream: a slot frees
// when one of the client's own streams or polls ends, which the server
// cannot foresee (a long poll ends within a minute).
const streamRetryAfter = 5

// streamSlots counts the long-lived requests open per key and per account.
// The maps hold only clients with a request open, so they are bounded by
// the open connections.
type streamSlots struct {
	limits StreamLimits

	mu       sync.Mutex
	keys     map[string]int
	accounts map[string]int
}

func newStreamSlots(l StreamLimits) *streamSlots {
	if l.PerKey <= 0 {
		l.PerKey = DefaultMaxStreamsPerKey
	}
	if l.PerAccount <= 0 {
		l.PerAccount = DefaultMaxStreamsPerAccount
	}
	return &streamSlots{limits: l, keys: map[string]int{}, accounts: map[string]int{}}
}

// hold takes one of the key's and one of the account's slots, or refuses
// (429) when either is full; release gives them back.
func (s *streamSlots) hold(p core.Principal) (release func(), err error) {
	key := keyClient(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.keys[key] >= s.limits.PerKey:
		return nil, tooManyStreams("key", s.limits.PerKey, "CALLSIGN_MAX_STREAMS_PER_KEY")
	case s.accounts[p.AccountID] >= s.limits.PerAccount:
		return nil, tooManyStreams("account", s.limits.PerAccount, "CALLSIGN_MAX_STREAMS_PER_ACCOUNT")
	}
	s.keys[key]++
	s.accounts[p.AccountID]++
	var once sync.Once
	return func() { once.Do(func() { s.release(key, p.AccountID) }) }, nil
}

func (s *streamSlots) release(key, account string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys[key]--; s.keys[key] == 0 {
		delete(s.keys, key)
	}
	if s.accounts[account]--; s.accounts[account] == 0 {
		delete(s.accounts, account)
	}
}

func tooManyStreams(per string, limit int, setting string) error {
	return &core.Error{Kind: core.KindRateLimited, RetryAfterSeconds: streamRetryAfter,
		Message: fmt.Sprintf("Too many event streams and long polls open for this %s: at most %d at once (%s); "+
			"close one, or wait for one to end.", per, limit, setting)}
}

// holdStream takes a slot for the request's key until release: every
// event stream, and every long poll (a request with wait) while it waits.
func (s *server) holdStream(c *gin.Context) (release func(), err error) {
	return s.streams.hold(principal(c))
}
