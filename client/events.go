package client

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Event is one entry of the account's event log (docs/api.md, "Events").
type Event struct {
	ID        string          `json:"id"` // the cursor: strictly increasing per account
	Type      string          `json:"type"`
	CreatedDT string          `json:"created_dt"`
	Identity  *string         `json:"identity"`
	Data      json.RawMessage `json:"data"` // the object the event tells of, as the API shows it
}

// AfterLatest is the cursor "from now": only events committed after the
// request.
const AfterLatest = "latest"

// MaxEventWait is the longest the API holds an empty answer.
const MaxEventWait = 60 * time.Second

// EventFilter says which part of the log to read.
type EventFilter struct {
	// After is the cursor: an event id (only later events), AfterLatest,
	// or "" (from the oldest event kept).
	After string
	// Types are event types, or prefixes such as email.*; none: every type.
	Types []string
	Limit int // 1-200; 0 is the API's 50
	// Wait holds an answer that would be empty until an event arrives, up
	// to MaxEventWait (whole seconds, rounded up).
	Wait time.Duration
}

// Events reads the event log after f.After, oldest first (GET
// /api/events/, a long poll with Wait), and returns the page and the
// cursor to go on from: after its last event or, when none came, where the
// API placed AfterLatest, else f.After.
func (c *Client) Events(ctx context.Context, f EventFilter) (Page[Event], string, error) {
	q := url.Values{}
	if f.After != "" {
		q.Set("after", f.After)
	}
	if len(f.Types) > 0 {
		q.Set("types", strings.Join(f.Types, ","))
	}
	if f.Limit != 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	if f.Wait > 0 {
		q.Set("wait", strconv.Itoa(int(math.Ceil(min(f.Wait, MaxEventWait).Seconds()))))
	}
	var p Page[Event]
	if err := c.call(ctx, "GET", "/api/events/", c.scoped(q), nil, &p); err != nil {
		return p, f.After, err
	}
	if n := len(p.Results); n > 0 {
		return p, p.Results[n-1].ID, nil
	}
	if p.Next != nil {
		if u, err := url.Parse(*p.Next); err == nil && u.Query().Get("after") != "" {
			return p, u.Query().Get("after"), nil
		}
	}
	return p, f.After, nil
}

// Gone reports whether err is the API's 410: an event cursor older than
// the log keeps.
func Gone(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusGone
}
