package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Domains is mail domains: the platform's, and the accounts' own, which
// are verified through the DNS and sign what leaves them with DKIM.
type Domains struct {
	base
	store    ports.DomainStore
	gate     gate // a new domain needs an active subscription
	resolver ports.Resolver
	names    ports.MailAuthenticator // which names are registrable
	signer   ports.DKIMSigner
	cipher   ports.Cipher

	settings core.DomainSettings
	// platform are the platform's mail domains (CALLSIGN_MAIL_DOMAINS).
	platform []string
	// platformKeys sign mail from the platform domains, each with its own
	// signature (CALLSIGN_DKIM_KEY_FILE, CALLSIGN_DKIM_SELECTOR).
	platformKeys []ports.DKIMKeyPair
}

// MaxCustomDomains bounds the domains of one account.
const MaxCustomDomains = 100

// The background checker: how often it looks for due domains, how many
// it takes at once, and how long a claimed domain is ours.
const (
	domainCheckPoll  = 30 * time.Second
	domainCheckBatch = 8
	domainCheckLease = 2 * time.Minute
)

// List is the platform domains, then the account's own.
func (s *Domains) List(ctx context.Context, p core.Principal) ([]core.Domain, error) {
	out := make([]core.Domain, 0, len(s.platform))
	for _, d := range s.platform {
		out = append(out, core.Domain{Name: d, Type: core.DomainPlatform, Status: core.DomainVerified})
	}
	custom, err := s.store.CustomDomains(ctx, p.AccountID)
	return append(out, custom...), err
}

// isPlatform reports whether name is a platform domain.
func (s *Domains) isPlatform(name string) bool {
	for _, d := range s.platform {
		if d == name {
			return true
		}
	}
	return false
}

// ForInbox checks that an account may put a new inbox on domain: a
// platform domain, or its own verified domain. The error names the field.
func (s *Domains) ForInbox(ctx context.Context, accountID, field, domain string) error {
	if s.isPlatform(domain) {
		return nil
	}
	d, err := s.store.DomainByName(ctx, domain)
	if err != nil && !isNotFound(err) {
		return err
	}
	if err == nil && d.TakesNewInboxes(accountID) {
		return nil
	}
	if err == nil && d.AccountID == accountID {
		return core.Invalid(field, "The domain %q is not verified yet: publish its records and verify it.", domain)
	}
	return core.Invalid(field, "The service does not receive mail for %q.", domain)
}

// Receiving reports whether mail for domain is ours, and whose: "" for a
// platform domain, the owning account for a custom one.
func (s *Domains) Receiving(ctx context.Context, domain string) (served bool, owner string, err error) {
	if s.isPlatform(domain) {
		return true, "", nil
	}
	d, err := s.store.DomainByName(ctx, domain)
	if isNotFound(err) {
		return false, "", nil
	}
	if err != nil {
		return false, "", err
	}
	return d.ReceivesMail(), d.AccountID, nil
}

// Get is one of the account's own domains.
func (s *Domains) Get(ctx context.Context, p core.Principal, name string) (core.Domain, error) {
	return s.store.CustomDomain(ctx, p.AccountID, core.NormalizeDomain(name))
}

// Create adds a domain to the account: pending, with a new DKIM key, and
// the records to publish.
func (s *Domains) Create(ctx context.Context, p core.Principal, name string) (core.Domain, error) {
	if err := requireManagement(p); err != nil {
		return core.Domain{}, err
	}
	name, err := core.NormalizeDomainName("name", name)
	if err != nil {
		return core.Domain{}, err
	}
	if org, ok := s.names.Organization(name); !ok || org == "" {
		return core.Domain{}, core.Invalid("name", "%s is a public suffix, not a domain anyone registers.", name)
	}
	if s.isPlatform(name) {
		return core.Domain{}, core.Invalid("name", "%s is a platform domain: every account has it already.", name)
	}
	if err := s.gate.allow(ctx, p.AccountID, core.ActAddDomain); err != nil {
		return core.Domain{}, err
	}
	if have, err := s.store.CustomDomains(ctx, p.AccountID); err != nil {
		return core.Domain{}, err
	} else if len(have) >= MaxCustomDomains {
		return core.Domain{}, core.Invalid("name", "An account may have at most %d domains.", MaxCustomDomains)
	}
	now := s.now()
	key, err := s.newKey(name, now, true)
	if err != nil {
		return core.Domain{}, err
	}
	d := core.Domain{Name: name, Type: core.DomainCustom, Status: core.DomainPending, AccountID: p.AccountID,
		Reason: s.settings.UncheckedReason(), CreatedAt: now, NextCheckAt: now.Add(core.DomainCheckEarly), MTASTSMode: core.MTASTSTesting}
	if err := s.store.CreateCustomDomain(ctx, d, key); err != nil {
		return core.Domain{}, err
	}
	d.Keys = []core.DKIMKey{key.Key}
	return d, nil
}

