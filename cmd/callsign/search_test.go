package main

import (
	"fmt"
	"net/url"
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
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, nil)
		mgmt := r.bootstrap("search@example.com")
		var ident, other struct{ UUID, Inbox string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "finder"}, &ident)
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "other"}, &other)
		key, otherKey := identityKey(r, mgmt, ident.UUID), identityKey(r, mgmt, other.UUID)
		addr := r.svc.smtpLn.Addr().String()
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
		// Threads with a matching message, newest activity first.
		var threads []struct{ Subject string }
		if s := r.call("GET", "/api/email-inbox/?q="+url.QueryEscape("invoice -receipt"), key, nil, &threads); s != 200 ||
			len(threads) != 1 || threads[0].Subject != "Your invoice for October" {
			t.Errorf("threads: %d %+v", s, threads)
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
