package imap

import (
	"bufio"
	"bytes"
	"context"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
	gomessage "github.com/emersion/go-message"
	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-message/textproto"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Search evaluates the criteria over the selected folder. Flags, sizes,
// dates and numbers come from the listing; headers are read from the raw
// source and BODY/TEXT from the decoded text, loaded only for messages
// the cheaper criteria leave standing.
func (se *session) Search(kind imapserver.NumKind, criteria *imap.SearchCriteria, _ *imap.SearchOptions) (_ *imap.SearchData, err error) {
	defer se.recoverCommand("SEARCH", &err)
	ctx, cancel := se.context()
	defer cancel()
	se.mu.Lock()
	defer se.mu.Unlock()
	sel := se.sel
	var data imap.SearchData
	var seqs imap.SeqSet
	var uids imap.UIDSet
	for i, e := range sel.entries {
		c := &candidate{ctx: ctx, sel: sel, seq: uint32(i + 1), entry: e}
		ok, err := c.matches(criteria)
		if core.KindOf(err) == core.KindNotFound {
			continue // gone with its account
		}
		if err != nil {
			return nil, se.fail("searching", err)
		}
		if !ok {
			continue
		}
		num := c.seq
		if kind == imapserver.NumKindUID {
			num = uint32(uidOf(e))
		}
		seqs.AddNum(c.seq)
		uids.AddNum(uidOf(e))
		if data.Count == 0 || num < data.Min {
			data.Min = num
		}
		data.Max = max(data.Max, num)
		data.Count++
	}
	data.All = seqs
	if kind == imapserver.NumKindUID {
		data.All = uids
	}
	return &data, nil
}

// candidate is one message under test, with what it takes to test it
// loaded on first need.
type candidate struct {
	ctx    context.Context
	sel    *selection
	seq    uint32
	entry  ports.MailboxEntry
	header *gomessage.Header
	msg    *core.EmailMessage
}

func (c *candidate) matches(cr *imap.SearchCriteria) (bool, error) {
	last := uidOf(c.sel.entries[len(c.sel.entries)-1])
	for _, set := range cr.SeqNum {
		if static := staticSeqSet(set, uint32(len(c.sel.entries))); !static.Contains(c.seq) {
			return false, nil
		}
	}
	for _, set := range cr.UID {
		if !staticUIDSet(set, last).Contains(uidOf(c.entry)) {
			return false, nil
		}
	}
	if !withinDates(c.entry.CreatedAt, cr.Since, cr.Before) {
		return false, nil
	}
	flags := c.sel.flags(c.entry)
	for _, f := range cr.Flag {
		if !hasFlag(flags, f) {
			return false, nil
		}
	}
	for _, f := range cr.NotFlag {
		if hasFlag(flags, f) {
			return false, nil
		}
	}
	if cr.Larger != 0 && c.entry.Size <= cr.Larger || cr.Smaller != 0 && c.entry.Size >= cr.Smaller {
		return false, nil
	}
	if len(cr.Header) > 0 || !cr.SentSince.IsZero() || !cr.SentBefore.IsZero() {
		h, err := c.loadHeader()
		if err != nil {
			return false, err
		}
		for _, field := range cr.Header {
			if !fieldsContain(h.FieldsByKey(field.Key), field.Value) {
				return false, nil
			}
		}
		if !cr.SentSince.IsZero() || !cr.SentBefore.IsZero() {
			sent, err := (&mail.Header{Header: *h}).Date()
			if err != nil || !withinDates(sent, cr.SentSince, cr.SentBefore) {
				return false, nil
			}
		}
	}
	for _, text := range cr.Body {
		ok, err := c.bodyContains(text)
		if err != nil || !ok {
			return false, err
		}
	}
	for _, text := range cr.Text {
		h, err := c.loadHeader()
		if err != nil {
			return false, err
		}
		ok, err := c.bodyContains(text)
		if err != nil {
			return false, err
		}
		if !ok && !fieldsContain(h.Fields(), text) {
			return false, nil
		}
	}
	for i := range cr.Not {
		ok, err := c.matches(&cr.Not[i])
		if err != nil || ok {
			return false, err
		}
	}
	for i := range cr.Or {
		left, err := c.matches(&cr.Or[i][0])
		if err != nil {
			return false, err
		}
		if left {
			continue
		}
		right, err := c.matches(&cr.Or[i][1])
		if err != nil || !right {
			return false, err
		}
	}
	return true, nil
}

func (c *candidate) loadHeader() (*gomessage.Header, error) {
	if c.header == nil {
		raw, err := c.sel.box.Raw(c.ctx, c.entry.ID)
		if err != nil {
			return nil, err
		}
		h, err := textproto.ReadHeader(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			h = textproto.Header{} // an unreadable header matches no header criterion
		}
		c.header = &gomessage.Header{Header: h}
	}
	return c.header, nil
}

// bodyContains looks in the text and HTML bodies as the API shows them:
// decoded, in UTF-8, whatever the charset and transfer encoding.
func (c *candidate) bodyContains(text string) (bool, error) {
	if c.msg == nil {
		m, err := c.sel.box.Message(c.ctx, c.entry.ID)
		if err != nil {
			return false, err
		}
		c.msg = &m
	}
	return containsFold(c.msg.Text, text) || containsFold(c.msg.HTML, text), nil
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

// fieldsContain reports whether a field contains text (decoded); an empty
// text asks only that the field be present.
func fieldsContain(fields gomessage.HeaderFields, text string) bool {
	for fields.Next() {
		if text == "" {
			return true
		}
		v, err := fields.Text()
		if err != nil {
			v = fields.Value()
		}
		if containsFold(v, text) {
			return true
		}
	}
	return false
}

func hasFlag(flags []imap.Flag, f imap.Flag) bool {
	for _, g := range flags {
		if canonicalFlag(g) == canonicalFlag(f) {
			return true
		}
	}
	return false
}

// withinDates compares dates only, as RFC 3501 asks: since is inclusive,
// before exclusive.
func withinDates(t, since, before time.Time) bool {
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	return (since.IsZero() || !day.Before(since)) && (before.IsZero() || day.Before(before))
}
