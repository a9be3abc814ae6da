package httpapi

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// openBodies are the routes whose bodies accept fields they do not read:
// providers' webhooks (providers add fields without notice), OAuth's
// device endpoints (RFC 6749 §3.2), the device page's own form and MCP's
// JSON-RPC messages. Every other body is strict.
var openBodies = []string{
	"/mcp",
	"/api/auth/device/", "/api/auth/device/token/", "/api/auth/device/verify/",
	"/webhooks/twilio/sms/", "/webhooks/twilio/status/", "/webhooks/twilio/voice/", "/webhooks/twilio/call-status/",
	"/webhooks/telnyx/messaging/", "/webhooks/telnyx/voice/", "/webhooks/telnyx/call-status/",
	"/webhooks/mailgun/events/", "/webhooks/mailgun/mime", "/webhooks/ses/",
}

// requestBodies calls visit for every request body in the OpenAPI
// document: each operation's each media type, with its parameters and
// schema.
func requestBodies(t *testing.T, visit func(method, path string, params openapi3.Parameters, mediaType string, schema *openapi3.Schema)) {
	doc, _ := openAPI(t)
	for _, path := range slices.Sorted(func(yield func(string) bool) {
		for p := range doc.Paths.Map() {
			if !yield(p) {
				return
			}
		}
	}) {
		item := doc.Paths.Value(path)
		for method, op := range item.Operations() {
			if op.RequestBody == nil {
				continue
			}
			for mediaType, content := range op.RequestBody.Value.Content {
				visit(method, path, append(item.Parameters, op.Parameters...), mediaType, content.Schema.Value)
			}
		}
	}
}

// TestRequestBodySchemasAreClosed checks that every request body's schema
// says whether it takes fields it does not list: false (a 400 naming the
// field) everywhere but openBodies, which say true.
func TestRequestBodySchemasAreClosed(t *testing.T) {
	requestBodies(t, func(method, path string, _ openapi3.Parameters, mediaType string, schema *openapi3.Schema) {
		if !schema.Type.Is("object") {
			return // SNS's text/plain
		}
		has := schema.AdditionalProperties.Has
		switch open := slices.Contains(openBodies, path); {
		case has == nil:
			t.Errorf("%s %s %s: the schema does not say additionalProperties (false, unless the route is in openBodies)", method, path, mediaType)
		case *has == open:
		case open:
			t.Errorf("%s %s %s: an open body (openBodies) needs additionalProperties: true", method, path, mediaType)
		default:
			t.Errorf("%s %s %s: additionalProperties must be false", method, path, mediaType)
		}
	})
}

// TestUnknownBodyFieldsAreRefused sends every strict body of the document,
// in each of its media types, a field no route takes: each is a 400
// naming it, before anything is looked up or done.
func TestUnknownBodyFieldsAreRefused(t *testing.T) {
	h := newHarness(t)
	mgmt := h.account()
	requestBodies(t, func(method, path string, params openapi3.Parameters, mediaType string, _ *openapi3.Schema) {
		if slices.Contains(openBodies, path) {
			return
		}
		target := concreteTarget(path, params)
		var body bytes.Buffer
		contentType := mediaType
		switch mediaType {
		case "application/json":
			body.WriteString(`{"nam": "Ada"}`)
		case "application/x-www-form-urlencoded":
			body.WriteString(url.Values{"nam": {"Ada"}}.Encode())
		case "multipart/form-data":
			w := multipart.NewWriter(&body)
			_ = w.WriteField("nam", "Ada")
			_ = w.Close()
			contentType = w.FormDataContentType()
		default:
			t.Errorf("%s %s: no test body for %s", method, path, mediaType)
			return
		}
		res := h.raw(method, target, contentType, &body, mgmt)
		what := fmt.Sprintf("%s %s (%s)", method, path, mediaType)
		if res.Status != 400 {
			t.Errorf("%s: %d, want 400: %s", what, res.Status, res.Body)
			return
		}
		msgs, _ := res.object(t)["nam"].([]any)
		if len(msgs) != 1 || !strings.HasPrefix(msgs[0].(string), "Unknown field; this route takes ") {
			t.Errorf("%s: %s", what, res.Body)
		}
	})
}

