package console

import (
	"net/http"
	"strconv"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type eventsData struct {
	Events []eventRow
	Next   string
	Start  bool // the list starts at the oldest event kept
}

type eventRow struct {
	core.Event
	IdentityName string
	Data         string
}

// eventsPage shows the account's event log as the API keeps it: oldest
// kept first, a page at a time, each page after the last one's id.
func (c *console) eventsPage(v *visit) error {
	q := app.EventQuery{Limit: pageSize + 1}
	if after, ok := core.ParseEventID(v.r.URL.Query().Get("after")); ok {
		q.After = &after
	}
	events, err := c.app.Events.Page(v.r.Context(), v.principal, q)
	if err != nil {
		return err
	}
	identities, _, err := c.app.Identities.List(v.r.Context(), v.principal, "", ports.Page{Limit: core.MaxUnpagedList})
	if err != nil {
		return err
	}
	names := map[string]string{}
	for _, ident := range identities {
		names[ident.ID] = ident.Name
	}
	data := eventsData{Start: q.After == nil}
	if len(events) > pageSize {
		events = events[:pageSize]
		data.Next = root + "events/?after=" + strconv.FormatInt(events[pageSize-1].Seq, 10)
	}
	for _, e := range events {
		data.Events = append(data.Events, eventRow{Event: e, IdentityName: names[e.IdentityID], Data: string(e.Data)})
	}
	c.render(v, http.StatusOK, "events", view{Title: "Events", Nav: "events", Data: data})
	return nil
}
