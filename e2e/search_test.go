package e2e

import (
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/callsign/callsign/adapters/sqlstore"
)

type searchPage struct {
	Count   int
	Results []struct {
		ID         int64
		Subject    string
		Highlights []string
	}
}

// TestSearchMail: q on the message list finds mail by the words of its
// body, subject and text attachments, stemmed and folded, with phrases,
// exclusions and filters, ranks it, highlights it, and refuses what it
// cannot read, on both databases; nothing typed gives a 500.
func TestSearchMail(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, nil)
		mgmt := r.bootstrap("search@example.com")
		var ident, other struct{ UUID, Inbox string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "finder"}, &ident)
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "other"}, &other)
		key, otherKey := identityKey(r, mgmt, ident.UUID), identityKey(r, mgmt, other.UUID)
		addr := r.svc.SMTPAddr()
		send := func(to, from, subject, body string, extra ...string) {
			t.Helper()
			n := strings.NewReplacer("@", ".", " ", "-").Replace(from + subject)
			msg := fmt.Sprintf("From: %s\r\nTo: %s\r\nSubject: %s\r\nMessage-ID: <%s@t>\r\n", from, to, subject, n)
			if len(extra) > 0 {
				msg += "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\n" + body +
					"\r\n--b\r\nContent-Type: text/csv\r\nContent-Disposition: attachment; filename=\"" + extra[0] + "\"\r\n\r\n" + extra[1] + "\r\n--b--\r\n"
			} else {
				msg += "\r\n" + body + "\r\n"
			}
			sendSMTP(t, addr, from, []string{to}, msg)
		}
		send(ident.Inbox, "billing@acme.example", "Your invoice for October", "Dear customer, your invoices are attached. Amount due: 42 EUR.")
		send(ident.Inbox, "friend@example.org", "Café tonight?", "Shall we meet at the café near the station? Bring the <b>map</b> & your umbrella.")
		send(ident.Inbox, "billing@acme.example", "Receipt", "Thanks for paying. This is not an invoice, just a receipt.")
		send(ident.Inbox, "reports@acme.example", "Monthly report", "See the attached table.", "Q3-figures.csv", "region,revenue\nNorthwind,1234\n")
		send(other.Inbox, "billing@acme.example", "Your invoice", "Another identity's invoice.")

		search := func(key, q string, extra ...string) searchPage {
			t.Helper()
			var p searchPage
			path := "/api/email-messages/?q=" + url.QueryEscape(q) + strings.Join(extra, "")
			if s := r.call("GET", path, key, nil, &p); s != 200 {
				t.Fatalf("%s: %d\n%s", q, s, r.logs())
			}
			return p
		}
		subjects := func(p searchPage) string {
			var s []string
			for _, m := range p.Results {
				s = append(s, m.Subject)
			}
			return strings.Join(s, " | ")
		}
		for q, want := range map[string]string{
			"invoice":                      "Your invoice for October | Receipt", // the subject weighs more
			"invoiced":                     "Your invoice for October | Receipt", // stemmed
			"INVOICE -receipt":             "Your invoice for October",
			`"amount due"`:                 "Your invoice for October",
			`"due amount"`:                 "",
			"cafe":                         "Café tonight?", // accents folded
			"café station":                 "Café tonight?",
			"subject:invoice":              "Your invoice for October",
			"subject:receipt invoice":      "Receipt",
			"from:ACME.example -report":    "Receipt | Your invoice for October",
			"northwind":                    "Monthly report", // a text attachment's text
			"has:attachment":               "Monthly report",
			"filename:q3-figures":          "Monthly report",
			"is:unread umbrella":           "Café tonight?",
			"after:2000-01-01 umbrella":    "Café tonight?",
			"before:2000-01-01 umbrella":   "",
			`"near the station`:            "Café tonight?", // an open quote closes at the end
			"colour:blue":                  "",
			"re:invoice":                   "",
			`'; DROP TABLE email_messages`: "",
		} {
			if got := subjects(search(key, q)); got != want {
				t.Errorf("%q: %q, want %q", q, got, want)
			}
		}
		// Recency instead of relevance.
		if got := subjects(search(key, "invoice", "&ordering=-created_dt")); got != "Receipt | Your invoice for October" {
			t.Errorf("-created_dt: %q", got)
		}
		// Its pages, each with the count of every match.
		for _, c := range []struct{ q, page, want string }{
			{"invoice", "&limit=1", "Receipt"}, {"invoice", "&limit=1&offset=1", "Your invoice for October"},
			{"invoice", "&limit=1&offset=5", ""}, {"invoice receipt", "&limit=5", "Receipt"}, {"xylophone", "&limit=5", ""},
		} {
			p := search(key, c.q, "&ordering=-created_dt"+c.page)
			if wantCount := map[string]int{"invoice": 2, "invoice receipt": 1}[c.q]; subjects(p) != c.want || p.Count != wantCount {
				t.Errorf("-created_dt %q %s: %q, count %d; want %q, %d", c.q, c.page, subjects(p), p.Count, c.want, wantCount)
			}
		}
		// Threads with a matching message, newest activity first.
		var threads []struct {
			Subject    string
			Highlights []string
		}
		if s := r.call("GET", "/api/email-inbox/?q="+url.QueryEscape("invoice -receipt"), key, nil, &threads); s != 200 ||
			len(threads) != 1 || threads[0].Subject != "Your invoice for October" || !reflect.DeepEqual(threads[0].Highlights,
			[]string{"Your <mark>invoice</mark> for October", "Dear customer, your <mark>invoices</mark> are attached. Amount due: 42 EUR."}) {
			t.Errorf("threads: %d %+v", s, threads)
		}
		if s := r.call("GET", "/api/email-inbox/", key, nil, &threads); s != 200 || len(threads) != 4 || threads[0].Highlights == nil ||
			len(threads[0].Highlights) != 0 {
			t.Errorf("threads outside a search: %d %+v", s, threads)
		}
		if s := r.call("GET", "/api/email-inbox/?q=", key, nil, nil); s != 400 {
			t.Errorf("threads, empty q: %d", s)
		}
		// Highlights: marked words, the rest escaped.
		p := search(key, "map umbrella")
		if len(p.Results) != 1 || len(p.Results[0].Highlights) != 1 ||
			p.Results[0].Highlights[0] != "…near the station? Bring the &lt;b&gt;<mark>map</mark>&lt;/b&gt; &amp; your <mark>umbrella</mark>." {
			t.Fatalf("highlights: %+v", p.Results)
		}
		// Scoped: the management key sees both identities' invoices; the other key only its own.
		if n := search(mgmt, "invoice").Count; n != 3 {
			t.Errorf("management key: %d", n)
		}
		if got := subjects(search(otherKey, "invoice")); got != "Your invoice" {
			t.Errorf("other identity: %q", got)
		}
		// 400 on q for what cannot be read; never a 500 whatever is typed.
		for _, q := range []string{"", "  ", "before:tomorrow", "has:pdf", strings.Repeat("x", 1001)} {
			var e map[string][]string
			if s := r.call("GET", "/api/email-messages/?q="+url.QueryEscape(q), key, nil, &e); s != 400 || len(e["q"]) == 0 {
				t.Errorf("%q: %d %v", q, s, e)
			}
		}
		for _, q := range []string{`"`, `-`, `*`, `NEAR(a b)`, `a OR b`, `a:b:c`, `"a" "b`, `subject:`, `^x`, `x*`, `\'`, "\x00", `(`,
			`search_subject:x`, `-"`, `a <-> b`, `!x & y | z`, `ab:C`} {
			if s, body := r.callRaw("GET", "/api/email-messages/?q="+url.QueryEscape(q), key, nil); s != 200 && s != 400 {
				t.Errorf("%q: %d %s", q, s, body)
			}
		}
	})
}

