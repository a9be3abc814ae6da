package app

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Sources feeds inboxes from mailboxes that already exist elsewhere: an
// inbox may name one IMAP folder whose mail is pulled and delivered as if
// it had arrived over SMTP. The settings are kept here; the workers that
// pull (the IMAP adapter) come back for the settings, to deliver and to
// record how far they got.
type Sources struct {
	base
	store   ports.MailSourceStore
	inboxes *Inboxes // the inbox a source feeds
	// receiving takes what sources pull, through the inbound path.
	receiving *Receiving
	cipher    ports.Cipher
	// destinations holds the hosts sources name to the outbound-destination
	// policy, at PUT and again at every connection.
	destinations ports.Destinations
	// changed nudges the workers after a source is added, changed or removed.
	changed chan struct{}
}

// SourceInput is the body of a PUT; nil means absent.
type SourceInput struct {
	Host, Username, Password, TLS, Folder *string
	Port                                  *int
}

// Put creates or replaces the source of an inbox the caller may see, and
// reports whether it created it. Absent fields take their defaults, except
// the password: the API never shows it, so a replacement may leave it out
// to keep the stored one. The delivery cursor survives a change that reads
// the same folder of the same account; otherwise the new folder is read from
// the start, and Message-IDs keep mail already delivered from coming twice.
func (s *Sources) Put(ctx context.Context, p core.Principal, inboxID int64, in SourceInput) (core.MailSource, bool, error) {
	inbox, err := s.inboxes.Inbox(ctx, p, inboxID)
	if err != nil {
		return core.MailSource{}, false, err
	}
	existing, err := s.store.MailSource(ctx, inbox.AccountID, inbox.ID)
	created := isNotFound(err)
	if err != nil && !created {
		return core.MailSource{}, false, err
	}
	now := s.now()
	src := core.MailSource{ID: inbox.UUID, AccountID: inbox.AccountID, IdentityID: inbox.IdentityID, InboxID: inbox.ID,
		TLS: core.SourceImplicitTLS, Folder: core.DefaultSourceFolder, CreatedAt: now, UpdatedAt: now}
	for dst, v := range map[*string]*string{&src.Host: in.Host, &src.Username: in.Username, &src.Folder: in.Folder} {
		if v != nil {
			*dst = strings.TrimSpace(*v)
		}
	}
	if in.TLS != nil {
		src.TLS = core.SourceTLS(strings.ToLower(strings.TrimSpace(*in.TLS)))
	}
	src.Port = core.DefaultSourcePort(src.TLS)
	if in.Port != nil {
		src.Port = *in.Port
	}
	if in.Password != nil {
		src.Password = *in.Password
	} else if !created {
		if src.Password, err = s.openPassword(existing); err != nil {
			return core.MailSource{}, false, err
		}
	}
	if err := core.ValidateMailSource(src); err != nil {
		return core.MailSource{}, false, err
	}
	if err := s.checkHost(ctx, src.Host); err != nil {
		return core.MailSource{}, false, err
	}
	if !created {
		src.CreatedAt = existing.Source.CreatedAt
		// UpdatedAt is the version workers check their settings against: it must move.
		if !src.UpdatedAt.After(existing.Source.UpdatedAt) {
			src.UpdatedAt = existing.Source.UpdatedAt.Add(time.Microsecond)
		}
		if src.SameMailbox(existing.Source) {
			src.Progress.UIDValidity, src.Progress.LastUID = existing.Source.Progress.UIDValidity, existing.Source.Progress.LastUID
		}
	}
	sealed, err := s.cipher.Seal([]byte(src.Password), aad("mail_sources", "password", src.ID))
	if err != nil {
		return core.MailSource{}, false, err
	}
	src.Password = "" // stores see it sealed only
	if err := s.store.SaveMailSource(ctx, ports.StoredMailSource{Source: src, Password: sealed}); err != nil {
		return core.MailSource{}, false, err
	}
	s.nudge()
	return src, created, nil
}

// Get shows an inbox's source, without its password.
func (s *Sources) Get(ctx context.Context, p core.Principal, inboxID int64) (core.MailSource, error) {
	inbox, err := s.inboxes.Inbox(ctx, p, inboxID)
	if err != nil {
		return core.MailSource{}, err
	}
	stored, err := s.store.MailSource(ctx, inbox.AccountID, inbox.ID)
	return stored.Source, err
}

