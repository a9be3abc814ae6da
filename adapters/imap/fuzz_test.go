package imap_test

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	imapadapter "github.com/callsign/callsign/adapters/imap"
)

// FuzzServerCommands sends whatever the fuzzer makes, as a logged-in
// client, to the IMAP server over loopback: the server must neither crash
// nor hang, and must answer LOGOUT (or close) within seconds. The corpus is
// in testdata/fuzz/FuzzServerCommands.
func FuzzServerCommands(f *testing.F) {
	for _, seed := range []string{
		"a SELECT INBOX\r\nb FETCH 1:* (FLAGS BODY.PEEK[HEADER.FIELDS (SUBJECT)] BODYSTRUCTURE)\r\n",
		"a SELECT INBOX\r\nb UID SEARCH OR SUBJECT x NOT SEEN\r\nc STORE 1 +FLAGS (\\Seen)\r\n",
		"a LIST \"\" *\r\nb STATUS INBOX (MESSAGES UIDNEXT UNSEEN)\r\n",
		"a APPEND INBOX {5}\r\nhello\r\n",
		"a SELECT INBOX\r\nb FETCH 1 BODY[1.2.MIME]<0.10>\r\n",
		"a IDLE\r\nDONE\r\n",
		"a SEARCH CHARSET UTF-8 TEXT {4294967295}\r\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, commands string) {
		w := newWorld(t)
		a := w.agent("fuzz")
		w.deliver(a.inbox, mailAt("1@fuzz", "one"))
		addr := w.serve(imapadapter.ServerOptions{})
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		go func() {
			// The server answers as it reads; what it says is drained here.
			r := bufio.NewReader(c)
			for {
				if _, err := r.ReadString('\n'); err != nil {
					return
				}
			}
		}()
		login := "L LOGIN " + a.inbox.Email + " " + a.key + "\r\n"
		if _, err := c.Write([]byte(login + commands + "\r\nZ LOGOUT\r\n")); err != nil && !isClosed(err) {
			t.Fatalf("writing: %v", err)
		}
		// The server must still answer a fresh client: nothing it read
		// broke it.
		c2 := dial(t, addr)
		if err := c2.Noop().Wait(); err != nil {
			t.Fatalf("the server no longer answers: %v", err)
		}
	})
}

func isClosed(err error) bool {
	return strings.Contains(err.Error(), "reset") || strings.Contains(err.Error(), "broken pipe") || strings.Contains(err.Error(), "closed")
}
