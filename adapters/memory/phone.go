package memory

import (
	"context"
	"strconv"
	"strings"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// phoneTables are the maps of the phone store, created on first use.
type phoneTables struct {
	phones        map[int64]*core.PhoneNumber
	sms           map[int64]*core.SMSMessage
	conversations map[string]*core.Conversation // by conversation id
	voice         map[string]*core.VoiceAgent   // by identity
	calls         map[int64]*core.Call
	recordings    map[int64][]byte // by call; one whose call is gone is gone too
}

func (s *Store) phoneTables() *phoneTables {
	if s.phone.phones == nil {
		s.phone = phoneTables{phones: map[int64]*core.PhoneNumber{}, sms: map[int64]*core.SMSMessage{},
			conversations: map[string]*core.Conversation{}, voice: map[string]*core.VoiceAgent{},
			calls: map[int64]*core.Call{}, recordings: map[int64][]byte{}}
	}
	return &s.phone
}

// phoneOf is the number of an identity, "" when it has none.
func (s *Store) phoneOf(identityID string) string {
	for _, p := range s.phoneTables().phones {
		if p.IdentityID == identityID {
			return p.Number
		}
	}
	return ""
}

// addPhone stores p, checking the rules of CreatePhone.
func (s *Store) addPhone(p core.PhoneNumber) (int64, error) {
	for _, o := range s.phoneTables().phones {
		if o.IdentityID == p.IdentityID {
			return 0, conflict("identity_id", "This identity already has a phone number.")
		}
		if o.Number == p.Number {
			return 0, conflict("number", "This number is already provisioned.")
		}
	}
	p.ID = s.nextID()
	s.phone.phones[p.ID] = &p
	return p.ID, nil
}

func (s *Store) CreatePhone(ctx context.Context, p core.PhoneNumber) (int64, error) {
	if err := s.lock(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	record, err := s.effect(ctx)
	if err != nil {
		return 0, err
	}
	if !s.ownsIdentity(p.AccountID, p.IdentityID) {
		return 0, core.NotFound("Identity not found.")
	}
	id, err := s.addPhone(p)
	if err != nil {
		return 0, err
	}
	s.identities[p.IdentityID].UpdatedAt = p.CreatedAt
	record(ports.EffectPhone, strconv.FormatInt(id, 10))
	p.ID = id
	return id, s.writeEvents(core.PhoneEvent(core.PhoneProvisioned, p))
}

func (s *Store) Phone(_ context.Context, accountID string, id int64) (core.PhoneNumber, error) {
	if err := s.lock(); err != nil {
		return core.PhoneNumber{}, err
	}
	defer s.mu.Unlock()
	p, ok := s.phoneTables().phones[id]
	if !ok || p.AccountID != accountID {
		return core.PhoneNumber{}, core.NotFound("Phone number not found.")
	}
	return *p, nil
}

func (s *Store) findPhone(match func(*core.PhoneNumber) bool) (core.PhoneNumber, error) {
	for _, p := range s.phoneTables().phones {
		if match(p) {
			return *p, nil
		}
	}
	return core.PhoneNumber{}, core.NotFound("Phone number not found.")
}

func (s *Store) PhoneByNumber(_ context.Context, number string) (core.PhoneNumber, error) {
	if err := s.lock(); err != nil {
		return core.PhoneNumber{}, err
	}
	defer s.mu.Unlock()
	return s.findPhone(func(p *core.PhoneNumber) bool { return p.Number == number })
}

func (s *Store) PhoneOfIdentity(_ context.Context, accountID, identityID string) (core.PhoneNumber, error) {
	if err := s.lock(); err != nil {
		return core.PhoneNumber{}, err
	}
	defer s.mu.Unlock()
	return s.findPhone(func(p *core.PhoneNumber) bool { return p.AccountID == accountID && p.IdentityID == identityID })
}

func (s *Store) Phones(_ context.Context, scope core.Scope, page ports.Page) ([]core.PhoneNumber, int, error) {
	if err := s.lock(); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	rows := values(s.phoneTables().phones, func(p *core.PhoneNumber) bool { return scope.Allows(p.AccountID, p.IdentityID) },
		func(a, b *core.PhoneNumber) bool { return a.ID < b.ID })
	rows, total := pageOf(rows, page)
	out := make([]core.PhoneNumber, len(rows))
	for i, r := range rows {
		out[i] = *r
	}
	return out, total, nil
}

func (s *Store) SaveSMS(ctx context.Context, n ports.NewSMS) (core.SMSMessage, bool, error) {
	if err := s.lock(); err != nil {
		return core.SMSMessage{}, false, err
	}
	defer s.mu.Unlock()
	record, err := s.effect(ctx)
	if err != nil {
		return core.SMSMessage{}, false, err
	}
	t := s.phoneTables()
	m := n.Message
	if m.ProviderSID != "" {
		for _, o := range t.sms {
			if o.ProviderSID == m.ProviderSID {
				return *o, false, nil
			}
		}
	}
	if _, ok := t.phones[m.PhoneID]; !ok {
		return core.SMSMessage{}, false, core.NotFound("Phone number not found.")
	}
	m.ID = s.nextID()
	t.sms[m.ID] = &m
	s.recordSend(m.AccountID, m.Direction, m.CreatedAt)
	record(ports.EffectSMS, strconv.FormatInt(m.ID, 10))
	c, ok := t.conversations[core.ConversationID(m.PhoneID, m.Counterpart())]
	if !ok {
		started := core.StartConversation(m)
		c = &started
		t.conversations[c.ID] = c
	}
	c.Add(m)
	if ct := n.Correspondent; ct != nil && s.contactClash(*ct) == "" {
		s.contacts[ct.ID] = &contactRow{*ct}
	}
	if e, ok := core.SMSEvent(m); ok {
		return m, true, s.writeEvents(e)
	}
	return m, true, nil
}

func (s *Store) SMS(_ context.Context, accountID string, id int64) (core.SMSMessage, error) {
	if err := s.lock(); err != nil {
		return core.SMSMessage{}, err
	}
	defer s.mu.Unlock()
	m, ok := s.phoneTables().sms[id]
	if !ok || m.AccountID != accountID {
		return core.SMSMessage{}, core.NotFound("Message not found.")
	}
	return *m, nil
}

func (s *Store) SMSList(_ context.Context, f ports.SMSFilter) ([]core.SMSMessage, int, error) {
	if err := s.lock(); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	rows := values(s.phoneTables().sms, func(m *core.SMSMessage) bool {
		return f.Scope.Allows(m.AccountID, m.IdentityID) && (f.Direction == "" || m.Direction == f.Direction) &&
			(f.IsRead == nil || m.IsRead == *f.IsRead) && (f.PhoneID == 0 || m.PhoneID == f.PhoneID) &&
			(f.Counterpart == "" || m.Counterpart() == f.Counterpart) && (f.IncludeBlocked || !m.Blocked) &&
			(f.Search == nil || textMatches(*f.Search, m))
	}, func(a, b *core.SMSMessage) bool {
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt) == f.Oldest
		}
		return (a.ID < b.ID) == f.Oldest
	})
	rows, total := pageOf(rows, f.Page)
	out := make([]core.SMSMessage, len(rows))
	for i, r := range rows {
		out[i] = *r
		if f.Search != nil {
			out[i].Highlights = core.Highlights(*f.Search, core.SearchTexts, "", r.Body)
		}
	}
	return out, total, nil
}

