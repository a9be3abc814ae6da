package httpapi

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"unicode"
)

// tenants is two accounts: A with identities one and two and a key for
// each, and B with its management key.
type tenants struct {
	mgmt, keyOne, keyTwo, otherAccount string
	one, two                           string // identity uuids of account A
}

func newTenants(t *testing.T, h *harness) tenants {
	var tn tenants
	tn.mgmt = h.account()
	tn.one = h.do("POST", "/api/identities/", map[string]any{"name": "one"}, tn.mgmt).want(t, 201).object(t)["uuid"].(string)
	tn.two = h.do("POST", "/api/identities/", map[string]any{"name": "two"}, tn.mgmt).want(t, 201).object(t)["uuid"].(string)
	tn.keyOne = h.do("POST", "/api/auth/keys/identity/", map[string]any{"identity": tn.one}, tn.mgmt).want(t, 201).object(t)["key"].(string)
	tn.keyTwo = h.do("POST", "/api/auth/keys/identity/", map[string]any{"identity": tn.two}, tn.mgmt).want(t, 201).object(t)["key"].(string)
	tn.otherAccount = h.account()
	return tn
}

// scopeCase is one request made with each of the four kinds of key.
type scopeCase struct {
	method, path string
	body         any
	// statuses for: management key, the identity's key, a sibling's key, another account's key.
	want [4]int
	// count, when >= 0, is the list length the management key and the own key see;
	// the sibling and the other account see an empty list.
	count int
}

func runScopeCases(t *testing.T, h *harness, tn tenants, cases []scopeCase) {
	t.Helper()
	keys := [4]string{tn.mgmt, tn.keyOne, tn.keyTwo, tn.otherAccount}
	names := [4]string{"management key", "own identity key", "sibling identity key", "other account"}
	for _, c := range cases {
		for i, key := range keys {
			res := h.do(c.method, c.path, c.body, key)
			if res.Status != c.want[i] {
				t.Errorf("%s %s with the %s: %d, want %d: %s", c.method, c.path, names[i], res.Status, c.want[i], res.Body)
				continue
			}
			if c.count >= 0 && res.Status == 200 {
				want := c.count
				if i >= 2 {
					want = 0
				}
				if got := len(res.list(t)); got != want {
					t.Errorf("%s %s with the %s: %d items, want %d", c.method, c.path, names[i], got, want)
				}
			}
			if res.Status == 404 && strings.Contains(string(res.Body), tn.one) {
				t.Errorf("%s %s: a 404 names the identity", c.method, c.path)
			}
		}
	}
}

