package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// eventView is an event as every reader gets it: the list, the stream and
// webhooks' bodies.
type eventView struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	CreatedDT apiTime         `json:"created_dt"`
	Identity  *string         `json:"identity"`
	Data      json.RawMessage `json:"data"`
}

func viewEvent(e core.Event) eventView {
	return eventView{ID: e.ID(), Type: string(e.Type), CreatedDT: apiTime(e.CreatedAt), Identity: optString(e.IdentityID), Data: e.Data}
}

// EventJSON is an event's JSON as the API shows it (a webhook's body).
func EventJSON(e core.Event) ([]byte, error) { return json.Marshal(viewEvent(e)) }

// messageEventView is a message as email events carry it: its summary
// (with a preview), without its bodies. The event is rendered as the
// message is stored, so nothing read-time (the extracted reply) is
// computed on ingest, and the event log does not hold the bodies again.
type messageEventView = messageSummaryView

// reportEventView is the data of email.bounced, email.delivered and
// email.complained: the message as the other email events show it, and
// the recipients the report was about, under the event's own word.
type reportEventView struct {
	messageEventView
	Bounced    []reportedView `json:"bounced,omitempty"`
	Delivered  []reportedView `json:"delivered,omitempty"`
	Complained []reportedView `json:"complained,omitempty"`
}

// labelEventView is the data of email.labeled and email.unlabeled: the
// message as the other email events show it (its labels as they now are),
// and the label added or removed.
type labelEventView struct {
	messageEventView
	Label string `json:"label"`
}

// reportedView is one recipient a report was about: the report's
// enhanced status code and its reason (the remote server's reply, or the
// status when the report gave none).
type reportedView struct {
	Email  string `json:"email"`
	Status string `json:"status"`
	Reason string `json:"reason"`
}

func (s *server) viewMessageEvent(m core.EmailMessage) messageEventView {
	return s.viewSummary(m.Summary())
}

// EventData renders an event's subject with the API's own views; the
// store calls it when it writes the event (ports.EventEncoder), so the log
// holds what readers are sent.
func EventData(baseURL string) ports.EventEncoder {
	s := &server{baseURL: strings.TrimSuffix(baseURL, "/")}
	return func(e core.NewEvent) ([]byte, error) {
		var v any
		switch subject := e.Subject.(type) {
		case core.EmailMessage:
			v = s.viewMessageEvent(subject)
		case core.Report:
			b := reportEventView{messageEventView: s.viewMessageEvent(subject.Message)}
			lines := make([]reportedView, 0, len(subject.Recipients))
			for _, r := range subject.Recipients {
				lines = append(lines, reportedView{Email: r.Address(), Status: r.Status, Reason: r.Error()})
			}
			switch e.Type {
			case core.EmailDelivered:
				b.Delivered = lines
			case core.EmailComplained:
				b.Complained = lines
			default:
				b.Bounced = lines
			}
			v = b
		case core.Labeling:
			v = labelEventView{messageEventView: s.viewMessageEvent(subject.Message), Label: subject.Label}
		case core.SMSMessage:
			v = viewSMS(subject)
		case core.Identity:
			v = viewIdentity(subject)
		case core.Inbox:
			v = viewInbox(subject)
		case core.PhoneNumber:
			v = viewPhone(subject)
		case core.Call:
			v = viewCallUnder(baseURL, subject)
		default:
			return nil, fmt.Errorf("no view for the subject of a %s event (%T)", e.Type, e.Subject)
		}
		return json.Marshal(v)
	}
}

// afterLatest is the cursor "from now": after the newest event committed
// when the request came, so a new reader follows without reading history.
const afterLatest = "latest"

// eventQuery reads the filters the list and the stream share; after=latest
// is left for fromNow, which needs the validated request.
func (s *server) eventQuery(c *gin.Context, q *query) app.EventQuery {
	eq := app.EventQuery{Identity: q.uuid("identity"), Limit: core.MaxPageLimit}
	if a := q.str("after"); a != "" && a != afterLatest {
		if n, ok := core.ParseEventID(a); ok {
			eq.After = &n
		} else {
			q.problems.Add("after", "Enter an event id (a whole number, as an event's id), or latest.")
		}
	}
	if t := q.str("types"); t != "" {
		for _, p := range strings.Split(t, ",") {
			p = strings.TrimSpace(p)
			if !core.ValidEventPattern(p) {
				q.problems.Add("types", "%q is not an event type; use types such as email.received, or prefixes such as email.*.", p)
				continue
			}
			eq.Types = append(eq.Types, p)
		}
	}
	return eq
}

// fromNow sets the cursor of an after=latest request to the newest event
// committed now (true), and leaves any other alone (false).
func (s *server) fromNow(c *gin.Context, eq *app.EventQuery) (bool, error) {
	if c.Query("after") != afterLatest || eq.After != nil { // Last-Event-ID wins on the stream
		return false, nil
	}
	n, err := s.app.Events.Latest(c.Request.Context(), principal(c))
	eq.After = &n
	return err == nil, err
}

// eventPage is the list's envelope: count is the number of results on this
// page (the log is read forward from a cursor, never counted), next the
// address of the page after its last event, previous always null. A reader
// that asked from now always gets next, so it can go on without a gap even
// when nothing came.
func (s *server) eventPage(c *gin.Context, events []core.Event, eq app.EventQuery, fromNow bool) page[eventView] {
	p := page[eventView]{Count: len(events), Results: viewAll(events, viewEvent)}
	if len(events) == eq.Limit || fromNow {
		// A full page goes on from its last event; an empty one from now
		// (fromNow set the cursor) goes on from where it looked.
		var after string
		if len(events) > 0 {
			after = events[len(events)-1].ID()
		} else {
			after = strconv.FormatInt(*eq.After, 10)
		}
		q := c.Request.URL.Query()
		q.Set("after", after)
		q.Del("wait")
		u := s.baseURL + c.Request.URL.Path + "?" + q.Encode()
		p.Next = &u
	}
	return p
}

