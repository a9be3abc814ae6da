package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/callsign/callsign/adapters/sqlstore"
)

// hostileValues are what an attacker or a careless client puts in a query
// parameter or a body field: empty, huge, NUL, invalid UTF-8, and the
// metacharacters of SQL, FTS5 and tsquery.
var hostileValues = []string{
	"", " ", strings.Repeat("a", 5000), strings.Repeat("ab ", 400), "\x00", "a\x00b", "\xff\xfe", "a\xc3",
	`"`, `""`, `"" ""`, `"open`, `*`, `a*`, `*a`, `NEAR(`, `NEAR(a b, 2)`, `a NEAR/2 b`, `:`, `a:b`, `^`, `^a`, `-`, `--`, `- -`,
	`-"`, `(`, `)`, `((a)`, `a OR b`, `AND`, `NOT a`, `a & b | !c`, `a <-> b`, `a:*`, `{a b}`, `'`, `\`, `%`, `_`, `%_%`,
	`'; DROP TABLE contacts; --`, `from:`, `to:"`, `subject:`, `before:`, `after:9999-99-99`, `before:0000-01-01`, `after:-1`,
	`is:`, `has:`, `filename:*`, `-from:x`, `-is:unread`, `-before:2020-01-01`, "é\u0301", "\u202e", "🙂", "\t\n\r",
	strings.Repeat("a ", 40), strings.Repeat(`"a" `, 40), strings.Repeat("-", 999),
}

// auditFixture is an account with two identities (one with a key that may
// not send, and a sending key), an inbound message, texts, contacts and a
// draft, and a second account with its own.
type auditFixture struct {
	r                         *running
	mgmt, drafter, sender     string
	drafterID                 int64
	ident, otherIdent         string
	question                  int64
	draft                     string
	sms                       int64
	contact                   string
	otherMgmt, otherDraft     string
	otherMessage, otherSMS    int64
	otherContact, otherIdent2 string
	call, otherCall           int64
}

