// Package client is a Go client of Callsign's REST API. The agent CLI and
// the MCP server's tools use it, over the network with a stored key, or,
// inside the service, in-process (InProcess): either way a request is the
// REST API's, with its scoping, its limits and its words for every error.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// maxResponseBytes bounds what one answer may hold: a message's bodies are
// at most the service's 25 MiB message limit, escaped as JSON.
const maxResponseBytes = 64 << 20

// Client calls one server with one key. The zero identity acts as the key
// does; As narrows a management key to one identity.
type Client struct {
	base     string
	key      string
	identity string
	http     *http.Client
}

// New is a client of the server at base (such as https://callsign.example.com)
// presenting key; hc nil means a client with a 2-minute timeout.
func New(base, key string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Timeout: 2 * time.Minute}
	}
	return &Client{base: strings.TrimSuffix(base, "/"), key: key, http: hc}
}

// Server is the address the client calls.
func (c *Client) Server() string { return c.base }

// As is the same client acting for one identity (its uuid): lists and
// creations are that identity's (?identity=, as the API scopes a management
// key), and an object of another identity is not found, as it is for an
// identity key. "" acts as the key does.
func (c *Client) As(identity string) *Client {
	cc := *c
	cc.identity = identity
	return &cc
}

// ActsFor is the identity As selected, or "".
func (c *Client) ActsFor() string { return c.identity }

// Error is the API's refusal: its status and its words.
type Error struct {
	Status int
	// Detail is {"detail": …}; Fields are a validation error's messages.
	Detail string
	Fields map[string][]string
	// RetryAfter is a 429's or 503's Retry-After.
	RetryAfter time.Duration
}

// Error is the API's text: the detail, or one "field: message" line per
// field, fields in name order.
func (e *Error) Error() string {
	if len(e.Fields) == 0 {
		if e.Detail != "" {
			return e.Detail
		}
		return fmt.Sprintf("the server answered %d %s", e.Status, http.StatusText(e.Status))
	}
	names := make([]string, 0, len(e.Fields))
	for f := range e.Fields {
		names = append(names, f)
	}
	sort.Strings(names)
	var lines []string
	for _, f := range names {
		for _, msg := range e.Fields[f] {
			lines = append(lines, f+": "+msg)
		}
	}
	return strings.Join(lines, "\n")
}

// NotFound reports whether err is the API's 404.
func NotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// notFound is the API's answer for an object out of reach, such as
// "Message not found.".
func notFound(what string) error {
	return &Error{Status: http.StatusNotFound, Detail: what + " not found."}
}

// scoped is query with ?identity= when the client acts for one identity.
func (c *Client) scoped(query url.Values) url.Values {
	if c.identity == "" {
		return query
	}
	if query == nil {
		query = url.Values{}
	}
	query.Set("identity", c.identity)
	return query
}

// call sends one request: body (when not nil) as JSON, the answer decoded
// into out (when not nil).
func (c *Client) call(ctx context.Context, method, path string, query url.Values, body, out any) error {
	var rd io.Reader
	contentType := ""
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd, contentType = bytes.NewReader(b), "application/json"
	}
	res, err := c.send(ctx, method, path, query, contentType, rd)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if out == nil || res.StatusCode == http.StatusNoContent {
		return nil
	}
	return decodeBody(res, out)
}

// send sends one request and returns a successful response, whose body the
// caller closes; a refusal is an *Error.
func (c *Client) send(ctx context.Context, method, path string, query url.Values, contentType string, body io.Reader) (*http.Response, error) {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.key)
	res, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode < 400 {
		return res, nil
	}
	defer res.Body.Close()
	return nil, readError(res)
}

// decodeBody reads a JSON answer into out, up to maxResponseBytes.
func decodeBody(res *http.Response, out any) error {
	what := res.Request.Method + " " + res.Request.URL.Path
	data, err := io.ReadAll(io.LimitReader(res.Body, maxResponseBytes+1))
	if err != nil {
		return fmt.Errorf("reading the answer to %s: %w", what, err)
	}
	if len(data) > maxResponseBytes {
		return fmt.Errorf("the answer to %s is larger than %d bytes", what, maxResponseBytes)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("the answer to %s is not what the API sends: %w", what, err)
	}
	return nil
}

// readError reads a refusal: {"detail"} or {"field": ["message"]}.
func readError(res *http.Response) error {
	e := &Error{Status: res.StatusCode}
	if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	data, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	var body map[string]json.RawMessage
	if json.Unmarshal(data, &body) != nil {
		return e
	}
	if d, ok := body["detail"]; ok && len(body) == 1 {
		_ = json.Unmarshal(d, &e.Detail)
		return e
	}
	e.Fields = map[string][]string{}
	for field, raw := range body {
		var msgs []string
		if json.Unmarshal(raw, &msgs) != nil {
			var one string
			_ = json.Unmarshal(raw, &one)
			msgs = []string{one}
		}
		e.Fields[field] = msgs
	}
	return e
}
