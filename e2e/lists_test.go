package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/callsign/callsign/adapters/sqlstore"
)

// listPage is the envelope of a paged list.
type listPage struct {
	Count    int               `json:"count"`
	Next     *string           `json:"next"`
	Previous *string           `json:"previous"`
	Results  []json.RawMessage `json:"results"`
}

// TestListsPage pages every list that can grow through the real router:
// without limit or offset the spec's plain array, with them the envelope,
// whose next and previous addresses walk the whole list.
func TestListsPage(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, nil)
		mgmt := r.bootstrap("lists@example.com")
		var idents []struct{ UUID, Phone string }
		for i := range 3 {
			var ident struct{ UUID, Phone string }
			if s := r.call("POST", "/api/identities/", mgmt, map[string]any{"name": fmt.Sprintf("agent %d", i), "provision_phone": true}, &ident); s != 201 {
				t.Fatalf("identity: %d", s)
			}
			idents = append(idents, ident)
			q := "?identity=" + ident.UUID
			for _, c := range []struct {
				path string
				body map[string]any
			}{
				{"/api/auth/keys/identity/", map[string]any{"identity": ident.UUID}},
				{"/api/auth/keys/management/", map[string]any{"name": fmt.Sprint(i)}},
				{"/api/email/" + q, map[string]any{}},
				{"/api/contacts/" + q, map[string]any{"email": fmt.Sprintf("friend%d@example.com", i)}},
				{"/api/passwords/" + q, map[string]any{"domain": "example.com", "password": "pw"}},
				{"/api/secrets/" + q, map[string]any{"key": "TOKEN", "value": "v"}},
				{"/api/messages/send/" + q, map[string]any{"to": fmt.Sprintf("+1202555017%d", i), "body": "hi"}},
			} {
				if s := r.call("POST", c.path, mgmt, c.body, nil); s != 201 {
					t.Fatalf("POST %s: %d", c.path, s)
				}
			}
		}
		for _, path := range []string{"/api/identities/", "/api/auth/keys/identity/", "/api/auth/keys/management/", "/api/email/",
			"/api/contacts/", "/api/contacts/search/?q=friend", "/api/passwords/", "/api/secrets/", "/api/phone/", "/api/messages/",
			"/api/sms-inbox/"} {
			var all []json.RawMessage
			if s := r.call("GET", path, mgmt, nil, &all); s != 200 || len(all) < 3 {
				t.Fatalf("GET %s: %d, %d items", path, s, len(all))
			}
			// Two at a time from the first page to the last, by next.
			var walked []json.RawMessage
			next := path + sep(path) + "limit=2"
			for pages := 0; next != ""; pages++ {
				var p listPage
				if s := r.call("GET", next, mgmt, nil, &p); s != 200 || p.Count != len(all) || len(p.Results) > 2 || (pages == 0) != (p.Previous == nil) {
					t.Fatalf("GET %s: %d %+v", next, s, p)
				}
				walked = append(walked, p.Results...)
				next = ""
				if p.Next != nil {
					u, err := url.Parse(*p.Next)
					if err != nil {
						t.Fatal(err)
					}
					next = u.RequestURI()
				}
			}
			if !sameItems(walked, all) {
				t.Errorf("%s: the pages hold %s, the list %s", path, walked, all)
			}
			var tail listPage
			r.call("GET", path+sep(path)+"offset=2", mgmt, nil, &tail)
			if tail.Count != len(all) || len(tail.Results) != len(all)-2 || tail.Previous == nil ||
				!strings.Contains(*tail.Previous, "limit=50") {
				t.Errorf("%s?offset=2: %+v", path, tail)
			}
		}
		// An identity key pages its own identity's lists only.
		var key struct{ Key string }
		r.call("POST", "/api/auth/keys/identity/", mgmt, map[string]any{"identity": idents[0].UUID}, &key)
		var mine listPage
		r.call("GET", "/api/contacts/?limit=10", key.Key, nil, &mine)
		if mine.Count != 1 || len(mine.Results) != 1 {
			t.Errorf("an identity key's page: %+v", mine)
		}
		// Limits beyond the cap count as the cap; bad ones say what is allowed.
		var capped listPage
		if s := r.call("GET", "/api/identities/?limit=100000000000000000000000", mgmt, nil, &capped); s != 200 || capped.Count != 3 {
			t.Errorf("a huge limit: %d %+v", s, capped)
		}
		for _, bad := range []string{"limit=0", "limit=-1", "limit=ten", "offset=-1"} {
			var e map[string][]string
			param, _, _ := strings.Cut(bad, "=")
			if s := r.call("GET", "/api/secrets/?"+bad, mgmt, nil, &e); s != 400 || len(e[param]) != 1 {
				t.Errorf("%s: %d %v", bad, s, e)
			} else if param == "limit" && !strings.Contains(e[param][0], "1 to 200") {
				t.Errorf("%s: the message does not give the documented cap: %v", bad, e)
			}
		}
		var e map[string][]string
		if s := r.call("GET", "/api/email-messages/?limit=0", mgmt, nil, &e); s != 400 || len(e["limit"]) != 1 || !strings.Contains(e["limit"][0], "1 to 200") {
			t.Errorf("the email list's limit: %d %v", s, e)
		}
	})
}

// sep is what joins another query parameter to path.
func sep(path string) string {
	if strings.Contains(path, "?") {
		return "&"
	}
	return "?"
}

// sameItems reports whether two lists hold the same JSON items, in order.
func sameItems(a, b []json.RawMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if string(a[i]) != string(b[i]) {
			return false
		}
	}
	return true
}