func newAuditFixture(t *testing.T, d sqlstore.Dialect) *auditFixture {
	r := start(t, d, nil)
	f := &auditFixture{r: r, mgmt: r.bootstrap("audit@example.com"), otherMgmt: r.bootstrap("audit-other@example.com")}
	var ident, other, foreign struct{ UUID, Inbox, Phone string }
	r.call("POST", "/api/identities/", f.mgmt, map[string]any{"name": "Audited", "provision_phone": true}, &ident)
	r.call("POST", "/api/identities/", f.mgmt, map[string]any{"name": "Neighbour", "provision_phone": true}, &other)
	r.call("POST", "/api/identities/", f.otherMgmt, map[string]any{"name": "Foreign", "provision_phone": true}, &foreign)
	f.ident, f.otherIdent, f.otherIdent2 = ident.UUID, other.UUID, foreign.UUID
	var drafter struct {
		ID  int64
		Key string
	}
	if s := r.call("POST", "/api/auth/keys/identity/", f.mgmt, map[string]any{"identity": ident.UUID, "can_send": false}, &drafter); s != 201 {
		t.Fatalf("drafter key: %d", s)
	}
	f.drafter, f.drafterID, f.sender = drafter.Key, drafter.ID, identityKey(r, f.mgmt, ident.UUID)
	smtpAddr := r.svc.SMTPAddr()
	sendSMTP(t, smtpAddr, "carol@example.org", []string{ident.Inbox}, plainMail(ident.Inbox, "audit-q@example.org", "Question"))
	sendSMTP(t, smtpAddr, "carol@example.org", []string{foreign.Inbox}, plainMail(foreign.Inbox, "audit-f@example.org", "Foreign"))
	receive := func(key, to string) int64 {
		var m struct{ ID int64 }
		if s, b := r.callRaw("POST", "/webhooks/sim/sms/", key, map[string]any{"From": "+14155550101", "To": to, "Body": "code 123"}); s/100 != 2 {
			t.Fatalf("inbound text: %d %s", s, b)
		}
		var p []struct{ ID int64 }
		poll(t, "the text", func() bool {
			r.call("GET", "/api/messages/?q=code&identity="+identOf(f, to, ident.Phone, ident.UUID, foreign.UUID), key, nil, &p)
			return len(p) > 0
		})
		m.ID = p[0].ID
		return m.ID
	}
	f.sms, f.otherSMS = receive(f.mgmt, ident.Phone), receive(f.otherMgmt, foreign.Phone)
	var inbound, foreignInbound apiPage
	poll(t, "the inbound mail", func() bool {
		r.call("GET", "/api/email-messages/?identity="+ident.UUID, f.mgmt, nil, &inbound)
		r.call("GET", "/api/email-messages/?identity="+foreign.UUID, f.otherMgmt, nil, &foreignInbound)
		return inbound.Count == 1 && foreignInbound.Count == 1
	})
	f.question, f.otherMessage = inbound.Results[0].ID, foreignInbound.Results[0].ID
	call := func(key, to string) int64 {
		var c struct{ ID int64 }
		if s, b := r.callRaw("POST", "/webhooks/sim/call/", key, map[string]any{"From": "+14155550101", "To": to, "Duration": "0"}); s != 201 || json.Unmarshal(b, &c) != nil {
			t.Fatalf("simulated call: %d %s", s, b)
		}
		return c.ID
	}
	f.call, f.otherCall = call(f.mgmt, ident.Phone), call(f.otherMgmt, foreign.Phone)
	var obj struct {
		UUID string
		ID   string
	}
	r.call("POST", "/api/contacts/", f.sender, map[string]any{"display_name": "Ann Smith", "email": "ann@example.org"}, &obj)
	f.contact = obj.UUID
	r.call("POST", "/api/contacts/?identity="+foreign.UUID, f.otherMgmt, map[string]any{"display_name": "Ann Foreign", "email": "ann@foreign.example"}, &obj)
	f.otherContact = obj.UUID
	if s := r.call("POST", "/api/email-drafts/", f.drafter, map[string]any{"to_email": "dave@example.org", "content": "x"}, &obj); s != 201 {
		t.Fatalf("draft: %d", s)
	}
	f.draft = obj.ID
	if s := r.call("POST", "/api/email-drafts/?identity="+foreign.UUID, f.otherMgmt, map[string]any{"to_email": "dave@example.org", "content": "x"}, &obj); s != 201 {
		t.Fatalf("foreign draft: %d", s)
	}
	f.otherDraft = obj.ID
	return f
}

func identOf(f *auditFixture, to, ownPhone, own, foreign string) string {
	if to == ownPhone {
		return own
	}
	return foreign
}

// rawCall sends body as given (any bytes) with the content type, and
// returns the status and answer.
func (r *running) rawCall(method, path, key, contentType, body string) (int, []byte) {
	r.t.Helper()
	req, err := http.NewRequest(method, r.baseURL+path, strings.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := r.client.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, raw
}

// checkAnswer fails on a 5xx or an answer that is not JSON.
func checkAnswer(t *testing.T, what string, status int, body []byte) {
	t.Helper()
	if status >= 500 || (len(body) > 0 && !json.Valid(body)) {
		t.Errorf("%s: %d %.300s", what, status, body)
	}
}

// TestAuditHostileQueries: every hostile value in q (texts, contacts,
// threads, messages) and in the new list filters is answered 200 or a 4xx
// in JSON, never 500, on both dialects and for both kinds of key.
func TestAuditHostileQueries(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		f := newAuditFixture(t, d)
		probes := 0
		for _, key := range []string{f.mgmt, f.sender} {
			for _, v := range hostileValues {
				for _, path := range []string{"/api/messages/?q=", "/api/contacts/?q=", "/api/email-inbox/?q=", "/api/email-messages/?q=",
					"/api/email-drafts/?awaiting_approval=", "/api/email-drafts/?identity=", "/api/messages/?identity=" + f.ident + "&q=",
					"/api/contacts/?limit=5&offset=1&q=", "/api/email-drafts/?limit=", "/api/calls/?after=", "/api/calls/?identity=",
					"/api/calls/?limit=2&after=", "/api/calls/"} {
					s, b := f.r.rawCall("GET", path+url.QueryEscape(v), key, "", "")
					probes++
					checkAnswer(t, fmt.Sprintf("GET %s%q", path, v), s, b)
				}
			}
		}
		t.Logf("%d probes", probes)
	})
}

