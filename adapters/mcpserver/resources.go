package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/callsign/callsign/client"
)

// The resources: an identity's inbox and each thread, as JSON. An identity
// key's inbox is callsign://inbox; a management key names the identity,
// callsign://inbox/{identity}.
const (
	inboxURI       = "callsign://inbox"
	inboxPrefix    = inboxURI + "/"
	threadPrefix   = "callsign://threads/"
	inboxListLimit = 50
)

// inboxOut is an inbox resource: its latest threads.
type inboxOut struct {
	Threads []client.Thread `json:"threads"`
}

func (s *session) addResources() {
	inbox := fmt.Sprintf("The inbox: its %d most recently active email threads, with subject, participants, unread count and a preview. Subscribe to hear when new mail arrives.", inboxListLimit)
	if s.management() {
		s.server.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: inboxPrefix + "{identity}", Name: "inbox", Title: "Inbox of an identity",
			Description: inbox, MIMEType: "application/json"}, s.readResource)
	} else {
		s.server.AddResource(&mcp.Resource{URI: inboxURI, Name: "inbox", Title: "Inbox",
			Description: inbox, MIMEType: "application/json"}, s.readResource)
	}
	s.server.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: threadPrefix + "{thread_id}", Name: "thread", Title: "Email thread",
		Description: "An email thread: every message, oldest first, as text. Subscribe to hear when a message joins it.", MIMEType: "application/json"}, s.readResource)
}

// resource is what a URI names: the inbox of a scope (the key's own reach,
// or a management key's identity), or one thread.
type resource struct {
	scope    string
	threadID string
}

func (s *session) parse(uri string) (resource, bool) {
	switch {
	case uri == inboxURI && !s.management():
		return resource{}, true
	case strings.HasPrefix(uri, inboxPrefix) && s.management():
		id := strings.TrimPrefix(uri, inboxPrefix)
		return resource{scope: id}, id != "" && !strings.Contains(id, "/")
	case strings.HasPrefix(uri, threadPrefix):
		id := strings.TrimPrefix(uri, threadPrefix)
		return resource{threadID: id}, id != "" && !strings.Contains(id, "/")
	}
	return resource{}, false
}

func (s *session) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	r, ok := s.parse(uri)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	var body any
	if r.threadID != "" {
		t, err := s.api.Thread(ctx, r.threadID)
		if err != nil {
			return nil, resourceError(uri, err)
		}
		if body, err = readThread(ctx, s.api, t); err != nil {
			return nil, resourceError(uri, err)
		}
	} else {
		if err := s.reach(ctx, r); err != nil {
			return nil, resourceError(uri, err)
		}
		l, err := s.client(r.scope).Threads(ctx, client.ThreadFilter{})
		if err != nil {
			return nil, resourceError(uri, err)
		}
		body = inboxOut{Threads: l[:min(len(l), inboxListLimit)]}
	}
	text, err := json.Marshal(body)
	if err != nil {
		return nil, internalError(err)
	}
	// Private: see SetCacheable in New.
	return &mcp.ReadResourceResult{
		Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(text)}}}, nil
}

// reach asks the API whether the key may read r: a thread must be found,
// and a management key's identity must be one of its account's, since the
// lists answer any other identity (another account's, a made-up one) with
// an empty list rather than a 404.
func (s *session) reach(ctx context.Context, r resource) error {
	var err error
	switch {
	case r.threadID != "":
		_, err = s.api.Thread(ctx, r.threadID)
	case r.scope != "":
		_, err = s.api.Identity(ctx, r.scope)
	}
	return err
}

// resourceError is the protocol's "not found" for what the API does not
// find, and otherwise an internal error in the API's words.
func resourceError(uri string, err error) error {
	if client.NotFound(err) {
		return mcp.ResourceNotFoundError(uri)
	}
	return internalError(err)
}

// internalError gives err a JSON-RPC code: the SDK sends a plain error
// with code 0.
func internalError(err error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

func (s *session) client(scope string) *client.Client {
	if scope == "" {
		return s.api
	}
	return s.api.As(scope)
}

// maxSubscriptions bounds one session's subscribed resources.
const maxSubscriptions = 100

// subscriptions are a session's subscribed URIs, each with the scope whose
// watcher tells of it, and one watcher per scope in use.
type subscriptions struct {
	mu       sync.Mutex
	uris     map[string]string
	watchers map[string]context.CancelFunc
}

func (s *session) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	r, ok := s.parse(uri)
	if !ok {
		return mcp.ResourceNotFoundError(uri)
	}
	// Only what the key may read may be watched.
	if err := s.reach(ctx, r); err != nil {
		return resourceError(uri, err)
	}
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	if s.subs.uris == nil {
		s.subs.uris, s.subs.watchers = map[string]string{}, map[string]context.CancelFunc{}
	}
	if _, ok := s.subs.uris[uri]; !ok && len(s.subs.uris) >= maxSubscriptions {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("Too many subscriptions (%d): unsubscribe from one first.", maxSubscriptions)}
	}
	s.subs.uris[uri] = r.scope
	if s.subs.watchers[r.scope] == nil {
		wctx, cancel := context.WithCancel(context.Background())
		changed, stop, err := s.signals.Mail(wctx, s.client(r.scope))
		if err != nil {
			cancel()
			delete(s.subs.uris, uri)
			return internalError(err)
		}
		s.subs.watchers[r.scope] = func() { cancel(); stop() }
		go s.watch(wctx, r.scope, changed)
		go func() {
			// The session's end ends its watchers.
			_ = req.Session.Wait()
			s.unwatch(r.scope)
		}()
	}
	return nil
}

func (s *session) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	s.subs.mu.Lock()
	scope, ok := s.subs.uris[req.Params.URI]
	delete(s.subs.uris, req.Params.URI)
	inUse := false
	for _, sc := range s.subs.uris {
		inUse = inUse || sc == scope
	}
	s.subs.mu.Unlock()
	if ok && !inUse {
		s.unwatch(scope)
	}
	return nil
}

func (s *session) unwatch(scope string) {
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	if stop := s.subs.watchers[scope]; stop != nil {
		stop()
		delete(s.subs.watchers, scope)
	}
}

// watch tells subscribers of a scope's inbox and of the threads of new
// messages when mail arrives, until ctx ends.
func (s *session) watch(ctx context.Context, scope string, changed <-chan struct{}) {
	c := s.client(scope)
	cursor, _ := c.NewMessages(ctx, client.Cursor{}, nil)
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
		touched := map[string]bool{}
		// A failed look keeps the cursor: the next signal looks again.
		cursor, _ = c.NewMessages(ctx, cursor, func(m client.MessageSummary) {
			touched[threadPrefix+m.ThreadID] = true
			touched[s.inboxURI(scope)] = true
		})
		for uri := range touched {
			s.updated(ctx, scope, uri)
		}
	}
}

// updated notifies the subscribers of uri, when this scope's watcher is
// the one that tells of it.
func (s *session) updated(ctx context.Context, scope, uri string) {
	s.subs.mu.Lock()
	sc, ok := s.subs.uris[uri]
	s.subs.mu.Unlock()
	if ok && sc == scope {
		_ = s.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
	}
}

func (s *session) inboxURI(scope string) string {
	if scope == "" {
		return inboxURI
	}
	return inboxPrefix + scope
}
