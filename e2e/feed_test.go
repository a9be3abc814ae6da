package e2e

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/mcpserver"
	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/client"
)

// TestRemoteClientsFollowTheEventFeed: a client of a remote server
// (`callsign mcp`, the CLI's waits) learns of new mail and texts from the
// event log over loopback rather than on a timer. client.Events reads the
// log from now and then from its cursor; mcpserver.Feed stays silent while
// nothing of its kind arrives within its key's reach (the 2 s poll it
// replaced would have signalled), and signals when something does.
func TestRemoteClientsFollowTheEventFeed(t *testing.T) {
	t.Parallel()
	r := start(t, sqlstore.SQLite, nil)
	mgmt := r.bootstrap("ops@example.com")
	ada, bob := r.newAgent(mgmt, "Ada"), r.newAgent(mgmt, "Bob")
	smtpAddr := r.svc.SMTPAddr()
	ctx := context.Background()
	api := client.New(r.baseURL, ada.key, nil)

	// The client's events call: from now (an empty page with a cursor),
	// then a long poll from that cursor, answered by the next event.
	p, cursor, err := api.Events(ctx, client.EventFilter{After: client.AfterLatest})
	if _, bad := strconv.ParseInt(cursor, 10, 64); err != nil || p.Count != 0 || bad != nil {
		t.Fatalf("from now: %v %+v cursor %q", err, p, cursor)
	}
	sent := make(chan error, 1)
	go func() {
		sent <- smtpSend(smtpAddr, "alice@example.org", []string{ada.inbox}, plainMail(ada.inbox, "feed-1@example.org", "Feed one"))
	}()
	p, next, err := api.Events(ctx, client.EventFilter{After: cursor, Types: []string{"email.*"}, Wait: 30 * time.Second})
	if err != nil || p.Count != 1 || p.Results[0].Type != "email.received" || next != p.Results[0].ID || next == cursor {
		t.Fatalf("long poll: %v %+v next %q after %q", err, p, next, cursor)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	var data struct{ Subject string }
	if json.Unmarshal(p.Results[0].Data, &data); data.Subject != "Feed one" || p.Results[0].Identity == nil || *p.Results[0].Identity != ada.uuid {
		t.Errorf("the event: %s", p.Results[0].Data)
	}
	if p, again, err := api.Events(ctx, client.EventFilter{After: next, Types: []string{"email.*"}}); err != nil || p.Count != 0 || again != next {
		t.Errorf("nothing after the last: %v %+v %q", err, p, again)
	}
	if _, _, err := api.Events(ctx, client.EventFilter{Types: []string{"nonsense"}}); err == nil {
		t.Error("an unknown type was accepted")
	}

	mail, stopMail, err := mcpserver.Feed{}.Mail(ctx, api)
	if err != nil {
		t.Fatal(err)
	}
	defer stopMail()
	texts, stopTexts, err := mcpserver.Feed{}.SMS(ctx, api)
	if err != nil {
		t.Fatal(err)
	}
	defer stopTexts()
	// Another identity's mail, and a text to Ada: the text feed hears it,
	// the mail feed hears nothing.
	sendSMTP(t, smtpAddr, "alice@example.org", []string{bob.inbox}, plainMail(bob.inbox, "feed-bob@example.org", "For Bob"))
	if s := r.call("POST", "/api/messages/send/", bob.key, map[string]any{"to": ada.phone, "body": "Hello Ada"}, nil); s != 201 {
		t.Fatalf("text to Ada: %d", s)
	}
	select {
	case <-texts:
	case <-time.After(30 * time.Second):
		t.Fatal("the text feed did not signal a text to Ada")
	}
	select {
	case <-mail:
		t.Fatal("the mail feed signalled with no mail of Ada's")
	case <-time.After(3 * time.Second):
	}
	sendSMTP(t, smtpAddr, "alice@example.org", []string{ada.inbox}, plainMail(ada.inbox, "feed-2@example.org", "Feed two"))
	select {
	case <-mail:
	case <-time.After(30 * time.Second):
		t.Fatal("the mail feed did not signal Ada's mail")
	}
}
