package httpapi

import (
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
)

func TestBodyWithoutContentType(t *testing.T) {
	h := newHarness(t)
	mgmt := h.account()
	got := h.raw("POST", "/api/identities/", "", strings.NewReader(` {"name": "Untyped"}`), mgmt).want(t, 201).object(t)
	if got["name"] != "Untyped" {
		t.Fatalf("a JSON body without Content-Type was not read: %v", got)
	}
	h.raw("POST", "/api/identities/", "", strings.NewReader(`{"name": `), mgmt).want(t, 400)
	for _, body := range []string{"name=Form", "hello"} {
		e := h.raw("POST", "/api/identities/", "", strings.NewReader(body), mgmt).want(t, 415).object(t)
		if d, _ := e["detail"].(string); !strings.Contains(d, "no Content-Type") || !strings.Contains(d, "application/json") {
			t.Errorf("%q: detail %v", body, e)
		}
	}
	e := h.raw("POST", "/api/identities/", "text/plain", strings.NewReader("name=x"), mgmt).want(t, 415).object(t)
	if d, _ := e["detail"].(string); !strings.Contains(d, `"text/plain"`) || !strings.Contains(d, "multipart/form-data") {
		t.Errorf("detail %v", e)
	}
	// An empty body needs no type.
	h.raw("POST", "/api/identities/", "", strings.NewReader(""), mgmt).want(t, 201)
}

// TestWrongMethodsAre405WithAllow tries every method on every route.
func TestWrongMethodsAre405WithAllow(t *testing.T) {
	h := newHarness(t)
	mgmt := h.account()
	allowed := map[string][]string{}
	for _, r := range h.h.(*gin.Engine).Routes() {
		allowed[r.Path] = append(allowed[r.Path], r.Method)
	}
	for pattern, methods := range allowed {
		slices.Sort(methods)
		path := concretePath(pattern)
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			if slices.Contains(methods, m) {
				continue
			}
			res := h.do(m, path, nil, mgmt)
			if res.Status != 405 || res.Header.Get("Allow") != strings.Join(methods, ", ") || res.object(t)["detail"] == nil {
				t.Errorf("%s %s: %d Allow %q, want 405 Allow %q: %s", m, path, res.Status, res.Header.Get("Allow"), strings.Join(methods, ", "), res.Body)
			}
		}
	}
	// The cases users met: a redirect to a 404, and another route's parameter.
	for _, tc := range []struct{ method, path, allow string }{
		{"PUT", "/api/email/1/", "DELETE, GET"},
		{"DELETE", "/api/contacts/find/", "GET"},
		{"PUT", "/api/passwords/generate-password/", "GET"},
		{"DELETE", "/api/contacts/find", "GET"}, // no slash, and the method is wrong anyway
	} {
		if res := h.do(tc.method, tc.path, nil, mgmt); res.Status != 405 || res.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d Allow %q", tc.method, tc.path, res.Status, res.Header.Get("Allow"))
		}
	}
	if res := h.do("GET", "/api/identities?identity=x", nil, mgmt); res.Status != 301 || res.Header.Get("Location") != "/api/identities/?identity=x" {
		t.Errorf("missing slash on GET: %d %q", res.Status, res.Header.Get("Location"))
	}
	if res := h.do("POST", "/api/identities", map[string]any{}, mgmt); res.Status != 307 || res.Header.Get("Location") != "/api/identities/" {
		t.Errorf("missing slash on POST: %d %q", res.Status, res.Header.Get("Location"))
	}
	// The path as sent, still escaped: a decoded NUL or CR/LF in Location
	// makes the answer one no client reads.
	if res := h.do("GET", "/api/email/a%00%0d%0ab", nil, mgmt); res.Status != 301 || res.Header.Get("Location") != "/api/email/a%00%0d%0ab/" {
		t.Errorf("missing slash after escaped control bytes: %d %q", res.Status, res.Header.Get("Location"))
	}
	for _, p := range []string{"/api/nothing-here/", "/api/email/1/nothing/", "/api/identities//"} {
		h.do("GET", p, nil, mgmt).want(t, 404)
	}
}

// concretePath fills a route's parameters with well-formed values.
func concretePath(pattern string) string {
	parts := strings.Split(pattern, "/")
	for i, p := range parts {
		switch p {
		case ":uuid":
			parts[i] = "00000000-0000-4000-8000-000000000001"
		case ":id":
			parts[i] = "1"
		}
	}
	return strings.Join(parts, "/")
}