// newKey makes a key pair for domain under a fresh selector and seals its
// private half, bound to the key's row.
func (s *Domains) newKey(domain string, now time.Time, active bool) (ports.StoredDKIMKey, error) {
	selector := "cs" + now.Format("20060102") + strings.ReplaceAll(s.ids.NewUUID(), "-", "")[:6]
	pair, err := s.signer.NewKey(selector)
	if err != nil {
		return ports.StoredDKIMKey{}, fmt.Errorf("making a DKIM key: %w", err)
	}
	k := ports.StoredDKIMKey{ID: s.ids.NewUUID(), Domain: domain, Key: pair.Public}
	k.Key.Active, k.Key.CreatedAt = active, now
	if k.Private, err = s.cipher.Seal(pair.Private, aad("dkim_keys", "private_key", k.ID)); err != nil {
		return ports.StoredDKIMKey{}, err
	}
	return k, nil
}

// MaxInboxesNamed bounds the inboxes a refused delete names.
const MaxInboxesNamed = 10

// Delete removes a domain the account's inboxes no longer use.
func (s *Domains) Delete(ctx context.Context, p core.Principal, name string) error {
	if err := requireManagement(p); err != nil {
		return err
	}
	d, err := s.Get(ctx, p, name)
	if err != nil {
		return err
	}
	using, err := s.store.InboxesOnDomain(ctx, d.Name, MaxInboxesNamed+1)
	if err != nil {
		return err
	}
	if len(using) > 0 {
		more := ""
		if len(using) > MaxInboxesNamed {
			using, more = using[:MaxInboxesNamed], " and more"
		}
		return core.Conflict("Inboxes use %s: %s%s. Remove them first.", d.Name, strings.Join(using, ", "), more)
	}
	return s.store.DeleteCustomDomain(ctx, p.AccountID, d.Name)
}

// SetMTASTSMode changes the mode of the MTA-STS policy served for a
// domain (testing first; enforce when its owner is sure of TLS). The
// policy's id changes with it, so its _mta-sts record must be updated.
func (s *Domains) SetMTASTSMode(ctx context.Context, p core.Principal, name, mode string) (core.Domain, error) {
	if err := requireManagement(p); err != nil {
		return core.Domain{}, err
	}
	m, err := core.ParseMTASTSMode("mta_sts_mode", mode)
	if err != nil {
		return core.Domain{}, err
	}
	d, err := s.Get(ctx, p, name)
	if err != nil {
		return core.Domain{}, err
	}
	if err := s.store.SetMTASTSMode(ctx, p.AccountID, d.Name, m); err != nil {
		return core.Domain{}, err
	}
	d.MTASTSMode = m
	return d, nil
}

// MTASTSPolicy is the policy served at https://mta-sts.<domain>/ for the
// host a request named: only for a custom domain that receives mail here.
func (s *Domains) MTASTSPolicy(ctx context.Context, host string) (string, error) {
	name, ok := strings.CutPrefix(core.NormalizeDomain(host), "mta-sts.")
	notFound := core.NotFound("No MTA-STS policy is served for %s.", host)
	if !ok {
		return "", notFound
	}
	d, err := s.store.DomainByName(ctx, name)
	if isNotFound(err) {
		return "", notFound
	}
	if err != nil {
		return "", err
	}
	policy, ok := d.MTASTSPolicy(s.settings)
	if !ok || !d.ReceivesMail() {
		return "", notFound
	}
	return policy, nil
}

// ServesMTASTS reports whether a policy is served for d once it receives mail.
func (s *Domains) ServesMTASTS(d core.Domain) bool {
	_, ok := d.MTASTSPolicy(s.settings)
	return ok
}

// Verify looks the domain's records up now.
func (s *Domains) Verify(ctx context.Context, p core.Principal, name string) (core.Domain, error) {
	if err := requireManagement(p); err != nil {
		return core.Domain{}, err
	}
	d, err := s.Get(ctx, p, name)
	if err != nil {
		return core.Domain{}, err
	}
	return s.check(ctx, d)
}

// RotateDKIM makes the domain's next key. The current key signs until the
// next one's record verifies; then the next one signs and the old one goes.
func (s *Domains) RotateDKIM(ctx context.Context, p core.Principal, name string) (core.Domain, error) {
	if err := requireManagement(p); err != nil {
		return core.Domain{}, err
	}
	d, err := s.Get(ctx, p, name)
	if err != nil {
		return core.Domain{}, err
	}
	if d.Status == core.DomainPending {
		return core.Domain{}, core.Conflict("%s is not verified yet: publish its records first; its key has not signed anything.", d.Name)
	}
	now := s.now()
	key, err := s.newKey(d.Name, now, false)
	if err != nil {
		return core.Domain{}, err
	}
	if err := s.store.AddDKIMKey(ctx, p.AccountID, key); err != nil {
		return core.Domain{}, err
	}
	// Look at the new record early, as for a new domain.
	d, err = s.Get(ctx, p, d.Name)
	if err != nil {
		return core.Domain{}, err
	}
	d.NextCheckAt = now.Add(core.DomainCheckEarly)
	if err := s.store.SaveDomainCheck(ctx, d, ""); err != nil {
		return core.Domain{}, err
	}
	return d, nil
}

