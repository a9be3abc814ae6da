package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"path/filepath"

	"github.com/callsign/callsign/adapters/argon2id"
	"github.com/callsign/callsign/adapters/jwttoken"
	"github.com/callsign/callsign/adapters/oidc"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/config"
)

// signIn is what sign-in needs: password hashing, token signing, the
// optional OpenID Connect provider, and the key of the verification page's
// forms.
type signIn struct {
	hasher   *argon2id.Hasher
	tokens   *jwttoken.Signer
	provider *oidc.Provider // nil without CALLSIGN_OIDC_ISSUER
	formKey  []byte
	// consoleKey signs the console's CSRF tokens.
	consoleKey []byte
}

// jwtKeyFile is where the generated signing key lives when
// CALLSIGN_JWT_SECRET is not set.
func jwtKeyFile(cfg config.Config) string { return filepath.Join(cfg.DataDir, "jwt.key") }

func openSignIn(cfg config.Config) (signIn, error) {
	key := cfg.JWTSecret
	if key == nil {
		var err error
		if key, err = jwttoken.OpenKeyFile(jwtKeyFile(cfg)); err != nil {
			return signIn{}, err
		}
	}
	tokens, err := jwttoken.New(key)
	if err != nil {
		return signIn{}, err
	}
	s := signIn{hasher: argon2id.New(argon2id.DefaultParams), tokens: tokens, formKey: deriveKey(key, "callsign verification page forms"),
		consoleKey: deriveKey(key, "callsign console forms")}
	if cfg.OIDCIssuer != "" {
		s.provider = oidc.New(oidc.Config{Issuer: cfg.OIDCIssuer, ClientID: cfg.OIDCClientID, ClientSecret: cfg.OIDCClientSecret,
			RedirectURL: cfg.BaseURL + "/api/auth/device/callback/"})
	}
	return s, nil
}

// deriveKey makes a key for one purpose from the signing secret, so one
// secret (shared by every instance) serves tokens and forms without the
// two ever using the same key.
func deriveKey(secret []byte, purpose string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// use puts the adapters into the app's dependencies.
func (s signIn) use(deps *app.Deps) {
	deps.Hasher, deps.Tokens = s.hasher, s.tokens
	if s.provider != nil {
		deps.ExternalSignIn = s.provider
	}
}
