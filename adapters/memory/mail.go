package memory

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type messageRow struct {
	core.EmailMessage // Attachments are kept in the attachments table
	raw               []byte
	searchText        string // ports.NewMail.SearchText
}

type outboxRow struct {
	ports.OutboxEntry
	claimedUntil time.Time
}

// mailTables are the maps of the mail store, created on first use.
type mailTables struct {
	messages    map[int64]*messageRow
	threads     map[string]*core.Thread
	attachments map[string]*ports.AttachmentContent
	outbox      map[int64]*outboxRow
	clocks      map[string]time.Time // the last creation time per account
}

func (s *Store) mailTables() *mailTables {
	if s.mail.messages == nil {
		s.mail = mailTables{
			messages: map[int64]*messageRow{}, threads: map[string]*core.Thread{},
			attachments: map[string]*ports.AttachmentContent{}, outbox: map[int64]*outboxRow{},
			clocks: map[string]time.Time{},
		}
	}
	return &s.mail
}

func (s *Store) SaveMail(ctx context.Context, mails []ports.NewMail) ([]core.EmailMessage, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	record, err := s.effect(ctx)
	if err != nil {
		return nil, err
	}
	t := s.mailTables()
	for _, nm := range mails {
		if _, ok := s.inboxes[nm.Message.InboxID]; !ok {
			return nil, core.NotFound("Inbox not found.")
		}
		if d := nm.FromDraft; d != nil {
			if _, err := s.draft(d.AccountID, d.ID); err != nil {
				return nil, err
			}
		}
	}
	out := make([]core.EmailMessage, 0, len(mails))
	var events []core.NewEvent
	for _, nm := range mails {
		m := nm.Message
		f, err := core.FileMail(m, nm.Dedupe, nm.NewThreadID, t.clocks[m.AccountID], messageIndex{s})
		if err != nil {
			return nil, err
		}
		if f.Duplicate != nil {
			out = append(out, *f.Duplicate)
			continue
		}
		if d := nm.FromDraft; d != nil {
			delete(s.drafts, d.ID)
		}
		m.CreatedAt, m.ThreadID = f.CreatedAt, f.ThreadID
		t.clocks[m.AccountID] = m.CreatedAt
		if f.NewThread {
			if _, taken := t.threads[f.ThreadID]; taken {
				return nil, conflict("thread_id", "This thread id is taken.")
			}
			th := core.StartThread(f.ThreadID, m)
			t.threads[th.ID] = &th
		}
		m.ID = s.nextID()
		m.Attachments = nil
		for i, a := range nm.Attachments {
			a.MessageID, a.Position = m.ID, i
			if a.InSource {
				a.Content = nil
			}
			t.attachments[a.ID] = &a
			m.Attachments = append(m.Attachments, a.Attachment)
		}
		t.threads[m.ThreadID].Add(m)
		t.messages[m.ID] = &messageRow{EmailMessage: m, raw: nm.Raw, searchText: nm.SearchText}
		s.recordSend(m.AccountID, m.Direction, m.CreatedAt)
		record(ports.EffectMessage, strconv.FormatInt(m.ID, 10))
		if c := nm.Correspondent; c != nil && s.contactClash(*c) == "" {
			s.contacts[c.ID] = &contactRow{*c}
		}
		if e := nm.Outbox; e != nil {
			e := *e
			e.MessageID = m.ID
			t.outbox[m.ID] = &outboxRow{OutboxEntry: e}
		}
		if e, ok := core.MailEvent(m); ok {
			events = append(events, e)
		}
		out = append(out, m)
	}
	return out, s.writeEvents(events...)
}

// messageIndex answers core.MessageIndex under the lock SaveMail holds.
type messageIndex struct{ s *Store }

func (x messageIndex) ThreadOf(inboxID int64, messageID string) (string, bool, error) {
	r := x.s.findByMessageID(inboxID, messageID, "")
	if r == nil {
		return "", false, nil
	}
	return r.ThreadID, true, nil
}

func (x messageIndex) Received(inboxID int64, messageID string) (core.EmailMessage, bool, error) {
	r := x.s.findByMessageID(inboxID, messageID, core.Incoming)
	if r == nil {
		return core.EmailMessage{}, false, nil
	}
	return r.EmailMessage, true, nil
}

