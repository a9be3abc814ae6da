package httpapi

import (
	"bytes"
	"errors"
	"mime/multipart"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
)

func TestEveryRouteIsDocumentedAndEveryDocumentedRouteExists(t *testing.T) {
	doc, _ := openAPI(t)
	h := newHarness(t)
	registered := map[string]bool{}
	for _, r := range h.h.(*gin.Engine).Routes() {
		path := toOpenAPIPath(r.Path)
		registered[r.Method+" "+path] = true
		item := doc.Paths.Find(path)
		if item == nil || item.GetOperation(r.Method) == nil {
			t.Errorf("%s %s is served but not in the OpenAPI document", r.Method, path)
		}
	}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if !registered[method+" "+path] {
				t.Errorf("%s %s is in the OpenAPI document but not served", method, path)
			}
		}
	}
}

// toOpenAPIPath turns Gin's /a/:id/ into OpenAPI's /a/{id}/.
func toOpenAPIPath(p string) string {
	parts := strings.Split(p, "/")
	for i, part := range parts {
		if strings.HasPrefix(part, ":") || strings.HasPrefix(part, "*") {
			parts[i] = "{" + part[1:] + "}"
		}
	}
	return strings.Join(parts, "/")
}

func TestSchemaServesYAMLAndJSON(t *testing.T) {
	h := newHarness(t)
	y := h.do("GET", "/api/schema/", nil, "").want(t, 200)
	if !bytes.HasPrefix(y.Body, []byte("openapi: 3")) {
		t.Fatalf("YAML document expected: %.40s", y.Body)
	}
	j := h.do("GET", "/api/schema/?format=json", nil, "").want(t, 200).object(t)
	if j["info"].(map[string]any)["version"] != "1.0.0" {
		t.Fatalf("version: %v", j["info"])
	}
}

func TestPing(t *testing.T) {
	h := newHarness(t)
	if got := h.do("GET", "/api/health/ping/", nil, "").want(t, 200).object(t); got["status"] != "ok" {
		t.Fatalf("ping: %v", got)
	}
	h.store.Fail = errors.New("database is down")
	defer func() { h.store.Fail = nil }()
	h.do("GET", "/api/health/ping/", nil, "").want(t, 503)
}

// workersStub is a service's parts as readiness sees them.
type workersStub []string

func (w workersStub) NotRunning() []string { return w }

func TestReady(t *testing.T) {
	h := newHarness(t)
	if got := h.do("GET", "/api/health/ready/", nil, "").want(t, 200).object(t); got["status"] != "ready" {
		t.Fatalf("ready: %v", got)
	}
	h.app.Health.WatchWorkers(workersStub{"starting"})
	got := h.do("GET", "/api/health/ready/", nil, "").want(t, 503).object(t)
	if got["detail"] != "Not ready: not running: starting." {
		t.Fatalf("starting: %v", got)
	}
	h.app.Health.WatchWorkers(workersStub{"outbox", "IMAP sources"})
	h.store.Fail = errors.New("database is down")
	defer func() { h.store.Fail = nil }()
	got = h.do("GET", "/api/health/ready/", nil, "").want(t, 503).object(t)
	if got["detail"] != "Not ready: the database is unreachable; not running: outbox, IMAP sources." {
		t.Fatalf("down: %v", got)
	}
	h.store.Fail = nil
	h.app.Health.WatchWorkers(workersStub{})
	h.do("GET", "/api/health/ready/", nil, "").want(t, 200)
}

func TestAuthentication(t *testing.T) {
	h := newHarness(t)
	mgmt := h.account()
	who := h.do("GET", "/api/health/whoami/", nil, mgmt).want(t, 200).object(t)
	if who["key_type"] != "management" || who["identity"] != nil || !strings.HasPrefix(mgmt, who["key_prefix"].(string)) {
		t.Fatalf("whoami: %v", who)
	}
	for name, header := range map[string]string{
		"missing":      "",
		"other scheme": "Token " + mgmt,
		"empty bearer": "Bearer ",
		"not a key":    "Bearer nonsense",
		"unknown":      "Bearer svc_mgmt_" + strings.Repeat("A", 40),
		"truncated":    "Bearer " + mgmt[:len(mgmt)-1],
		"wrong family": "Bearer svc_id_" + strings.TrimPrefix(mgmt, "svc_mgmt_"),
	} {
		req := httptest.NewRequest("GET", "/api/health/whoami/", nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		res := h.serve(req)
		if res.Status != 401 || res.object(t)["detail"] == "" || res.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s key: %d %s", name, res.Status, res.Body)
		}
	}
}

