package mailgunsig

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"testing"
	"time"

	"github.com/callsign/callsign/core"
)

func sign(key, timestamp, token string) string {
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(timestamp + token))
	return hex.EncodeToString(mac.Sum(nil))
}

func TestCheck(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	v := New("key-secret", func() time.Time { return now })
	ts := strconv.FormatInt(now.Unix()-60, 10)
	if replayed, err := v.Check(ts, "token-1", sign("key-secret", ts, "token-1")); err != nil || replayed {
		t.Fatalf("fresh: %v %v", replayed, err)
	}
	if replayed, err := v.Check(ts, "token-1", sign("key-secret", ts, "token-1")); err != nil || !replayed {
		t.Fatalf("replay: %v %v, want replayed", replayed, err)
	}
	stale := strconv.FormatInt(now.Add(-Window-time.Second).Unix(), 10)
	future := strconv.FormatInt(now.Add(Window+time.Second).Unix(), 10)
	for name, c := range map[string][3]string{
		"forged":        {ts, "token-2", sign("other-key", ts, "token-2")},
		"other token":   {ts, "token-3", sign("key-secret", ts, "token-2")},
		"stale":         {stale, "token-4", sign("key-secret", stale, "token-4")},
		"future":        {future, "token-5", sign("key-secret", future, "token-5")},
		"missing":       {"", "", ""},
		"not hex":       {ts, "token-6", "zz"},
		"bad timestamp": {"soon", "token-7", sign("key-secret", "soon", "token-7")},
	} {
		if _, err := v.Check(c[0], c[1], c[2]); core.KindOf(err) != core.KindForbidden {
			t.Errorf("%s: %v, want Forbidden", name, err)
		}
	}
	// Tokens are forgotten once their signatures are stale anyway.
	now = now.Add(Window + time.Minute)
	ts2 := strconv.FormatInt(now.Unix(), 10)
	if _, err := v.Check(ts2, "token-8", sign("key-secret", ts2, "token-8")); err != nil {
		t.Fatal(err)
	}
	if _, ok := v.seen["token-1"]; ok || len(v.seen) != 1 {
		t.Fatalf("remembered %v", v.seen)
	}
}
