// Package mailgunsig checks the signatures Mailgun puts on its webhooks
// (events and inbound routes): the hex HMAC-SHA256 of timestamp+token
// with the account's webhook signing key, as Mailgun documents it
// (https://documentation.mailgun.com/docs/mailgun/user-manual/tracking-messages/#securing-webhooks).
// It is written with crypto/hmac rather than mailgun-go's
// VerifyWebhookSignature: the check is five lines, and the SDK's would
// need a client bound to a domain for nothing; the freshness and replay
// rules, which the SDK leaves to us, are here either way.
package mailgunsig

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"sync"
	"time"

	"github.com/callsign/callsign/core"
)

// Window is how far a signature's timestamp may be from now, either way:
// older is stale, and a token is remembered this long after its
// timestamp, which bounds what replay protection holds.
const Window = 5 * time.Minute

// MaxTokens bounds the tokens remembered at once: past it a fresh
// webhook is answered "try later" (Mailgun retries), never let through
// unremembered.
const MaxTokens = 1 << 17

// sweepEvery is how often expired tokens are dropped.
const sweepEvery = 30 * time.Second

// Verifier checks signatures and remembers the tokens it accepted.
type Verifier struct {
	key []byte
	now func() time.Time

	mu        sync.Mutex
	seen      map[string]time.Time // token → when it may be forgotten
	lastSweep time.Time
}

// New checks signatures made with key; now nil means time.Now.
func New(key string, now func() time.Time) *Verifier {
	if now == nil {
		now = time.Now
	}
	return &Verifier{key: []byte(key), now: now, seen: map[string]time.Time{}}
}

var (
	errForged = core.Forbidden("The Mailgun signature does not verify.")
	errStale  = core.Forbidden("The Mailgun signature is missing or more than 5 minutes old.")
	errBusy   = core.Unavailable("Too many Mailgun webhooks at once; try again.")
)

// Check verifies one webhook's signature. A missing, forged or stale
// one is Forbidden; replayed reports a token already accepted within the
// window (the webhook is then answered as done and ignored).
func (v *Verifier) Check(timestamp, token, signature string) (replayed bool, err error) {
	secs, perr := strconv.ParseInt(timestamp, 10, 64)
	if perr != nil || token == "" || signature == "" {
		return false, errStale
	}
	mac := hmac.New(sha256.New, v.key)
	mac.Write([]byte(timestamp + token))
	got, derr := hex.DecodeString(signature)
	if derr != nil || !hmac.Equal(got, mac.Sum(nil)) {
		return false, errForged
	}
	now, signed := v.now(), time.Unix(secs, 0)
	if now.Sub(signed) > Window || signed.Sub(now) > Window {
		return false, errStale
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if now.Sub(v.lastSweep) > sweepEvery {
		for t, until := range v.seen {
			if now.After(until) {
				delete(v.seen, t)
			}
		}
		v.lastSweep = now
	}
	if _, ok := v.seen[token]; ok {
		return true, nil
	}
	if len(v.seen) >= MaxTokens {
		return false, errBusy
	}
	v.seen[token] = signed.Add(Window)
	return false, nil
}