func TestVaultAndContactScoping(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	q := "?identity=" + tn.one
	pw := h.do("POST", "/api/passwords/"+q, map[string]any{"domain": "github.com", "password": "p1"}, tn.mgmt).want(t, 201).object(t)["uuid"]
	sec := h.do("POST", "/api/secrets/"+q, map[string]any{"key": "K", "value": "v"}, tn.mgmt).want(t, 201).object(t)["uuid"]
	ct := h.do("POST", "/api/contacts/"+q, map[string]any{"email": "ann@example.com"}, tn.mgmt).want(t, 201).object(t)["uuid"]
	pwPath, secPath, ctPath := fmt.Sprintf("/api/passwords/%v/", pw), fmt.Sprintf("/api/secrets/%v/", sec), fmt.Sprintf("/api/contacts/%v/", ct)
	ok4, nf := [4]int{200, 200, 404, 404}, -1
	runScopeCases(t, h, tn, []scopeCase{
		{"GET", "/api/passwords/" + q, nil, [4]int{200, 200, 200, 200}, 1},
		{"GET", "/api/passwords/" + q + "&domain=GITHUB.com", nil, [4]int{200, 200, 200, 200}, 1},
		{"GET", pwPath, nil, ok4, nf},
		{"PUT", pwPath, map[string]any{"domain": "github.com", "password": "p2"}, ok4, nf},
		{"PATCH", pwPath, map[string]any{"notes": "n"}, ok4, nf},
		{"POST", "/api/passwords/" + q, map[string]any{"domain": "x.com", "password": "p"}, [4]int{201, 201, 404, 404}, nf},
		{"GET", "/api/passwords/generate-password/", nil, [4]int{200, 200, 200, 200}, nf},

		{"GET", "/api/secrets/" + q, nil, [4]int{200, 200, 200, 200}, 1},
		{"GET", "/api/secrets/" + q + "&key=K", nil, [4]int{200, 200, 200, 200}, 1},
		{"GET", secPath, nil, ok4, nf},
		{"PUT", secPath, map[string]any{"key": "K", "value": "v2"}, ok4, nf},
		{"PATCH", secPath, map[string]any{"value": "v3"}, ok4, nf},

		{"GET", "/api/contacts/" + q, nil, [4]int{200, 200, 200, 200}, 1},
		{"GET", "/api/contacts/" + q + "&source=manual", nil, [4]int{200, 200, 200, 200}, 1},
		{"GET", "/api/contacts/find/" + q + "&email=ANN@example.com", nil, ok4, nf},
		{"GET", "/api/contacts/search/" + q + "&q=ann", nil, [4]int{200, 200, 200, 200}, 1},
		{"GET", ctPath, nil, ok4, nf},
		{"PATCH", ctPath, map[string]any{"nickname": "annie"}, ok4, nf},
		{"POST", "/api/contacts/" + q, map[string]any{"phone_number": "+14155550100"}, [4]int{201, 409, 404, 404}, nf},

		// Deletes last: the sibling and the other account first, so the object is still there.
		{"DELETE", pwPath, nil, [4]int{204, 404, 404, 404}, nf},
		{"DELETE", secPath, nil, [4]int{204, 404, 404, 404}, nf},
		{"DELETE", ctPath, nil, [4]int{204, 404, 404, 404}, nf},
	})
	// The identity's own key deletes too.
	own := h.do("POST", "/api/secrets/", map[string]any{"key": "mine", "value": "v"}, tn.keyOne).want(t, 201).object(t)
	if own["identity"] != tn.one {
		t.Fatalf("an identity key creates for its identity: %v", own)
	}
	h.do("DELETE", fmt.Sprintf("/api/secrets/%v/", own["uuid"]), nil, tn.keyTwo).want(t, 404)
	h.do("DELETE", fmt.Sprintf("/api/secrets/%v/", own["uuid"]), nil, tn.keyOne).want(t, 204)
}

func TestPasswords(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	q := "?identity=" + tn.one
	bad := h.do("POST", "/api/passwords/"+q, map[string]any{"username": "x"}, tn.mgmt).want(t, 400).object(t)
	if bad["domain"] == nil || bad["password"] == nil {
		t.Fatalf("missing fields: %v", bad)
	}
	if e := h.do("POST", "/api/passwords/", map[string]any{"domain": "a.com", "password": "p"}, tn.mgmt).want(t, 400).object(t); e["identity"] == nil {
		t.Fatalf("a management key must pass identity: %v", e)
	}
	h.do("POST", "/api/passwords/?identity=nope", map[string]any{"domain": "a.com", "password": "p"}, tn.mgmt).want(t, 400)
	h.do("POST", "/api/passwords/?identity=00000000-0000-4000-8000-000000000000", map[string]any{"domain": "a.com", "password": "p"}, tn.mgmt).want(t, 404)
	h.do("POST", "/api/passwords/"+q, map[string]any{"domain": "a.com", "password": 5}, tn.mgmt).want(t, 400)
	h.do("POST", "/api/passwords/"+q, map[string]any{"domain": "a b", "password": "p"}, tn.mgmt).want(t, 400)

	form := url.Values{"domain": {"https://GitHub.com/login"}, "username": {"bot"}, "password": {"s3cret!"}, "notes": {"2FA on"}}
	created := h.raw("POST", "/api/passwords/"+q, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), tn.mgmt).want(t, 201).object(t)
	if created["domain"] != "https://GitHub.com/login" || created["password"] != "s3cret!" || created["notes"] != "2FA on" || created["identity"] != tn.one {
		t.Fatalf("created: %v", created)
	}
	path := fmt.Sprintf("/api/passwords/%v/", created["uuid"])
	h.do("POST", "/api/passwords/"+q, map[string]any{"domain": "gist.github.com", "password": "p"}, tn.mgmt).want(t, 201)
	h.do("POST", "/api/passwords/"+q, map[string]any{"domain": "example.com", "password": "p"}, tn.mgmt).want(t, 201)
	if l := h.do("GET", "/api/passwords/?domain=github.com", nil, tn.keyOne).want(t, 200).list(t); len(l) != 2 {
		t.Fatalf("domain filter: %v", l)
	}
	put := h.do("PUT", path, map[string]any{"domain": "github.com", "password": "new"}, tn.keyOne).want(t, 200).object(t)
	if put["username"] != "" || put["notes"] != "" || put["password"] != "new" {
		t.Fatalf("PUT clears what it leaves out: %v", put)
	}
	h.do("PUT", path, map[string]any{"domain": "github.com"}, tn.keyOne).want(t, 400)
	if p := h.do("PATCH", path, map[string]any{"username": "alice"}, tn.keyOne).want(t, 200).object(t); p["password"] != "new" || p["username"] != "alice" {
		t.Fatalf("PATCH: %v", p)
	}
	h.do("PATCH", path, map[string]any{"password": ""}, tn.keyOne).want(t, 400)
	h.do("GET", "/api/passwords/not-a-uuid/", nil, tn.mgmt).want(t, 404)
}

