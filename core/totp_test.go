package core

import (
	"testing"
	"time"
)

func TestParseTOTP(t *testing.T) {
	ok := []struct {
		in   string
		want TOTPKey
	}{
		{"JBSWY3DPEHPK3PXP", TOTPKey{"JBSWY3DPEHPK3PXP", "SHA1", 6, 30}},
		{" jbsw-y3dp ehpk 3pxp== ", TOTPKey{"JBSWY3DPEHPK3PXP", "SHA1", 6, 30}},
		{"otpauth://totp/ACME:me@example.com?secret=jbswy3dpehpk3pxp&issuer=ACME", TOTPKey{"JBSWY3DPEHPK3PXP", "SHA1", 6, 30}},
		{"OTPAUTH://TOTP/x?secret=JBSWY3DPEHPK3PXP&algorithm=sha512&digits=8&period=60", TOTPKey{"JBSWY3DPEHPK3PXP", "SHA512", 8, 60}},
	}
	for _, c := range ok {
		got, err := ParseTOTP(c.in)
		if err != nil || got != c.want {
			t.Errorf("%q: %+v %v, want %+v", c.in, got, err, c.want)
		}
		// The stored form reads back as the same key.
		if again, err := ParseTOTP(got.URI()); err != nil || again != got {
			t.Errorf("%q: URI %q reads back as %+v %v", c.in, got.URI(), again, err)
		}
	}
	for _, bad := range []string{"", "   ", "not base32!", "JBSWY3DPEHPK3PX1", "A",
		"otpauth://hotp/x?secret=JBSWY3DPEHPK3PXP&counter=0", "otpauth://totp/x", "otpauth://totp/x?secret=",
		"otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&digits=5", "otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&digits=abc",
		"otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&algorithm=MD5", "otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&period=0",
		"otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&period=3601", "https://example.com/?secret=JBSWY3DPEHPK3PXP", "otpauth://%zz"} {
		_, err := ParseTOTP(bad)
		e, isErr := err.(*Error)
		if !isErr || e.Kind != KindInvalid || len(e.Fields["totp"]) == 0 {
			t.Errorf("%q: %v, want a validation error on totp", bad, err)
		}
	}
}

func TestTOTPExpiresIn(t *testing.T) {
	k := TOTPKey{Period: 30}
	for unix, want := range map[int64]int{0: 30, 1: 29, 29: 1, 30: 30, 59: 1} {
		if got := k.ExpiresIn(time.Unix(unix, 0)); got != want {
			t.Errorf("at %d: %d, want %d", unix, got, want)
		}
	}
}