func TestQueryValues(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	h.do("POST", "/api/contacts/?identity="+tn.one, map[string]any{"email": "ann+news@example.com", "phone_number": "+14155550100"}, tn.mgmt).want(t, 201)

	// An unencoded '+' reaches us as a space: it is read as the '+' meant.
	got := h.do("GET", "/api/contacts/find/?phone_number=+14155550100", nil, tn.keyOne).want(t, 200).object(t)
	if got["phone_number"] != "+14155550100" {
		t.Fatalf("find by number: %v", got)
	}
	got = h.do("GET", "/api/contacts/find/?email=ann+news@example.com", nil, tn.keyOne).want(t, 200).object(t)
	if got["email"] != "ann+news@example.com" {
		t.Fatalf("find by email: %v", got)
	}
	h.do("GET", "/api/contacts/find/?phone_number=%2B14155550100", nil, tn.keyOne).want(t, 200)
	for _, bad := range []string{"555-0100", "14155550100", "+1415abc"} {
		e := h.do("GET", "/api/contacts/find/?phone_number="+bad, nil, tn.keyOne).want(t, 400).object(t)
		if e["phone_number"] == nil {
			t.Errorf("%s: %v", bad, e)
		}
	}
	avail := h.do("GET", "/api/email/check-availability/?email=one+x@agents.test", nil, tn.keyOne).want(t, 200).object(t)
	if avail["email"] != "one+x@agents.test" {
		t.Fatalf("check-availability: %v", avail)
	}

	// The SMS inbox's phone filter, by E.164 number with an unencoded '+'.
	number := h.provision(tn.mgmt, tn.one)
	h.do("POST", "/api/messages/send/", map[string]any{"to": "+14155550199", "body": "hi"}, tn.keyOne).want(t, 201)
	if l := h.do("GET", "/api/sms-inbox/?phone="+number, nil, tn.keyOne).want(t, 200).list(t); len(l) != 1 {
		t.Fatalf("sms-inbox by %s: %v", number, l)
	}
	if e := h.do("GET", "/api/sms-inbox/?phone=nonsense", nil, tn.keyOne).want(t, 400).object(t); e["phone"] == nil {
		t.Fatalf("malformed phone filter: %v", e)
	}

	// Unknown parameters on lists and lookups are named, with what is known.
	for _, tc := range []struct{ path, param, mentions string }{
		{"/api/identities/?q=x", "q", "identity"},
		{"/api/contacts/?identity=" + tn.one + "&sorce=auto", "sorce", "identity, limit, offset, ordering, q, source"},
		{"/api/email-messages/?lmit=5", "lmit", "limit"},
		{"/api/domains/?x=1", "x", "takes none"},
		{"/api/passwords/generate-password/?lenght=30", "lenght", "length"},
		{"/api/messages/?page=2", "page", "direction, identity, include_blocked, is_read, limit, offset"},
		{"/api/auth/keys/identity/?page=2", "page", "identity"},
		{"/api/auth/keys/management/?identity=" + tn.one, "identity", "takes limit, offset"},
	} {
		e := h.do("GET", tc.path, nil, tn.mgmt).want(t, 400).object(t)
		msgs, _ := e[tc.param].([]any)
		if len(msgs) != 1 || !strings.Contains(msgs[0].(string), "Unknown query parameter") || !strings.Contains(msgs[0].(string), tc.mentions) {
			t.Errorf("%s: %v", tc.path, e)
		}
	}
	// Every list and lookup refuses what it does not know (and documents it).
	for _, p := range []string{"/api/auth/keys/management/", "/api/auth/keys/identity/", "/api/identities/", "/api/passwords/",
		"/api/passwords/generate-password/", "/api/secrets/", "/api/contacts/", "/api/contacts/find/", "/api/contacts/search/",
		"/api/domains/", "/api/email/", "/api/email/check-availability/", "/api/email-inbox/", "/api/email-messages/",
		"/api/phone/", "/api/messages/", "/api/sms-inbox/"} {
		if e := h.do("GET", p+"?bogus=1", nil, tn.mgmt).want(t, 400).object(t); e["bogus"] == nil {
			t.Errorf("%s: %v", p, e)
		}
	}
	h.do("GET", "/api/contacts/?identity="+tn.one+"&source=manual", nil, tn.mgmt).want(t, 200)
	h.do("GET", "/api/email-messages/?limit=5&offset=0&direction=incoming", nil, tn.mgmt).want(t, 200)
}

func TestJSONIsNotHTMLEscaped(t *testing.T) {
	h := newHarness(t)
	mgmt := h.account()
	res := h.do("POST", "/api/identities/", map[string]any{"name": "R&D <bots>"}, mgmt).want(t, 201)
	if !strings.Contains(string(res.Body), `"name":"R&D <bots>"`) {
		t.Fatalf("escaped: %s", res.Body)
	}
	req := httptest.NewRequest("POST", "/api/identities/", strings.NewReader("x"))
	req.Header.Set("Content-Type", "text/x&y")
	req.Header.Set("Authorization", "Bearer "+mgmt)
	if res := h.serve(req); res.Status != 415 || !strings.Contains(string(res.Body), `text/x&y`) {
		t.Fatalf("an error body is escaped: %d %s", res.Status, res.Body)
	}
}

// Bidirectional overrides and other invisible characters are refused with
// a 400 on the field, wherever a caller names someone.
func TestInvisibleCharactersAreRefusedOnTheField(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	const evil = "\u202eevil@example.org"
	for _, tc := range []struct {
		path  string
		body  map[string]any
		field string
	}{
		{"/api/identities/", map[string]any{"name": "agent\u200b"}, "name"},
		{"/api/contacts/", map[string]any{"email": evil}, "email"},
		{"/api/contacts/", map[string]any{"email": "ada@example.org", "display_name": "Ada\u2066"}, "display_name"},
		{"/api/rules/", map[string]any{"channel": "email", "direction": "inbound", "action": "block", "pattern": evil}, "pattern"},
		{"/api/email-messages/compose/", map[string]any{"to_email": evil, "content": "hi"}, "to_email"},
		{"/api/email-messages/compose/", map[string]any{"to_email": "Ada\x1b[2J <ada@example.org>", "content": "hi"}, "to_email"},
	} {
		key := tn.keyOne
		if tc.path == "/api/identities/" || tc.path == "/api/rules/" {
			key = tn.mgmt // what only a management key may create
		}
		body := h.do("POST", tc.path, tc.body, key).want(t, 400).object(t)
		if msgs, _ := body[tc.field].([]any); len(msgs) == 0 || !strings.Contains(fmt.Sprint(msgs), "Invisible and control characters") {
			t.Errorf("%s %v: %v", tc.path, tc.body, body)
		}
	}
	h.do("POST", "/api/contacts/", map[string]any{"email": "zoe@example.org", "display_name": "Zoë שלום"}, tn.keyOne).want(t, 201)
}
