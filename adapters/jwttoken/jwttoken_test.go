package jwttoken

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/callsign/callsign/ports"
)

var (
	t0  = time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
	key = []byte("0123456789abcdef0123456789abcdef")
)

func signer(t *testing.T, k []byte) *Signer {
	t.Helper()
	s, err := New(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSignAndVerify(t *testing.T) {
	s := signer(t, key)
	in := ports.TokenClaims{Kind: ports.AccessToken, AccountID: "a1", Stamp: "st", IssuedAt: t0, ExpiresAt: t0.Add(15 * time.Minute)}
	tok, err := s.Sign(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Verify(tok, t0.Add(14*time.Minute))
	if err != nil || out != in {
		t.Fatalf("verified %+v, %v; signed %+v", out, err, in)
	}
	if _, err := s.Verify(tok, t0.Add(15*time.Minute)); err == nil {
		t.Fatal("an expired token verifies")
	}
	if _, err := New(key[:31]); err == nil {
		t.Fatal("a short key is accepted")
	}
}

func TestVerifyRefusesForgeries(t *testing.T) {
	s := signer(t, key)
	good, _ := s.Sign(ports.TokenClaims{Kind: ports.AccessToken, AccountID: "a1", IssuedAt: t0, ExpiresAt: t0.Add(time.Hour)})
	parts := strings.Split(good, ".")
	otherPayload := base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"callsign","sub":"a2","token_type":"access","iat":1795248000,"exp":1795251600}`))
	sig := []byte(parts[2])
	sig[3] ^= 1
	otherKey, _ := signer(t, bytes.Repeat([]byte("k"), 32)).Sign(ports.TokenClaims{Kind: ports.AccessToken, AccountID: "a1", IssuedAt: t0, ExpiresAt: t0.Add(time.Hour)})
	mint := func(method jwt.SigningMethod, k any, c jwt.MapClaims) string {
		tok, err := jwt.NewWithClaims(method, c).SignedString(k)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	base := jwt.MapClaims{"iss": "callsign", "sub": "a1", "token_type": "access", "iat": t0.Unix(), "exp": t0.Add(time.Hour).Unix()}
	without := func(name string) jwt.MapClaims {
		c := jwt.MapClaims{}
		for k, v := range base {
			if k != name {
				c[k] = v
			}
		}
		return c
	}
	for name, tok := range map[string]string{
		"payload swapped":    parts[0] + "." + otherPayload + "." + parts[2],
		"signature changed":  parts[0] + "." + parts[1] + "." + string(sig),
		"signature dropped":  parts[0] + "." + parts[1] + ".",
		"another key":        otherKey,
		"alg none":           mint(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, base),
		"HS512":              mint(jwt.SigningMethodHS512, key, base),
		"another issuer":     mint(jwt.SigningMethodHS256, key, jwt.MapClaims{"iss": "evil", "sub": "a1", "token_type": "access", "iat": t0.Unix(), "exp": t0.Add(time.Hour).Unix()}),
		"no expiry":          mint(jwt.SigningMethodHS256, key, without("exp")),
		"no subject":         mint(jwt.SigningMethodHS256, key, without("sub")),
		"no token type":      mint(jwt.SigningMethodHS256, key, without("token_type")),
		"not a token at all": "svc_mgmt_nonsense",
	} {
		if c, err := s.Verify(tok, t0); err == nil {
			t.Errorf("%s: verified as %+v", name, c)
		}
	}
	// The control: the same minting with every claim does verify.
	if _, err := s.Verify(mint(jwt.SigningMethodHS256, key, base), t0); err != nil {
		t.Fatalf("a well-formed token fails: %v", err)
	}
}

func TestOpenKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "jwt.key")
	first, err := OpenKeyFile(path)
	if err != nil || len(first) != MinKeyBytes {
		t.Fatalf("created key %x, %v", first, err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, %v", info.Mode(), err)
	}
	again, err := OpenKeyFile(path)
	if err != nil || !bytes.Equal(first, again) {
		t.Fatal("the key changed when reopened")
	}
	if err := os.WriteFile(path, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenKeyFile(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("a broken key file: %v", err)
	}
}