// Delete removes an inbox's source; its worker stops. Mail already pulled stays.
func (s *Sources) Delete(ctx context.Context, p core.Principal, inboxID int64) error {
	inbox, err := s.inboxes.Inbox(ctx, p, inboxID)
	if err != nil {
		return err
	}
	if err := s.store.DeleteMailSource(ctx, inbox.AccountID, inbox.ID); err != nil {
		return err
	}
	s.nudge()
	return nil
}

// checkHost resolves a source's host and refuses it, naming the field, when
// the server may not connect there (core.DestinationPolicy).
func (s *Sources) checkHost(ctx context.Context, host string) error {
	if s.destinations == nil {
		return core.Unavailable("mail sources are not available on this server")
	}
	_, err := s.destinations.Resolve(ctx, host)
	var refused *core.DestinationError
	var dnsErr *net.DNSError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &refused):
		return core.Invalid("host", "%s", refused.Error())
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return core.Invalid("host", "%s does not resolve to an address.", host)
	case errors.As(err, &dnsErr):
		return core.Unavailable("the host %s could not be resolved just now; try again later", host)
	}
	return err
}

// Dial connects to a source's server through the outbound-destination
// policy, checking the host again: its addresses may have changed since the
// source was saved.
func (s *Sources) Dial(ctx context.Context, src core.MailSource) (net.Conn, error) {
	if s.destinations == nil {
		return nil, core.Unavailable("mail sources are not available on this server")
	}
	return s.destinations.DialContext(ctx, "tcp", net.JoinHostPort(src.Host, strconv.Itoa(src.Port)))
}

func (s *Sources) nudge() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Changed signals that this process added, changed or removed a source.
// Other instances' changes show in Claim, which workers call now and then.
func (s *Sources) Changed() <-chan struct{} { return s.changed }

func (s *Sources) openPassword(stored ports.StoredMailSource) (string, error) {
	pw, err := s.cipher.Open(stored.Password, aad("mail_sources", "password", stored.Source.ID))
	return string(pw), err
}

// Claim leases to owner (one running set of workers) the sources no other
// owner holds, renews the leases it holds, and lists every source it now
// holds, with its password: the ones its workers pull until the lease ends.
// A source whose password cannot be opened (its vault key is gone) is left
// out and logged.
func (s *Sources) Claim(ctx context.Context, owner string, lease time.Duration) ([]core.MailSource, error) {
	now := s.now()
	stored, err := s.store.ClaimMailSources(ctx, owner, now, now.Add(lease))
	if err != nil {
		return nil, err
	}
	out := make([]core.MailSource, 0, len(stored))
	for _, st := range stored {
		src := st.Source
		if src.Password, err = s.openPassword(st); err != nil {
			s.log.Error("mail source: the stored password cannot be opened", "source", src.ID, "err", err)
			continue
		}
		out = append(out, src)
	}
	return out, nil
}

// Release gives up owner's leases, for other instances to take at once.
func (s *Sources) Release(ctx context.Context, owner string) error {
	return s.store.ReleaseMailSources(ctx, owner)
}

// Deliver stores a message pulled from src in its inbox through the inbound
// path (threads, attachments, contacts as for SMTP). A message the inbox
// already holds (by Message-ID) is not stored again, which makes a pull
// that is repeated after a crash or a UIDVALIDITY change harmless. An
// account at its storage quota gets nothing: the error names the quota, and
// the worker waits without moving past the message.
func (s *Sources) Deliver(ctx context.Context, src core.MailSource, raw []byte) error {
	inbox, err := s.inboxes.inboxByID(ctx, src.InboxID)
	if err != nil {
		return err
	}
	if err := s.receiving.roomFor(ctx, inbox); err != nil {
		return err
	}
	_, err = s.receiving.Deliver(ctx, InboundMail{Inboxes: []core.Inbox{inbox}, Raw: raw, Dedupe: true})
	return err
}

// DefaultMaxMessageBytes bounds what a source fetches when no message size
// limit is configured (CALLSIGN_SMTP_MAX_BYTES's default).
const DefaultMaxMessageBytes = 25 << 20

// MaxMessageBytes is the largest message a source may deliver: workers
// skip larger ones without fetching them.
func (s *Sources) MaxMessageBytes() int64 {
	if s.receiving.maxBytes <= 0 {
		return DefaultMaxMessageBytes
	}
	return s.receiving.maxBytes
}

// Record saves a worker's progress. It reports false when the source was
// changed or removed since src was read: the worker is out of date and stops.
func (s *Sources) Record(ctx context.Context, src core.MailSource, p core.SourceProgress) (bool, error) {
	return s.store.SaveSourceProgress(ctx, src.ID, src.UpdatedAt, p)
}