// TestAuditHostileBodies: hostile values in each field of a draft, its
// PATCH, a key's can_send and a text, as JSON of each type and as form
// fields, and bodies that are not JSON at all, are answered in JSON and
// never 500.
func TestAuditHostileBodies(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		f := newAuditFixture(t, d)
		probes := 0
		strs := append(hostileValues[:8:8], `"`, `NEAR(`, "\u202e")
		jsonValues := []string{`null`, `true`, `0`, `-1`, `1.5`, `1e308`, `9223372036854775807`, `9223372036854775808`, `[]`, `[[]]`,
			`{}`, `"1"`, `"0001-01-01T00:00:00Z"`, `"9999-12-31T23:59:59Z"`, `"2026-13-45T00:00:00Z"`, `"2026-11-23T25:00:00+99:00"`,
			`"292277026596-12-04T15:30:07Z"`, `"now"`, `["a\u0000b"]`, `[null]`, `"` + "\xff\xfe" + `"`, `["` + "\xff" + `"]`}
		for _, v := range strs {
			b, _ := json.Marshal(v)
			jsonValues = append(jsonValues, string(b))
		}
		draftFields := []string{"send_at", "reply_to", "forward_of", "reply_all", "to_email", "cc", "bcc", "subject", "content", "html",
			"attachment_uuids", "awaiting_approval"}
		// Each route's body is one it takes (bodies are strict), with one
		// field replaced by a hostile value.
		draft := url.Values{"to_email": {"dave@example.org"}, "content": {"x"}}
		routes := []struct {
			method, path, key string
			base              url.Values
			fields            []string
		}{
			{"POST", "/api/email-drafts/", f.sender, draft, draftFields},
			{"POST", "/api/email-drafts/?identity=" + f.ident, f.mgmt, draft, draftFields},
			{"PATCH", "/api/email-drafts/" + f.draft + "/", f.drafter, draft, draftFields},
			{"PATCH", fmt.Sprintf("/api/auth/keys/identity/%d/", f.drafterID), f.mgmt, nil, []string{"can_send", "can_provision", "name"}},
			{"POST", "/api/auth/keys/identity/", f.mgmt, url.Values{"identity": {f.ident}}, []string{"can_send", "identity"}},
			{"POST", "/api/messages/send/", f.sender, url.Values{"to": {"+14155550100"}, "body": {"x"}}, []string{"to", "body"}},
			{"POST", "/webhooks/sim/call/", f.mgmt, nil, []string{"From", "To", "Duration"}},
		}
		for _, rt := range routes {
			var base []string
			for name := range rt.base {
				base = append(base, fmt.Sprintf("%q:%q,", name, rt.base.Get(name)))
			}
			for _, field := range rt.fields {
				for _, v := range jsonValues {
					body := `{` + strings.Join(base, "") + `"` + field + `":` + v + `}`
					s, b := f.r.rawCall(rt.method, rt.path, rt.key, "application/json", body)
					probes++
					checkAnswer(t, fmt.Sprintf("%s %s %s=%s", rt.method, rt.path, field, v), s, b)
				}
				for _, v := range strs {
					form := url.Values{}
					for name, vs := range rt.base {
						form[name] = vs
					}
					form.Set(field, v)
					s, b := f.r.rawCall(rt.method, rt.path, rt.key, "application/x-www-form-urlencoded", form.Encode())
					probes++
					checkAnswer(t, fmt.Sprintf("%s %s form %s=%q", rt.method, rt.path, field, v), s, b)
				}
			}
			for _, raw := range []string{``, `{`, `[]`, `null`, `"x"`, `{"a":` + strings.Repeat("[", 10000), "\xff\xfe{}", `{"content":"x"}{"content":"y"}`} {
				s, b := f.r.rawCall(rt.method, rt.path, rt.key, "application/json", raw)
				probes++
				checkAnswer(t, fmt.Sprintf("%s %s raw %.40q", rt.method, rt.path, raw), s, b)
			}
		}
		// What a drafts-only key cannot say: awaiting_approval is the
		// server's, whatever a body claims.
		var dr struct {
			AwaitingApproval bool `json:"awaiting_approval"`
		}
		f.r.call("PATCH", "/api/email-drafts/"+f.draft+"/", f.drafter, map[string]any{"awaiting_approval": false}, &dr)
		if !dr.AwaitingApproval {
			t.Errorf("a drafts-only key cleared awaiting_approval")
		}
		t.Logf("%d probes", probes)
	})
}

