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

// TestPageCountsAreBounded: an envelope's count stops at core.MaxCounted
// unless count=exact asks for every match; a page past the bound still
// knows whether a next page exists.
func TestPageCountsAreBounded(t *testing.T) {
	h := newHarness(t)
	mgmt := h.account()
	ident := h.do("POST", "/api/identities/", map[string]any{"name": "busy"}, mgmt).want(t, 201).object(t)["uuid"].(string)
	p, err := h.app.Auth.Authenticate(context.Background(), mgmt)
	if err != nil {
		t.Fatal(err)
	}
	total := core.MaxCounted + 2
	for i := range total {
		email := fmt.Sprintf("c%05d@example.com", i)
		if _, err := h.app.Contacts.Create(context.Background(), p, ident, app.ContactInput{Email: &email}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		query string
		count int
		next  bool
	}{
		{"limit=5", core.MaxCounted, true},
		{"limit=5&count=exact", total, true},
		{fmt.Sprintf("limit=5&offset=%d", core.MaxCounted-3), total, false},
		{fmt.Sprintf("limit=1&offset=%d", core.MaxCounted-3), core.MaxCounted, true},
	} {
		pg := h.do("GET", "/api/contacts/?"+c.query, nil, mgmt).want(t, 200).object(t)
		if pg["count"] != float64(c.count) || (pg["next"] != nil) != c.next {
			t.Errorf("%s: count %v, next %v", c.query, pg["count"], pg["next"])
		}
	}
	h.do("GET", "/api/contacts/?limit=5&count=all", nil, mgmt).want(t, 400)
	h.do("GET", "/api/email-messages/?limit=5&count=all", nil, mgmt).want(t, 400)
	if pg := h.do("GET", "/api/email-messages/?limit=5&count=exact", nil, mgmt).want(t, 200).object(t); pg["count"] != 0.0 {
		t.Fatalf("messages %v", pg)
	}
}
