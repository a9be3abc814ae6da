package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
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

// mcpOverStdio runs `callsign mcp` (this test binary as the command) for
// key and connects the SDK's client to it; stderr collects what it says.
func (r *running) mcpOverStdio(key string, opts *mcp.ClientOptions, stderr io.Writer, args ...string) *mcp.ClientSession {
	r.t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"mcp"}, args...)...)
	cmd.Env = append(os.Environ(), "CALLSIGN_TEST_RUN_MAIN=1", "CALLSIGN_SERVER="+r.baseURL, "CALLSIGN_API_KEY="+key)
	cmd.Stderr = stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { cs.Close() })
	return cs
}

// transports runs f over the streamable HTTP endpoint and over stdio.
func transports(t *testing.T, r *running, key string, opts *mcp.ClientOptions, f func(t *testing.T, cs *mcp.ClientSession)) {
	t.Run("http", func(t *testing.T) { f(t, r.mcpOverHTTP(key, opts)) })
	t.Run("stdio", func(t *testing.T) { f(t, r.mcpOverStdio(key, opts, io.Discard)) })
}

// TestMCPManagementKeyNamesTheIdentity: with a management key every tool
// but list_identities takes identity (whoami alone may leave it out), a
// call without it is a tool error naming it, and a named identity reaches
// only its own objects.
func TestMCPManagementKeyNamesTheIdentity(t *testing.T) {
	t.Parallel()
	r := start(t, sqlstore.SQLite, nil)
	mgmt := r.bootstrap("ops@example.com")
	ada, bob := r.newAgent(mgmt, "Ada"), r.newAgent(mgmt, "Bob")
	sendSMTP(t, r.svc.SMTPAddr(), "alice@example.org", []string{bob.inbox}, plainMail(bob.inbox, "b1@example.org", "For Bob"))
	var bobMail apiPage
	r.call("GET", "/api/email-messages/", bob.key, nil, &bobMail)
	var bobSecret struct{ UUID string }
	r.call("POST", "/api/secrets/", bob.key, map[string]any{"key": "token", "value": "bob-value"}, &bobSecret)

	transports(t, r, mgmt, nil, func(t *testing.T, cs *mcp.ClientSession) {
		tools, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range tools.Tools {
			props := tool.InputSchema.(map[string]any)["properties"].(map[string]any)
			if _, ok := props["identity"]; !ok && tool.Name != "list_identities" {
				t.Errorf("%s: a management key's tool takes no identity", tool.Name)
			}
		}
		if res := callTool(t, cs, "list_emails", nil, nil); !res.IsError || toolText(res) != "identity: This field is required with a management key." {
			t.Errorf("list_emails without identity: %v %q", res.IsError, toolText(res))
		}
		var who struct {
			KeyType  string `json:"key_type"`
			Identity *struct{ UUID string }
		}
		if callTool(t, cs, "whoami", nil, &who); who.KeyType != "management" || who.Identity != nil {
			t.Errorf("whoami without identity: %+v", who)
		}
		var list struct{ Count int }
		if callTool(t, cs, "list_emails", map[string]any{"identity": bob.uuid}, &list); list.Count != 1 {
			t.Errorf("Bob's list: %d", list.Count)
		}
		// Named as Ada, Bob's objects are not found.
		for name, args := range map[string]map[string]any{
			"read_email":  {"identity": ada.uuid, "message_id": bobMail.Results[0].ID},
			"read_thread": {"identity": ada.uuid, "thread_id": bobMail.Results[0].ThreadID},
			"get_secret":  {"identity": ada.uuid, "uuid": bobSecret.UUID, "reveal": true},
			"reply_email": {"identity": ada.uuid, "message_id": bobMail.Results[0].ID, "body": "hi"},
			// The API would let a management key delete them: the tools
			// check they are the named identity's first.
			"delete_email":  {"identity": ada.uuid, "message_id": bobMail.Results[0].ID},
			"delete_secret": {"identity": ada.uuid, "uuid": bobSecret.UUID},
		} {
			if res := callTool(t, cs, name, args, nil); !res.IsError || !strings.Contains(toolText(res), "not found") {
				t.Errorf("%s as Ada: %v %q", name, res.IsError, toolText(res))
			}
		}
		var secret struct{ Value *string }
		if callTool(t, cs, "get_secret", map[string]any{"identity": bob.uuid, "key": "token", "reveal": true}, &secret); secret.Value == nil || *secret.Value != "bob-value" {
			t.Errorf("Bob's secret as Bob: %v", secret.Value)
		}
	})
	// `callsign mcp --identity` binds a management key to one identity.
	cs := r.mcpOverStdio(mgmt, nil, io.Discard, "--identity", bob.uuid)
	var list struct{ Count int }
	if res := callTool(t, cs, "list_emails", nil, &list); res.IsError || list.Count != 1 {
		t.Errorf("bound to Bob: %v %q %d", res.IsError, toolText(res), list.Count)
	}
}

