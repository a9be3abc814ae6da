package console

import (
	"encoding/json"
	"strconv"

	"github.com/google/uuid"

	"github.com/callsign/callsign/ports"
)

// pulse tells the page's script whether mail or texts arrived: a stamp
// that changes with the latest thread and conversation of the account, or
// of one identity. Two one-row reads, whatever the inbox holds.
func (c *console) pulse(v *visit) error {
	identity := ""
	if id := v.r.URL.Query().Get("identity"); id != "" {
		u, err := uuid.Parse(id)
		if err != nil {
			return errNoPage
		}
		identity = u.String()
	}
	ctx := v.r.Context()
	one := ports.Page{Limit: 1}
	threads, _, err := c.app.Mail.Threads(ctx, v.principal, identity, ports.ThreadFilter{Page: one})
	if err != nil {
		return err
	}
	convs, _, err := c.app.SMS.Conversations(ctx, v.principal, identity, nil, "", one)
	if err != nil {
		return err
	}
	stamp := ""
	for _, t := range threads {
		stamp += t.ID + "@" + strconv.FormatInt(t.LastMessageAt.UnixMicro(), 10) + "/" + strconv.Itoa(t.MessageCount)
	}
	stamp += ";"
	for _, cv := range convs {
		stamp += cv.ID + "@" + strconv.FormatInt(cv.LastMessageAt.UnixMicro(), 10) + "/" + strconv.Itoa(cv.MessageCount)
	}
	v.w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(v.w).Encode(map[string]string{"stamp": stamp})
}