// findByMessageID is the latest message of an inbox with a Message-ID (of a
// direction, unless dir is empty).
func (s *Store) findByMessageID(inboxID int64, msgID string, dir core.Direction) *messageRow {
	if msgID == "" {
		return nil
	}
	var found *messageRow
	for _, r := range s.mail.messages {
		if r.InboxID == inboxID && r.MessageID == msgID && (dir == "" || r.Direction == dir) && (found == nil || r.ID > found.ID) {
			found = r
		}
	}
	return found
}

func (s *Store) Message(_ context.Context, accountID string, id int64) (core.EmailMessage, error) {
	if err := s.lock(); err != nil {
		return core.EmailMessage{}, err
	}
	defer s.mu.Unlock()
	r, ok := s.mailTables().messages[id]
	if !ok || r.AccountID != accountID {
		return core.EmailMessage{}, core.NotFound("Message not found.")
	}
	return r.EmailMessage, nil
}

func (s *Store) MessageByMessageID(_ context.Context, inboxID int64, messageID string) (core.EmailMessage, error) {
	if err := s.lock(); err != nil {
		return core.EmailMessage{}, err
	}
	defer s.mu.Unlock()
	s.mailTables()
	if r := s.findByMessageID(inboxID, messageID, ""); r != nil {
		return r.EmailMessage, nil
	}
	return core.EmailMessage{}, core.NotFound("Message not found.")
}

func (s *Store) Messages(_ context.Context, f ports.MessageFilter) ([]core.EmailMessage, int, error) {
	if err := s.lock(); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	rows := values(s.mailTables().messages, func(r *messageRow) bool {
		switch {
		case !f.Scope.Allows(r.AccountID, r.IdentityID),
			f.InboxID != 0 && r.InboxID != f.InboxID,
			f.ThreadID != "" && r.ThreadID != f.ThreadID,
			f.Direction != "" && r.Direction != f.Direction,
			f.FromEmail != "" && !strings.EqualFold(r.FromEmail, f.FromEmail),
			f.IsRead != nil && r.IsRead != *f.IsRead,
			f.Authenticated != nil && *f.Authenticated != (r.Authentication != nil && r.Authentication.Verdict == core.AuthPass),
			f.CreatedAfter != nil && !r.CreatedAt.After(*f.CreatedAfter),
			f.Search != nil && !s.searchMatches(*f.Search, r),
			!core.HasLabels(r.Labels, f.Labels, f.ExcludeLabels),
			r.Blocked && !f.IncludeBlocked,
			r.IsSpam && !f.IncludeSpam:
			return false
		}
		return true
	}, func(a, b *messageRow) bool {
		newest := f.NewestFirst || f.Search != nil // the fake does not rank: newest first
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt) != newest
		}
		return (a.ID < b.ID) != newest
	})
	total := countUpTo(len(rows), f.CountUpTo)
	rows = rows[min(f.Offset, len(rows)):]
	if f.Limit > 0 && len(rows) > f.Limit {
		rows = rows[:f.Limit]
	}
	out := make([]core.EmailMessage, len(rows))
	for i, r := range rows {
		out[i] = r.EmailMessage.Summary()
		if f.Search != nil {
			out[i].Highlights = core.Highlights(*f.Search, core.SearchMail, r.Subject, r.Text+"\n"+r.searchText)
		}
	}
	return out, total, nil
}

// threadMatch is the thread's newest message that q matches, or nil.
func (s *Store) threadMatch(q core.SearchQuery, threadID string) *messageRow {
	var newest *messageRow
	for _, r := range s.mailTables().messages {
		if r.ThreadID == threadID && (newest == nil || r.ID > newest.ID) && s.searchMatches(q, r) {
			newest = r
		}
	}
	return newest
}