// TestMCPSearchesTextsAndContacts: list_sms and list_contacts take the
// API's search (q) with its language, scoping and 400s, on both
// transports: hits most relevant first with highlights, another
// identity's texts and contacts out of reach.
func TestMCPSearchesTextsAndContacts(t *testing.T) {
	t.Parallel()
	r := start(t, sqlstore.SQLite, nil)
	mgmt := r.bootstrap("ops@example.com")
	ada, bob := r.newAgent(mgmt, "Ada"), r.newAgent(mgmt, "Bob")
	for _, body := range []string{"Lunch at noon?", "Your Acme verification code is 482913", "Codes are sent by SMS"} {
		r.call("POST", "/api/messages/send/", bob.key, map[string]any{"to": "+14155550100", "body": body}, nil)
	}
	r.call("POST", "/api/contacts/", bob.key, map[string]any{"display_name": "Ann Smith", "nickname": "annie", "email": "ann.smith@acme.example"}, nil)
	r.call("POST", "/api/contacts/", bob.key, map[string]any{"display_name": "Annabel Lee", "email": "annabel@example.org"}, nil)
	type texts struct {
		Count    int
		Messages []struct {
			Body       string
			Highlights []string
		}
	}
	type people struct {
		Count    int
		Contacts []struct {
			DisplayName string `json:"display_name"`
			Highlights  []string
		}
	}
	transports(t, r, mgmt, nil, func(t *testing.T, cs *mcp.ClientSession) {
		var got texts
		if res := callTool(t, cs, "list_sms", map[string]any{"identity": bob.uuid, "query": `code -"by sms"`}, &got); res.IsError ||
			got.Count != 1 || !reflect.DeepEqual(got.Messages[0].Highlights, []string{"Your Acme verification <mark>code</mark> is 482913"}) {
			t.Errorf("list_sms as Bob: %q %+v", toolText(res), got)
		}
		if callTool(t, cs, "list_sms", map[string]any{"identity": bob.uuid, "limit": 2}, &got); got.Count != 3 || len(got.Messages) != 2 ||
			got.Messages[0].Body != "Codes are sent by SMS" {
			t.Errorf("list_sms without a query, newest first, paged: %+v", got)
		}
		if callTool(t, cs, "list_sms", map[string]any{"identity": ada.uuid, "query": "code"}, &got); got.Count != 0 || len(got.Messages) != 0 {
			t.Errorf("list_sms as Ada sees Bob's texts: %+v", got)
		}
		if res := callTool(t, cs, "list_sms", map[string]any{"identity": bob.uuid, "query": "subject:code"}, nil); !res.IsError ||
			toolText(res) != "q: subject: does not apply to texts." {
			t.Errorf("subject: on texts: %v %q", res.IsError, toolText(res))
		}
		var found people
		if res := callTool(t, cs, "list_contacts", map[string]any{"identity": bob.uuid, "query": "ann"}, &found); res.IsError || found.Count != 1 ||
			!reflect.DeepEqual(found.Contacts[0].Highlights, []string{"<mark>Ann</mark> Smith annie", "<mark>ann</mark>.smith@acme.example"}) {
			t.Errorf("list_contacts as Bob: %q %+v", toolText(res), found)
		}
		if callTool(t, cs, "list_contacts", map[string]any{"identity": ada.uuid, "query": "ann"}, &found); found.Count != 0 {
			t.Errorf("list_contacts as Ada sees Bob's contacts: %+v", found)
		}
		if res := callTool(t, cs, "list_contacts", map[string]any{"identity": bob.uuid, "query": "from:acme"}, nil); !res.IsError ||
			toolText(res) != "q: from: does not apply to contacts." {
			t.Errorf("from: on contacts: %v %q", res.IsError, toolText(res))
		}
	})
}

