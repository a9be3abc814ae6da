package e2e

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/totp"
	"github.com/callsign/callsign/core"
)

// TestPasswordTOTP: an entry keeps a TOTP key sealed, shows only has_totp,
// and gives the current code to whoever may read the entry.
func TestPasswordTOTP(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, nil)
		mgmt := r.bootstrap("totp@example.com")
		var ident, other struct{ UUID string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "t"}, &ident)
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "o"}, &other)
		idKey, otherKey := identityKey(r, mgmt, ident.UUID), identityKey(r, mgmt, other.UUID)

		const secret = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
		uri := "otpauth://totp/Bank:agent?secret=" + secret + "&issuer=Bank&digits=8&period=60&algorithm=SHA256"
		var entry map[string]any
		if s := r.call("POST", "/api/passwords/?identity="+ident.UUID, idKey,
			map[string]any{"domain": "bank.example", "username": "agent", "password": "pw", "totp": uri}, &entry); s != 201 {
			t.Fatalf("create: %d %v", s, entry)
		}
		if entry["has_totp"] != true || strings.Contains(string(mustJSON(t, entry)), secret) {
			t.Fatalf("entry shows %v", entry)
		}
		id := entry["uuid"].(string)
		for _, row := range r.rawRows("passwords") {
			if bytes.Contains(row, []byte(secret)) {
				t.Fatal("the TOTP secret is stored in plaintext")
			}
		}

		key, _ := core.ParseTOTP(uri)
		var code struct {
			Code      string
			Period    int
			Digits    int
			ExpiresIn int `json:"expires_in"`
		}
		before := time.Now()
		if s := r.call("GET", "/api/passwords/"+id+"/totp/", idKey, nil, &code); s != 200 {
			t.Fatalf("totp: %d", s)
		}
		after := time.Now()
		want1, _ := totp.Generator{}.TOTP(key, before)
		want2, _ := totp.Generator{}.TOTP(key, after)
		if (code.Code != want1 && code.Code != want2) || len(code.Code) != 8 || code.Period != 60 || code.Digits != 8 ||
			code.ExpiresIn < 1 || code.ExpiresIn > 60 {
			t.Fatalf("code %+v, want %s or %s", code, want1, want2)
		}

		// Another identity's key sees no such entry; its own has no key: 404.
		if s := r.call("GET", "/api/passwords/"+id+"/totp/", otherKey, nil, nil); s != 404 {
			t.Fatalf("other identity: %d", s)
		}
		var plain map[string]any
		r.call("POST", "/api/passwords/?identity="+other.UUID, otherKey, map[string]any{"domain": "x.example", "password": "pw"}, &plain)
		if plain["has_totp"] != false {
			t.Fatalf("entry without totp: %v", plain)
		}
		if s := r.call("GET", "/api/passwords/"+plain["uuid"].(string)+"/totp/", otherKey, nil, nil); s != 404 {
			t.Fatalf("entry without totp: %d", s)
		}

		// Bad keys are 400 naming totp, on create and on update.
		for _, bad := range []string{"not base32!", "otpauth://hotp/x?secret=" + secret + "&counter=1", "otpauth://totp/x",
			"otpauth://totp/x?secret=" + secret + "&digits=12", "otpauth://totp/x?secret=" + secret + "&algorithm=MD5",
			"otpauth://totp/x?secret=" + secret + "&period=0", "https://totp/x?secret=" + secret} {
			var e map[string][]string
			if s := r.call("PATCH", "/api/passwords/"+id+"/", idKey, map[string]any{"totp": bad}, &e); s != 400 || len(e["totp"]) == 0 {
				t.Errorf("%q: %d %v", bad, s, e)
			}
		}
		// A bare secret means SHA-1, 6 digits, 30 s.
		r.call("PATCH", "/api/passwords/"+id+"/", idKey, map[string]any{"totp": "jbsw y3dp ehpk 3pxp"}, nil)
		r.call("GET", "/api/passwords/"+id+"/totp/", idKey, nil, &code)
		if len(code.Code) != 6 || code.Period != 30 || code.Digits != 6 {
			t.Fatalf("bare secret: %+v", code)
		}
		// PATCH with totp "" removes the key; PUT without it too.
		r.call("PATCH", "/api/passwords/"+id+"/", idKey, map[string]any{"totp": ""}, &entry)
		if entry["has_totp"] != false || r.call("GET", "/api/passwords/"+id+"/totp/", idKey, nil, nil) != 404 {
			t.Fatalf("after removing: %v", entry)
		}
		r.call("PATCH", "/api/passwords/"+id+"/", idKey, map[string]any{"totp": secret}, nil)
		r.call("PUT", "/api/passwords/"+id+"/", idKey, map[string]any{"domain": "bank.example", "password": "pw2"}, &entry)
		if entry["has_totp"] != false {
			t.Fatalf("PUT without totp keeps it: %v", entry)
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
