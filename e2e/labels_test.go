package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/callsign/callsign/adapters/sqlstore"
)

// imaplibKeywords runs one IMAP session in Python's imaplib: it logs in,
// selects INBOX, prints the PERMANENTFLAGS it was told, then runs each
// argument, "fetch" (FETCH 1 FLAGS) or "+FLAGS (…)"/"-FLAGS (…)" (a STORE
// on message 1), printing the flags each answer shows.
const imaplibKeywords = `
import imaplib, re, sys
host, port, user, key = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
m = imaplib.IMAP4(host, port)
m.login(user, key)
m.select("INBOX")
print("PERMANENTFLAGS", m.untagged_responses.get("PERMANENTFLAGS", [b""])[0].decode(), flush=True)
for step in sys.argv[5:]:
    if step == "fetch":
        typ, data = m.fetch("1", "(FLAGS)")
    else:
        op, flags = step.split(" ", 1)
        typ, data = m.store("1", op, flags)
    print(step.split(" ")[0], typ, re.search(r"FLAGS (\([^)]*\))", data[0].decode()).group(1), flush=True)
m.logout()
`

// runImaplibKeywords runs imaplibKeywords and returns its transcript.
func runImaplibKeywords(t *testing.T, addr, user, key string, steps ...string) string {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	script := filepath.Join(t.TempDir(), "keywords.py")
	if err := os.WriteFile(script, []byte(imaplibKeywords), 0o600); err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(addr, ":")
	out, err := exec.Command(python, append([]string{script, host, port, user, key}, steps...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("imaplib: %v\n%s", err, out)
	}
	return string(out)
}

type labelled struct {
	ID       int64    `json:"id"`
	ThreadID string   `json:"thread_id"`
	Labels   []string `json:"labels"`
}

// TestLabelsThroughIMAPAndREST: a mail client's keywords (Python's
// imaplib, STORE +FLAGS) are the labels the API shows and filters on, and
// labels set through the API are the keywords the client fetches; every
// change is an event.
func TestLabelsThroughIMAPAndREST(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, nil)
		mgmt := r.bootstrap("labels@example.com")
		inbox, key := r.agentWithKey(mgmt, "Labeller")
		sendSMTP(t, r.svc.SMTPAddr(), "alice@example.org", []string{inbox}, plainMail(inbox, "l1@example.org", "Invoice"))
		sendSMTP(t, r.svc.SMTPAddr(), "alice@example.org", []string{inbox}, plainMail(inbox, "l2@example.org", "Newsletter"))
		var page struct{ Results []labelled }
		r.call("GET", "/api/email-messages/", key, nil, &page)
		id := page.Results[0].ID
		labelsOf := func() []string {
			var m labelled
			r.call("GET", fmt.Sprintf("/api/email-messages/%d/", id), key, nil, &m)
			return m.Labels
		}

		out := runImaplibKeywords(t, r.svc.IMAPAddr(), inbox, key, `+FLAGS (Todo $Forwarded \Seen)`)
		for _, want := range []string{`PERMANENTFLAGS (\Seen \*)`, `+FLAGS OK (\Seen $forwarded todo)`} {
			if !strings.Contains(out, want) {
				t.Errorf("imaplib's transcript lacks %q:\n%s", want, out)
			}
		}
		if got := labelsOf(); !slices.Equal(got, []string{"$forwarded", "todo"}) {
			t.Fatalf("labels after STORE +FLAGS: %q", got)
		}
		var filtered struct{ Results []labelled }
		r.call("GET", "/api/email-messages/?labels=todo", key, nil, &filtered)
		if len(filtered.Results) != 1 || filtered.Results[0].ID != id {
			t.Fatalf("labels=todo lists %+v", filtered.Results)
		}
		var threads []labelled
		r.call("GET", "/api/email-inbox/?exclude_labels=todo", key, nil, &threads)
		if len(threads) != 1 || threads[0].ThreadID == page.Results[0].ThreadID {
			t.Fatalf("exclude_labels=todo lists threads %+v", threads)
		}

		// The reverse: the API's labels are the client's keywords.
		if s := r.call("PUT", fmt.Sprintf("/api/email-messages/%d/labels/from-api/", id), key, nil, nil); s != 200 {
			t.Fatalf("PUT label: %d", s)
		}
		if s := r.call("DELETE", fmt.Sprintf("/api/email-messages/%d/labels/todo/", id), key, nil, nil); s != 204 {
			t.Fatalf("DELETE label: %d", s)
		}
		out = runImaplibKeywords(t, r.svc.IMAPAddr(), inbox, key, "fetch", `-FLAGS (from-api $forwarded)`)
		for _, want := range []string{`fetch OK (\Seen $forwarded from-api)`, `-FLAGS OK (\Seen)`} {
			if !strings.Contains(out, want) {
				t.Errorf("imaplib's transcript lacks %q:\n%s", want, out)
			}
		}
		if got := labelsOf(); len(got) != 0 {
			t.Fatalf("labels after STORE -FLAGS: %q", got)
		}
		var events struct {
			Results []struct {
				Type string
				Data struct{ Label string }
			}
		}
		r.call("GET", "/api/events/?types=email.labeled,email.unlabeled", key, nil, &events)
		var got []string
		for _, e := range events.Results {
			got = append(got, e.Type+" "+e.Data.Label)
		}
		// One event per label changed, whichever surface changed it.
		want := []string{"email.labeled $forwarded", "email.labeled todo", "email.labeled from-api", "email.unlabeled todo",
			"email.unlabeled $forwarded", "email.unlabeled from-api"}
		if strings.Join(got, ", ") != strings.Join(want, ", ") {
			t.Fatalf("events: %q, want %q", got, want)
		}
	})
}