// TestMCPErrorsAreTheAPIs: a refusal is a tool error whose text is the
// REST API's, one "field: message" line per field or the detail.
func TestMCPErrorsAreTheAPIs(t *testing.T) {
	t.Parallel()
	r := start(t, sqlstore.SQLite, nil)
	mgmt := r.bootstrap("ops@example.com")
	ada := r.newAgent(mgmt, "Ada")
	var rest map[string][]string
	r.call("POST", "/api/email-messages/compose/", ada.key, map[string]any{"to_email": "not an address", "content": "x"}, &rest)
	want := "to_email: " + rest["to_email"][0]
	var notFound struct{ Detail string }
	r.call("GET", "/api/email-messages/999999/", ada.key, nil, &notFound)
	transports(t, r, ada.key, nil, func(t *testing.T, cs *mcp.ClientSession) {
		if res := callTool(t, cs, "send_email", map[string]any{"to": []string{"not an address"}, "body": "x"}, nil); !res.IsError || toolText(res) != want {
			t.Errorf("send_email: %v %q, want %q", res.IsError, toolText(res), want)
		}
		if res := callTool(t, cs, "read_email", map[string]any{"message_id": 999999}, nil); !res.IsError || toolText(res) != notFound.Detail {
			t.Errorf("read_email: %v %q, want %q", res.IsError, toolText(res), notFound.Detail)
		}
		var waited struct {
			Message *json.RawMessage `json:"message"`
		}
		if res := callTool(t, cs, "wait_for_email", map[string]any{"timeout_seconds": 1}, &waited); res.IsError || waited.Message != nil {
			t.Errorf("wait_for_email with nothing arriving: %v %q", res.IsError, toolText(res))
		}
	})
}

// TestMCPNotifiesSubscribers: a subscribed inbox and thread hear of new
// mail (notifications/resources/updated), on both transports; vault values
// used meanwhile appear in no log.
func TestMCPNotifiesSubscribers(t *testing.T) {
	t.Parallel()
	r := start(t, sqlstore.SQLite, map[string]string{"CALLSIGN_LOG_LEVEL": "debug"})
	mgmt := r.bootstrap("ops@example.com")
	ada := r.newAgent(mgmt, "Ada")
	smtpAddr := r.svc.SMTPAddr()
	sendSMTP(t, smtpAddr, "alice@example.org", []string{ada.inbox}, plainMail(ada.inbox, "first@example.org", "Plans"))
	var page apiPage
	r.call("GET", "/api/email-messages/", ada.key, nil, &page)
	thread := "callsign://threads/" + page.Results[0].ThreadID
	for _, transport := range []string{"http", "stdio"} {
		t.Run(transport, func(t *testing.T) {
			updated := make(chan string, 16)
			opts := &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
				updated <- req.Params.URI
			}}
			var stdioLog bytes.Buffer
			var cs *mcp.ClientSession
			if transport == "http" {
				cs = r.mcpOverHTTP(ada.key, opts)
			} else {
				cs = r.mcpOverStdio(ada.key, opts, &stdioLog)
			}
			ctx := context.Background()
			for _, uri := range []string{"callsign://inbox", thread} {
				if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
					t.Fatal(err)
				}
			}
			// Over stdio the SDK speaks the 2026 protocol, whose
			// subscriptions are a background stream that reports no refusal.
			if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "callsign://threads/nosuchthread"}); err == nil && transport == "http" {
				t.Error("subscribed to a thread that does not exist")
			}
			secret := "vault-value-" + transport
			callTool(t, cs, "set_secret", map[string]any{"key": "k-" + transport, "value": secret}, nil)
			callTool(t, cs, "get_secret", map[string]any{"key": "k-" + transport, "reveal": true}, nil)
			// A reply joins the thread: both resources change. Over stdio
			// Subscribe returns before the server has taken the subscription
			// (the SDK's client does not expose the listen stream's
			// acknowledgement) and the event feed tells at once, so a reply
			// is sent again every 2 s until both resources were heard.
			heard := map[string]bool{}
			timeout := time.After(30 * time.Second)
			for n := 0; !heard["callsign://inbox"] || !heard[thread]; n++ {
				reply := plainMail(ada.inbox, fmt.Sprintf("reply-%s-%d@example.org", transport, n), "Re: Plans")
				reply = strings.Replace(reply, "Subject:", "In-Reply-To: <first@example.org>\r\nSubject:", 1)
				sendSMTP(t, smtpAddr, "alice@example.org", []string{ada.inbox}, reply)
				again := time.After(2 * time.Second)
			listen:
				for !heard["callsign://inbox"] || !heard[thread] {
					select {
					case uri := <-updated:
						heard[uri] = true
					case <-again:
						break listen
					case <-timeout:
						t.Fatalf("heard %v", heard)
					}
				}
			}
			cs.Close() // the command has exited: its standard error is whole
			if strings.Contains(r.logs(), secret) || strings.Contains(stdioLog.String(), secret) {
				t.Error("a vault value reached a log")
			}
		})
	}
}

