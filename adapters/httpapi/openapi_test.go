package httpapi

import (
	"crypto/sha512"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/callsign/callsign/adapters/httpapi/redoctest"
)

func TestIndexPointsAtTheDocuments(t *testing.T) {
	h := newHarness(t)
	got := h.do("GET", "/", nil, "").want(t, 200).object(t)
	for field, want := range map[string]string{"service": "Callsign", "schema": "http://api.test/api/schema/",
		"docs": "http://api.test/api/docs/", "health": "http://api.test/api/health/ping/"} {
		if got[field] != want {
			t.Errorf("%s: %v, want %s", field, got[field], want)
		}
	}
	h.do("GET", "/?x=1", nil, "").want(t, 400)
}

// TestIndexSendsBrowsersToTheConsole: a browser's navigation lands in the
// console; curl, API clients and a service without a console get the JSON.
func TestIndexSendsBrowsersToTheConsole(t *testing.T) {
	h := newHarness(t)
	console := *h
	console.h = New(h.app, Options{BaseURL: "http://api.test", Console: func(ConsoleHost) http.Handler { return http.NotFoundHandler() }})
	withConsole, without := &console, h
	const browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	for _, tc := range []struct {
		h        *harness
		accept   string
		location string
	}{
		{withConsole, browser, "/console/"},
		{withConsole, "text/html", "/console/"},
		{withConsole, "*/*", ""},
		{withConsole, "application/json", ""},
		{withConsole, "", ""},
		{withConsole, "application/json, text/html;q=0", ""},
		{without, browser, ""},
	} {
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("Accept", tc.accept)
		res := tc.h.serve(req)
		if tc.location != "" {
			if res.Status != 302 || res.Header.Get("Location") != tc.location {
				t.Errorf("Accept %q: %d Location %q", tc.accept, res.Status, res.Header.Get("Location"))
			}
		} else if res.Status != 200 || res.object(t)["service"] != "Callsign" {
			t.Errorf("Accept %q: %d %s", tc.accept, res.Status, res.Body)
		}
		if res.Header.Get("Vary") != "Accept" {
			t.Errorf("Accept %q: Vary %q", tc.accept, res.Header.Get("Vary"))
		}
	}
}

func TestReferencePage(t *testing.T) {
	h := newHarness(t)
	res := h.do("GET", "/api/docs/", nil, "").want(t, 200)
	page := string(res.Body)
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(page, `src="`+RedocScriptURL+`" integrity="`+RedocIntegrity+`" crossorigin="anonymous"`) ||
		!strings.Contains(page, `spec-url="../schema/?format=json"`) {
		t.Fatalf("page:\n%s", page)
	}
	csp := res.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src https://cdn.jsdelivr.net;") || !strings.Contains(csp, "default-src 'none'") {
		t.Fatalf("policy: %s", csp)
	}
}

func TestServedDocumentNamesTheServersBaseURL(t *testing.T) {
	h := newHarness(t)
	doc := h.do("GET", "/api/schema/?format=json", nil, "").want(t, 200).object(t)
	server := doc["servers"].([]any)[0].(map[string]any)
	base := server["variables"].(map[string]any)["base_url"].(map[string]any)
	if server["url"] != "{base_url}" || base["default"] != "http://api.test" || !strings.Contains(base["description"].(string), "CALLSIGN_BASE_URL") {
		t.Fatalf("servers: %v", server)
	}
	if y := h.do("GET", "/api/schema/", nil, "").want(t, 200); !strings.Contains(string(y.Body), `default: "http://api.test"`) {
		t.Fatal("the YAML document keeps the placeholder")
	}
	h.do("GET", "/api/schema/?format=xml", nil, "").want(t, 400)
}

// TestDocumentShape checks what client generators and linters trip on:
// nullable needs a type beside it, and every tag is described.
func TestDocumentShape(t *testing.T) {
	var doc map[string]any
	if err := yaml.Unmarshal(OpenAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if _, ok := v["nullable"]; ok {
				if _, typed := v["type"]; !typed {
					t.Errorf("%s: nullable without type", path)
				}
			}
			for k, child := range v {
				walk(path+"/"+k, child)
			}
		case []any:
			for _, child := range v {
				walk(path+"[]", child)
			}
		}
	}
	walk("", doc)
	for _, tag := range doc["tags"].([]any) {
		if d, _ := tag.(map[string]any)["description"].(string); d == "" {
			t.Errorf("tag %v has no description", tag)
		}
	}
	info := doc["info"].(map[string]any)
	if info["license"] == nil || info["contact"] == nil {
		t.Error("info needs a licence and a contact")
	}
}

// oapiCodegen is the generator a Go user of the API would reach for.
const oapiCodegen = "github.com/oapi-codegen/oapi-codegen/v2"
const oapiCodegenVersion = "v2.8.2"

// TestGeneratedGoClientCompiles runs oapi-codegen with its default settings
// over the document, in a module of its own, and builds what it wrote.
func TestGeneratedGoClientCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("generating a client downloads and builds oapi-codegen")
	}
	dir := t.TempDir()
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", []byte("module example.com/callsignclient\n\ngo 1.26\n"))
	write("openapi.yaml", OpenAPIDocument)
	goCmd := func(args ...string) {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	goCmd("get", oapiCodegen+"/cmd/oapi-codegen@"+oapiCodegenVersion)
	goCmd("run", oapiCodegen+"/cmd/oapi-codegen", "-package", "callsignclient", "-o", "client.gen.go", "openapi.yaml")
	goCmd("mod", "tidy")
	goCmd("vet", "./...")
	code, err := os.ReadFile(filepath.Join(dir, "client.gen.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"func NewClientWithResponses(", ") IdentitiesList(", ") MessagesSend(", ") AsIdentityPage("} {
		if !strings.Contains(string(code), want) {
			t.Errorf("the generated client has no %q", want)
		}
	}
}

// TestReferencePageIntegrityMatchesRedoc checks the page's integrity hash
// against the script in the redoc package on npm, the file the CDN serves.
func TestReferencePageIntegrityMatchesRedoc(t *testing.T) {
	script := redoctest.Script(t, RedocVersion)
	sum := sha512.Sum384(script)
	if got := "sha384-" + base64.StdEncoding.EncodeToString(sum[:]); got != RedocIntegrity {
		t.Fatalf("redoc@%s's script hashes to %s; the page says %s", RedocVersion, got, RedocIntegrity)
	}
}
