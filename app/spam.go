package app

import (
	"context"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// spamFilter is the spam filter and the time limit of each call to it.
type spamFilter struct {
	checker ports.SpamChecker // nil: no filter
	timeout time.Duration
}

// MarkSpam files a received message as spam (spam true) or moves it out,
// as the person says, then teaches the spam filter with its stored source.
// Moving it out examines it for a code or link, which spam is not
// (Receiving.Deliver). The move stands whether or not the filter learns:
// learned reports whether it did (false with no filter configured, or when
// it failed, which is logged).
func (s *Reading) MarkSpam(ctx context.Context, p core.Principal, id int64, spam bool) (m core.EmailMessage, learned bool, err error) {
	if m, err = s.Message(ctx, p, id); err != nil {
		return m, false, err
	}
	if m.Direction != core.Incoming {
		return m, false, core.Invalid(core.NonFieldErrors, "Only received mail can be marked as spam or not.")
	}
	raw, err := s.messages.RawMessage(ctx, m.AccountID, m.ID)
	if err != nil {
		return m, false, err
	}
	var v *core.Verification
	if !spam && !m.Blocked {
		parsed, err := s.parser.Describe(raw)
		if err != nil {
			return m, false, err
		}
		v = examine(parsed, m.FromEmail)
	}
	wasSpam := m.IsSpam
	if m, err = s.messages.SetSpam(ctx, m.AccountID, m.ID, spam, v); err != nil {
		return m, false, err
	}
	s.changes.notify(m.InboxID)
	if v != nil && wasSpam {
		s.verified.notify(m.IdentityID)
	}
	s.log.Info("mail marked", "message", m.ID, "inbox", m.InboxID, "identity", m.IdentityID, "spam", spam)
	return m, s.learn(ctx, m, spam, raw), nil
}

// learn teaches the filter, under its time limit; a failure is logged.
func (s *Reading) learn(ctx context.Context, m core.EmailMessage, spam bool, raw []byte) bool {
	if s.spam.checker == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, s.spam.timeout)
	defer cancel()
	if err := s.spam.checker.Learn(ctx, spam, raw); err != nil {
		s.log.Warn("spam filter did not learn; the message moved anyway", "message", m.ID, "spam", spam, "err", err)
		return false
	}
	return true
}