// TestMCPEndpoint: /mcp sits behind the API's authentication and shares
// each key's rate limit; a session answers only the key that opened it;
// with CALLSIGN_MCP=off the path is 404.
func TestMCPEndpoint(t *testing.T) {
	t.Parallel()
	r := start(t, sqlstore.SQLite, map[string]string{"CALLSIGN_RATE_LIMIT": "1:40"})
	mgmt := r.bootstrap("ops@example.com")
	ada, bob := r.newAgent(mgmt, "Ada"), r.newAgent(mgmt, "Bob")
	initialize := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize",
		"params": map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}}
	post := func(key, session string, body any) *http.Response {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", r.baseURL+"/mcp", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		res, err := r.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ = io.ReadAll(res.Body)
		res.Body.Close()
		res.Body = io.NopCloser(bytes.NewReader(b))
		return res
	}
	initializeAs := func(key string) string {
		res := post(key, "", initialize)
		if res.StatusCode != 200 || res.Header.Get("Mcp-Session-Id") == "" {
			t.Fatalf("initialize: %d", res.StatusCode)
		}
		return res.Header.Get("Mcp-Session-Id")
	}
	if res := post("", "", initialize); res.StatusCode != 401 {
		t.Errorf("without a key: %d", res.StatusCode)
	}
	session := initializeAs(ada.key)
	list := map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
	// A call before initialize (without a session) is JSON-RPC's invalid
	// request, not a new session.
	var refusal struct {
		ID    int
		Error struct{ Code int }
	}
	if res := post(ada.key, "", list); res.StatusCode != 400 || json.NewDecoder(res.Body).Decode(&refusal) != nil || refusal.ID != 2 || refusal.Error.Code != -32600 {
		t.Errorf("tools/list before initialize: %d %+v", res.StatusCode, refusal)
	}
	if res := post(bob.key, session, list); res.StatusCode != 403 {
		t.Errorf("Ada's session with Bob's key: %d", res.StatusCode)
	}
	// Ada's bucket (burst 40, one more a second) is spent by REST calls;
	// /mcp then waits too. REST calls go until the first 429, and /mcp is
	// asked at once; on a loaded machine a second can pass between the two
	// and earn a token, so the pair is tried again a few times.
	refused := false
	for try := 0; try < 5 && !refused; try++ {
		for i := 0; r.call("GET", "/api/health/whoami/", ada.key, nil, nil) != 429; i++ {
			if i == 400 {
				t.Fatal("400 calls and no 429 from a burst of 40")
			}
		}
		res := post(ada.key, session, list)
		refused = res.StatusCode == 429 && res.Header.Get("Retry-After") != ""
	}
	if !refused {
		t.Error("/mcp was never refused over the key's rate limit")
	}

	// A key keeps 16 sessions: the 17th closes the oldest.
	oldest := initializeAs(bob.key)
	for range 16 {
		initializeAs(bob.key)
	}
	if res := post(bob.key, oldest, list); res.StatusCode != 404 {
		t.Errorf("the oldest of 17 sessions: %d", res.StatusCode)
	}

	off := start(t, sqlstore.SQLite, map[string]string{"CALLSIGN_MCP": "off"})
	offKey := off.bootstrap("ops@example.com")
	if s, _ := off.callRaw("POST", "/mcp", offKey, initialize); s != 404 {
		t.Errorf("CALLSIGN_MCP=off: %d", s)
	}
}

