package core

import (
	"crypto/rand"
	"strings"
	"testing"
	"time"
)

func TestUserCodes(t *testing.T) {
	code, err := NewUserCode(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if len(code) != UserCodeLength || strings.Trim(code, UserCodeAlphabet) != "" {
		t.Fatalf("code %q", code)
	}
	shown := FormatUserCode(code)
	if len(shown) != 9 || shown[4] != '-' || strings.ReplaceAll(shown, "-", "") != code {
		t.Fatalf("shown as %q", shown)
	}
	// People type codes in any case, with or without the dash, with spaces.
	for _, typed := range []string{shown, strings.ToLower(shown), code, " " + shown[:4] + " " + shown[5:] + " ", strings.ToLower(code[:3]) + "-" + code[3:]} {
		if got, ok := NormalizeUserCode(typed); !ok || got != code {
			t.Errorf("%q read as %q, %v", typed, got, ok)
		}
	}
	for _, typed := range []string{"", "BCDF-GHJ", "BCDF-GHJKL", "BCDF-GHJ0", "BCDA-GHJK", "BCDF_GHJK", "ВCDF-GHJK"} {
		if got, ok := NormalizeUserCode(typed); ok {
			t.Errorf("%q read as the code %q", typed, got)
		}
	}
}

func TestDeviceGrantExpiry(t *testing.T) {
	now := time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
	g := DeviceGrant{ExpiresAt: now.Add(time.Minute)}
	if g.Expired(now) || !g.Expired(now.Add(time.Minute)) {
		t.Fatal("a grant expires at ExpiresAt, not before")
	}
}

func TestSecurityStampFollowsThePassword(t *testing.T) {
	a := Account{ID: "a", PasswordHash: "$argon2id$one"}
	b := a
	b.PasswordHash = "$argon2id$two"
	if a.SecurityStamp() == b.SecurityStamp() || a.SecurityStamp() != (Account{ID: "x", PasswordHash: a.PasswordHash}).SecurityStamp() {
		t.Fatal("the stamp should change with the password hash and only with it")
	}
	if strings.Contains(a.SecurityStamp(), "argon2id") {
		t.Fatal("the stamp shows the hash")
	}
}

func TestDeviceGrantMove(t *testing.T) {
	for _, tc := range []struct {
		to      DeviceGrantStatus
		from    DeviceGrantStatus
		message string
	}{
		{DeviceApproved, DevicePending, "This request was already answered."},
		{DeviceDenied, DevicePending, "This request was already answered."},
		{DeviceRedeemed, DeviceApproved, "This device code was already used."},
	} {
		from, refused := DeviceGrantMove(tc.to)
		if from != tc.from || KindOf(refused) != KindConflict || refused.Error() != tc.message {
			t.Errorf("moving to %s: from %s, refused with %v", tc.to, from, refused)
		}
	}
}
