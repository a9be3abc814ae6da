package httpapi

import (
	"fmt"
	"testing"
)

// The verification field and list, a search and a password's TOTP code, through
// the router: every response is held to the OpenAPI document.
func TestVerificationsAndTOTPMatchTheDocument(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	h.receive("one@agents.test", mailFrom("no-reply@accounts.example.com", "v1@example.com", "Your sign-in code",
		"Your verification code is 482913."))
	list := "/api/identities/" + tn.one + "/verifications/"
	got := h.do("GET", list, nil, tn.keyOne).want(t, 200).list(t)
	if len(got) != 1 || got[0]["code"] != "482913" || got[0]["link"] != nil || got[0]["source"] != "email" {
		t.Fatalf("verifications %v", got)
	}
	m := h.do("GET", fmt.Sprintf("/api/email-messages/%v/", got[0]["message"]), nil, tn.keyOne).want(t, 200).object(t)
	if v, _ := m["verification"].(map[string]any); v["code"] != "482913" || v["kind"] != "code" {
		t.Fatalf("message verification %v", m["verification"])
	}
	// The same mail found by a search, with highlights, and its thread.
	page := h.do("GET", "/api/email-messages/?q=sign-in+code", nil, tn.keyOne).want(t, 200).object(t)
	hits, _ := page["results"].([]any)
	if len(hits) != 1 || len(hits[0].(map[string]any)["highlights"].([]any)) == 0 {
		t.Fatalf("search %v", page)
	}
	if th := h.do("GET", "/api/email-inbox/?q=code+-newsletter", nil, tn.keyOne).want(t, 200).list(t); len(th) != 1 {
		t.Fatalf("threads %v", th)
	}
	h.do("GET", "/api/email-messages/?q=", nil, tn.keyOne).want(t, 400)
	h.do("GET", list, nil, tn.mgmt).want(t, 200)
	h.do("GET", list, nil, tn.keyTwo).want(t, 404)
	h.do("GET", list, nil, tn.otherAccount).want(t, 404)
	h.do("GET", list+"?wait=61", nil, tn.keyOne).want(t, 400)

	e := h.do("POST", "/api/passwords/", map[string]any{"domain": "bank.example", "password": "pw", "totp": "JBSWY3DPEHPK3PXP"}, tn.keyOne).
		want(t, 201).object(t)
	if e["has_totp"] != true {
		t.Fatalf("entry %v", e)
	}
	code := h.do("GET", "/api/passwords/"+e["uuid"].(string)+"/totp/", nil, tn.keyOne).want(t, 200).object(t)
	if len(code["code"].(string)) != 6 || code["period"] != float64(30) {
		t.Fatalf("code %v", code)
	}
	h.do("GET", "/api/passwords/"+e["uuid"].(string)+"/totp/", nil, tn.keyTwo).want(t, 404)
}
