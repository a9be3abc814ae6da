package console

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// The live indicator: the page's script listens to /console/stream/ (the
// browser's EventSource) and says "new messages" when it hears "changed";
// without EventSource it asks /console/pulse/ every 10 seconds. Both
// compare a stamp of the latest thread and conversation of the account, or
// of one identity: two one-row reads.

// Stream timing: a heartbeat keeps proxies from closing a quiet stream; a
// stream ends after streamLifetime (the browser reconnects at once), and
// reads the stamp at most once per streamSettle, however busy the log.
const (
	streamHeartbeat    = 15 * time.Second
	streamWriteTimeout = 10 * time.Second
	streamLifetime     = 10 * time.Minute
	streamSettle       = time.Second
)

// requestedIdentity reads ?identity=, a uuid or nothing.
func requestedIdentity(v *visit) (string, error) {
	id := v.r.URL.Query().Get("identity")
	if id == "" {
		return "", nil
	}
	u, err := uuid.Parse(id)
	if err != nil {
		return "", errNoPage
	}
	return u.String(), nil
}

// stamp changes whenever mail or a text arrives or is sent.
func (c *console) stamp(ctx context.Context, p core.Principal, identity string) (string, error) {
	one := ports.Page{Limit: 1}
	threads, _, err := c.app.Reading.Threads(ctx, p, identity, ports.ThreadFilter{Page: one})
	if err != nil {
		return "", err
	}
	convs, _, err := c.app.SMS.Conversations(ctx, p, identity, nil, "", one)
	if err != nil {
		return "", err
	}
	stamp := ""
	for _, t := range threads {
		stamp += t.ID + "@" + strconv.FormatInt(t.LastMessageAt.UnixMicro(), 10) + "/" + strconv.Itoa(t.MessageCount)
	}
	stamp += ";"
	for _, cv := range convs {
		stamp += cv.ID + "@" + strconv.FormatInt(cv.LastMessageAt.UnixMicro(), 10) + "/" + strconv.Itoa(cv.MessageCount)
	}
	return stamp, nil
}

// pulse answers the script's poll with the stamp.
func (c *console) pulse(v *visit) error {
	identity, err := requestedIdentity(v)
	if err != nil {
		return err
	}
	stamp, err := c.stamp(v.r.Context(), v.principal, identity)
	if err != nil {
		return err
	}
	v.w.Header().Set("Content-Type", "application/json")
	_, err = v.w.Write([]byte(`{"stamp":` + strconv.Quote(stamp) + "}\n"))
	return err
}

// stream sends "changed" when the stamp moves. It wakes when the event
// log is written (app.Events), so it reads nothing while nothing happens,
// and never sends another account's events: only whether this person's
// own mail and texts changed.
func (c *console) stream(v *visit) error {
	identity, err := requestedIdentity(v)
	if err != nil {
		return err
	}
	ctx := v.r.Context()
	last, err := c.stamp(ctx, v.principal, identity)
	if err != nil {
		return err
	}
	rc := http.NewResponseController(v.w)
	h := v.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	v.w.WriteHeader(http.StatusOK)
	write := func(s string) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if _, err := v.w.Write([]byte(s)); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write(": live\n\n") {
		return nil
	}
	heartbeat := time.NewTicker(streamHeartbeat)
	defer heartbeat.Stop()
	end := time.NewTimer(streamLifetime)
	defer end.Stop()
	for {
		changed := c.app.Events.Changed()
		select {
		case <-changed:
		case <-heartbeat.C:
			if !write(": heartbeat\n\n") {
				return nil
			}
			continue
		case <-ctx.Done():
			return nil
		case <-c.host.Closing():
			return nil
		case <-end.C:
			return nil
		}
		// Let a burst of writes settle before reading.
		select {
		case <-time.After(streamSettle):
		case <-ctx.Done():
			return nil
		}
		now, err := c.stamp(ctx, v.principal, identity)
		if err != nil {
			return nil // the browser reconnects
		}
		if now != last {
			last = now
			if !write("event: changed\ndata: {}\n\n") {
				return nil
			}
		}
	}
}