// searchMatches is the SQL store's search of one message: the words by
// core.SearchMatches (without a real stemmer), the filters as its SQL.
func (s *Store) searchMatches(q core.SearchQuery, r *messageRow) bool {
	if !core.SearchMatches(q, core.SearchMail, r.Subject, r.Text+"\n"+r.searchText) {
		return false
	}
	contains := func(list []string, sub string) bool {
		for _, v := range list {
			if strings.Contains(strings.ToLower(v), sub) {
				return true
			}
		}
		return false
	}
	for _, v := range q.From {
		if !strings.Contains(strings.ToLower(r.FromEmail), v) {
			return false
		}
	}
	for _, v := range q.To {
		if !contains(r.To, v) && !contains(r.Cc, v) {
			return false
		}
	}
	var names []string
	attached := false
	for _, a := range s.mailTables().attachments {
		if a.MessageID == r.ID {
			names = append(names, a.Filename)
			attached = attached || !a.Inline
		}
	}
	for _, v := range q.Filenames {
		if !contains(names, v) {
			return false
		}
	}
	return !(q.HasAttachment && !attached || q.Unread && r.IsRead) && inDates(q, r.CreatedAt)
}

// inDates reports whether at is within q's after: and before:.
func inDates(q core.SearchQuery, at time.Time) bool {
	return (q.After == nil || !at.Before(*q.After)) && (q.Before == nil || at.Before(*q.Before))
}

func (s *Store) RawMessage(_ context.Context, accountID string, id int64) ([]byte, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	r, ok := s.mailTables().messages[id]
	if !ok || r.AccountID != accountID {
		return nil, core.NotFound("Message not found.")
	}
	return r.raw, nil
}

func (s *Store) SetRead(_ context.Context, accountID string, id int64, read bool) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	t := s.mailTables()
	r, ok := t.messages[id]
	if !ok || r.AccountID != accountID {
		return core.NotFound("Message not found.")
	}
	if r.IsRead == read {
		return nil
	}
	t.threads[r.ThreadID].UnreadCount += core.UnreadDelta(r.Direction, r.IsRead, read)
	r.IsRead = read
	return nil
}

func (s *Store) SetSpam(_ context.Context, accountID string, id int64, spam bool, v *core.Verification) (core.EmailMessage, error) {
	if err := s.lock(); err != nil {
		return core.EmailMessage{}, err
	}
	defer s.mu.Unlock()
	t := s.mailTables()
	r, ok := t.messages[id]
	if !ok || r.AccountID != accountID {
		return core.EmailMessage{}, core.NotFound("Message not found.")
	}
	wasSpam := r.IsSpam
	r.IsSpam, r.Verification = spam, v
	thread := s.recountThread(t.threads[r.ThreadID].Recount())
	t.threads[thread.ID] = &thread
	m := r.EmailMessage
	if e, ok := core.SpamMoveEvent(m, wasSpam); ok {
		return m, s.writeEvents(e)
	}
	return m, nil
}

// recountThread folds a thread's messages into thread, oldest first.
func (s *Store) recountThread(thread core.Thread) core.Thread {
	rest := values(s.mail.messages, func(o *messageRow) bool { return o.ThreadID == thread.ID }, func(a, b *messageRow) bool {
		return a.CreatedAt.Before(b.CreatedAt) || a.CreatedAt.Equal(b.CreatedAt) && a.ID < b.ID
	})
	for _, o := range rest {
		thread.Add(o.EmailMessage)
	}
	return thread
}

func (s *Store) DeleteMessage(_ context.Context, accountID string, id int64) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	t := s.mailTables()
	r, ok := t.messages[id]
	if !ok || r.AccountID != accountID {
		return core.NotFound("Message not found.")
	}
	delete(t.messages, id)
	delete(t.outbox, id)
	for aid, a := range t.attachments {
		if a.MessageID == id {
			delete(t.attachments, aid)
		}
	}
	thread := s.recountThread(t.threads[r.ThreadID].Recount())
	if thread.MessageCount == 0 {
		delete(t.threads, thread.ID)
	} else {
		t.threads[thread.ID] = &thread
	}
	return nil
}

func (s *Store) Thread(_ context.Context, accountID, id string) (core.Thread, error) {
	if err := s.lock(); err != nil {
		return core.Thread{}, err
	}
	defer s.mu.Unlock()
	th, ok := s.mailTables().threads[id]
	if !ok || th.AccountID != accountID {
		return core.Thread{}, core.NotFound("Thread not found.")
	}
	t := *th
	t.Labels = s.threadLabels(id)
	return t, nil
}

