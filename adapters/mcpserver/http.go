package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/client"
)

// HTTPOptions tune the streamable HTTP endpoint.
type HTTPOptions struct {
	Options
	// BaseURL is the service's public address, as API URLs name it.
	BaseURL string
	// SessionIdle closes a session no request has used for this long
	// (default 30 minutes).
	SessionIdle time.Duration
	// SessionsPerKey bounds one key's open sessions (default 16); a new
	// one closes the key's oldest.
	SessionsPerKey int
}

// HTTP serves the streamable HTTP transport. It sits behind the REST
// API's authentication and rate limit (the API mounts it at /mcp), and
// each session's tools call that API in-process with the session's key.
type HTTP struct {
	api      *http.Client // the REST API, in-process
	events   *app.Events  // the sessions' signals (EventSignals)
	auth     *app.Auth    // the principal of a session's key
	opts     HTTPOptions
	handler  http.Handler
	sdk      *mcp.StreamableHTTPHandler
	versions *mcp.Server

	mu     sync.Mutex
	byKey  map[string][]*mcp.ServerSession // oldest first
	closed bool
}

// serverKey carries a new session's server to the SDK's getServer.
type serverKey struct{}

// NewHTTP is the endpoint over the REST API's handler api.
func NewHTTP(api http.Handler, a *app.App, opts HTTPOptions) *HTTP {
	if opts.SessionIdle <= 0 {
		opts.SessionIdle = 30 * time.Minute
	}
	if opts.SessionsPerKey <= 0 {
		opts.SessionsPerKey = 16
	}
	h := &HTTP{api: &http.Client{Transport: client.InProcess(api)}, events: a.Events, auth: a.Auth, opts: opts,
		versions: mcp.NewServer(&mcp.Implementation{Name: "callsign", Version: opts.Version}, nil), byKey: map[string][]*mcp.ServerSession{}}
	h.sdk = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if s, ok := r.Context().Value(serverKey{}).(*mcp.Server); ok {
			return s
		}
		// A request of an open session: the SDK asks only for the
		// protocol versions, which every server shares.
		return h.versions
	}, &mcp.StreamableHTTPOptions{
		SessionTimeout: opts.SessionIdle,
		// Every request carries an API key, which a page in a browser
		// cannot send for itself: the rebinding check, which refuses a
		// proxy's Host on loopback, protects nothing here.
		DisableLocalhostProtection: true,
	})
	h.handler = keyed(http.HandlerFunc(h.serve))
	return h
}

// ServeHTTP serves one request of the transport.
func (h *HTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.handler.ServeHTTP(w, r) }

// keyed tells the SDK which key a request carries (a hash of it), so that
// a session answers only the key that opened it.
func keyed(next http.Handler) http.Handler {
	return auth.RequireBearerToken(func(_ context.Context, key string, _ *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: keyHash(key)}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
}

// maxMessageBytes bounds a POST's JSON-RPC message: a tool's arguments
// become an API body of at most 1 MiB, which JSON escaping may double.
const maxMessageBytes = 2 << 20

// serve gives a new session a server of its own, bound to the key that
// opened it. Only initialize opens one: the SDK would open a session for
// any other call too, and answer it with code 0 (see errNotInitialized).
func (h *HTTP) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, maxMessageBytes)
	}
	if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
		h.sdk.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "Request body too large or unreadable.", http.StatusRequestEntityTooLarge)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	// A batch or unreadable message goes on to the SDK, which answers it.
	if msg, err := jsonrpc.DecodeMessage(body); err == nil {
		if req, ok := msg.(*jsonrpc.Request); ok && req.Method != "initialize" {
			writeRPCError(w, req.ID, errNotInitialized)
			return
		}
	}
	key := bearer(r)
	srv, err := h.open(r.Context(), key)
	if err != nil {
		writeError(w, err)
		return
	}
	h.sdk.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), serverKey{}, srv)))
	for ss := range srv.Sessions() {
		h.track(keyHash(key), ss)
	}
}

// open builds the server of a new session: a client with the request's
// key, in-process, and the key's event feed.
func (h *HTTP) open(ctx context.Context, key string) (*mcp.Server, error) {
	api := client.New(h.opts.BaseURL, key, h.api)
	who, err := api.Whoami(ctx)
	if err != nil {
		return nil, err
	}
	p, err := h.auth.Authenticate(ctx, key)
	if err != nil {
		return nil, err
	}
	return New(api, who, EventSignals{Events: h.events, Key: p}, h.opts.Options), nil
}

// track keeps a key's sessions, closing the oldest past the bound, and
// forgets each when it ends.
func (h *HTTP) track(user string, ss *mcp.ServerSession) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		ss.Close()
		return
	}
	l := append(h.byKey[user], ss)
	var evicted []*mcp.ServerSession
	if len(l) > h.opts.SessionsPerKey {
		evicted, l = l[:len(l)-h.opts.SessionsPerKey], l[len(l)-h.opts.SessionsPerKey:]
	}
	h.byKey[user] = l
	h.mu.Unlock()
	for _, old := range evicted {
		old.Close()
	}
	go func() {
		_ = ss.Wait()
		h.mu.Lock()
		defer h.mu.Unlock()
		if l := slices.DeleteFunc(h.byKey[user], func(s *mcp.ServerSession) bool { return s == ss }); len(l) > 0 {
			h.byKey[user] = l
		} else {
			delete(h.byKey, user)
		}
	}()
}

// Close ends every session, so that their streams do not hold a shutdown.
func (h *HTTP) Close() {
	h.mu.Lock()
	h.closed = true
	var all []*mcp.ServerSession
	for _, l := range h.byKey {
		all = append(all, l...)
	}
	h.mu.Unlock()
	for _, ss := range all {
		ss.Close()
	}
}

func bearer(r *http.Request) string {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// keyHash names a key without holding it.
func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// writeRPCError answers a message with a JSON-RPC error, as 400.
func writeRPCError(w http.ResponseWriter, id jsonrpc.ID, e *jsonrpc.Error) {
	b, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: e})
	if err != nil {
		http.Error(w, e.Message, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(b)
}

// writeError answers as the API does: its status and its body.
func writeError(w http.ResponseWriter, err error) {
	status, body := http.StatusInternalServerError, map[string]any{"detail": "A server error occurred."}
	var e *client.Error
	if errors.As(err, &e) {
		status, body = e.Status, map[string]any{"detail": e.Detail}
		if len(e.Fields) > 0 {
			body = map[string]any{}
			for f, msgs := range e.Fields {
				body[f] = msgs
			}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
