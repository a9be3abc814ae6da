package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/sqlstore"
)

// tsClientDir holds the official TypeScript MCP SDK, pinned in its
// package-lock (.ci/run installs it with npm ci), and the script that
// drives Callsign with it.
const tsClientDir = "testdata/mcpclient"

// agent is an identity made for a test, with its key and phone number.
type agent struct {
	uuid, inbox, key, phone string
}

// newAgent makes an identity with an identity key and a simulated number.
func (r *running) newAgent(mgmt, name string) agent {
	r.t.Helper()
	var ident struct{ UUID, Inbox string }
	r.call("POST", "/api/identities/", mgmt, map[string]any{"name": name}, &ident)
	var k struct{ Key string }
	r.call("POST", "/api/auth/keys/identity/", mgmt, map[string]any{"identity": ident.UUID}, &k)
	var withPhone struct{ Phone string }
	if s := r.call("POST", "/api/identities/"+ident.UUID+"/provision-phone/", mgmt, nil, &withPhone); s != 200 {
		r.t.Fatalf("provision-phone: %d", s)
	}
	return agent{uuid: ident.UUID, inbox: ident.Inbox, key: k.Key, phone: withPhone.Phone}
}

// mailWithAttachment is a message with a text attachment.
func mailWithAttachment(to, msgID, subject, body, attachment string) string {
	return "From: Alice <alice@example.org>\r\nTo: " + to + "\r\nSubject: " + subject + "\r\nMessage-ID: <" + msgID + ">\r\n" +
		"Date: Sat, 21 Nov 2026 08:00:00 +0000\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b1\r\n\r\n" +
		"--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + body + "\r\n" +
		"--b1\r\nContent-Type: text/plain; name=notes.txt\r\nContent-Disposition: attachment; filename=notes.txt\r\n\r\n" + attachment + "\r\n--b1--\r\n"
}

// TestMCPWithTheTypeScriptSDK drives both transports with the official
// TypeScript client (a client nobody here wrote): it lists the tools,
// calls each one against a real service on SQLite, checks that an
// identity key reaches nothing of another identity through any tool, and
// waits for mail that arrives over SMTP and a text that arrives meanwhile.
func TestMCPWithTheTypeScriptSDK(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, "node", "Node.js 20 or newer")
	}
	if _, err := os.Stat(filepath.Join(tsClientDir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		missing(t, "the TypeScript MCP SDK", "npm ci --prefix e2e/"+tsClientDir)
	}
	r := start(t, sqlstore.SQLite, nil)
	mgmt := r.bootstrap("ops@example.com")
	ada, bob := r.newAgent(mgmt, "Ada"), r.newAgent(mgmt, "Bob")
	smtpAddr := r.svc.SMTPAddr()
	sendSMTP(t, smtpAddr, "alice@example.org", []string{ada.inbox}, mailWithAttachment(ada.inbox, "a1@example.org", "Quarterly numbers", "The numbers are in.", "revenue: 42"))
	sendSMTP(t, smtpAddr, "alice@example.org", []string{bob.inbox}, mailWithAttachment(bob.inbox, "b1@example.org", "Bob's private note", "For Bob only.", "bob's secret notes"))

	// Bob's objects, which Ada's key must not reach.
	var bobMail apiPage
	r.call("GET", "/api/email-messages/", bob.key, nil, &bobMail)
	var bobMsg struct {
		Attachments []struct{ UUID string }
	}
	r.call("GET", fmt.Sprintf("/api/email-messages/%d/", bobMail.Results[0].ID), bob.key, nil, &bobMsg)
	var bobPassword, bobSecret struct{ UUID string }
	r.call("POST", "/api/passwords/", bob.key, map[string]any{"domain": "bank.example", "password": "bob-pw"}, &bobPassword)
	r.call("POST", "/api/secrets/", bob.key, map[string]any{"key": "bob-token", "value": "bob-value"}, &bobSecret)
	var bobText struct {
		ConversationID string `json:"conversation_id"`
	}
	r.call("POST", "/api/messages/send/", bob.key, map[string]any{"to": "+14155550100", "body": "Bob's text"}, &bobText)

	for _, transport := range []string{"http", "stdio"} {
		t.Run(transport, func(t *testing.T) {
			setup := map[string]any{
				"transport": transport, "url": r.baseURL + "/mcp", "key": ada.key,
				"command": os.Args[0], "args": []string{"mcp"},
				"env": map[string]string{"CALLSIGN_TEST_RUN_MAIN": "1", "CALLSIGN_SERVER": r.baseURL, "CALLSIGN_API_KEY": ada.key,
					"PATH": os.Getenv("PATH"), "HOME": t.TempDir()},
				"mine": map[string]any{"inbox": ada.inbox, "subject": "Quarterly numbers", "body": "The numbers are in", "attachmentText": "revenue: 42"},
				"theirs": map[string]any{"identity": bob.uuid, "inbox": bob.inbox, "phone": bob.phone, "subject": "Bob's private note",
					"messageId": bobMail.Results[0].ID, "threadId": bobMail.Results[0].ThreadID, "attachment": bobMsg.Attachments[0].UUID,
					"conversationId": bobText.ConversationID, "passwordUUID": bobPassword.UUID, "secretUUID": bobSecret.UUID, "secretKey": "bob-token"},
			}
			setupJSON, _ := json.Marshal(setup)
			cmd := exec.Command(node, "drive.mjs")
			cmd.Dir = tsClientDir
			cmd.Env = append(os.Environ(), "SETUP="+string(setupJSON))
			var stderr strings.Builder
			cmd.Stderr = &stderr
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var delivering *deliverer
			ok := false
			lines := bufio.NewScanner(stdout)
			for lines.Scan() {
				line := lines.Text()
				switch {
				case strings.HasPrefix(line, "WAIT_EMAIL "):
					subject := strings.TrimPrefix(line, "WAIT_EMAIL ")
					delivering = deliverUntilStopped(t, func(n int) error {
						return smtpSend(smtpAddr, "alice@example.org", []string{ada.inbox},
							plainMail(ada.inbox, fmt.Sprintf("wake-%s-%d@example.org", transport, n), subject))
					})
				case strings.HasPrefix(line, "WAIT_SMS "):
					body := strings.TrimPrefix(line, "WAIT_SMS ")
					delivering = deliverUntilStopped(t, func(int) error {
						if s, raw := r.callRaw("POST", "/api/messages/send/", bob.key, map[string]any{"to": ada.phone, "body": body}); s != 201 {
							return fmt.Errorf("sending the text: %d %s", s, raw)
						}
						return nil
					})
				case strings.HasPrefix(line, "GOT_"):
					delivering.stop()
				case line == "OK":
					ok = true
				}
			}
			delivering.stop()
			if err := cmd.Wait(); err != nil || !ok {
				t.Fatalf("the TypeScript client failed (%v):\n%s", err, stderr.String())
			}
		})
	}
}

// deliverer delivers again and again while a client waits: the client
// says when its wait begins, but the server may start looking a moment
// later, and only what arrives after that counts.
type deliverer struct {
	quit, done chan struct{}
}

func deliverUntilStopped(t *testing.T, deliver func(n int) error) *deliverer {
	d := &deliverer{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(d.done)
		for n := 1; ; n++ {
			if err := deliver(n); err != nil {
				t.Error(err)
				return
			}
			select {
			case <-d.quit:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	return d
}

// stop ends the deliveries and waits for the last; a nil one is done.
func (d *deliverer) stop() {
	if d == nil {
		return
	}
	select {
	case <-d.quit:
	default:
		close(d.quit)
	}
	<-d.done
}
