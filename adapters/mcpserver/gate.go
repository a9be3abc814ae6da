package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK answers a call made before initialize with JSON-RPC error code
// 0, which is no code a client can act on, and its gate runs before any
// middleware. So each transport refuses such calls itself, with "invalid
// request" (-32600): stdio in Stdio's connection, HTTP in HTTP.serve
// (where a call without a session is one made before initialize).

// errNotInitialized is the answer to a call made before initialize.
var errNotInitialized = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
	Message: "Invalid request: send initialize first (the session is not initialized)."}

// beforeInitialize reports whether req is a call only an initialized
// session may make: anything but initialize and ping, unless it carries
// its protocol version in _meta (the sessionless protocol of 2026-07-28,
// which has no initialize).
func beforeInitialize(req *jsonrpc.Request) bool {
	if !req.IsCall() || req.Method == "initialize" || req.Method == "ping" {
		return false
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(req.Params, &p)
	_, sessionless := p.Meta[mcp.MetaKeyProtocolVersion]
	return !sessionless
}

// Stdio is the stdio transport over in and out, refusing calls made
// before initialize with -32600.
func Stdio(in io.ReadCloser, out io.WriteCloser) mcp.Transport {
	return gatedTransport{&mcp.IOTransport{Reader: in, Writer: out}}
}

type gatedTransport struct{ mcp.Transport }

func (t gatedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &gatedConn{Connection: c}, nil
}

// gatedConn answers the calls made before initialize itself; the rest
// reach the server.
type gatedConn struct {
	mcp.Connection
	initialized atomic.Bool
}

func (c *gatedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		req, ok := msg.(*jsonrpc.Request)
		if err != nil || !ok || c.initialized.Load() {
			return msg, err
		}
		if !beforeInitialize(req) {
			if req.Method == "initialize" {
				c.initialized.Store(true)
			}
			return msg, nil
		}
		if err := c.Connection.Write(ctx, &jsonrpc.Response{ID: req.ID, Error: errNotInitialized}); err != nil {
			return nil, err
		}
	}
}
