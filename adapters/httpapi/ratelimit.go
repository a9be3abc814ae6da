package httpapi

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/time/rate"

	"github.com/callsign/callsign/core"
)

// RateLimit is a token bucket: PerSecond requests on average, Burst at once.
// A zero PerSecond turns every limit off.
type RateLimit struct {
	PerSecond float64
	Burst     int
}

// guessLimit bounds wrong passwords and wrong user codes per credential
// and client address: ten, then one every six seconds.
var guessLimit = RateLimit{PerSecond: 1.0 / 6, Burst: 10}

// addressGuessLimit bounds them per client address, whatever the
// credential: a hundred, then one every three seconds. Strangers sharing
// an address do not reach it by mistyping; one address trying many
// credentials does.
var addressGuessLimit = RateLimit{PerSecond: 1.0 / 3, Burst: 100}

// limits are the buckets of one API instance. They live in memory: with
// several instances, each keeps its own (docs/api.md).
type limits struct {
	keys      *limiter // every authenticated request, per key (or per account for tokens)
	addresses *limiter // sign-in, token and device routes, and failed authentication, per client address
	// Wrong passwords and user codes, per credential and client address
	// (core.CredentialGuessKey) and per client address.
	guesses, addressGuesses *limiter
}

func newLimits(l RateLimit, now func() time.Time) limits {
	if l.PerSecond <= 0 {
		return limits{}
	}
	return limits{keys: newLimiter(l, now), addresses: newLimiter(l, now), guesses: newLimiter(guessLimit, now),
		addressGuesses: newLimiter(addressGuessLimit, now)}
}

// maxBuckets bounds the clients tracked at once.
const maxBuckets = 100_000

// limiter keeps a token bucket per client. A bucket left alone long enough
// to fill up again is the same as a new one, so idle buckets are dropped;
// that keeps memory bounded by the clients active in the last few seconds.
// A nil limiter allows everything.
type limiter struct {
	limit      rate.Limit
	burst      int
	now        func() time.Time
	maxBuckets int
	// refill is how long an empty bucket takes to fill up: a bucket left
	// alone that long can go, and sweeps run at most that often.
	refill time.Duration

	mu      sync.Mutex
	buckets map[string]*bucket
	swept   time.Time
}

type bucket struct {
	*rate.Limiter
	seen time.Time
}

func newLimiter(l RateLimit, now func() time.Time) *limiter {
	return &limiter{limit: rate.Limit(l.PerSecond), burst: l.Burst, now: now, maxBuckets: maxBuckets, buckets: map[string]*bucket{},
		refill: time.Duration(float64(l.Burst) / l.PerSecond * float64(time.Second))}
}

// take spends one token of the client's bucket. When there is none, it
// spends nothing and reports how long until there is.
func (l *limiter) take(client string) time.Duration {
	if l == nil {
		return 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bucket(client, now)
	r := b.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d
	}
	return 0
}

// wait reports how long until the client's bucket holds a token, without
// spending one.
func (l *limiter) wait(client string) time.Duration {
	if l == nil {
		return 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[client]
	if !ok {
		return 0
	}
	if tokens := b.TokensAt(now); tokens < 1 {
		return time.Duration((1 - tokens) / float64(l.limit) * float64(time.Second))
	}
	return 0
}

func (l *limiter) bucket(client string, now time.Time) *bucket {
	b, ok := l.buckets[client]
	if !ok {
		if len(l.buckets) >= l.maxBuckets || now.Sub(l.swept) >= l.refill {
			l.sweep(now)
		}
		b = &bucket{Limiter: rate.NewLimiter(l.limit, l.burst)}
		l.buckets[client] = b
	}
	b.seen = now
	return b
}

// sweep drops the buckets that have refilled. If every bucket is busy, it
// drops arbitrary ones (Go's map order is random) rather than grow without
// bound: a client that loses its bucket starts again with a full one.
func (l *limiter) sweep(now time.Time) {
	l.swept = now
	for client, b := range l.buckets {
		if now.Sub(b.seen) >= l.refill {
			delete(l.buckets, client)
		}
	}
	for client := range l.buckets {
		if len(l.buckets) < l.maxBuckets*9/10 {
			break
		}
		delete(l.buckets, client)
	}
}

// throttled is the 429 answer: Retry-After in whole seconds, and DRF's words.
func throttled(wait time.Duration) error {
	seconds := max(1, int(math.Ceil(wait.Seconds())))
	return &core.Error{Kind: core.KindRateLimited, RetryAfterSeconds: seconds,
		Message: fmt.Sprintf("Request was throttled. Expected available in %d seconds.", seconds)}
}

// keyClient names the key a request was made with, for the limits per
// key; all the bearer tokens of an account count as one key.
func keyClient(p core.Principal) string {
	if p.KeyID == 0 {
		return "account:" + p.AccountID
	}
	return "key:" + strconv.FormatInt(p.KeyID, 10)
}

// throttleKey counts an authenticated request against its key.
func (s *server) throttleKey(c *gin.Context) {
	if wait := s.limits.keys.take(keyClient(principal(c))); wait > 0 {
		s.fail(c, throttled(wait))
		return
	}
	c.Next()
}

// throttleAddress counts a request against the client's address; fail
// renders the 429 in the route's own format.
func (s *server) throttleAddress(fail func(*gin.Context, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		if wait := s.limits.addresses.take(c.ClientIP()); wait > 0 {
			fail(c, throttled(wait))
			return
		}
		c.Next()
	}
}

// guessAllowed refuses a check of credential from an address that has
// made too many wrong guesses of it lately, or of anything.
func (s *server) guessAllowed(c *gin.Context, credential string) error {
	return s.limits.guessAllowed(c.ClientIP(), credential)
}

// wrongGuess counts a wrong password or user code of credential against
// the address.
func (s *server) wrongGuess(c *gin.Context, credential string) {
	s.limits.wrongGuess(c.ClientIP(), credential)
}

func (l limits) guessAllowed(address, credential string) error {
	if wait := max(l.guesses.wait(core.CredentialGuessKey(address, credential)), l.addressGuesses.wait(address)); wait > 0 {
		return throttled(wait)
	}
	return nil
}

func (l limits) wrongGuess(address, credential string) {
	l.guesses.take(core.CredentialGuessKey(address, credential))
	l.addressGuesses.take(address)
}
