// Package mcpserver is Callsign's Model Context Protocol server (the
// official Go SDK): the tools, resources and resource notifications an
// agent uses to read, wait for and answer its mail and texts and to reach
// its contacts and vault. It is a driving adapter with no rule of its own:
// every tool is a call of the REST API through package client, over the
// network for `callsign mcp` (stdio) or in-process for the service's
// /mcp endpoint (streamable HTTP), so scoping, limits and the words of
// every error are the API's.
package mcpserver

import (
	"context"
	"net/http"
	"reflect"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/callsign/callsign/client"
)

// Instructions tell a model what the server is for.
const Instructions = `Callsign gives you an identity of your own: an email inbox, a phone number for text messages, contacts, and a vault of passwords and secrets. Read and answer mail with list_emails, read_email and reply_email; every message shows the verification code or sign-in link it carries. After asking a site for a code, get it with wait_for_code (mail and texts together); wait for any other message you expect with wait_for_email or wait_for_sms. Search mail with the query of list_emails, texts with search_texts and contacts with search_contacts; lists are newest first. Passwords and secret values are shown only when you ask with reveal: true. If your key may not send, draft_email keeps a message for a person to approve. With a management key, list_identities shows the identities the other tools act for (their identity argument).`

// Options tune a server.
type Options struct {
	// Version is the build's, shown to clients.
	Version string
}

// session is one key's server: its client, who the key is, and its
// resource subscriptions.
type session struct {
	api     *client.Client
	who     client.Whoami
	signals Signals
	server  *mcp.Server
	subs    subscriptions
}

// schemaCache keeps inferred and resolved schemas across servers: the
// service builds one server per session.
var schemaCache = mcp.NewSchemaCache()

// New is the server for one key: api calls the API with it, who says who
// it is (GET /api/health/whoami/), signals say when to look for news.
func New(api *client.Client, who client.Whoami, signals Signals, opts Options) *mcp.Server {
	s := &session{api: api, who: who, signals: signals}
	s.server = mcp.NewServer(&mcp.Implementation{Name: "callsign", Title: "Callsign", Version: opts.Version}, &mcp.ServerOptions{
		Instructions:       Instructions,
		SchemaCache:        schemaCache,
		SubscribeHandler:   s.subscribe,
		UnsubscribeHandler: s.unsubscribe,
		// No logging capability: nothing the server does is a log line
		// for the client, and so no vault value can become one.
		Capabilities: &mcp.ServerCapabilities{},
		// Every answer is the key's: the lists name what it may do (a
		// management key's tools take identity), reads hold its mail. No
		// shared cache may keep one ("public" is the protocol's default).
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.CacheScope = "private" },
	})
	s.addMailTools()
	s.addLabelTools()
	s.addPhoneTools()
	s.addDirectoryTools()
	s.addDeleteTools()
	s.addResources()
	return s.server
}

func (s *session) management() bool { return s.who.KeyType == "management" }

// Scope is every tool's identity argument. An identity key acts for its
// identity and does not see it; a management key must name one.
type Scope struct {
	Identity string `json:"identity,omitempty"`
}

func (s Scope) identity() string { return s.Identity }

type scoped interface{ identity() string }

const identityDescription = "The uuid of the identity to act for. Required: this server uses a management key, which reaches every identity of the account."

// as is the client for one call: the key's, or with a management key the
// identity the call names.
func (s *session) as(in scoped) (*client.Client, error) {
	if !s.management() {
		return s.api, nil
	}
	if in.identity() == "" {
		return nil, &client.Error{Status: http.StatusBadRequest, Fields: map[string][]string{"identity": {"This field is required with a management key."}}}
	}
	return s.api.As(in.identity()), nil
}

// tool describes one tool to a model; its hints (the annotations) say
// what a call does, so that a client can ask a person before the ones that
// matter.
type tool struct {
	name, title, description string
	// readOnly tools change nothing.
	readOnly bool
	// destructive tools may overwrite or delete what is stored.
	destructive bool
	// idempotent tools change nothing more when called again alike.
	idempotent bool
	// outward tools reach people or systems outside Callsign: they send
	// mail or texts, or direct calls to a URL.
	outward bool
	// identity says whether a management key names an identity.
	identity identityArgument
}

type identityArgument int

const (
	identityRequired identityArgument = iota
	// identityOptional lets a management key leave identity out (whoami).
	identityOptional
	// identityNone: the tool is the account's (list_identities).
	identityNone
)

// addTool registers a tool whose arguments are In and result Out; run gets
// the client the call acts with. An error is a tool error (isError) whose
// text is the API's.
func addTool[In scoped, Out any](s *session, t tool, run func(ctx context.Context, c *client.Client, in In) (Out, error)) {
	def := &mcp.Tool{Name: t.name, Title: t.title, Description: t.description, InputSchema: inputSchema[In](s.management() && t.identity != identityNone),
		Annotations: &mcp.ToolAnnotations{Title: t.title, ReadOnlyHint: t.readOnly, DestructiveHint: &t.destructive,
			IdempotentHint: t.readOnly || t.idempotent, OpenWorldHint: &t.outward}}
	mcp.AddTool(s.server, def, func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		var zero Out
		c, err := s.as(in)
		if err != nil && t.identity == identityRequired {
			return nil, zero, err
		}
		if c == nil {
			c = s.api
		}
		out, err := run(ctx, c, in)
		return nil, out, err
	})
}

// Orderings are the values of a list's ordering argument, the REST API's:
// newest first (the default) or oldest first.
const (
	newestFirst = "-created_dt"
	oldestFirst = "created_dt"
)

type schemaKey struct {
	t          reflect.Type
	management bool
}

var inputSchemas sync.Map // schemaKey → *jsonschema.Schema

// inputSchema is In's schema for a key type: with a management key the
// identity argument is described, with an identity key it is absent.
func inputSchema[In any](management bool) *jsonschema.Schema {
	k := schemaKey{reflect.TypeFor[In](), management}
	if v, ok := inputSchemas.Load(k); ok {
		return v.(*jsonschema.Schema)
	}
	sch, err := jsonschema.For[In](nil)
	if err != nil {
		panic(err) // a tool's argument type the inference cannot read: a bug every test shows
	}
	if management {
		sch.Properties["identity"] = &jsonschema.Schema{Type: "string", Format: "uuid", Description: identityDescription}
	} else {
		delete(sch.Properties, "identity")
	}
	if o := sch.Properties["ordering"]; o != nil {
		o.Enum = []any{newestFirst, oldestFirst}
	}
	v, _ := inputSchemas.LoadOrStore(k, sch)
	return v.(*jsonschema.Schema)
}
