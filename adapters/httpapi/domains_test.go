package httpapi

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

// publish puts a domain's MX and DKIM records, as the API printed them,
// into the test's DNS.
func (h *harness) publish(domain map[string]any) {
	for _, r := range domain["records"].([]any) {
		rec := r.(map[string]any)
		switch rec["purpose"] {
		case "mx":
			h.dns.SetMX(rec["name"].(string), rec["value"].(string))
		case "dkim", "mta_sts", "tls_rpt":
			h.dns.SetTXT(rec["name"].(string), rec["value"].(string))
		}
	}
}

func TestCustomDomains(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	d := h.do("POST", "/api/domains/", map[string]any{"name": "Acme.Example"}, tn.mgmt).want(t, 201).object(t)
	if d["name"] != "acme.example" || d["domain"] != "acme.example" || d["type"] != "custom" || d["status"] != "pending" ||
		d["verified_dt"] != nil || d["last_checked_dt"] != nil || d["created_dt"] == nil || d["dkim_selector"] == nil {
		t.Fatalf("created %v", d)
	}
	recs := d["records"].([]any)
	if len(recs) != 5 {
		t.Fatalf("records %v", recs)
	}
	mx, dkim := recs[0].(map[string]any), recs[2].(map[string]any)
	if mx["type"] != "MX" || mx["value"] != "mx.api.test" || mx["priority"] != float64(10) || mx["status"] != "missing" ||
		dkim["name"] != d["dkim_selector"].(string)+"._domainkey.acme.example" || !strings.HasPrefix(dkim["value"].(string), "v=DKIM1; k=rsa; p=") {
		t.Fatalf("records %v", recs)
	}
	if strings.Contains(h.logs.String(), "PRIVATE") {
		t.Fatal("a private key reached the log")
	}

	// Refusals.
	h.do("POST", "/api/domains/", map[string]any{"name": "acme.example"}, tn.otherAccount).want(t, 409)
	for _, bad := range []string{"co.uk", "agents.test", "192.0.2.1", "bücher.example", ""} {
		if e := h.do("POST", "/api/domains/", map[string]any{"name": bad}, tn.mgmt).want(t, 400).object(t); e["name"] == nil {
			t.Errorf("%q: %v", bad, e)
		}
	}
	h.do("POST", "/api/domains/", map[string]any{}, tn.mgmt).want(t, 400)
	h.do("POST", "/api/domains/", map[string]any{"name": "x.example"}, tn.keyOne).want(t, 403)
	h.do("POST", "/api/domains/acme.example/verify/", nil, tn.keyOne).want(t, 403)
	h.do("GET", "/api/domains/acme.example/", nil, tn.otherAccount).want(t, 404)

	// A pending domain takes no inbox.
	if e := h.do("POST", "/api/email/?identity="+tn.one, map[string]any{"email": "sales@acme.example"}, tn.mgmt).want(t, 400).object(t); !strings.Contains(e["email"].([]any)[0].(string), "acme.example") {
		t.Fatalf("inbox on a pending domain: %v", e)
	}
	h.do("POST", "/api/identities/", map[string]any{"name": "sales", "email_identifier": "sales", "domain": "acme.example"}, tn.mgmt).want(t, 400)

	// Published and verified: inboxes may use it.
	h.publish(d)
	v := h.do("POST", "/api/domains/acme.example/verify/", nil, tn.mgmt).want(t, 200).object(t)
	if v["status"] != "verified" || v["verified_dt"] == nil || v["reason"] != nil || v["records"].([]any)[0].(map[string]any)["status"] != "ok" ||
		v["records"].([]any)[1].(map[string]any)["status"] != "missing" {
		t.Fatalf("verified %v", v)
	}
	in := h.do("POST", "/api/email/?identity="+tn.one, map[string]any{"email": "Sales@Acme.Example"}, tn.mgmt).want(t, 201).object(t)
	if in["email"] != "sales@acme.example" {
		t.Fatalf("inbox %v", in)
	}
	ident := h.do("POST", "/api/identities/", map[string]any{"name": "support", "email_identifier": "support", "domain": "acme.example"}, tn.mgmt).want(t, 201).object(t)
	if ident["inbox"] != "support@acme.example" {
		t.Fatalf("identity on a custom domain %v", ident)
	}
	h.do("POST", "/api/email/?identity="+tn.one, map[string]any{"email": "x@acme.example"}, tn.otherAccount).want(t, 404)

	list := h.do("GET", "/api/domains/", nil, tn.keyOne).want(t, 200).list(t)
	if len(list) != 3 || list[2]["name"] != "acme.example" || list[2]["status"] != "verified" || len(list[0]["records"].([]any)) != 0 {
		t.Fatalf("list %v", list)
	}

	// Rotation lists both keys; deletion is refused while inboxes use it.
	r := h.do("POST", "/api/domains/acme.example/rotate-dkim/", nil, tn.mgmt).want(t, 200).object(t)
	if len(r["records"].([]any)) != 6 || r["dkim_selector"] != d["dkim_selector"] {
		t.Fatalf("rotated %v", r)
	}
	e := h.do("DELETE", "/api/domains/acme.example/", nil, tn.mgmt).want(t, 409).object(t)
	if !strings.Contains(e["detail"].(string), "sales@acme.example") || !strings.Contains(e["detail"].(string), "support@acme.example") {
		t.Fatalf("delete in use: %v", e)
	}
	h.do("POST", "/api/domains/", map[string]any{"name": "spare.example"}, tn.mgmt).want(t, 201)
	h.do("DELETE", "/api/domains/spare.example/", nil, tn.keyOne).want(t, 403)
	h.do("DELETE", "/api/domains/spare.example/", nil, tn.mgmt).want(t, 204)
	h.do("GET", "/api/domains/spare.example/", nil, tn.mgmt).want(t, 404)
}