func TestGeneratePassword(t *testing.T) {
	h := newHarness(t)
	key := h.account()
	classes := func(p string) (lower, upper, digit, other bool) {
		for _, r := range p {
			switch {
			case unicode.IsLower(r):
				lower = true
			case unicode.IsUpper(r):
				upper = true
			case unicode.IsDigit(r):
				digit = true
			default:
				other = true
			}
		}
		return
	}
	pw := h.do("GET", "/api/passwords/generate-password/", nil, key).want(t, 200).object(t)["password"].(string)
	if l, u, d, o := classes(pw); len(pw) != 20 || !l || !u || !d || !o {
		t.Fatalf("default password %q", pw)
	}
	pw = h.do("GET", "/api/passwords/generate-password/?length=64&special=false&uppercase=0&exclude_chars=aeiou0", nil, key).want(t, 200).object(t)["password"].(string)
	if l, u, d, o := classes(pw); len(pw) != 64 || !l || u || !d || o || strings.ContainsAny(pw, "aeiou0") {
		t.Fatalf("constrained password %q", pw)
	}
	for query, field := range map[string]string{
		"length=7":   "length",
		"length=129": "length",
		"length=x":   "length",
		"lowercase=false&uppercase=false&digits=false&special=false": "non_field_errors",
		"digits=maybe": "digits",
		"lowercase=false&uppercase=false&special=false&exclude_chars=0123456789": "exclude_chars",
	} {
		if e := h.do("GET", "/api/passwords/generate-password/?"+query, nil, key).want(t, 400).object(t); e[field] == nil {
			t.Errorf("%s: should name %s: %v", query, field, e)
		}
	}
}

func TestSecrets(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	s := h.do("POST", "/api/secrets/", map[string]any{"key": "OPENAI_API_KEY", "value": "sk-123"}, tn.keyOne).want(t, 201).object(t)
	h.do("POST", "/api/secrets/", map[string]any{"key": "OPENAI_API_KEY", "value": "other"}, tn.keyOne).want(t, 409)
	h.do("POST", "/api/secrets/", map[string]any{"key": "OPENAI_API_KEY", "value": "other"}, tn.keyTwo).want(t, 201)
	if e := h.do("POST", "/api/secrets/", map[string]any{"value": "x"}, tn.keyOne).want(t, 400).object(t); e["key"] == nil {
		t.Fatalf("key required: %v", e)
	}
	h.do("POST", "/api/secrets/", map[string]any{"key": strings.Repeat("k", 256), "value": "x"}, tn.keyOne).want(t, 400)
	if e := h.do("POST", "/api/secrets/", map[string]any{"key": "big", "value": strings.Repeat("v", 64<<10+1)}, tn.keyOne).want(t, 400).object(t); e["value"] == nil {
		t.Fatalf("oversized value: %v", e)
	}
	h.do("POST", "/api/secrets/", map[string]any{"key": "max", "value": strings.Repeat("v", 64<<10)}, tn.keyOne).want(t, 201)
	path := fmt.Sprintf("/api/secrets/%v/", s["uuid"])
	h.do("PATCH", path, map[string]any{"key": "max"}, tn.keyOne).want(t, 409)
	h.do("PUT", path, map[string]any{"key": "OPENAI_API_KEY"}, tn.keyOne).want(t, 400)
	if got := h.do("PATCH", path, map[string]any{"value": "sk-456"}, tn.keyOne).want(t, 200).object(t); got["value"] != "sk-456" {
		t.Fatalf("patch: %v", got)
	}
	if l := h.do("GET", "/api/secrets/?key=OPENAI_API_KEY", nil, tn.mgmt).want(t, 200).list(t); len(l) != 2 {
		t.Fatalf("by key, account-wide: %v", l)
	}
	if l := h.do("GET", "/api/secrets/?key=OPENAI_API_KEY", nil, tn.keyOne).want(t, 200).list(t); len(l) != 1 || l[0]["value"] != "sk-456" {
		t.Fatalf("by key, own identity: %v", l)
	}
}

