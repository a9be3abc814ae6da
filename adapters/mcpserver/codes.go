package mcpserver

import (
	"context"
	"time"

	"github.com/callsign/callsign/client"
)

// recentCodes is how far back wait_for_code looks by default: a code that
// arrived just before the call (the agent asked for it, then called) is
// the one wanted, and few codes outlive ten minutes.
const recentCodes = 10 * time.Minute

type waitCodeIn struct {
	Scope
	From           string `json:"from,omitempty" jsonschema:"only codes from a sender whose address or number contains this (ignoring case), such as example.com"`
	Source         string `json:"source,omitempty" jsonschema:"email or sms; both when left out"`
	After          string `json:"after,omitempty" jsonschema:"only codes received after this time (RFC 3339, such as a created_dt seen before, or the time you asked for the code); default: the last 10 minutes"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"how long to wait, 1 to 60 seconds (default 30)"`
}

type waitCodeOut struct {
	Verification *client.ReceivedVerification `json:"verification" jsonschema:"the newest matching code or sign-in link (source email or sms, message its id there, from, code, link, kind code/link/both, created_dt), or null when none came in time"`
}

// waitForCode answers the newest verification that matches, waiting on
// the server (GET …/verifications/?wait=) when there is none yet.
func waitForCode(ctx context.Context, c *client.Client, in waitCodeIn) (waitCodeOut, error) {
	after := in.After
	if after == "" {
		after = time.Now().Add(-recentCodes).UTC().Format(time.RFC3339Nano)
	}
	id, err := c.ActingIdentity(ctx)
	if err != nil {
		return waitCodeOut{}, err
	}
	v, err := c.WaitForVerification(ctx, id, client.VerificationWait{After: after, From: in.From, Source: in.Source}, waitTimeout(in.TimeoutSeconds))
	return waitCodeOut{Verification: v}, err
}