// TestAuditFences: an identity key reaches only its own identity's drafts,
// texts and contacts (another identity's or account's are 404, or absent
// from lists and searches); an identity key changes no key's can_send, not
// even its own, and makes no key; a key whose can_send was turned off gets
// 403 on every send route, while the repeat of a send it made before (same
// Idempotency-Key, same body) still answers the first 201: nothing is sent
// again, and a 403 would tell the client its message did not leave when it
// did.
func TestAuditFences(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		f := newAuditFixture(t, d)
		r := f.r
		var neighbourDraft struct{ ID string }
		r.call("POST", "/api/email-drafts/?identity="+f.otherIdent, f.mgmt, map[string]any{"to_email": "x@example.org", "content": "x"}, &neighbourDraft)
		neighbourKey := identityKey(r, f.mgmt, f.otherIdent)
		for _, key := range []string{f.drafter, f.sender, neighbourKey} {
			for _, id := range []string{f.otherDraft, map[string]string{f.drafter: neighbourDraft.ID, f.sender: neighbourDraft.ID, neighbourKey: f.draft}[key]} {
				for _, m := range []string{"GET", "PATCH", "DELETE"} {
					if s := r.call(m, "/api/email-drafts/"+id+"/", key, map[string]any{"content": "mine"}, nil); s != 404 {
						t.Errorf("%s another's draft: %d", m, s)
					}
				}
				if s := r.call("POST", "/api/email-drafts/"+id+"/send/", key, nil, nil); s != 404 {
					t.Errorf("send another's draft: %d", s)
				}
			}
		}
		if s := r.call("POST", "/api/email-drafts/"+f.draft+"/send/", f.otherMgmt, nil, nil); s != 404 {
			t.Errorf("another account approved a draft: %d", s)
		}
		var drafts []struct{ ID string }
		for _, q := range []string{"", "?identity=" + f.otherIdent, "?identity=" + f.otherIdent2, "?awaiting_approval=true"} {
			r.call("GET", "/api/email-drafts/"+q, neighbourKey, nil, &drafts)
			for _, dr := range drafts {
				if dr.ID != neighbourDraft.ID {
					t.Errorf("the neighbour lists %s (%s)", dr.ID, q)
				}
			}
		}
		r.call("GET", "/api/email-drafts/?identity="+f.otherIdent2, f.mgmt, nil, &drafts)
		if len(drafts) != 0 {
			t.Errorf("another account's identity lists drafts: %v", drafts)
		}
		// Texts and contacts, searched: none of another identity's or account's.
		var hits []struct{ ID int64 }
		for _, key := range []string{neighbourKey, f.otherMgmt} {
			r.call("GET", "/api/messages/?q=code", key, nil, &hits)
			for _, h := range hits {
				if h.ID == f.sms {
					t.Errorf("a text of another identity found")
				}
			}
			if s := r.call("GET", fmt.Sprintf("/api/messages/%d/", f.sms), key, nil, nil); s != 404 {
				t.Errorf("another's text: %d", s)
			}
			var people []struct{ UUID string }
			r.call("GET", "/api/contacts/?q=ann", key, nil, &people)
			for _, c := range people {
				if c.UUID == f.contact {
					t.Errorf("a contact of another identity found")
				}
			}
		}
		// Calls: another identity's or account's are 404 and not listed.
		for _, c := range []struct {
			key  string
			call int64
		}{{neighbourKey, f.call}, {f.otherMgmt, f.call}, {f.sender, f.otherCall}, {f.mgmt, f.otherCall}} {
			if s := r.call("GET", fmt.Sprintf("/api/calls/%d/", c.call), c.key, nil, nil); s != 404 {
				t.Errorf("another's call: %d", s)
			}
			var calls []struct{ ID int64 }
			for _, q := range []string{"", "?identity=" + f.ident, "?identity=" + f.otherIdent2} {
				r.call("GET", "/api/calls/"+q, c.key, nil, &calls)
				for _, listed := range calls {
					if listed.ID == c.call {
						t.Errorf("another's call listed (%s)", q)
					}
				}
			}
		}
		if s := r.call("GET", fmt.Sprintf("/api/calls/%d/", f.call), f.drafter, nil, nil); s != 200 {
			t.Errorf("the identity's own call: %d", s)
		}
		r.call("GET", "/api/messages/?q=code&identity="+f.otherIdent2, f.mgmt, nil, &hits)
		if len(hits) != 0 {
			t.Errorf("another account's texts by identity=: %v", hits)
		}
		// Keys: none made, no can_send changed, by an identity key.
		for _, key := range []string{f.drafter, f.sender} {
			if s := r.call("PATCH", fmt.Sprintf("/api/auth/keys/identity/%d/", f.drafterID), key, map[string]any{"can_send": true}, nil); s != 403 && s != 404 {
				t.Errorf("an identity key changed can_send: %d", s)
			}
			if s := r.call("POST", "/api/auth/keys/identity/", key, map[string]any{"identity": f.ident}, nil); s != 403 {
				t.Errorf("an identity key made a key: %d", s)
			}
		}
		if s := r.call("PATCH", fmt.Sprintf("/api/auth/keys/identity/%d/", f.drafterID), f.otherMgmt, map[string]any{"can_send": true}, nil); s != 404 {
			t.Errorf("another account changed can_send: %d", s)
		}
		// The right taken away: every send is 403, a keyed repeat of an
		// earlier send answers as it did.
		var senderKey struct {
			ID  int64
			Key string
		}
		r.call("POST", "/api/auth/keys/identity/", f.mgmt, map[string]any{"identity": f.ident}, &senderKey)
		letter := map[string]any{"to_email": "dave@example.org", "content": "Before."}
		s1, _, b1 := r.sendKeyed("POST", "/api/email-messages/compose/", senderKey.Key, "before-1", letter)
		var own struct{ ID string }
		r.call("POST", "/api/email-drafts/", senderKey.Key, letter, &own)
		if s := r.call("PATCH", fmt.Sprintf("/api/auth/keys/identity/%d/", senderKey.ID), f.mgmt, map[string]any{"can_send": false}, nil); s1 != 201 || s != 200 {
			t.Fatalf("compose %d, can_send off %d", s1, s)
		}
		s2, h2, b2 := r.sendKeyed("POST", "/api/email-messages/compose/", senderKey.Key, "before-1", letter)
		if s2 != 201 || h2.Get("Idempotent-Replayed") != "true" || string(b1) != string(b2) {
			t.Errorf("the repeat of an earlier send: %d %s", s2, b2)
		}
		mail := map[string]any{"to_email": "dave@example.org", "content": "After."}
		for route, body := range map[string]map[string]any{
			"/api/email-messages/compose/": mail, fmt.Sprintf("/api/email-messages/%d/reply/", f.question): mail,
			fmt.Sprintf("/api/email-messages/%d/reply-all/", f.question): mail, fmt.Sprintf("/api/email-messages/%d/forward/", f.question): mail,
			"/api/messages/send/": {"to": "+14155550100", "body": "After."}, "/api/email-drafts/" + own.ID + "/send/": {},
		} {
			for _, idem := range []string{"", "after-1"} {
				s, _, b := r.sendKeyed("POST", route, senderKey.Key, idem, body)
				if s != 403 || !json.Valid(b) {
					t.Errorf("%s (key %q) without can_send: %d %s", route, idem, s, b)
				}
			}
		}
	})
}
