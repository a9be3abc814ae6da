// Package jwttoken signs and verifies the service's tokens as JWTs with
// HMAC-SHA256 (HS256): access and refresh tokens for the API, and the
// verification page's session. Claims:
//
//	iss "callsign", sub the account's uuid, token_type access|refresh|session,
//	stamp the account's security stamp, iat and exp; fam, the refresh
//	family of access and refresh tokens, and gen, a refresh token's
//	generation in it.
package jwttoken

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/callsign/callsign/ports"
)

// MinKeyBytes is the shortest signing key accepted: HS256's hash size.
const MinKeyBytes = 32

const issuer = "callsign"

// Signer is a ports.Tokens over one HS256 key.
type Signer struct {
	key []byte
}

// New makes a signer with key.
func New(key []byte) (*Signer, error) {
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("jwt: the signing key has %d bytes; want at least %d", len(key), MinKeyBytes)
	}
	return &Signer{key: key}, nil
}

type claims struct {
	jwt.RegisteredClaims
	TokenType  string `json:"token_type"`
	Stamp      string `json:"stamp"`
	Family     string `json:"fam,omitempty"`
	Generation int64  `json:"gen,omitempty"`
}

// Sign makes a token of c.
func (s *Signer) Sign(c ports.TokenClaims) (string, error) {
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims{
		RegisteredClaims: jwt.RegisteredClaims{Issuer: issuer, Subject: c.AccountID,
			IssuedAt: jwt.NewNumericDate(c.IssuedAt), ExpiresAt: jwt.NewNumericDate(c.ExpiresAt)},
		TokenType:  string(c.Kind),
		Stamp:      c.Stamp,
		Family:     c.Family,
		Generation: c.Generation,
	}).SignedString(s.key)
}

// Verify checks the signature (HS256 only: no "none", no algorithm
// confusion), the issuer and the expiry at now.
func (s *Signer) Verify(token string, now time.Time) (ports.TokenClaims, error) {
	var c claims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return s.key, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), jwt.WithIssuer(issuer),
		jwt.WithExpirationRequired(), jwt.WithTimeFunc(func() time.Time { return now }))
	if err != nil {
		return ports.TokenClaims{}, err
	}
	if c.Subject == "" || c.TokenType == "" || c.IssuedAt == nil {
		return ports.TokenClaims{}, errors.New("jwt: missing claims")
	}
	return ports.TokenClaims{Kind: ports.TokenKind(c.TokenType), AccountID: c.Subject, Stamp: c.Stamp, Family: c.Family,
		Generation: c.Generation, IssuedAt: c.IssuedAt.UTC(), ExpiresAt: c.ExpiresAt.UTC()}, nil
}

// OpenKeyFile reads the signing key kept at path, generating it first
// (32 random bytes, base64, mode 0600) when the file does not exist yet.
func OpenKeyFile(path string) ([]byte, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if err := createKeyFile(path); err != nil {
			return nil, fmt.Errorf("creating the signing key %s: %w", path, err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the signing key: %w", err)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(key) < MinKeyBytes {
		return nil, fmt.Errorf("signing key file %s: not a base64 key of at least %d bytes", path, MinKeyBytes)
	}
	return key, nil
}

// createKeyFile writes a fresh key beside path and links it into place, so
// that of two processes starting together one key wins whole and both use it.
func createKeyFile(path string) error {
	key := make([]byte, MinKeyBytes)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".jwt-key-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
	if err = errors.Join(err, tmp.Chmod(0o600), tmp.Sync(), tmp.Close()); err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return nil
}
