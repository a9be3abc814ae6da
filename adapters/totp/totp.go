// Package totp computes time-based one-time passwords (RFC 6238) with
// pquerna/otp, the Go implementation authenticator servers commonly use.
package totp

import (
	"fmt"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/callsign/callsign/core"
)

// Generator implements ports.OneTimePasswords.
type Generator struct{}

var algorithms = map[string]otp.Algorithm{"SHA1": otp.AlgorithmSHA1, "SHA256": otp.AlgorithmSHA256, "SHA512": otp.AlgorithmSHA512}

// TOTP is the code of the period t falls in. The key is one core.ParseTOTP
// accepted, so an error here is a fault of ours, not the caller's.
func (Generator) TOTP(key core.TOTPKey, t time.Time) (string, error) {
	alg, ok := algorithms[key.Algorithm]
	if !ok {
		return "", fmt.Errorf("totp: unknown algorithm %q", key.Algorithm)
	}
	return totp.GenerateCodeCustom(key.Secret, t, totp.ValidateOpts{
		Period: uint(key.Period), Digits: otp.Digits(key.Digits), Algorithm: alg,
	})
}
