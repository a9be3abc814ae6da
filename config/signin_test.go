package config

import (
	"strings"
	"testing"
)

func TestSignInSettings(t *testing.T) {
	c, err := Load(env(map[string]string{
		"CALLSIGN_TRUSTED_PROXIES":    "10.0.0.0/8, 192.0.2.1",
		"CALLSIGN_JWT_SECRET":         strings.Repeat("s", 32),
		"CALLSIGN_OIDC_ISSUER":        "https://accounts.example.com",
		"CALLSIGN_OIDC_CLIENT_ID":     "callsign",
		"CALLSIGN_OIDC_CLIENT_SECRET": "shh",
		"CALLSIGN_RATE_LIMIT":         "off",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.TrustedProxies, " ") != "10.0.0.0/8 192.0.2.1" || len(c.JWTSecret) != 32 || c.OIDCIssuer != "https://accounts.example.com" ||
		c.OIDCClientID != "callsign" || c.OIDCClientSecret != "shh" || c.RateLimitPerSecond != 0 {
		t.Fatalf("parsed: %+v", c)
	}
	if _, err := Load(env(map[string]string{"CALLSIGN_OIDC_ISSUER": "https://accounts.example.com"})); err == nil || !strings.HasPrefix(err.Error(), "CALLSIGN_OIDC_CLIENT_ID: ") {
		t.Fatalf("an issuer without a client: %v", err)
	}
}