// threadLabels is the union of the labels of a thread's messages.
func (s *Store) threadLabels(id string) []string {
	var lists [][]string
	for _, r := range s.mailTables().messages {
		if r.ThreadID == id {
			lists = append(lists, r.Labels)
		}
	}
	if labels := core.UnionLabels(lists...); len(labels) > 0 {
		return labels
	}
	return nil
}

// LabelMessage implements ports.MailStore.
func (s *Store) LabelMessage(_ context.Context, accountID string, id int64, label string, add bool) (core.EmailMessage, error) {
	if err := s.lock(); err != nil {
		return core.EmailMessage{}, err
	}
	defer s.mu.Unlock()
	r, ok := s.mailTables().messages[id]
	if !ok || r.AccountID != accountID {
		return core.EmailMessage{}, core.NotFound("Message not found.")
	}
	var labels []string
	var changed bool
	if add {
		var err error
		if labels, changed, err = core.AddLabel(r.Labels, label); err != nil {
			return core.EmailMessage{}, err
		}
	} else {
		labels, changed = core.RemoveLabel(r.Labels, label)
	}
	if !changed {
		return r.EmailMessage, nil
	}
	r.Labels = labels
	if len(labels) == 0 {
		r.Labels = nil
	}
	return r.EmailMessage, s.writeEvents(core.LabelEvent(r.EmailMessage, label, add))
}

func (s *Store) Threads(_ context.Context, f ports.ThreadFilter) ([]core.Thread, int, error) {
	if err := s.lock(); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	rows := values(s.mailTables().threads, func(th *core.Thread) bool {
		return f.Scope.Allows(th.AccountID, th.IdentityID) && (f.InboxID == 0 || th.InboxID == f.InboxID) &&
			(f.HasUnread == nil || (th.UnreadCount > 0) == *f.HasUnread) &&
			(f.After == nil || th.LastMessageAt.Before(f.After.LastMessageAt) || th.LastMessageAt.Equal(f.After.LastMessageAt) && th.ID > f.After.ID) &&
			(f.Search == nil || s.threadMatch(*f.Search, th.ID) != nil) &&
			(len(f.Labels)+len(f.ExcludeLabels) == 0 || core.HasLabels(s.threadLabels(th.ID), f.Labels, f.ExcludeLabels)) &&
			th.MessageCount > 0
	}, func(a, b *core.Thread) bool {
		if !a.LastMessageAt.Equal(b.LastMessageAt) {
			return a.LastMessageAt.After(b.LastMessageAt)
		}
		return a.ID < b.ID
	})
	rows, total := pageOf(rows, f.Page)
	threads := derefAll(rows)
	for i := range threads {
		threads[i].Labels = s.threadLabels(threads[i].ID)
	}
	if f.Search != nil {
		for i := range threads {
			m := s.threadMatch(*f.Search, threads[i].ID)
			threads[i].Highlights = core.Highlights(*f.Search, core.SearchMail, m.Subject, m.Text+"\n"+m.searchText)
		}
	}
	return threads, total, nil
}

func (s *Store) SaveUpload(ctx context.Context, a ports.AttachmentContent) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	record, err := s.effect(ctx)
	if err != nil {
		return err
	}
	if !s.ownsIdentity(a.AccountID, a.IdentityID) {
		return core.NotFound("Identity not found.")
	}
	s.mailTables().attachments[a.ID] = &a
	record(ports.EffectAttachment, a.ID)
	return nil
}

func (s *Store) Attachment(_ context.Context, accountID, id string) (ports.AttachmentContent, error) {
	if err := s.lock(); err != nil {
		return ports.AttachmentContent{}, err
	}
	defer s.mu.Unlock()
	a, ok := s.mailTables().attachments[id]
	if !ok || a.AccountID != accountID {
		return ports.AttachmentContent{}, core.NotFound("Attachment not found.")
	}
	return *a, nil
}

