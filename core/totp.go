package core

import (
	"encoding/base32"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// TOTPKey is what a password entry keeps to compute time-based one-time
// passwords (RFC 6238): the shared secret (base32, upper case, no padding)
// and the three settings an authenticator app reads from an otpauth URI.
type TOTPKey struct {
	Secret    string
	Algorithm string // SHA1, SHA256 or SHA512
	Digits    int
	Period    int // seconds
}

// TOTPCode is the code of one period and how long it stays valid.
type TOTPCode struct {
	Code      string
	Period    int
	Digits    int
	ExpiresIn int // whole seconds left in the period, 1..Period
}

// Bounds on what a TOTP key may say. RFC 4226 allows 6 to 8 digits; a
// period beyond an hour or a secret beyond 1 KiB is no authenticator's.
const (
	totpMinDigits    = 6
	totpMaxDigits    = 8
	totpMaxPeriod    = 3600
	totpMaxSecretLen = 1 << 10
	totpField        = "totp"
)

// ParseTOTP reads what a caller gives as a password entry's TOTP: an
// otpauth://totp/ URI (secret required; algorithm, digits and period
// optional) or a bare base32 secret (spaces and hyphens, as sites print
// them, ignored), which means SHA-1, 6 digits, 30 s. Anything else is a
// validation error on "totp".
func ParseTOTP(s string) (TOTPKey, error) {
	s = strings.TrimSpace(s)
	k := TOTPKey{Algorithm: "SHA1", Digits: 6, Period: 30}
	if !strings.Contains(s, ":") {
		k.Secret = s
		return k, k.checkSecret()
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || !strings.EqualFold(u.Scheme, "otpauth"):
		return k, Invalid(totpField, "Enter an otpauth://totp/ URI or a base32 secret.")
	case !strings.EqualFold(u.Host, "totp"):
		return k, Invalid(totpField, "Only time-based (otpauth://totp/) keys are supported.")
	}
	q := u.Query()
	k.Secret = q.Get("secret")
	if a := q.Get("algorithm"); a != "" {
		switch strings.ToUpper(a) {
		case "SHA1", "SHA256", "SHA512":
			k.Algorithm = strings.ToUpper(a)
		default:
			return k, Invalid(totpField, "The algorithm must be SHA1, SHA256 or SHA512.")
		}
	}
	if d := q.Get("digits"); d != "" {
		n, err := strconv.Atoi(d)
		if err != nil || n < totpMinDigits || n > totpMaxDigits {
			return k, Invalid(totpField, "The digits must be between %d and %d.", totpMinDigits, totpMaxDigits)
		}
		k.Digits = n
	}
	if p := q.Get("period"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > totpMaxPeriod {
			return k, Invalid(totpField, "The period must be between 1 and %d seconds.", totpMaxPeriod)
		}
		k.Period = n
	}
	return k, k.checkSecret()
}

// checkSecret normalizes the secret to upper-case unpadded base32 and
// checks that it decodes to at least one byte.
func (k *TOTPKey) checkSecret() error {
	s := strings.ToUpper(strings.NewReplacer(" ", "", "-", "", "=", "").Replace(k.Secret))
	if s == "" {
		return Invalid(totpField, "Enter an otpauth://totp/ URI or a base32 secret.")
	}
	if len(s) > totpMaxSecretLen {
		return Invalid(totpField, "Ensure the secret has no more than %d characters.", totpMaxSecretLen)
	}
	// Padded back as authenticators read it: an unpadded length that no
	// padding can fix ("A") is not base32.
	padded := s + strings.Repeat("=", (8-len(s)%8)%8)
	if b, err := base32.StdEncoding.DecodeString(padded); err != nil || len(b) == 0 {
		return Invalid(totpField, "The secret is not valid base32.")
	}
	k.Secret = s
	return nil
}

// URI is the key as an otpauth URI, the form it is stored in.
func (k TOTPKey) URI() string {
	q := url.Values{}
	q.Set("secret", k.Secret)
	q.Set("algorithm", k.Algorithm)
	q.Set("digits", strconv.Itoa(k.Digits))
	q.Set("period", strconv.Itoa(k.Period))
	return (&url.URL{Scheme: "otpauth", Host: "totp", Path: "/callsign", RawQuery: q.Encode()}).String()
}

// ExpiresIn is how many whole seconds the code shown at t stays valid: the
// rest of the period t falls in (RFC 6238's T0 = 0).
func (k TOTPKey) ExpiresIn(t time.Time) int {
	return k.Period - int(t.Unix()%int64(k.Period))
}