// TestSearchTextsAndContacts: q on the SMS list and on contacts, with the
// same parser: words (stemmed and folded for texts, whole for contacts),
// phrases, exclusions, the filters that apply (from:, to:, is:unread,
// dates), combined with the lists' filters and scoping, highlights, index
// kept by updates and deletes; the mail-only filters are a 400 on q; on
// both databases, nothing typed gives a 500.
func TestSearchTextsAndContacts(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, nil)
		mgmt := r.bootstrap("search-texts@example.com")
		var ident, other struct{ UUID, Phone string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "texter", "provision_phone": true}, &ident)
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "other", "provision_phone": true}, &other)
		key, otherKey := identityKey(r, mgmt, ident.UUID), identityKey(r, mgmt, other.UUID)
		receive := func(from, to, body string) {
			t.Helper()
			if s, b := r.callRaw("POST", "/webhooks/sim/sms/", mgmt, map[string]any{"From": from, "To": to, "Body": body}); s/100 != 2 {
				t.Fatalf("inbound: %d %s", s, b)
			}
		}
		receive("+14155550101", ident.Phone, "Your Acme verification code is 482913")
		receive("+14155550102", ident.Phone, "Running late, see you at the café")
		receive("+14155550101", ident.Phone, "Invoices are ready <b>now</b>")
		if s := r.call("POST", "/api/messages/send/", key, map[string]any{"to": "+14155550103", "body": "Meeting moved to Friday"}, nil); s != 201 {
			t.Fatalf("send: %d", s)
		}
		receive("+14155550101", other.Phone, "Another identity's code 111")

		type hits []struct {
			Body       string
			Highlights []string
		}
		// found searches a list and joins one field of its hits with " | ".
		found := func(path, field, key, q string, extra ...string) string {
			t.Helper()
			var p []map[string]any
			if s := r.call("GET", path+"?q="+url.QueryEscape(q)+strings.Join(extra, ""), key, nil, &p); s != 200 {
				t.Fatalf("%s %q: %d\n%s", path, q, s, r.logs())
			}
			var b []string
			for _, hit := range p {
				b = append(b, hit[field].(string))
			}
			return strings.Join(b, " | ")
		}
		texts := func(key, q string, extra ...string) string { return found("/api/messages/", "body", key, q, extra...) }
		for q, want := range map[string]string{
			"CODE":                           "Your Acme verification code is 482913",
			"cafe":                           "Running late, see you at the café", // accents folded
			"invoice":                        "Invoices are ready <b>now</b>",     // stemmed
			`"running late"`:                 "Running late, see you at the café",
			`"late running"`:                 "",
			"from:4155550101":                "Invoices are ready <b>now</b> | Your Acme verification code is 482913",
			"from:+14155550101 -code":        "Invoices are ready <b>now</b>",
			"to:4155550103":                  "Meeting moved to Friday",
			"is:unread meeting":              "", // what we send is not unread
			"is:unread acme":                 "Your Acme verification code is 482913",
			"before:2000-01-01 code":         "",
			"after:2000-01-01 code":          "Your Acme verification code is 482913",
			"colour:blue":                    "",
			`'; DROP TABLE sms_messages; --`: "",
		} {
			if got := texts(key, q); got != want {
				t.Errorf("texts %q: %q, want %q", q, got, want)
			}
		}
		// With the list's own filters, and scoped.
		if got := texts(key, "meeting", "&direction=incoming"); got != "" {
			t.Errorf("direction=incoming: %q", got)
		}
		if got := texts(mgmt, "code"); got != "Another identity's code 111 | Your Acme verification code is 482913" {
			t.Errorf("management key: %q", got)
		}
		if got := texts(mgmt, "code", "&identity="+other.UUID); got != "Another identity's code 111" {
			t.Errorf("identity=: %q", got)
		}
		if got := texts(otherKey, "acme"); got != "" {
			t.Errorf("other identity: %q", got)
		}
		var p hits
		r.call("GET", "/api/messages/?q=ready+invoice", key, nil, &p)
		if len(p) != 1 || !reflect.DeepEqual(p[0].Highlights, []string{"<mark>Invoices</mark> are <mark>ready</mark> &lt;b&gt;now&lt;/b&gt;"}) {
			t.Errorf("highlights: %+v", p)
		}
		r.call("GET", "/api/messages/", key, nil, &p)
		if len(p) != 4 || p[0].Highlights == nil || len(p[0].Highlights) != 0 {
			t.Errorf("outside a search: %+v", p)
		}

		// Contacts: names, nickname, email and number, as whole words.
		var ann, bob struct{ UUID string }
		r.call("POST", "/api/contacts/", key, map[string]any{"display_name": "Ann Smith", "nickname": "annie",
			"email": "ann.smith@acme.example", "phone_number": "+14155550142"}, &ann)
		r.call("POST", "/api/contacts/", key, map[string]any{"display_name": "Bob Jones", "email": "bob@example.org"}, &bob)
		r.call("POST", "/api/contacts/", key, map[string]any{"display_name": "Zoë Müller", "email": "zoe@beispiel.example"}, nil)
		if s := r.call("POST", "/api/contacts/", otherKey, map[string]any{"display_name": "Ann Other", "email": "ann@other.example"}, nil); s != 201 {
			t.Fatalf("contact: %d", s)
		}
		type people []struct {
			DisplayName string `json:"display_name"`
			Highlights  []string
		}
		contacts := func(key, q string, extra ...string) string {
			return found("/api/contacts/", "display_name", key, q, extra...)
		}
		for q, want := range map[string]string{
			"ann":                    "Ann Smith",
			"SMITH annie":            "Ann Smith",
			"acme":                   "Ann Smith", // a word of the address
			"ann.smith@acme.example": "Ann Smith",
			"+14155550142":           "Ann Smith",
			"zoe muller":             "Zoë Müller",
			"after:2000-01-01 bob":   "Bob Jones",
			"before:2000-01-01 bob":  "",
			"smi":                    "", // whole words
		} {
			if got := contacts(key, q); got != want {
				t.Errorf("contacts %q: %q, want %q", q, got, want)
			}
		}
		if got := contacts(mgmt, "ann"); got != "Ann Other | Ann Smith" && got != "Ann Smith | Ann Other" {
			t.Errorf("management key: %q", got)
		}
		// Newest first when nothing ranks; the senders of the texts are auto contacts.
		if got := contacts(key, "-ann", "&source=manual"); got != "Zoë Müller | Bob Jones" {
			t.Errorf("-ann: %q", got)
		}
		if got := contacts(key, "ann", "&source=auto"); got != "" {
			t.Errorf("source=auto: %q", got)
		}
		var pp people
		r.call("GET", "/api/contacts/?q=smith", key, nil, &pp)
		if len(pp) != 1 || !reflect.DeepEqual(pp[0].Highlights, []string{"Ann <mark>Smith</mark> annie", "ann.<mark>smith</mark>@acme.example"}) {
			t.Errorf("contact highlights: %+v", pp)
		}
		// Contacts match whole words, and so do their highlights: ann, not annie.
		r.call("GET", "/api/contacts/?q=ann", key, nil, &pp)
		if len(pp) != 1 || !reflect.DeepEqual(pp[0].Highlights, []string{"<mark>Ann</mark> Smith annie", "<mark>ann</mark>.smith@acme.example"}) {
			t.Errorf("contact highlights of ann: %+v", pp)
		}
		// The index follows updates and deletes.
		r.call("PATCH", "/api/contacts/"+bob.UUID+"/", key, map[string]any{"nickname": "bobby"}, nil)
		if got := contacts(key, "bobby"); got != "Bob Jones" {
			t.Errorf("after an update: %q", got)
		}
		r.call("DELETE", "/api/contacts/"+bob.UUID+"/", key, nil, nil)
		if got := contacts(key, "bob"); got != "" {
			t.Errorf("after a delete: %q", got)
		}

		// Outside a search, ordering lists by time either way: texts
		// newest first by default, contacts oldest first; a search is
		// ranked, so ordering with q is a 400, as is an unknown value.
		for path, want := range map[string]map[string]string{
			"/api/messages/":               {"": "Meeting moved to Friday", "-created_dt": "Meeting moved to Friday", "created_dt": "Your Acme verification code is 482913"},
			"/api/contacts/?source=manual": {"": "Ann Smith", "created_dt": "Ann Smith", "-created_dt": "Zoë Müller"},
		} {
			for ordering, first := range want {
				var l []map[string]any
				sep := map[bool]string{true: "&", false: "?"}[strings.Contains(path, "?")]
				if s := r.call("GET", path+sep+"ordering="+ordering, key, nil, &l); s != 200 || len(l) < 2 || (l[0]["body"] != first && l[0]["display_name"] != first) {
					t.Errorf("%s ordering=%s: %d, first %v", path, ordering, s, l)
				}
			}
		}
		for _, path := range []string{"/api/messages/?q=code&ordering=created_dt", "/api/contacts/?q=ann&ordering=-created_dt", "/api/messages/?ordering=newest"} {
			var e map[string][]string
			if s := r.call("GET", path, key, nil, &e); s != 400 || len(e["ordering"]) == 0 {
				t.Errorf("%s: %d %v", path, s, e)
			}
		}

		// Filters that do not apply are a 400 on q, naming the filter.
		for path, qs := range map[string][]string{
			"/api/messages/": {"", "subject:code", "has:attachment", "filename:x", "before:soon"},
			"/api/contacts/": {"", "from:acme", "to:x", "is:unread", "subject:ann", "has:attachment"},
		} {
			for _, q := range qs {
				var e map[string][]string
				if s := r.call("GET", path+"?q="+url.QueryEscape(q), key, nil, &e); s != 400 || len(e["q"]) == 0 {
					t.Errorf("%s %q: %d %v", path, q, s, e)
				}
			}
		}
		for _, q := range []string{`"`, `-`, `*`, `NEAR(a b)`, `a OR b`, `"a" "b`, `^x`, `x*`, `\'`, "\x00", `(`, `search_body:x`,
			`search_text:x`, `-"`, `a <-> b`, `!x & y | z`, `-x -y`} {
			for _, path := range []string{"/api/messages/", "/api/contacts/"} {
				if s, body := r.callRaw("GET", path+"?q="+url.QueryEscape(q), key, nil); s != 200 && s != 400 {
					t.Errorf("%s %q: %d %s", path, q, s, body)
				}
			}
		}
	})
}
