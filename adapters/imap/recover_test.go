package imap

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/emersion/go-imap/v2"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/ports"
)

// A command that panics answers NO [SERVERBUG] and logs the panic, instead
// of taking the connection down with it (go-imap's own recovery closes it).
func TestAPanicInACommandAnswersNo(t *testing.T) {
	var logged bytes.Buffer
	srv := &Server{log: slog.New(slog.NewTextHandler(&logged, nil))}
	se := &session{srv: srv, remote: "127.0.0.1", sel: &selection{box: &app.Mailbox{}, entries: []ports.MailboxEntry{{ID: 1}}}}
	srv.ctx = t.Context()
	err := se.Fetch(nil, imap.SeqSetNum(1), nil) // no options: a nil dereference
	if err != errServerBug {
		t.Fatalf("FETCH answered %v, want %v", err, errServerBug)
	}
	if !strings.Contains(logged.String(), "command=FETCH") || !strings.Contains(logged.String(), "panic=") {
		t.Fatalf("the panic was not logged: %s", logged.String())
	}
	if !se.mu.TryLock() {
		t.Fatal("the session's lock was kept after the panic")
	}
	se.mu.Unlock()
}
