package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/callsign/callsign/client"
)

// serve runs a server for a key of keyType over in-memory transports and
// connects a client to it; no tool is called, so no API is needed.
func serve(t *testing.T, keyType string) *mcp.ClientSession {
	t.Helper()
	api := client.New("http://127.0.0.1:1", "key", &http.Client{})
	srv := New(api, client.Whoami{KeyType: keyType}, Feed{}, Options{Version: "test"})
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestToolHints: reads are read-only, the tools that send mail or texts
// or direct calls to a URL reach the outside world, and those that may
// overwrite what is stored are destructive; no other tool claims either.
func TestToolHints(t *testing.T) {
	outward := map[string]bool{"send_email": true, "reply_email": true, "forward_email": true, "send_sms": true, "set_voice_agent": true, "place_call": true}
	destructive := map[string]bool{"set_secret": true, "set_voice_agent": true, "hangup_call": true,
		"delete_email": true, "delete_sms": true, "delete_contact": true, "delete_password": true, "delete_secret": true}
	writes := map[string]bool{"send_email": true, "reply_email": true, "forward_email": true, "draft_email": true, "mark_email_read": true,
		"send_sms": true, "set_voice_agent": true, "add_contact": true, "save_password": true, "set_secret": true,
		"add_label": true, "remove_label": true, "place_call": true}
	for name := range destructive {
		writes[name] = true
	}
	res, err := serve(t, "identity").ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		a := tool.Annotations
		if a == nil || a.OpenWorldHint == nil || a.DestructiveHint == nil {
			t.Errorf("%s: hints left to the protocol's defaults (open world, destructive): %+v", tool.Name, a)
			continue
		}
		if a.ReadOnlyHint == writes[tool.Name] || *a.OpenWorldHint != outward[tool.Name] || *a.DestructiveHint != destructive[tool.Name] {
			t.Errorf("%s: readOnly %v, openWorld %v, destructive %v", tool.Name, a.ReadOnlyHint, *a.OpenWorldHint, *a.DestructiveHint)
		}
		if props := tool.InputSchema.(map[string]any)["properties"].(map[string]any); props["ordering"] != nil {
			if enum := props["ordering"].(map[string]any)["enum"]; len(enum.([]any)) != 2 {
				t.Errorf("%s: ordering %v", tool.Name, enum)
			}
		}
	}
}

// TestListsArePrivate: what a server lists depends on its key, so no
// answer is marked for shared caches ("public" is the default).
func TestListsArePrivate(t *testing.T) {
	ctx := context.Background()
	for _, keyType := range []string{"identity", "management"} {
		cs := serve(t, keyType)
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		resources, err := cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		templates, err := cs.ListResourceTemplates(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for what, scope := range map[string]string{"tools": tools.CacheScope, "resources": resources.CacheScope, "templates": templates.CacheScope} {
			if scope != "private" {
				t.Errorf("%s key, %s/list: cacheScope %q", keyType, what, scope)
			}
		}
	}
}

// TestCallsBeforeInitialize: over stdio, a call before initialize is
// refused with "invalid request" (the SDK alone answers code 0); ping is
// allowed, and after initialize the same call is answered.
func TestCallsBeforeInitialize(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	api := client.New("http://127.0.0.1:1", "key", &http.Client{})
	srv := New(api, client.Whoami{KeyType: "identity"}, Feed{}, Options{Version: "test"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = srv.Run(ctx, Stdio(inR, outW)) }()
	answers := bufio.NewScanner(outR)
	answers.Buffer(nil, 1<<20) // the tool list is one line of some 70 KB
	ask := func(msg string) (out struct {
		ID    int
		Error *struct{ Code int }
	}) {
		t.Helper()
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
		if !answers.Scan() {
			t.Fatal("no answer", answers.Err())
		}
		if err := json.Unmarshal(answers.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if a := ask(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); a.ID != 1 || a.Error == nil || a.Error.Code != -32600 {
		t.Errorf("tools/list before initialize: %+v", a)
	}
	if a := ask(`{"jsonrpc":"2.0","id":2,"method":"ping"}`); a.ID != 2 || a.Error != nil {
		t.Errorf("ping before initialize: %+v", a)
	}
	if a := ask(`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`); a.Error != nil {
		t.Fatalf("initialize: %+v", a)
	}
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if a := ask(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`); a.ID != 4 || a.Error != nil {
		t.Errorf("tools/list after initialize: %+v", a)
	}
}

// TestEveryToolIsDocumented: docs/api.md names each tool either key sees.
func TestEveryToolIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, keyType := range []string{"identity", "management"} {
		res, err := serve(t, keyType).ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range res.Tools {
			if !strings.Contains(string(doc), "`"+tool.Name+"`") {
				t.Errorf("docs/api.md does not name the tool %s", tool.Name)
			}
		}
	}
}