// TestShutdownEndsMCPSessions: a session's open event stream does not hold
// a stopping service past its grace period (the harness fails the test if
// shutdown gives up).
func TestShutdownEndsMCPSessions(t *testing.T) {
	t.Parallel()
	r := start(t, sqlstore.SQLite, map[string]string{"CALLSIGN_SHUTDOWN_GRACE": "5s"})
	ada := r.newAgent(r.bootstrap("ops@example.com"), "Ada")
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	// Not closed by the test: the service's shutdown must end it.
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: r.baseURL + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{ada.key}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: "callsign://inbox"}); err != nil {
		t.Fatal(err)
	}
}

// TestMCPResourcesOutOfReach: reading or subscribing to a resource the key
// cannot read is "resource not found", for a management key (another
// account's identity, a made-up one, another account's thread) as for an
// identity key (another identity's thread); what it can read comes with
// cacheScope private, since it holds mail.
func TestMCPResourcesOutOfReach(t *testing.T) {
	t.Parallel()
	r := start(t, sqlstore.SQLite, nil)
	mgmt, otherMgmt := r.bootstrap("ops@example.com"), r.bootstrap("other@example.com")
	ada, eve := r.newAgent(mgmt, "Ada"), r.newAgent(otherMgmt, "Eve")
	bob := r.newAgent(mgmt, "Bob")
	smtpAddr := r.svc.SMTPAddr()
	threadOf := func(a agent, id string) string {
		sendSMTP(t, smtpAddr, "alice@example.org", []string{a.inbox}, plainMail(a.inbox, id, "Private"))
		var page apiPage
		r.call("GET", "/api/email-messages/", a.key, nil, &page)
		return "callsign://threads/" + page.Results[0].ThreadID
	}
	adaThread, eveThread, bobThread := threadOf(ada, "a1@example.org"), threadOf(eve, "e1@example.org"), threadOf(bob, "b1@example.org")
	ctx := context.Background()
	refused := func(t *testing.T, cs *mcp.ClientSession, uris ...string) {
		t.Helper()
		for _, uri := range uris {
			if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err == nil || !strings.Contains(err.Error(), "Resource not found") {
				t.Errorf("subscribe %s: %v, want resource not found", uri, err)
			}
			if res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil || !strings.Contains(err.Error(), "Resource not found") {
				t.Errorf("read %s: %v, want resource not found", uri, res)
			}
		}
	}
	readable := func(t *testing.T, cs *mcp.ClientSession, uris ...string) {
		t.Helper()
		for _, uri := range uris {
			if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				t.Errorf("subscribe %s: %v", uri, err)
			}
			res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
			if err != nil || res.CacheScope != "private" || !strings.Contains(res.Contents[0].Text, "Private") {
				t.Errorf("read %s: %+v, %v; want it, private", uri, res, err)
			}
		}
	}
	t.Run("management key", func(t *testing.T) {
		cs := r.mcpOverHTTP(mgmt, nil)
		refused(t, cs, "callsign://inbox/"+eve.uuid, "callsign://inbox/00000000-0000-4000-8000-000000000000",
			"callsign://inbox/made-up", eveThread)
		readable(t, cs, "callsign://inbox/"+ada.uuid, adaThread)
	})
	t.Run("identity key", func(t *testing.T) {
		cs := r.mcpOverHTTP(ada.key, nil)
		refused(t, cs, "callsign://inbox/"+ada.uuid, bobThread, eveThread)
		readable(t, cs, "callsign://inbox", adaThread)
	})
}

