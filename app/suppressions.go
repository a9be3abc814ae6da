package app

import (
	"context"
	"strings"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Suppressions is the addresses an account no longer sends to: they
// bounced as addresses that do not exist (core.SuppressesAddress).
type Suppressions struct {
	store ports.SuppressionStore
}

// List is a page of the entries in scope, newest first; email narrows to one address.
func (s *Suppressions) List(ctx context.Context, p core.Principal, requested, email string, page ports.Page) ([]core.Suppression, int, error) {
	return s.store.Suppressions(ctx, ports.SuppressionFilter{Scope: p.Scope(requested), Email: strings.TrimSpace(email), Page: page})
}

// Delete lets the account send to an address again.
func (s *Suppressions) Delete(ctx context.Context, p core.Principal, requested, email string) error {
	return s.store.DeleteSuppression(ctx, p.Scope(requested), strings.TrimSpace(email))
}

// refused returns, for the recipients of a message about to be sent, a
// validation error naming each suppressed one and why; nil when none is.
func (s *Suppressions) refused(ctx context.Context, accountID string, fields map[string][]string) error {
	var all []string
	for _, addrs := range fields {
		all = append(all, addrs...)
	}
	found, err := s.store.SuppressedAmong(ctx, accountID, all)
	if err != nil || len(found) == 0 {
		return err
	}
	var problems core.Problems
	for _, sup := range found {
		for field, addrs := range fields {
			if containsFold(addrs, sup.Email) {
				problems.Add(field, "%s is suppressed: mail to it bounced (%s). Delete the suppression to send to it again.", sup.Email, sup.Reason)
			}
		}
	}
	return problems.Err()
}