func TestManagementKeys(t *testing.T) {
	h := newHarness(t)
	mgmt := h.account()
	created := h.do("POST", "/api/auth/keys/management/", map[string]any{"name": "ci"}, mgmt).want(t, 201).object(t)
	key := created["key"].(string)
	if !strings.HasPrefix(key, "svc_mgmt_") || len(key) < len("svc_mgmt_")+32 || !strings.HasPrefix(key, created["prefix"].(string)) {
		t.Fatalf("created: %v", created)
	}
	if created["name"] != "ci" || created["last_used_dt"] != nil {
		t.Fatalf("created: %v", created)
	}
	id := int(created["id"].(float64))
	list := h.do("GET", "/api/auth/keys/management/", nil, key).want(t, 200).list(t)
	if len(list) != 2 {
		t.Fatalf("list: %v", list)
	}
	for _, k := range list {
		if _, shown := k["key"]; shown {
			t.Fatalf("a listed key shows the key: %v", k)
		}
	}
	got := h.do("GET", path("/api/auth/keys/management/%d/", id), nil, mgmt).want(t, 200).object(t)
	if got["last_used_dt"] == nil {
		t.Fatalf("last_used_dt should be set once the key was used: %v", got)
	}
	// Another account's key sees nothing of this one.
	other := h.account()
	h.do("GET", path("/api/auth/keys/management/%d/", id), nil, other).want(t, 404)
	h.do("DELETE", path("/api/auth/keys/management/%d/", id), nil, other).want(t, 404)
	if l := h.do("GET", "/api/auth/keys/management/", nil, other).want(t, 200).list(t); len(l) != 1 {
		t.Fatalf("other account lists %v", l)
	}

	h.do("DELETE", path("/api/auth/keys/management/%d/", id), nil, mgmt).want(t, 204)
	h.do("GET", "/api/health/whoami/", nil, key).want(t, 401)
	h.do("GET", path("/api/auth/keys/management/%d/", id), nil, mgmt).want(t, 404)
	h.do("GET", "/api/auth/keys/management/abc/", nil, mgmt).want(t, 404)
	h.do("POST", "/api/auth/keys/management/", map[string]any{"name": strings.Repeat("n", 101)}, mgmt).want(t, 400)
	h.do("POST", "/api/auth/keys/management/", map[string]any{"name": 7}, mgmt).want(t, 400)

	// The last management key cannot be deleted: the account would be locked out.
	last := h.do("GET", "/api/auth/keys/management/", nil, mgmt).want(t, 200).list(t)
	if len(last) != 1 {
		t.Fatalf("keys left: %v", last)
	}
	h.do("DELETE", path("/api/auth/keys/management/%d/", int(last[0]["id"].(float64))), nil, mgmt).want(t, 409)
	h.do("GET", "/api/health/whoami/", nil, mgmt).want(t, 200)
}

