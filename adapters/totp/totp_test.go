package totp

import (
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/callsign/callsign/core"
)

// RFC 6238, Appendix B: the seeds are the ASCII strings of the appendix's
// reference code, 20, 32 and 64 bytes long, and the codes have 8 digits.
func TestRFC6238Vectors(t *testing.T) {
	seed := func(n int) string {
		return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString([]byte(strings.Repeat("1234567890", 7)[:n]))
	}
	keys := map[string]core.TOTPKey{
		"SHA1":   {Secret: seed(20), Algorithm: "SHA1", Digits: 8, Period: 30},
		"SHA256": {Secret: seed(32), Algorithm: "SHA256", Digits: 8, Period: 30},
		"SHA512": {Secret: seed(64), Algorithm: "SHA512", Digits: 8, Period: 30},
	}
	vectors := []struct {
		unix int64
		want map[string]string
	}{
		{59, map[string]string{"SHA1": "94287082", "SHA256": "46119246", "SHA512": "90693936"}},
		{1111111109, map[string]string{"SHA1": "07081804", "SHA256": "68084774", "SHA512": "25091201"}},
		{1111111111, map[string]string{"SHA1": "14050471", "SHA256": "67062674", "SHA512": "99943326"}},
		{1234567890, map[string]string{"SHA1": "89005924", "SHA256": "91819424", "SHA512": "93441116"}},
		{2000000000, map[string]string{"SHA1": "69279037", "SHA256": "90698825", "SHA512": "38618901"}},
		{20000000000, map[string]string{"SHA1": "65353130", "SHA256": "77737706", "SHA512": "47863826"}},
	}
	for _, v := range vectors {
		for alg, want := range v.want {
			got, err := Generator{}.TOTP(keys[alg], time.Unix(v.unix, 0))
			if err != nil || got != want {
				t.Errorf("%s at %d: %q %v, want %q", alg, v.unix, got, err, want)
			}
		}
	}
}

// TestAgainstOathtool compares codes with oathtool (oath-toolkit), an
// implementation nobody here wrote, for keys of every algorithm, length of
// code and a few periods, read the way a caller gives them (otpauth URIs
// and bare secrets) by core.ParseTOTP.
func TestAgainstOathtool(t *testing.T) {
	oathtool, err := exec.LookPath("oathtool")
	if err != nil {
		if os.Getenv("CALLSIGN_TEST_REQUIRE_ALL") == "1" {
			t.Fatal("oathtool is not installed (apt-get install oathtool)")
		}
		t.Skip("oathtool is not installed (apt-get install oathtool)")
	}
	checked := 0
	for _, alg := range []string{"SHA1", "SHA256", "SHA512"} {
		for _, digits := range []int{6, 7, 8} {
			for _, period := range []int{30, 60, 10} {
				raw := make([]byte, 20)
				if _, err := rand.Read(raw); err != nil {
					t.Fatal(err)
				}
				secret := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(raw)
				given := fmt.Sprintf("otpauth://totp/Example:agent@example.com?secret=%s&issuer=Example&algorithm=%s&digits=%d&period=%d",
					strings.ToLower(secret), alg, digits, period)
				if alg == "SHA1" && digits == 6 && period == 30 {
					given = secret[:4] + " " + secret[4:] // a bare secret as a site prints it
				}
				key, err := core.ParseTOTP(given)
				if err != nil {
					t.Fatalf("%s: %v", given, err)
				}
				for _, unix := range []int64{59, 1234567890, time.Now().Unix()} {
					at := time.Unix(unix, 0).UTC()
					got, err := Generator{}.TOTP(key, at)
					if err != nil {
						t.Fatal(err)
					}
					out, err := exec.Command(oathtool, "--totp="+alg, "--base32", fmt.Sprintf("--digits=%d", digits),
						fmt.Sprintf("--time-step-size=%ds", period), "--now="+at.Format("2006-01-02 15:04:05 UTC"), secret).CombinedOutput()
					if err != nil {
						t.Fatalf("oathtool: %v: %s", err, out)
					}
					if want := strings.TrimSpace(string(out)); got != want {
						t.Errorf("%s at %d: we say %s, oathtool says %s", given, unix, got, want)
					}
					checked++
				}
			}
		}
	}
	t.Logf("%d codes agree with oathtool", checked)
}