func TestContacts(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	c := h.do("POST", "/api/contacts/", map[string]any{"email": "Ann@Example.COM", "display_name": "Ann Smith", "phone_number": "+14155550100"}, tn.keyOne).want(t, 201).object(t)
	if c["email"] != "Ann@example.com" || c["source"] != "manual" || c["nickname"] != "" {
		t.Fatalf("created: %v", c)
	}
	for body, field := range map[string]string{
		`{"email": "not-an-email"}`:           "email",
		`{"phone_number": "555-0100"}`:        "phone_number",
		`{"display_name": "no email"}`:        "non_field_errors",
		`{"email": "a@b.com", "nickname": 3}`: "nickname",
	} {
		if e := h.raw("POST", "/api/contacts/", "application/json", strings.NewReader(body), tn.keyOne).want(t, 400).object(t); e[field] == nil {
			t.Errorf("%s should name %s: %v", body, field, e)
		}
	}
	h.do("POST", "/api/contacts/", map[string]any{"email": "ann@example.com"}, tn.keyOne).want(t, 409)
	h.do("GET", "/api/contacts/?source=robot", nil, tn.keyOne).want(t, 400)
	h.do("GET", "/api/contacts/find/", nil, tn.keyOne).want(t, 400)
	h.do("GET", "/api/contacts/find/?email=nobody@example.com", nil, tn.keyOne).want(t, 404)
	if f := h.do("GET", "/api/contacts/find/?phone_number=%2B14155550100", nil, tn.keyOne).want(t, 200).object(t); f["uuid"] != c["uuid"] {
		t.Fatalf("find by phone: %v", f)
	}
	h.do("GET", "/api/contacts/find/?phone_number=%2B14155550100&email=other@example.com", nil, tn.keyOne).want(t, 404)
	h.do("GET", "/api/contacts/search/", nil, tn.keyOne).want(t, 400)
	if l := h.do("GET", "/api/contacts/search/?q=SMITH", nil, tn.keyOne).want(t, 200).list(t); len(l) != 1 {
		t.Fatalf("search: %v", l)
	}
	if l := h.do("GET", "/api/contacts/search/?q=zzz", nil, tn.keyOne).want(t, 200).list(t); len(l) != 0 {
		t.Fatalf("search miss: %v", l)
	}
	path := fmt.Sprintf("/api/contacts/%v/", c["uuid"])
	h.do("PATCH", path, map[string]any{"phone_number": "bad"}, tn.keyOne).want(t, 400)
	if p := h.do("PATCH", path, map[string]any{"nickname": "annie", "source": "auto"}, tn.keyOne).want(t, 200).object(t); p["nickname"] != "annie" || p["source"] != "manual" {
		t.Fatalf("patch: %v", p)
	}
	h.do("PUT", path, map[string]any{"nickname": "x"}, tn.keyOne).want(t, 405)

	// Correspondents the app records are auto contacts, recorded once.
	h.do("GET", "/api/contacts/?source=auto", nil, tn.keyOne).want(t, 200)
}

func TestNoVaultValueReachesTheLog(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	h.do("POST", "/api/passwords/?identity="+tn.one, map[string]any{"domain": "a.com", "password": "pw-CANARY-1", "notes": "notes-CANARY-2"}, tn.mgmt).want(t, 201)
	h.do("POST", "/api/secrets/?identity="+tn.one, map[string]any{"key": "k", "value": "value-CANARY-3"}, tn.mgmt).want(t, 201)
	h.do("GET", "/api/secrets/?key=k", nil, tn.mgmt).want(t, 200)
	h.do("POST", "/api/secrets/?identity="+tn.one, map[string]any{"key": "k", "value": "value-CANARY-4"}, tn.mgmt).want(t, 409)
	if strings.Contains(h.logs.String(), "CANARY") {
		t.Fatalf("a vault value reached the log:\n%s", h.logs.String())
	}
}