// TestMCPReadEmailExtractsTheReply: read_email gives a reply's new text
// without its quoted history, and the whole text with full: true.
func TestMCPReadEmailExtractsTheReply(t *testing.T) {
	t.Parallel()
	r := start(t, sqlstore.SQLite, nil)
	mgmt := r.bootstrap("ops@example.com")
	ada := r.newAgent(mgmt, "Ada")
	reply := strings.Replace(plainMail(ada.inbox, "reply@example.org", "Re: Plans"), "Hello about Re: Plans.\r\n",
		"Thursday works.\r\n\r\nOn Mon, Feb 3, 2025 at 10:15 AM Ada <"+ada.inbox+"> wrote:\r\n> Does Thursday work?\r\n", 1)
	sendSMTP(t, r.svc.SMTPAddr(), "alice@example.org", []string{ada.inbox}, reply)
	var page apiPage
	r.call("GET", "/api/email-messages/", ada.key, nil, &page)
	cs := r.mcpOverHTTP(ada.key, nil)
	var read struct {
		ExtractedText string  `json:"extracted_text"`
		Text          *string `json:"text"`
	}
	if callTool(t, cs, "read_email", map[string]any{"message_id": page.Results[0].ID}, &read); read.ExtractedText != "Thursday works." || read.Text != nil {
		t.Errorf("read_email: %+v", read)
	}
	if callTool(t, cs, "read_email", map[string]any{"message_id": page.Results[0].ID, "full": true}, &read); read.Text == nil ||
		!strings.Contains(*read.Text, "> Does Thursday work?") {
		t.Errorf("read_email with full: %+v", read)
	}
}

