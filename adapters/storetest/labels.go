package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// testMailLabels: labels are added and removed once each (an event per
// change, none for a change already made), shown on the message, in
// lists, on its thread (the union of its messages') and in the mailbox
// view, bounded per message, fenced by account, and gone with their message.
func testMailLabels(t *testing.T, f *fixture) {
	a := f.account()
	all := core.Scope{AccountID: a.ID}
	_, in := f.identity(a.ID)
	m1 := f.save(incoming(in, "1@x", "one", f.tick(), ""))[0]
	m2 := f.save(incoming(in, "2@x", "two", f.tick(), "1@x"))[0]
	start := f.events(all, 0)
	after := int64(0)
	if len(start) > 0 {
		after = start[len(start)-1].Seq
	}

	label := func(m core.EmailMessage, l string, add bool) core.EmailMessage {
		t.Helper()
		got, err := f.s.LabelMessage(f.ctx, a.ID, m.ID, l, add)
		f.must(err)
		if got.ID != m.ID || got.Text != m.Text || len(got.Attachments) != len(m.Attachments) {
			t.Fatalf("labelling %d answered %+v", m.ID, got)
		}
		return got
	}
	wantLabels := func(what string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Fatalf("%s: labels %q, want %q", what, got, want)
		}
	}
	wantLabels("added", label(m1, "todo", true).Labels, []string{"todo"})
	wantLabels("added again", label(m1, "todo", true).Labels, []string{"todo"})
	wantLabels("second", label(m1, "$junk", true).Labels, []string{"$junk", "todo"})
	wantLabels("on the other message", label(m2, "done", true).Labels, []string{"done"})
	wantLabels("removed", label(m1, "$junk", false).Labels, []string{"todo"})
	wantLabels("removed again", label(m1, "$junk", false).Labels, []string{"todo"})

	evs := f.events(all, after)
	wantIDs(t, "events", eventTypes(evs), []string{"email.labeled", "email.labeled", "email.labeled", "email.unlabeled"})
	var data struct {
		Message struct{ ID int64 }
		Label   string
	}
	if err := json.Unmarshal(evs[3].Data, &data); err != nil || data.Message.ID != m1.ID || data.Label != "$junk" || evs[3].IdentityID != m1.IdentityID {
		t.Fatalf("email.unlabeled: %s, %v", evs[3].Data, err)
	}

	got, err := f.s.Message(f.ctx, a.ID, m1.ID)
	f.must(err)
	wantLabels("message", got.Labels, []string{"todo"})
	list, _, err := f.s.Messages(f.ctx, ports.MessageFilter{Scope: all})
	f.must(err)
	wantIDs(t, "list's labels", ids(list, func(m core.EmailMessage) string { return strings.Join(m.Labels, " ") }), []string{"todo", "done"})
	th, err := f.s.Thread(f.ctx, a.ID, m1.ThreadID)
	f.must(err)
	wantLabels("thread", th.Labels, []string{"done", "todo"})
	threads, _, err := f.s.Threads(f.ctx, ports.ThreadFilter{Scope: all})
	f.must(err)
	if len(threads) != 1 {
		t.Fatalf("threads: %+v", threads)
	}
	wantLabels("thread list", threads[0].Labels, []string{"done", "todo"})
	entries, err := f.s.MailboxEntries(f.ctx, in.ID, core.Incoming, false)
	f.must(err)
	wantIDs(t, "mailbox entries", ids(entries, func(e ports.MailboxEntry) string { return fmt.Sprint(e.ID, e.Labels) }),
		[]string{fmt.Sprint(m1.ID, []string{"todo"}), fmt.Sprint(m2.ID, []string{"done"})})

	// At most core.MaxLabels; one the message carries is still no error.
	for i := 1; i < core.MaxLabels; i++ {
		label(m1, fmt.Sprintf("l%02d", i), true)
	}
	_, err = f.s.LabelMessage(f.ctx, a.ID, m1.ID, "one-more", true)
	wantKind(t, err, core.KindConflict)
	wantLabels("a label it carries, when full", label(m1, "todo", true).Labels[core.MaxLabels-1:], []string{"todo"})

	_, err = f.s.LabelMessage(f.ctx, f.account().ID, m1.ID, "x", true)
	wantKind(t, err, core.KindNotFound)
	_, err = f.s.LabelMessage(f.ctx, a.ID, m2.ID+1000, "x", true)
	wantKind(t, err, core.KindNotFound)

	// A message's labels go with it; its thread keeps the others'.
	f.must(f.s.DeleteMessage(f.ctx, a.ID, m2.ID))
	th, err = f.s.Thread(f.ctx, a.ID, m1.ThreadID)
	f.must(err)
	if slices.Contains(th.Labels, "done") || !slices.Contains(th.Labels, "todo") {
		t.Fatalf("thread after a delete: %q", th.Labels)
	}
	list, _, err = f.s.Messages(f.ctx, ports.MessageFilter{Scope: all, Labels: []string{"done"}})
	f.must(err)
	wantIDs(t, "deleted message's label", msgIDs(list), nil)
}

