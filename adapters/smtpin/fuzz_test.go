package smtpin_test

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/smtpin"
)

// FuzzSession plays whatever the fuzzer makes as an SMTP client's side of
// a session over loopback: the server must neither crash nor hang, and a
// new client must still be served afterwards. The corpus is in
// testdata/fuzz/FuzzSession.
func FuzzSession(f *testing.F) {
	for _, seed := range []string{
		"EHLO x\r\nMAIL FROM:<a@example.org>\r\nRCPT TO:<alice@agents.test>\r\nDATA\r\nSubject: hi\r\n\r\nbody\r\n.\r\n",
		"HELO x\r\nMAIL FROM:<> SMTPUTF8\r\nRCPT TO:<jörg@agents.test>\r\nRCPT TO:<bob@agents.test>\r\nDATA\r\n..dot\r\n.\r\nRSET\r\n",
		"EHLO x\r\nMAIL FROM:<a@example.org> SIZE=99999999999\r\nRCPT TO:<@relay:alice@agents.test>\r\n",
		"EHLO x\r\nBDAT 10 LAST\r\n0123456789",
		"EHLO x\r\nSTARTTLS\r\nAUTH PLAIN AGFAYg==\r\nVRFY alice\r\nEXPN all\r\nNOOP\r\n",
		"EHLO x\r\nMAIL FROM:<a@example.org>\r\nRCPT TO:<alice@agents.test>\r\nDATA\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Transfer-Encoding: base64\r\n\r\n!!!\r\n--b--\r\n.\r\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, session string) {
		// Mutated recipients are unknown: their growing pause is not what is tested.
		w := newWorldWith(t, nil, 64<<10, func(o *smtpin.Options) { o.UnknownRecipientDelay = time.Microsecond })
		c, err := net.Dial("tcp", w.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		go func() {
			r := bufio.NewReader(c)
			for {
				if _, err := r.ReadString('\n'); err != nil {
					return
				}
			}
		}()
		if _, err := c.Write([]byte(session + "\r\n.\r\nQUIT\r\n")); err != nil && !strings.Contains(err.Error(), "reset") && !strings.Contains(err.Error(), "broken pipe") {
			t.Fatalf("writing: %v", err)
		}
		// Whatever that did, the listener still serves a new client.
		if err := w.dial().Noop(); err != nil {
			t.Fatalf("the server no longer answers: %v", err)
		}
	})
}
