package main

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/callsign/callsign/adapters/sqlstore"
)

// bearerTransport adds an API key to every request.
type bearerTransport struct{ key string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpOverHTTP connects the SDK's own client to the service's /mcp with key.
func (r *running) mcpOverHTTP(key string, opts *mcp.ClientOptions) *mcp.ClientSession {
	r.t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: r.baseURL + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{key}}}, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { cs.Close() })
	return cs
}

// callTool calls a tool and decodes its structured result into out.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if out != nil && !res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: %s: %v", name, b, err)
		}
	}
	return res
}

func toolText(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

func TestMCPSmoke(t *testing.T) {
	r := start(t, sqlstore.SQLite, nil)
	mgmt := r.bootstrap("ops@example.com")
	inbox, key := r.agentWithKey(mgmt, "Ada")
	cs := r.mcpOverHTTP(key, nil)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d tools", len(tools.Tools))
	var who map[string]any
	res := callTool(t, cs, "whoami", nil, &who)
	t.Logf("%v %s", res.IsError, toolText(res))
	sendSMTP(t, r.svc.smtpLn.Addr().String(), "alice@example.org", []string{inbox}, plainMail(inbox, "m1@example.org", "Hello"))
	var list map[string]any
	res = callTool(t, cs, "list_emails", nil, &list)
	t.Logf("%v %s", res.IsError, toolText(res))
}