func TestIdentityKeys(t *testing.T) {
	h := newHarness(t)
	mgmt := h.account()
	a := h.do("POST", "/api/identities/", map[string]any{"name": "a"}, mgmt).want(t, 201).object(t)
	b := h.do("POST", "/api/identities/", map[string]any{"name": "b"}, mgmt).want(t, 201).object(t)

	bad := h.do("POST", "/api/auth/keys/identity/", map[string]any{}, mgmt).want(t, 400).object(t)
	if bad["identity"] == nil {
		t.Fatalf("a management key must name the identity: %v", bad)
	}
	h.do("POST", "/api/auth/keys/identity/", map[string]any{"identity": "nope"}, mgmt).want(t, 400)
	h.do("POST", "/api/auth/keys/identity/", map[string]any{"identity": "00000000-0000-4000-8000-000000000000"}, mgmt).want(t, 400)

	ka := h.do("POST", "/api/auth/keys/identity/", map[string]any{"identity": a["uuid"], "name": "agent a"}, mgmt).want(t, 201).object(t)
	keyA := ka["key"].(string)
	if !strings.HasPrefix(keyA, "svc_id_") || ka["identity"] != a["uuid"] {
		t.Fatalf("identity key: %v", ka)
	}
	h.do("POST", "/api/auth/keys/identity/", map[string]any{"identity": b["uuid"]}, mgmt).want(t, 201)

	who := h.do("GET", "/api/health/whoami/", nil, keyA).want(t, 200).object(t)
	if who["key_type"] != "identity" || who["identity"] != a["uuid"] {
		t.Fatalf("whoami: %v", who)
	}
	// An identity key may not touch management keys.
	h.do("GET", "/api/auth/keys/management/", nil, keyA).want(t, 403)
	h.do("POST", "/api/auth/keys/management/", nil, keyA).want(t, 403)
	h.do("GET", "/api/auth/keys/management/1/", nil, keyA).want(t, 403)
	h.do("DELETE", "/api/auth/keys/management/1/", nil, keyA).want(t, 403)
	// It sees keys of its own identity only, and mints none (a key it made
	// would outlive its revocation): 403 whichever identity it names.
	if l := h.do("GET", "/api/auth/keys/identity/", nil, keyA).want(t, 200).list(t); len(l) != 1 || l[0]["identity"] != a["uuid"] {
		t.Fatalf("identity key lists %v", l)
	}
	if l := h.do("GET", "/api/auth/keys/identity/?identity="+b["uuid"].(string), nil, keyA).want(t, 200).list(t); len(l) != 0 {
		t.Fatalf("mismatched identity must list nothing: %v", l)
	}
	h.do("POST", "/api/auth/keys/identity/", map[string]any{"identity": b["uuid"]}, keyA).want(t, 403)
	h.do("POST", "/api/auth/keys/identity/", map[string]any{}, keyA).want(t, 403)
	if l := h.do("GET", "/api/auth/keys/identity/", nil, mgmt).want(t, 200).list(t); len(l) != 2 {
		t.Fatalf("management key lists %d identity keys", len(l))
	}
	if l := h.do("GET", "/api/auth/keys/identity/?identity="+b["uuid"].(string), nil, mgmt).want(t, 200).list(t); len(l) != 1 {
		t.Fatalf("narrowed list: %v", l)
	}
	h.do("GET", "/api/auth/keys/identity/?identity=bad", nil, mgmt).want(t, 400)
	kb := h.do("GET", "/api/auth/keys/identity/", nil, mgmt).list(t)[1]
	h.do("GET", path("/api/auth/keys/identity/%v/", kb["id"]), nil, keyA).want(t, 404)
	h.do("DELETE", path("/api/auth/keys/identity/%v/", kb["id"]), nil, keyA).want(t, 404)
	h.do("DELETE", path("/api/auth/keys/identity/%v/", ka["id"]), nil, mgmt).want(t, 204)
	h.do("GET", "/api/health/whoami/", nil, keyA).want(t, 401)
}