// TestMCPCodesIdentitiesAndOrder: what an agent gets through MCP as
// through REST, on both transports, with a management key: the account's
// identities (list_identities, which takes no identity), each message's
// verification, wait_for_code over mail and texts together (the REST
// wait underneath), search_texts and search_contacts, and lists newest
// first unless ordering says otherwise.
func TestMCPCodesIdentitiesAndOrder(t *testing.T) {
	t.Parallel()
	r := start(t, sqlstore.SQLite, nil)
	mgmt := r.bootstrap("ops@example.com")
	ada, bob := r.newAgent(mgmt, "Ada"), r.newAgent(mgmt, "Bob")
	sendSMTP(t, r.svc.SMTPAddr(), "alice@example.org", []string{ada.inbox}, plainMail(ada.inbox, "n1@example.org", "Lunch on Friday"))
	sendSMTP(t, r.svc.SMTPAddr(), "alice@example.org", []string{ada.inbox}, plainMail(ada.inbox, "c1@example.org", "Your Acme verification code is 482913"))
	if s, raw := r.callRaw("POST", "/api/messages/send/", bob.key, map[string]any{"to": ada.phone, "body": "Your Zeta code is 771204"}); s != 201 {
		t.Fatalf("texting Ada: %d %s", s, raw)
	}
	for _, name := range []string{"Grace Hopper", "Alan Turing"} {
		r.call("POST", "/api/contacts/?identity="+ada.uuid, mgmt, map[string]any{"display_name": name, "email": strings.ToLower(strings.Fields(name)[1]) + "@example.org"}, nil)
	}
	type code struct {
		Source  string
		Message int64
		From    string
		Code    *string
		Kind    string
	}
	type summary struct {
		Subject      string
		Verification *struct{ Code *string }
	}
	transports(t, r, mgmt, nil, func(t *testing.T, cs *mcp.ClientSession) {
		tools, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range tools.Tools {
			if _, ok := tool.InputSchema.(map[string]any)["properties"].(map[string]any)["identity"]; ok == (tool.Name == "list_identities") {
				t.Errorf("%s: identity argument %v", tool.Name, ok)
			}
		}
		var idents struct {
			Count      int
			Identities []struct{ UUID, Inbox string }
		}
		if res := callTool(t, cs, "list_identities", nil, &idents); res.IsError || idents.Count < 2 || !slices.ContainsFunc(idents.Identities, func(i struct{ UUID, Inbox string }) bool {
			return i.UUID == ada.uuid && i.Inbox == ada.inbox
		}) {
			t.Errorf("list_identities: %q %+v", toolText(res), idents)
		}

		as := func(args map[string]any) map[string]any { args["identity"] = ada.uuid; return args }
		var got struct{ Verification *code }
		for _, tc := range []struct {
			args       map[string]any
			source     string
			code, from string
		}{
			{map[string]any{"source": "email"}, "email", "482913", "alice@example.org"},
			{map[string]any{"source": "sms"}, "sms", "771204", bob.phone},
			{map[string]any{"from": "example.org"}, "email", "482913", "alice@example.org"},
			{map[string]any{}, "sms", "771204", bob.phone}, // the newest of both
		} {
			if res := callTool(t, cs, "wait_for_code", as(tc.args), &got); res.IsError || got.Verification == nil ||
				got.Verification.Source != tc.source || *got.Verification.Code != tc.code || got.Verification.From != tc.from || got.Verification.Kind != "code" {
				t.Errorf("wait_for_code %v: %q %+v", tc.args, toolText(res), got.Verification)
			}
		}
		got.Verification = nil
		if res := callTool(t, cs, "wait_for_code", as(map[string]any{"after": time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "timeout_seconds": 1}), &got); res.IsError || got.Verification != nil {
			t.Errorf("wait_for_code with nothing arriving: %q %+v", toolText(res), got.Verification)
		}
		if res := callTool(t, cs, "wait_for_code", as(map[string]any{"source": "fax"}), nil); !res.IsError || !strings.HasPrefix(toolText(res), "source: ") {
			t.Errorf("wait_for_code source fax: %v %q", res.IsError, toolText(res))
		}

		var mail struct{ Emails []summary }
		callTool(t, cs, "list_emails", as(map[string]any{}), &mail)
		if len(mail.Emails) != 2 || mail.Emails[0].Verification == nil || *mail.Emails[0].Verification.Code != "482913" || mail.Emails[1].Verification != nil {
			t.Errorf("list_emails, newest first with verification: %+v", mail.Emails)
		}
		if callTool(t, cs, "list_emails", as(map[string]any{"ordering": "created_dt"}), &mail); len(mail.Emails) != 2 || mail.Emails[0].Subject != "Lunch on Friday" {
			t.Errorf("list_emails oldest first: %+v", mail.Emails)
		}
		var texts struct {
			Count    int
			Messages []struct {
				Body         string
				Verification *struct{ Code string }
			}
		}
		if res := callTool(t, cs, "search_texts", as(map[string]any{"query": "zeta code"}), &texts); res.IsError || texts.Count != 1 ||
			texts.Messages[0].Verification == nil || texts.Messages[0].Verification.Code != "771204" {
			t.Errorf("search_texts: %q %+v", toolText(res), texts)
		}
		for name, want := range map[string]string{"search_texts": "q: Enter words or filters to search for.", "search_contacts": "q: Enter words or filters to search for."} {
			if res := callTool(t, cs, name, as(map[string]any{"query": ""}), nil); !res.IsError || toolText(res) != want {
				t.Errorf("%s with an empty query: %v %q", name, res.IsError, toolText(res))
			}
		}
		if res := callTool(t, cs, "list_sms", as(map[string]any{"query": "code", "ordering": "created_dt"}), nil); !res.IsError || !strings.HasPrefix(toolText(res), "ordering: ") {
			t.Errorf("list_sms: a search with ordering: %v %q", res.IsError, toolText(res))
		}
		var people struct {
			Count    int
			Contacts []struct {
				DisplayName string `json:"display_name"`
			}
		}
		if res := callTool(t, cs, "search_contacts", as(map[string]any{"query": "hopper"}), &people); res.IsError || people.Count != 1 || people.Contacts[0].DisplayName != "Grace Hopper" {
			t.Errorf("search_contacts: %q %+v", toolText(res), people)
		}
		names := func(args map[string]any) []string {
			callTool(t, cs, "list_contacts", as(args), &people)
			var l []string
			for _, c := range people.Contacts {
				if c.DisplayName != "" {
					l = append(l, c.DisplayName)
				}
			}
			return l
		}
		if got := names(map[string]any{"source": "manual"}); !slices.Equal(got, []string{"Alan Turing", "Grace Hopper"}) {
			t.Errorf("list_contacts, newest first: %v", got)
		}
		if got := names(map[string]any{"source": "manual", "ordering": "created_dt"}); !slices.Equal(got, []string{"Grace Hopper", "Alan Turing"}) {
			t.Errorf("list_contacts oldest first: %v", got)
		}
	})
}
