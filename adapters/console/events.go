package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

type eventsData struct {
	Events     []eventRow
	Next       string // the next (older) page; "" at the end
	Newest     string // the first page with the same filters; "" on it
	Type       string // the filter as typed
	Identity   string
	Identities []core.Identity
	Types      []core.EventType
}

type eventRow struct {
	core.Event
	IdentityName string
	Data         string // indented JSON; the template escapes it
}

// eventsPage shows the account's event log newest first, a page at a
// time (?before= the last one's id), filtered by ?type= (a type or a
// prefix such as email.*) and ?identity=.
func (c *console) eventsPage(v *visit) error {
	query := v.r.URL.Query()
	data := eventsData{Type: strings.TrimSpace(query.Get("type")), Identity: query.Get("identity"), Types: core.EventTypes}
	q := app.EventQuery{Limit: pageSize + 1, Newest: true, Identity: data.Identity}
	if data.Type != "" {
		if !core.ValidEventPattern(data.Type) {
			return core.Invalid("type", "%q is not an event type; use types such as email.received, or prefixes such as email.*.", data.Type)
		}
		q.Types = []string{data.Type}
	}
	if before, ok := core.ParseEventID(query.Get("before")); ok {
		q.Before = before
	}
	names, identities, err := c.identityNames(v.r.Context(), v.principal)
	if err != nil {
		return err
	}
	data.Identities = identities[:min(len(identities), core.MaxUnpagedList)]
	if data.Identity != "" && names[data.Identity] == "" {
		return core.NotFound("Identity not found.")
	}
	events, err := c.app.Events.Page(v.r.Context(), v.principal, q)
	if err != nil {
		return err
	}
	filters := url.Values{}
	for k, val := range map[string]string{"type": data.Type, "identity": data.Identity} {
		if val != "" {
			filters.Set(k, val)
		}
	}
	if q.Before > 0 {
		data.Newest = root + "events/?" + filters.Encode()
	}
	if len(events) > pageSize {
		events = events[:pageSize]
		next := url.Values{"before": {strconv.FormatInt(events[pageSize-1].Seq, 10)}}
		for k := range filters {
			next.Set(k, filters.Get(k))
		}
		data.Next = root + "events/?" + next.Encode()
	}
	for _, e := range events {
		data.Events = append(data.Events, eventRow{Event: e, IdentityName: names[e.IdentityID], Data: indentJSON(e.Data)})
	}
	c.render(v, http.StatusOK, "events", view{Title: "Events", Nav: "events", Data: data})
	return nil
}

// indentJSON shows a payload readably; what is not JSON is shown as it is.
func indentJSON(data []byte) string {
	var b bytes.Buffer
	if json.Indent(&b, data, "", "  ") != nil {
		return string(data)
	}
	return b.String()
}
