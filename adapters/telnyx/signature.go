package telnyx

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Tolerance is how far a webhook's telnyx-timestamp may be from our clock:
// an older one is refused, so a captured webhook cannot be replayed later.
const Tolerance = 5 * time.Minute

// Verifier checks Telnyx's webhook signatures as Telnyx documents them
// (https://developers.telnyx.com/docs/messaging/messages/receiving-webhooks#webhook-signing):
// the header telnyx-signature-ed25519 is the base64 Ed25519 signature of
// "{telnyx-timestamp}|{raw body}" by the account's key, whose public half
// is shown in the Mission Control portal (base64).
type Verifier struct {
	key ed25519.PublicKey
	now func() time.Time
}

// NewVerifier reads the account's base64 public key; now tells the time
// (nil: time.Now).
func NewVerifier(publicKey string, now func() time.Time) (*Verifier, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(publicKey))
	if err != nil || len(key) != ed25519.PublicKeySize {
		return nil, errors.New("not a base64 Ed25519 public key (32 bytes)")
	}
	if now == nil {
		now = time.Now
	}
	return &Verifier{key: key, now: now}, nil
}

// Verify checks a webhook's telnyx-timestamp and telnyx-signature-ed25519
// headers against its raw body; the error says which check failed.
func (v *Verifier) Verify(timestamp, signature string, body []byte) error {
	if timestamp == "" || signature == "" {
		return errors.New("the telnyx-timestamp or telnyx-signature-ed25519 header is missing")
	}
	secs, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return fmt.Errorf("telnyx-timestamp %q is not a Unix time", timestamp)
	}
	if age := v.now().Sub(time.Unix(secs, 0)); age > Tolerance || age < -Tolerance {
		return fmt.Errorf("telnyx-timestamp is %s away from now, more than %s", age.Round(time.Second), Tolerance)
	}
	sig, err := base64.StdEncoding.DecodeString(signature)
	if err != nil || !ed25519.Verify(v.key, signed(timestamp, body), sig) {
		return errors.New("the telnyx-signature-ed25519 does not match")
	}
	return nil
}

// Sign makes the headers Telnyx would send with body at time at, for fakes
// and tests that hold the private key.
func Sign(key ed25519.PrivateKey, at time.Time, body []byte) (timestamp, signature string) {
	timestamp = strconv.FormatInt(at.Unix(), 10)
	return timestamp, base64.StdEncoding.EncodeToString(ed25519.Sign(key, signed(timestamp, body)))
}

func signed(timestamp string, body []byte) []byte {
	return append([]byte(timestamp+"|"), body...)
}