func TestIdentities(t *testing.T) {
	h := newHarness(t)
	mgmt := h.account()
	gen := h.do("POST", "/api/identities/", nil, mgmt).want(t, 201).object(t)
	name := gen["name"].(string)
	if name == "" || gen["inbox"] != name+"@agents.test" || gen["phone"] != nil {
		t.Fatalf("generated identity: %v", gen)
	}
	named := h.do("POST", "/api/identities/", map[string]any{"name": "Sales Bot", "email_identifier": "Sales", "domain": "BOTS.test"}, mgmt).want(t, 201).object(t)
	if named["name"] != "Sales Bot" || named["inbox"] != "sales@bots.test" {
		t.Fatalf("named identity: %v", named)
	}
	// Generated addresses avoid taken ones; requested ones clash.
	again := h.do("POST", "/api/identities/", map[string]any{"name": "sales"}, mgmt).want(t, 201).object(t)
	if again["inbox"] == "sales@agents.test" && named["inbox"] == again["inbox"] {
		t.Fatalf("address reused: %v", again)
	}
	h.do("POST", "/api/identities/", map[string]any{"email_identifier": "sales", "domain": "bots.test"}, mgmt).want(t, 409)
	h.do("POST", "/api/identities/", map[string]any{"name": "Sales Bot"}, mgmt).want(t, 409)

	for body, field := range map[string]string{
		`{"domain": "gmail.com"}`:                      "domain",
		`{"email_identifier": "no spaces"}`:            "email_identifier",
		`{"email_identifier": ".dot"}`:                 "email_identifier",
		`{"name": ""}`:                                 "name",
		`{"name": 12}`:                                 "name",
		`{"name": "` + strings.Repeat("x", 101) + `"}`: "name",
	} {
		res := h.raw("POST", "/api/identities/", "application/json", strings.NewReader(body), mgmt).want(t, 400).object(t)
		if res[field] == nil {
			t.Errorf("%s: error should name %s: %v", body, field, res)
		}
	}

	// Form-encoded and multipart bodies work too.
	form := url.Values{"name": {"form bot"}, "email_identifier": {"form-bot"}}
	if got := h.raw("POST", "/api/identities/", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), mgmt).want(t, 201).object(t); got["inbox"] != "form-bot@agents.test" {
		t.Fatalf("form: %v", got)
	}
	var mp bytes.Buffer
	w := multipart.NewWriter(&mp)
	_ = w.WriteField("name", "multipart bot")
	_ = w.Close()
	if got := h.raw("POST", "/api/identities/", w.FormDataContentType(), &mp, mgmt).want(t, 201).object(t); got["name"] != "multipart bot" {
		t.Fatalf("multipart: %v", got)
	}

	list := h.do("GET", "/api/identities/", nil, mgmt).want(t, 200).list(t)
	if len(list) != 5 || list[0]["uuid"] != gen["uuid"] {
		t.Fatalf("list, oldest first: %v", list)
	}
	id := named["uuid"].(string)
	got := h.do("GET", "/api/identities/"+id+"/", nil, mgmt).want(t, 200).object(t)
	if got["inbox"] != "sales@bots.test" {
		t.Fatalf("get: %v", got)
	}

	h.clock.Advance(1e9)
	h.do("PUT", "/api/identities/"+id+"/", map[string]any{}, mgmt).want(t, 400)
	put := h.do("PUT", "/api/identities/"+id+"/", map[string]any{"name": "Renamed", "email_identifier": "sales", "domain": "bots.test"}, mgmt).want(t, 200).object(t)
	if put["name"] != "Renamed" || put["updated_dt"] == put["created_dt"] {
		t.Fatalf("put: %v", put)
	}
	h.do("PATCH", "/api/identities/"+id+"/", map[string]any{"email_identifier": "other"}, mgmt).want(t, 400)
	h.do("PATCH", "/api/identities/"+id+"/", map[string]any{"name": gen["name"]}, mgmt).want(t, 409)
	patch := h.do("PATCH", "/api/identities/"+id+"/", map[string]any{"name": "Patched"}, mgmt).want(t, 200).object(t)
	if patch["name"] != "Patched" || patch["inbox"] != "sales@bots.test" {
		t.Fatalf("patch: %v", patch)
	}
	h.do("GET", "/api/identities/not-a-uuid/", nil, mgmt).want(t, 404)
	h.do("GET", "/api/identities/00000000-0000-4000-8000-000000000000/", nil, mgmt).want(t, 404)
}

