package mcpserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/callsign/callsign/client"
)

// TestFeedFindsNothingWhenTheWaitRunsOutFirst: a wait whose time ends
// while the server is still answering its first look at the event log
// found nothing (the CLI's "no message arrived within …"), not an error of
// its own.
func TestFeedFindsNothingWhenTheWaitRunsOutFirst(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer slow.Close()
	api := client.New(slow.URL, "key", slow.Client())
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	wake, stop, err := Feed{}.Mail(ctx, api)
	if err != nil {
		t.Fatalf("the feed: %v", err)
	}
	defer stop()
	if m, err := api.WaitForMessage(ctx, client.MailWait{}, wake); m != nil || err != nil {
		t.Fatalf("the wait: %v %v, want nothing", m, err)
	}
}
