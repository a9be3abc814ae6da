package httpapi

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/egress"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

func TestMailSourcePutGetDelete(t *testing.T) {
	h := newHarness(t)
	h.dns.SetIP("imap.example.org", "203.0.113.10")
	h.dns.SetIP("imap2.example.org", "2001:db8::2")
	mgmt := h.account()
	ident := h.do("POST", "/api/identities/", map[string]any{"name": "Feeder"}, mgmt).want(t, 201).object(t)
	other := h.do("POST", "/api/identities/", map[string]any{"name": "Other"}, mgmt).want(t, 201).object(t)
	otherKey := h.do("POST", "/api/auth/keys/identity/", map[string]any{"identity": other["uuid"]}, mgmt).want(t, 201).object(t)["key"].(string)
	inbox := h.do("GET", "/api/email/?identity="+ident["uuid"].(string), nil, mgmt).want(t, 200).list(t)[0]
	src := path("/api/email/%v/source/", inbox["id"])

	h.do("GET", src, nil, mgmt).want(t, 404)
	body := map[string]any{"host": "imap.example.org", "username": "me@example.org", "password": "hunter2"}
	created := h.do("PUT", src, body, mgmt).want(t, 201).object(t)
	if created["port"] != float64(993) || created["tls"] != "implicit" || created["folder"] != "INBOX" ||
		created["connected"] != false || created["last_error"] != nil || created["last_sync_dt"] != nil {
		t.Fatalf("created %v", created)
	}
	if _, shown := created["password"]; shown {
		t.Fatal("the password is shown")
	}
	// A replacement may leave the password out; a form body works too.
	form := url.Values{"host": {"imap2.example.org"}, "port": {"1143"}, "username": {"me"}, "tls": {"starttls"}, "folder": {"Feed"}}
	replaced := h.raw("PUT", src, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), mgmt).want(t, 200).object(t)
	if replaced["port"] != float64(1143) || replaced["tls"] != "starttls" || replaced["folder"] != "Feed" {
		t.Fatalf("replaced %v", replaced)
	}
	stored, err := h.app.Sources.Claim(t.Context(), "worker", time.Minute)
	if err != nil || len(stored) != 1 || stored[0].Password != "hunter2" {
		t.Fatalf("the stored password was not kept: %v %d", err, len(stored))
	}
	if strings.Contains(h.logs.String(), "hunter2") {
		t.Fatal("the password reached the log")
	}
	got := h.do("GET", src, nil, mgmt).want(t, 200).object(t)
	if got["host"] != "imap2.example.org" || got["inbox"] != inbox["id"] {
		t.Fatalf("got %v", got)
	}

	// Another identity's key does not see or touch it.
	h.do("GET", src, nil, otherKey).want(t, 404)
	h.do("PUT", src, body, otherKey).want(t, 404)
	h.do("DELETE", src, nil, otherKey).want(t, 404)

	h.do("DELETE", src, nil, mgmt).want(t, 204)
	h.do("GET", src, nil, mgmt).want(t, 404)
	h.do("DELETE", src, nil, mgmt).want(t, 404)
}

func TestMailSourceValidation(t *testing.T) {
	h := newHarness(t)
	h.dns.SetIP("imap.example.org", "203.0.113.10")
	mgmt := h.account()
	ident := h.do("POST", "/api/identities/", map[string]any{"name": "Feeder"}, mgmt).want(t, 201).object(t)
	inbox := h.do("GET", "/api/email/?identity="+ident["uuid"].(string), nil, mgmt).want(t, 200).list(t)[0]
	src := path("/api/email/%v/source/", inbox["id"])
	for _, tc := range []struct {
		body   map[string]any
		fields []string
	}{
		{map[string]any{}, []string{"host", "username", "password"}},
		{map[string]any{"host": "imap.example.org", "username": "u", "password": "p", "tls": "plain"}, []string{"tls"}},
		{map[string]any{"host": "imap.example.org", "username": "u", "password": "p", "tls": "ssl"}, []string{"tls"}},
		{map[string]any{"host": "imap.example.org", "username": "u", "password": "p", "port": 70000}, []string{"port"}},
		{map[string]any{"host": "imap.example.org", "username": "u", "password": "p", "port": "abc"}, []string{"port"}},
		{map[string]any{"host": "bad host", "username": "u", "password": "p", "folder": ""}, []string{"host", "folder"}},
	} {
		res := h.do("PUT", src, tc.body, mgmt).want(t, 400).object(t)
		for _, f := range tc.fields {
			if _, ok := res[f]; !ok {
				t.Errorf("%v: no problem reported on %s: %v", tc.body, f, res)
			}
		}
		if len(res) != len(tc.fields) {
			t.Errorf("%v: problems %v, want only %v", tc.body, res, tc.fields)
		}
	}
	h.do("PUT", "/api/email/999999/source/", map[string]any{"host": "h", "username": "u", "password": "p"}, mgmt).want(t, 404)
	h.do("PUT", "/api/email/abc/source/", map[string]any{}, mgmt).want(t, 404)
}

// A source may not point the server at its own network: every notation of
// loopback, private, link-local, CGNAT and metadata addresses, and names
// that resolve to them, are refused naming host; so is a name without an
// address.
func TestMailSourceRefusesTheOperatorsNetwork(t *testing.T) {
	h := newHarness(t)
	h.dns.SetIP("internal.example.org", "10.0.0.8")
	h.dns.SetIP("split.example.org", "203.0.113.10", "fd00::8")
	h.dns.SetIP("meta.example.org", "169.254.169.254")
	mgmt := h.account()
	ident := h.do("POST", "/api/identities/", map[string]any{"name": "Feeder"}, mgmt).want(t, 201).object(t)
	inbox := h.do("GET", "/api/email/?identity="+ident["uuid"].(string), nil, mgmt).want(t, 200).list(t)[0]
	src := path("/api/email/%v/source/", inbox["id"])
	for _, host := range []string{"127.0.0.1", "localhost", "0x7f.1", "2130706433", "017700000001", "::1", "::ffff:127.0.0.1",
		"10.1.2.3", "192.168.0.1", "172.16.0.1", "100.64.0.1", "169.254.169.254", "fd00:ec2::254", "fe80::1", "0.0.0.0", "224.0.0.1",
		"internal.example.org", "split.example.org", "meta.example.org", "nowhere.example.org"} {
		res := h.do("PUT", src, map[string]any{"host": host, "username": "u", "password": "p"}, mgmt).want(t, 400).object(t)
		if _, ok := res["host"]; !ok || len(res) != 1 {
			t.Errorf("%s: %v; want one problem, on host", host, res)
		}
	}
	h.do("GET", src, nil, mgmt).want(t, 404)
}

func TestMailSourceMayReachLoopbackWhenAllowed(t *testing.T) {
	h := newHarnessWith(t, func(d *app.Deps) { d.Destinations = egress.New(core.DestinationPolicy{AllowPrivate: true}, nil) })
	mgmt := h.account()
	ident := h.do("POST", "/api/identities/", map[string]any{"name": "Feeder"}, mgmt).want(t, 201).object(t)
	inbox := h.do("GET", "/api/email/?identity="+ident["uuid"].(string), nil, mgmt).want(t, 200).list(t)[0]
	body := map[string]any{"host": "127.0.0.1", "port": 1143, "username": "u", "password": "p", "tls": "plain"}
	h.do("PUT", path("/api/email/%v/source/", inbox["id"]), body, mgmt).want(t, 201)
}