// TestMCPLabels: add_label and remove_label over both transports with the
// official Go SDK's client; list_emails and list_threads filter on labels;
// another identity's message is not found.
func TestMCPLabels(t *testing.T) {
	t.Parallel()
	r := start(t, sqlstore.SQLite, nil)
	mgmt := r.bootstrap("mcp-labels@example.com")
	ada, bob := r.newAgent(mgmt, "Ada"), r.newAgent(mgmt, "Bob")
	sendSMTP(t, r.svc.SMTPAddr(), "alice@example.org", []string{ada.inbox}, plainMail(ada.inbox, "a1@example.org", "For Ada"))
	sendSMTP(t, r.svc.SMTPAddr(), "alice@example.org", []string{bob.inbox}, plainMail(bob.inbox, "b1@example.org", "For Bob"))
	var adaMail, bobMail struct{ Results []labelled }
	r.call("GET", "/api/email-messages/", ada.key, nil, &adaMail)
	r.call("GET", "/api/email-messages/", bob.key, nil, &bobMail)
	mine, theirs := adaMail.Results[0].ID, bobMail.Results[0].ID

	transports(t, r, ada.key, nil, func(t *testing.T, cs *mcp.ClientSession) {
		var out struct {
			MessageID int64    `json:"message_id"`
			Labels    []string `json:"labels"`
		}
		if res := callTool(t, cs, "add_label", map[string]any{"message_id": mine, "label": "Needs-Reply"}, &out); res.IsError ||
			out.MessageID != mine || !slices.Equal(out.Labels, []string{"needs-reply"}) {
			t.Fatalf("add_label: %q %+v", toolText(res), out)
		}
		var list struct {
			Emails []labelled `json:"emails"`
		}
		callTool(t, cs, "list_emails", map[string]any{"labels": []string{"needs-reply"}}, &list)
		if len(list.Emails) != 1 || list.Emails[0].ID != mine || !slices.Equal(list.Emails[0].Labels, []string{"needs-reply"}) {
			t.Fatalf("list_emails labels: %+v", list.Emails)
		}
		callTool(t, cs, "list_emails", map[string]any{"exclude_labels": []string{"needs-reply"}}, &list)
		if len(list.Emails) != 0 {
			t.Fatalf("list_emails exclude_labels: %+v", list.Emails)
		}
		var threads struct {
			Threads []labelled `json:"threads"`
		}
		callTool(t, cs, "list_threads", map[string]any{"labels": []string{"needs-reply"}}, &threads)
		if len(threads.Threads) != 1 || !slices.Equal(threads.Threads[0].Labels, []string{"needs-reply"}) {
			t.Fatalf("list_threads labels: %+v", threads.Threads)
		}
		if res := callTool(t, cs, "add_label", map[string]any{"message_id": mine, "label": "no way"}, nil); !res.IsError ||
			!strings.Contains(toolText(res), "not a label") {
			t.Errorf("a bad label: %v %q", res.IsError, toolText(res))
		}
		if res := callTool(t, cs, "remove_label", map[string]any{"message_id": mine, "label": "needs-reply"}, &out); res.IsError || len(out.Labels) != 0 {
			t.Fatalf("remove_label: %q %+v", toolText(res), out)
		}
		for _, name := range []string{"add_label", "remove_label"} {
			if res := callTool(t, cs, name, map[string]any{"message_id": theirs, "label": "x"}, nil); !res.IsError || !strings.Contains(toolText(res), "not found") {
				t.Errorf("%s on Bob's message: %v %q", name, res.IsError, toolText(res))
			}
		}
	})
	var m labelled
	r.call("GET", fmt.Sprintf("/api/email-messages/%d/", theirs), bob.key, nil, &m)
	if len(m.Labels) != 0 {
		t.Fatalf("Bob's message was labelled: %q", m.Labels)
	}
}