// textMatches is the SQL store's search of one text: the words by
// core.SearchMatches (without a real stemmer), the filters as its SQL.
func textMatches(q core.SearchQuery, m *core.SMSMessage) bool {
	for _, v := range q.From {
		if !strings.Contains(strings.ToLower(m.FromNumber), v) {
			return false
		}
	}
	for _, v := range q.To {
		if !strings.Contains(strings.ToLower(m.ToNumber), v) {
			return false
		}
	}
	return core.SearchMatches(q, core.SearchTexts, "", m.Body) && !(q.Unread && m.IsRead) && inDates(q, m.CreatedAt)
}

func (s *Store) SetSMSRead(_ context.Context, accountID string, id int64, read bool) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	t := s.phoneTables()
	m, ok := t.sms[id]
	if !ok || m.AccountID != accountID {
		return core.NotFound("Message not found.")
	}
	if m.IsRead == read {
		return nil
	}
	t.conversations[core.ConversationID(m.PhoneID, m.Counterpart())].UnreadCount += core.UnreadDelta(m.Direction, m.IsRead, read)
	m.IsRead = read
	return nil
}

func (s *Store) UpdateSMSStatus(_ context.Context, sid string, status core.SMSStatus, errText string) (bool, error) {
	if err := s.lock(); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	for _, m := range s.phoneTables().sms {
		if m.ProviderSID == sid {
			if !core.SMSStatusFollows(m.Status, status) {
				return true, nil
			}
			m.Status, m.Error = status, errText
			return true, s.writeEvents(core.SMSReportEvent(*m))
		}
	}
	return false, nil
}