func TestIdentityScoping(t *testing.T) {
	h := newHarness(t)
	mgmt := h.account()
	a := h.do("POST", "/api/identities/", map[string]any{"name": "a"}, mgmt).object(t)
	b := h.do("POST", "/api/identities/", map[string]any{"name": "b"}, mgmt).object(t)
	keyA := h.do("POST", "/api/auth/keys/identity/", map[string]any{"identity": a["uuid"]}, mgmt).object(t)["key"].(string)
	other := h.account()
	aID, bID := a["uuid"].(string), b["uuid"].(string)

	for _, tc := range []struct {
		name, method, path, key string
		body                    any
		status, count           int
	}{
		{"mgmt lists the account", "GET", "/api/identities/", mgmt, nil, 200, 2},
		{"mgmt narrows with identity", "GET", "/api/identities/?identity=" + bID, mgmt, nil, 200, 1},
		{"identity key lists itself", "GET", "/api/identities/", keyA, nil, 200, 1},
		{"identity key, own identity", "GET", "/api/identities/?identity=" + aID, keyA, nil, 200, 1},
		{"identity key, other identity: empty", "GET", "/api/identities/?identity=" + bID, keyA, nil, 200, 0},
		{"other account lists nothing of ours", "GET", "/api/identities/", other, nil, 200, 0},
		{"other account naming ours: empty", "GET", "/api/identities/?identity=" + aID, other, nil, 200, 0},
		{"identity key reads itself", "GET", "/api/identities/" + aID + "/", keyA, nil, 200, -1},
		{"identity key cannot read a sibling", "GET", "/api/identities/" + bID + "/", keyA, nil, 404, -1},
		{"identity key cannot edit a sibling", "PATCH", "/api/identities/" + bID + "/", keyA, map[string]any{"name": "x"}, 404, -1},
		{"identity key edits itself", "PATCH", "/api/identities/" + aID + "/", keyA, map[string]any{"name": "a2"}, 200, -1},
		{"identity key cannot create identities", "POST", "/api/identities/", keyA, nil, 403, -1},
		{"other account cannot read", "GET", "/api/identities/" + aID + "/", other, nil, 404, -1},
		{"other account cannot edit", "PUT", "/api/identities/" + aID + "/", other, map[string]any{"name": "x"}, 404, -1},
		{"other account cannot mint keys for it", "POST", "/api/auth/keys/identity/", other, map[string]any{"identity": aID}, 400, -1},
	} {
		res := h.do(tc.method, tc.path, tc.body, tc.key)
		if res.Status != tc.status {
			t.Errorf("%s: status %d, want %d: %s", tc.name, res.Status, tc.status, res.Body)
			continue
		}
		if tc.count >= 0 {
			if l := res.list(t); len(l) != tc.count {
				t.Errorf("%s: %d items, want %d", tc.name, len(l), tc.count)
			}
		}
	}
}

func TestBodiesAndRoutes(t *testing.T) {
	h := newHarness(t)
	mgmt := h.account()
	big := `{"name": "` + strings.Repeat("x", 1<<20) + `"}`
	h.raw("POST", "/api/identities/", "application/json", strings.NewReader(big), mgmt).want(t, 413)
	h.raw("POST", "/api/identities/", "application/json", strings.NewReader(`{"name": `), mgmt).want(t, 400)
	h.raw("POST", "/api/identities/", "application/json", strings.NewReader(`[1, 2]`), mgmt).want(t, 400)
	h.raw("POST", "/api/identities/", "text/plain", strings.NewReader(`name=x`), mgmt).want(t, 415)
	nf := h.do("GET", "/api/nothing-here/", nil, mgmt).want(t, 404).object(t)
	if nf["detail"] == nil {
		t.Fatalf("404 body: %v", nf)
	}
	na := h.do("DELETE", "/api/identities/", nil, mgmt).want(t, 405).object(t)
	if na["detail"] == nil {
		t.Fatalf("405 body: %v", na)
	}
}

func TestNoKeyReachesTheLog(t *testing.T) {
	h := newHarness(t)
	mgmt := h.account()
	created := h.do("POST", "/api/auth/keys/management/", map[string]any{"name": "x"}, mgmt).want(t, 201).object(t)
	h.do("GET", "/api/health/whoami/", nil, created["key"].(string)).want(t, 200)
	h.do("GET", "/api/health/whoami/", nil, mgmt+"x").want(t, 401)
	logs := h.logs.String()
	if !strings.Contains(logs, `"route":"/api/health/whoami/"`) || !strings.Contains(logs, `"key_prefix":"svc_mgmt_`) {
		t.Fatalf("access log lines missing:\n%s", logs)
	}
	for _, secret := range []string{mgmt, created["key"].(string), strings.TrimPrefix(mgmt, "svc_mgmt_")} {
		if strings.Contains(logs, secret) {
			t.Fatalf("a key reached the log:\n%s", logs)
		}
	}
}