// check looks a domain's records up, applies core's rules and stores the
// outcome.
func (s *Domains) check(ctx context.Context, d core.Domain) (core.Domain, error) {
	answers := s.lookup(ctx, d)
	c := d.Check(answers, s.settings, s.now())
	if err := s.store.SaveDomainCheck(ctx, c.Domain, c.Retired); err != nil {
		return core.Domain{}, err
	}
	if c.Verified {
		s.verified(c.Domain)
	}
	return c.Domain, nil
}

// verified is where a domain that has just been verified is announced: in
// the service's log only, as the event log's types (core.EventTypes) have
// none for domains.
func (s *Domains) verified(d core.Domain) {
	s.log.Info("domain verified", "domain", d.Name, "account", d.AccountID)
}

// lookup asks every question of a check at once: a check costs one round
// trip, and at most the resolver's timeout.
func (s *Domains) lookup(ctx context.Context, d core.Domain) core.DomainAnswers {
	a := core.DomainAnswers{DKIM: map[string]core.Lookup{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	ask := func(set func(core.Lookup), lookup func() ([]string, error)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := toLookup(lookup())
			mu.Lock()
			set(l)
			mu.Unlock()
		}()
	}
	ask(func(l core.Lookup) { a.MX = l }, func() ([]string, error) {
		mx, err := s.resolver.LookupMX(ctx, d.Name)
		hosts := make([]string, len(mx))
		for i, m := range mx {
			hosts[i] = m.Host
		}
		return hosts, err
	})
	ask(func(l core.Lookup) { a.TXT = l }, func() ([]string, error) { return s.resolver.LookupTXT(ctx, d.Name) })
	ask(func(l core.Lookup) { a.DMARC = l }, func() ([]string, error) { return s.resolver.LookupTXT(ctx, core.DMARCRecordName(d.Name)) })
	if _, ok := d.MTASTSPolicy(s.settings); ok {
		ask(func(l core.Lookup) { a.MTASTS = l }, func() ([]string, error) { return s.resolver.LookupTXT(ctx, core.MTASTSRecordName(d.Name)) })
	}
	if s.settings.TLSReportsTo != "" {
		ask(func(l core.Lookup) { a.TLSRPT = l }, func() ([]string, error) { return s.resolver.LookupTXT(ctx, core.TLSRPTRecordName(d.Name)) })
	}
	for _, k := range d.Keys {
		ask(func(l core.Lookup) { a.DKIM[k.Selector] = l }, func() ([]string, error) {
			return s.resolver.LookupTXT(ctx, core.DKIMRecordName(k.Selector, d.Name))
		})
	}
	wg.Wait()
	return a
}

// toLookup reads a resolver's answer: records, none, or no answer.
func toLookup(values []string, err error) core.Lookup {
	var de *net.DNSError
	switch {
	case err == nil:
		return core.Lookup{Values: values}
	case errors.As(err, &de) && de.IsNotFound:
		return core.Lookup{Missing: true}
	default:
		return core.Lookup{Failed: true}
	}
}

// RunChecks looks at due domains until ctx ends. Instances sharing a
// database share the work: each due domain is leased to one of them.
func (s *Domains) RunChecks(ctx context.Context) {
	tick := time.NewTicker(domainCheckPoll)
	defer tick.Stop()
	for {
		for s.checkDue(ctx) == domainCheckBatch {
			// A full batch: more may be due.
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// checkDue checks the domains it can claim, one after the other.
func (s *Domains) checkDue(ctx context.Context) int {
	now := s.now()
	due, err := s.store.ClaimDomainChecks(ctx, now, now.Add(domainCheckLease), domainCheckBatch)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("domains: claiming due checks failed", "err", err)
		}
		return 0
	}
	for _, d := range due {
		if _, err := s.check(ctx, d); err != nil && ctx.Err() == nil {
			s.log.Error("domains: recording a check failed", "domain", d.Name, "err", err)
		}
	}
	return len(due)
}

// Sign DKIM-signs a message leaving from domain: with the domain's own
// key, or each platform key for a platform domain (the first key's
// signature on top); a domain without a key sends the message as it is.
func (s *Domains) Sign(ctx context.Context, domain string, raw []byte) ([]byte, error) {
	if s.isPlatform(domain) {
		// No signature covers DKIM-Signature fields, so each one signs the
		// same message: the last key first, so that the first ends on top.
		for i := len(s.platformKeys) - 1; i >= 0; i-- {
			k := s.platformKeys[i]
			signed, err := s.signer.Sign(raw, domain, k.Public.Selector, k.Private)
			if err != nil {
				return nil, err
			}
			raw = signed
		}
		return raw, nil
	}
	k, err := s.store.SigningKey(ctx, domain)
	if isNotFound(err) {
		return raw, nil
	}
	if err != nil {
		return nil, err
	}
	private, err := s.cipher.Open(k.Private, aad("dkim_keys", "private_key", k.ID))
	if err != nil {
		return nil, fmt.Errorf("opening the DKIM key of %s: %w", domain, err)
	}
	return s.signer.Sign(raw, domain, k.Key.Selector, private)
}

// Records are what a domain's owner must publish, with their statuses.
func (s *Domains) Records(d core.Domain) []core.DNSRecord { return d.Records(s.settings) }