func (s *Store) SetSMSProvider(_ context.Context, id int64, sid string, status core.SMSStatus) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	m, ok := s.phoneTables().sms[id]
	if !ok {
		return core.NotFound("Message not found.")
	}
	m.ProviderSID, m.Status = sid, status
	return s.writeEvents(core.SMSProviderEvent(*m))
}

func (s *Store) DeleteSMS(_ context.Context, accountID string, id int64) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	t := s.phoneTables()
	m, ok := t.sms[id]
	if !ok || m.AccountID != accountID {
		return core.NotFound("Message not found.")
	}
	delete(t.sms, id)
	cid := core.ConversationID(m.PhoneID, m.Counterpart())
	delete(t.conversations, cid)
	rest := values(t.sms, func(o *core.SMSMessage) bool { return o.PhoneID == m.PhoneID && o.Counterpart() == m.Counterpart() },
		func(a, b *core.SMSMessage) bool {
			return a.CreatedAt.Before(b.CreatedAt) || a.CreatedAt.Equal(b.CreatedAt) && a.ID < b.ID
		})
	if len(rest) > 0 {
		msgs := make([]core.SMSMessage, len(rest))
		for i, o := range rest {
			msgs[i] = *o
		}
		c := core.SummarizeConversation(msgs)
		t.conversations[cid] = &c
	}
	return nil
}

func (s *Store) Conversations(_ context.Context, f ports.ConversationFilter) ([]core.Conversation, int, error) {
	if err := s.lock(); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	rows := values(s.phoneTables().conversations, func(c *core.Conversation) bool {
		return f.Scope.Allows(c.AccountID, c.IdentityID) && (f.PhoneID == 0 || c.PhoneID == f.PhoneID) &&
			(f.HasUnread == nil || (c.UnreadCount > 0) == *f.HasUnread) && c.MessageCount > 0
	}, func(a, b *core.Conversation) bool {
		if !a.LastMessageAt.Equal(b.LastMessageAt) {
			return a.LastMessageAt.After(b.LastMessageAt)
		}
		return strings.Compare(a.ID, b.ID) < 0
	})
	rows, total := pageOf(rows, f.Page)
	out := make([]core.Conversation, len(rows))
	for i, r := range rows {
		out[i] = *r
	}
	return out, total, nil
}

func (s *Store) Conversation(_ context.Context, accountID string, phoneID int64, counterpart string) (core.Conversation, error) {
	if err := s.lock(); err != nil {
		return core.Conversation{}, err
	}
	defer s.mu.Unlock()
	c, ok := s.phoneTables().conversations[core.ConversationID(phoneID, counterpart)]
	if !ok || c.AccountID != accountID {
		return core.Conversation{}, core.NotFound("Conversation not found.")
	}
	return *c, nil
}

func (s *Store) VoiceAgent(_ context.Context, accountID, identityID string) (core.VoiceAgent, error) {
	if err := s.lock(); err != nil {
		return core.VoiceAgent{}, err
	}
	defer s.mu.Unlock()
	v, ok := s.phoneTables().voice[identityID]
	if !ok || v.AccountID != accountID {
		return core.VoiceAgent{}, core.NotFound("No voice agent is configured.")
	}
	return *v, nil
}

func (s *Store) SaveVoiceAgent(_ context.Context, v core.VoiceAgent) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if !s.ownsIdentity(v.AccountID, v.IdentityID) {
		return core.NotFound("Identity not found.")
	}
	s.phoneTables().voice[v.IdentityID] = &v
	return nil
}