func (s *Store) ClaimOutbox(_ context.Context, now, leaseUntil time.Time, limit int) ([]ports.OutboxEntry, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	due := values(s.mailTables().outbox, func(r *outboxRow) bool {
		return !r.NextAttempt.After(now) && !r.claimedUntil.After(now)
	}, func(a, b *outboxRow) bool {
		if !a.NextAttempt.Equal(b.NextAttempt) {
			return a.NextAttempt.Before(b.NextAttempt)
		}
		return a.MessageID < b.MessageID
	})
	var out []ports.OutboxEntry
	for _, r := range due[:min(limit, len(due))] {
		r.claimedUntil = leaseUntil
		r.Attempts++
		out = append(out, r.OutboxEntry)
	}
	return out, nil
}

func (s *Store) NextOutboxAttempt(context.Context) (time.Time, bool, error) {
	if err := s.lock(); err != nil {
		return time.Time{}, false, err
	}
	defer s.mu.Unlock()
	var next time.Time
	found := false
	for _, r := range s.mailTables().outbox {
		at := r.NextAttempt
		if r.claimedUntil.After(at) {
			at = r.claimedUntil
		}
		if !found || at.Before(next) {
			next, found = at, true
		}
	}
	return next, found, nil
}

func (s *Store) RetryOutbox(_ context.Context, e ports.OutboxEntry, lastError string) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	r, ok := s.mailTables().outbox[e.MessageID]
	if !ok {
		return core.NotFound("Outbox entry not found.")
	}
	r.Recipients, r.Failures, r.NextAttempt, r.claimedUntil = e.Recipients, e.Failures, e.NextAttempt, time.Time{}
	if m, ok := s.mailTables().messages[e.MessageID]; ok {
		m.DeliveryError = lastError
	}
	return nil
}

func (s *Store) FinishOutbox(_ context.Context, messageID int64, status core.DeliveryStatus, deliveryError string, recipients []core.Recipient) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	t := s.mailTables()
	delete(t.outbox, messageID)
	r, ok := t.messages[messageID]
	if !ok {
		return core.NotFound("Message not found.")
	}
	r.DeliveryStatus, r.DeliveryError, r.Recipients = status, deliveryError, recipients
	if e, ok := core.DeliveryEvent(r.EmailMessage); ok {
		return s.writeEvents(e)
	}
	return nil
}

func (s *Store) SetRecipients(_ context.Context, messageID int64, recipients []core.Recipient) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	r, ok := s.mailTables().messages[messageID]
	if !ok {
		return core.NotFound("Message not found.")
	}
	r.Recipients = append([]core.Recipient(nil), recipients...)
	return nil
}

func (s *Store) MessageByBounceToken(_ context.Context, token string) (core.EmailMessage, error) {
	if err := s.lock(); err != nil {
		return core.EmailMessage{}, err
	}
	defer s.mu.Unlock()
	for _, r := range s.mailTables().messages {
		if token != "" && r.BounceToken == token {
			return r.EmailMessage, nil
		}
	}
	return core.EmailMessage{}, core.NotFound("Message not found.")
}

func (s *Store) SentMessageByMessageID(_ context.Context, messageID string) (core.EmailMessage, error) {
	if err := s.lock(); err != nil {
		return core.EmailMessage{}, err
	}
	defer s.mu.Unlock()
	var found *core.EmailMessage
	for _, r := range s.mailTables().messages {
		if r.Direction == core.Outgoing && r.MessageID == messageID && (found == nil || r.ID < found.ID) {
			found = &r.EmailMessage
		}
	}
	if found == nil {
		return core.EmailMessage{}, core.NotFound("Message not found.")
	}
	return *found, nil
}

func (s *Store) ApplyReport(_ context.Context, messageID int64, report []core.DSNRecipient) (core.EmailMessage, []core.DSNRecipient, error) {
	if err := s.lock(); err != nil {
		return core.EmailMessage{}, nil, err
	}
	defer s.mu.Unlock()
	r, ok := s.mailTables().messages[messageID]
	if !ok {
		return core.EmailMessage{}, nil, core.NotFound("Message not found.")
	}
	var applied []core.DSNRecipient
	r.Recipients, r.DeliveryStatus, applied = core.ApplyReport(r.Recipients, r.DeliveryStatus, report)
	if err := s.writeEvents(core.ReportEvents(r.EmailMessage, applied)...); err != nil {
		return core.EmailMessage{}, nil, err
	}
	return r.EmailMessage, applied, nil
}