// testMailLabelFilters: the message and thread lists keep what carries
// every label asked for and none of those excluded, in scope.
func testMailLabelFilters(t *testing.T, f *fixture) {
	a := f.account()
	all := core.Scope{AccountID: a.ID}
	ident, in := f.identity(a.ID)
	_, in2 := f.identity(a.ID)
	m1 := f.save(incoming(in, "1@x", "one", f.tick(), ""))[0]
	m2 := f.save(incoming(in, "2@x", "two", f.tick(), "1@x"))[0]
	m3 := f.save(incoming(in, "3@x", "three", f.tick(), ""))[0]
	m4 := f.save(incoming(in2, "4@x", "four", f.tick(), ""))[0]
	for _, l := range []struct {
		m     core.EmailMessage
		label string
	}{{m1, "a"}, {m1, "b"}, {m2, "c"}, {m3, "a"}, {m4, "a"}, {m4, "b"}} {
		_, err := f.s.LabelMessage(f.ctx, a.ID, l.m.ID, l.label, true)
		f.must(err)
	}
	other := f.account()
	_, otherInbox := f.identity(other.ID)
	o := f.save(incoming(otherInbox, "5@x", "five", f.tick(), ""))[0]
	_, err := f.s.LabelMessage(f.ctx, other.ID, o.ID, "a", true)
	f.must(err)

	mine := core.Scope{AccountID: a.ID, IdentityID: ident.ID}
	for _, tc := range []struct {
		name   string
		filter ports.MessageFilter
		want   []core.EmailMessage
	}{
		{"one label", ports.MessageFilter{Scope: all, Labels: []string{"a"}}, []core.EmailMessage{m1, m3, m4}},
		{"every label", ports.MessageFilter{Scope: all, Labels: []string{"a", "b"}}, []core.EmailMessage{m1, m4}},
		{"none of them", ports.MessageFilter{Scope: all, ExcludeLabels: []string{"b", "c"}}, []core.EmailMessage{m3}},
		{"both", ports.MessageFilter{Scope: all, Labels: []string{"a"}, ExcludeLabels: []string{"b"}}, []core.EmailMessage{m3}},
		{"identity", ports.MessageFilter{Scope: mine, Labels: []string{"b"}}, []core.EmailMessage{m1}},
		{"inbox", ports.MessageFilter{Scope: all, InboxID: in2.ID, Labels: []string{"a"}}, []core.EmailMessage{m4}},
		{"a label no one carries", ports.MessageFilter{Scope: all, Labels: []string{"zz"}}, nil},
		{"page, newest first", ports.MessageFilter{Scope: all, Labels: []string{"a"}, Limit: 2, NewestFirst: true}, []core.EmailMessage{m4, m3}},
	} {
		got, total, err := f.s.Messages(f.ctx, tc.filter)
		f.must(err)
		wantIDs(t, tc.name, msgIDs(got), msgIDs(tc.want))
		if tc.filter.Limit == 0 && total != len(tc.want) {
			t.Fatalf("%s: total %d", tc.name, total)
		}
	}
	threadIDs := func(ts []core.Thread) []string { return ids(ts, func(t core.Thread) string { return t.ID }) }
	for _, tc := range []struct {
		name   string
		filter ports.ThreadFilter
		want   []string
	}{
		// m1 and m2 share a thread: its labels are a, b and c.
		{"labels of different messages", ports.ThreadFilter{Scope: all, Labels: []string{"a", "c"}}, []string{m1.ThreadID}},
		{"one label", ports.ThreadFilter{Scope: all, Labels: []string{"a"}}, []string{m4.ThreadID, m3.ThreadID, m1.ThreadID}},
		{"excluded from any message", ports.ThreadFilter{Scope: all, ExcludeLabels: []string{"c"}}, []string{m4.ThreadID, m3.ThreadID}},
		{"identity, counted", ports.ThreadFilter{Scope: mine, Labels: []string{"b"}, Page: ports.Page{Limit: 5, Count: true}}, []string{m1.ThreadID}},
	} {
		got, total, err := f.s.Threads(f.ctx, tc.filter)
		f.must(err)
		wantIDs(t, tc.name, threadIDs(got), tc.want)
		if tc.filter.Page.Count && total != len(tc.want) {
			t.Fatalf("%s: total %d", tc.name, total)
		}
	}
}