// With only an IP address for itself (the default base URL), the service
// lists no MX record and the reason says what to set.
func TestCustomDomainWithoutMXHost(t *testing.T) {
	h := newHarnessWith(t, func(d *app.Deps) { d.Settings.Domain.MXHost = "" })
	tn := newTenants(t, h)
	d := h.do("POST", "/api/domains/", map[string]any{"name": "acme.example"}, tn.mgmt).want(t, 201).object(t)
	check := func(d map[string]any) {
		t.Helper()
		for _, r := range d["records"].([]any) {
			if rec := r.(map[string]any); rec["type"] == "MX" || rec["purpose"] == "mx" {
				t.Errorf("MX record suggested: %v", rec)
			}
		}
		if len(d["records"].([]any)) != 3 || d["status"] != "pending" || !strings.Contains(d["reason"].(string), "CALLSIGN_MX_HOST") {
			t.Errorf("domain %v", d)
		}
	}
	check(d)
	h.publish(d)
	check(h.do("POST", "/api/domains/acme.example/verify/", nil, tn.mgmt).want(t, 200).object(t))
}

func TestSuppressionList(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	account := principalOf(t, h, tn.mgmt).AccountID
	for _, s := range []core.Suppression{
		{AccountID: account, IdentityID: tn.one, Email: "gone@example.net", Reason: "smtp; 550 5.1.1 no such user", CreatedAt: t0},
		{AccountID: account, IdentityID: tn.two, Email: "moved@example.net", Reason: "551 moved", CreatedAt: t0.Add(1)},
	} {
		if err := h.store.Suppress(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	all := h.do("GET", "/api/suppressions/", nil, tn.mgmt).want(t, 200).list(t)
	if len(all) != 2 || all[0]["email"] != "moved@example.net" || all[1]["identity"] != tn.one || all[1]["reason"] != "smtp; 550 5.1.1 no such user" {
		t.Fatalf("list %v", all)
	}
	if mine := h.do("GET", "/api/suppressions/", nil, tn.keyOne).want(t, 200).list(t); len(mine) != 1 || mine[0]["email"] != "gone@example.net" {
		t.Fatalf("identity key's list %v", mine)
	}
	if one := h.do("GET", "/api/suppressions/?email=MOVED@example.net", nil, tn.mgmt).want(t, 200).list(t); len(one) != 1 {
		t.Fatalf("by email %v", one)
	}
	if none := h.do("GET", "/api/suppressions/", nil, tn.otherAccount).want(t, 200).list(t); len(none) != 0 {
		t.Fatalf("another account's list %v", none)
	}
	h.do("GET", "/api/suppressions/?identity=nope", nil, tn.mgmt).want(t, 400)
	h.do("DELETE", "/api/suppressions/gone@example.net/", nil, tn.keyTwo).want(t, 404)
	h.do("DELETE", "/api/suppressions/gone@example.net/", nil, tn.otherAccount).want(t, 404)
	h.do("DELETE", "/api/suppressions/Gone@Example.net/", nil, tn.keyOne).want(t, 204)
	h.do("DELETE", "/api/suppressions/gone@example.net/", nil, tn.mgmt).want(t, 404)
}

// policyAt fetches the MTA-STS policy a sender would, by the Host it names.
func (h *harness) policyAt(host string) (int, string, string) {
	req := httptest.NewRequest("GET", "http://"+host+"/.well-known/mta-sts.txt", nil)
	rec := httptest.NewRecorder()
	h.h.ServeHTTP(rec, req)
	return rec.Code, rec.Header().Get("Content-Type"), rec.Body.String()
}

// TestMTASTS: a verified custom domain's MTA-STS policy is served at its
// mta-sts host, testing until the person chooses enforce; the policy's id
// in the _mta-sts record follows its content, and the domain's checks
// report that record and the TLS reporting one without their deciding
// verification.
func TestMTASTS(t *testing.T) {
	h := newHarnessWith(t, func(d *app.Deps) { d.Domain.TLSReportsTo = "tls@ops.example" })
	tn := newTenants(t, h)
	d := h.do("POST", "/api/domains/", map[string]any{"name": "sts.example"}, tn.mgmt).want(t, 201).object(t)
	records := func(d map[string]any) map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, r := range d["records"].([]any) {
			out[r.(map[string]any)["purpose"].(string)] = r.(map[string]any)
		}
		return out
	}
	recs := records(d)
	sts, rpt := recs["mta_sts"], recs["tls_rpt"]
	if d["mta_sts_mode"] != "testing" || d["mta_sts_policy_url"] != "https://mta-sts.sts.example/.well-known/mta-sts.txt" ||
		sts["name"] != "_mta-sts.sts.example" || !strings.HasPrefix(sts["value"].(string), "v=STSv1; id=") || sts["status"] != "missing" ||
		rpt["name"] != "_smtp._tls.sts.example" || rpt["value"] != "v=TLSRPTv1; rua=mailto:tls@ops.example" {
		t.Fatalf("created %v", d)
	}
	// Nothing is served before the domain receives mail here.
	if code, _, _ := h.policyAt("mta-sts.sts.example"); code != 404 {
		t.Fatalf("pending domain's policy: %d", code)
	}
	// MX and DKIM verify it; the advice records do not decide.
	h.dns.SetMX("sts.example", "mx.api.test")
	h.dns.SetTXT(d["records"].([]any)[2].(map[string]any)["name"].(string), d["records"].([]any)[2].(map[string]any)["value"].(string))
	v := h.do("POST", "/api/domains/sts.example/verify/", nil, tn.mgmt).want(t, 200).object(t)
	if v["status"] != "verified" || records(v)["mta_sts"]["status"] != "missing" || records(v)["tls_rpt"]["status"] != "missing" {
		t.Fatalf("verified without the advice records: %v", v)
	}
	code, ctype, policy := h.policyAt("MTA-STS.sts.example:443")
	if code != 200 || ctype != "text/plain; charset=utf-8" ||
		policy != "version: STSv1\r\nmode: testing\r\nmx: mx.api.test\r\nmax_age: 604800\r\n" {
		t.Fatalf("policy: %d %s %q", code, ctype, policy)
	}
	h.publish(v)
	h.dns.SetTXT("_smtp._tls.sts.example", "v=TLSRPTv1; rua=mailto:other@ops.example")
	v = h.do("POST", "/api/domains/sts.example/verify/", nil, tn.mgmt).want(t, 200).object(t)
	if records(v)["mta_sts"]["status"] != "ok" || records(v)["tls_rpt"]["status"] != "mismatch" {
		t.Fatalf("published: %v", records(v))
	}

	// Enforce: a new policy, so a new id; the published record is stale.
	e := h.do("PATCH", "/api/domains/sts.example/", map[string]any{"mta_sts_mode": "enforce"}, tn.mgmt).want(t, 200).object(t)
	if e["mta_sts_mode"] != "enforce" || records(e)["mta_sts"]["value"] == sts["value"] {
		t.Fatalf("enforce: %v", e)
	}
	if _, _, policy := h.policyAt("mta-sts.sts.example"); !strings.Contains(policy, "mode: enforce\r\n") {
		t.Fatalf("enforced policy %q", policy)
	}
	v = h.do("POST", "/api/domains/sts.example/verify/", nil, tn.mgmt).want(t, 200).object(t)
	if records(v)["mta_sts"]["status"] != "mismatch" || v["status"] != "verified" {
		t.Fatalf("stale id: %v", v)
	}

	// Refusals.
	h.do("PATCH", "/api/domains/sts.example/", map[string]any{"mta_sts_mode": "strict"}, tn.mgmt).want(t, 400)
	h.do("PATCH", "/api/domains/sts.example/", map[string]any{}, tn.mgmt).want(t, 400)
	h.do("PATCH", "/api/domains/sts.example/", map[string]any{"mta_sts_mode": "testing"}, tn.keyOne).want(t, 403)
	h.do("PATCH", "/api/domains/sts.example/", map[string]any{"mta_sts_mode": "testing"}, tn.otherAccount).want(t, 404)
	h.do("PATCH", "/api/domains/agents.test/", map[string]any{"mta_sts_mode": "testing"}, tn.mgmt).want(t, 404)
	for _, host := range []string{"sts.example", "mta-sts.agents.test", "mta-sts.unknown.example", "api.test"} {
		if code, _, _ := h.policyAt(host); code != 404 {
			t.Errorf("policy at %s: %d", host, code)
		}
	}
}