// TestBodilessWritesRefuseFields: a POST, PUT or PATCH that documents no
// body refuses fields all the same (it takes none).
func TestBodilessWritesRefuseFields(t *testing.T) {
	doc, _ := openAPI(t)
	h := newHarness(t)
	mgmt := h.account()
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.RequestBody != nil || method == "GET" || method == "DELETE" {
				continue
			}
			target := concreteTarget(path, append(item.Parameters, op.Parameters...))
			res := h.do(method, target, map[string]any{"nam": "Ada"}, mgmt)
			if msgs, _ := res.object(t)["nam"].([]any); res.Status != 400 || fmt.Sprint(msgs) != "[Unknown field; this route takes none.]" {
				t.Errorf("%s %s: %d %s", method, path, res.Status, res.Body)
			}
		}
	}
}

// concreteTarget fills a documented path's parameters with well-formed
// values, of resources that need not exist.
func concreteTarget(path string, params openapi3.Parameters) string {
	for _, p := range params {
		if p.Value.In != "path" {
			continue
		}
		value := "example.org"
		switch s := p.Value.Schema.Value; {
		case s.Type.Is("integer"):
			value = "1"
		case s.Format == "uuid":
			value = "00000000-0000-4000-8000-000000000001"
		}
		path = strings.ReplaceAll(path, "{"+p.Value.Name+"}", value)
	}
	return path
}

// TestUnknownFieldsBesideKnownOnes reports the unknown field with the
// others' problems, and names what the route takes; a PUT or PATCH takes
// the resource back whole as read, its read-only fields ignored.
func TestUnknownFieldsBesideKnownOnes(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	e := h.do("POST", "/api/auth/keys/identity/", map[string]any{"nmae": "ci", "identity": "one"}, tn.mgmt).want(t, 400).object(t)
	if fmt.Sprint(e["nmae"]) != "[Unknown field; this route takes can_provision, can_send, identity, name.]" || e["identity"] == nil {
		t.Fatalf("unknown beside a bad field: %v", e)
	}
	contact := h.do("POST", "/api/contacts/", map[string]any{"email": "ann@example.com"}, tn.keyOne).want(t, 201).object(t)
	path := fmt.Sprintf("/api/contacts/%v/", contact["uuid"])
	contact["nickname"] = "annie"
	if got := h.do("PATCH", path, contact, tn.keyOne).want(t, 200).object(t); got["nickname"] != "annie" {
		t.Fatalf("sent back whole: %v", got)
	}
	contact["nick"] = "a"
	h.do("PATCH", path, contact, tn.keyOne).want(t, 400)
	// A view's fields include those of a view it embeds.
	draft := h.do("POST", "/api/email-drafts/", map[string]any{"to_email": "bo@example.org", "content": "Hi."}, tn.keyOne).want(t, 201).object(t)
	delete(draft, "reply_to") // fixed when made: a 400 of its own
	delete(draft, "forward_of")
	draft["content"] = "Hello."
	if got := h.do("PATCH", "/api/email-drafts/"+draft["id"].(string)+"/", draft, tn.keyOne).want(t, 200).object(t); got["content"] != "Hello." {
		t.Fatalf("a draft sent back whole: %v", got)
	}
	// Creating takes only what it reads: a read-only field is unknown there.
	if e := h.do("POST", "/api/contacts/", map[string]any{"email": "bo@example.com", "uuid": contact["uuid"]}, tn.keyOne).want(t, 400).object(t); e["uuid"] == nil {
		t.Fatalf("a read-only field on create: %v", e)
	}
	// A route whose body is one file names the other parts.
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	f, _ := w.CreateFormFile("file", "a.txt")
	f.Write([]byte("hello"))
	f, _ = w.CreateFormFile("file2", "b.txt")
	f.Write([]byte("hello"))
	_ = w.Close()
	if e := h.raw("POST", "/api/attachments/", w.FormDataContentType(), &body, tn.keyOne).want(t, 400).object(t); fmt.Sprint(e) != "map[file2:[Unknown field; this route takes file.]]" {
		t.Fatalf("an unknown file: %v", e)
	}
}
