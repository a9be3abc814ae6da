package httpapi

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"testing"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

// TestPlainListsAreBounded: a list asked for without limit or offset is the
// spec's plain array, cut at core.MaxUnpagedList, with a Link to the rest.
func TestPlainListsAreBounded(t *testing.T) {
	h := newHarness(t)
	mgmt := h.account()
	ident := h.do("POST", "/api/identities/", map[string]any{"name": "busy"}, mgmt).want(t, 201).object(t)["uuid"].(string)
	p, err := h.app.Auth.Authenticate(context.Background(), mgmt)
	if err != nil {
		t.Fatal(err)
	}
	for i := range core.MaxUnpagedList + 1 {
		email := fmt.Sprintf("c%04d@example.com", i)
		if _, err := h.app.Contacts.Create(context.Background(), p, ident, app.ContactInput{Email: &email}); err != nil {
			t.Fatal(err)
		}
	}
	res := h.do("GET", "/api/contacts/", nil, mgmt).want(t, 200)
	if got := res.list(t); len(got) != core.MaxUnpagedList || got[0]["email"] != "c0000@example.com" {
		t.Fatalf("the plain list holds %d", len(got))
	}
	m := regexp.MustCompile(`^<([^>]+)>; rel="next"$`).FindStringSubmatch(res.Header.Get("Link"))
	if m == nil {
		t.Fatalf("Link: %q", res.Header.Get("Link"))
	}
	next, err := url.Parse(m[1])
	if err != nil {
		t.Fatal(err)
	}
	rest := h.do("GET", next.RequestURI(), nil, mgmt).want(t, 200).object(t)
	results, _ := rest["results"].([]any)
	if rest["count"] != float64(core.MaxUnpagedList+1) || len(results) != 1 || results[0].(map[string]any)["email"] != "c1000@example.com" {
		t.Fatalf("the rest: %v", rest)
	}
	if res := h.do("GET", "/api/contacts/?limit=5", nil, mgmt).want(t, 200); res.Header.Get("Link") != "" {
		t.Fatal("a paged list needs no Link: its envelope has next")
	}
}