func (s *server) listEvents(c *gin.Context) (int, any, error) {
	q := newStrictQuery(c)
	eq := s.eventQuery(c, q)
	eq.Limit = q.limit()
	eq.Wait = time.Duration(q.integer("wait", 0, 0, int64(app.MaxEventWait/time.Second))) * time.Second
	if err := q.err(); err != nil {
		return 0, nil, err
	}
	if eq.Wait > 0 {
		release, err := s.holdStream(c)
		if err != nil {
			return 0, nil, err
		}
		defer release()
	}
	fromNow, err := s.fromNow(c, &eq)
	if err != nil {
		return 0, nil, err
	}
	events, err := s.app.Events.List(c.Request.Context(), principal(c), eq)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, s.eventPage(c, events, eq, fromNow), nil
}

// The stream's timing: a comment line when nothing was sent for
// streamHeartbeat, and a reader that takes longer than streamWriteTimeout
// to accept what was written is cut off, as is one that falls
// app.SubscriberBuffer events behind its account's feed.
const (
	streamHeartbeat    = 15 * time.Second
	streamWriteTimeout = 10 * time.Second
)

// streamEvents serves the log as Server-Sent Events: what follows the
// cursor (Last-Event-ID, else after), read from the log page by page, then
// each event as it is committed, from the account's feed (app.Subscribe),
// which reads the log once for all of the account's streams.
func (s *server) streamEvents(c *gin.Context) {
	q := newStrictQuery(c)
	eq := s.eventQuery(c, q)
	if id := strings.TrimSpace(c.GetHeader("Last-Event-ID")); id != "" {
		n, ok := core.ParseEventID(id)
		if !ok {
			q.problems.Add("Last-Event-ID", "Enter an event id (a whole number, as an event's id).")
		}
		eq.After = &n
	}
	if err := q.err(); err != nil {
		s.fail(c, err)
		return
	}
	release, err := s.holdStream(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	defer release()
	if _, err := s.fromNow(c, &eq); err != nil {
		s.fail(c, err)
		return
	}
	ctx, p := c.Request.Context(), principal(c)
	page, err := s.app.Events.Page(ctx, p, eq)
	if err != nil {
		s.fail(c, err)
		return
	}
	w, rc := c.Writer, http.NewResponseController(c.Writer)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // proxies such as nginx would hold the stream back
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write([]byte(": stream of events\n\n")) {
		return
	}
	heartbeat := time.NewTimer(streamHeartbeat)
	defer heartbeat.Stop()
	var feed *app.Subscription
	defer func() {
		if feed != nil {
			feed.Close()
		}
	}()
	after := int64(-1) // the last event sent (or the cursor): the feed may repeat what the log's pages gave
	if eq.After != nil {
		after = *eq.After
	}
	var buf []byte
	// events are what to send next: a page of the log (rendered here) or
	// what the feed handed over (rendered once for every stream).
	events := liveEvents(nil, page)
	full := len(events) == eq.Limit // a page of the log, with perhaps more behind it
	for {
		buf = buf[:0]
		for _, e := range events {
			if e.Seq <= after {
				continue
			}
			if e.JSON == nil {
				e.JSON, _ = EventJSON(e.Event)
			}
			buf = fmt.Appendf(buf, "id: %s\nevent: %s\ndata: %s\n\n", e.ID(), e.Type, e.JSON)
			after = e.Seq
		}
		if len(buf) > 0 {
			if !write(buf) {
				return
			}
			heartbeat.Reset(streamHeartbeat)
		}
		if feed == nil || full {
			if !full {
				// Caught up with the log: join the feed, then read the log
				// once more for what was committed in between (the feed
				// starts at the newest event committed when it was joined).
				if feed, err = s.app.Events.Subscribe(ctx, p, eq); err != nil {
					if ctx.Err() == nil {
						s.log.Error("event stream: joining the feed failed", "err", err)
					}
					return
				}
			}
			if after > -1 {
				eq.After = &after
			}
			if page, err = s.app.Events.Page(ctx, p, eq); err != nil {
				if ctx.Err() == nil && core.KindOf(err) != core.KindGone {
					s.log.Error("event stream: reading the log failed", "err", err)
				}
				return
			}
			events = liveEvents(events, page)
			full = len(events) == eq.Limit
			continue
		}
		select {
		case e, ok := <-feed.Events:
			if !ok {
				return // too far behind, or the feed failed: the reader resumes from its last id
			}
			events = append(events[:0], e)
			for len(events) < eq.Limit && len(feed.Events) > 0 {
				if e, ok = <-feed.Events; !ok {
					break
				}
				events = append(events, e)
			}
		case <-heartbeat.C:
			if !write([]byte(": heartbeat\n\n")) {
				return
			}
			heartbeat.Reset(streamHeartbeat)
		case <-ctx.Done():
			return
		case <-s.closing:
			return
		}
	}
}

// liveEvents is a page of the log in buf's room, each event's JSON left for
// the stream to render.
func liveEvents(buf []app.LiveEvent, page []core.Event) []app.LiveEvent {
	buf = buf[:0]
	for _, e := range page {
		buf = append(buf, app.LiveEvent{Event: e})
	}
	return buf
}
