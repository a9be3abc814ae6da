package core

// Principal is who a request acts for: the account, and for an identity key
// the identity it is fenced to.
type Principal struct {
	AccountID  string
	KeyType    KeyType
	IdentityID string // the fenced identity of an identity key; empty otherwise
	KeyID      int64  // the API key used; 0 for a session or token
	KeyPrefix  string // safe to log
	// Origin is how the principal signed in, and so the origin of the keys
	// it makes.
	Origin KeyOrigin
	// CanProvision is an identity key's right to buy a phone number.
	CanProvision bool
	// CanSend is an identity key's right to send mail and texts itself;
	// without it the key drafts, and a management key approves.
	CanSend bool
}

// IsManagement reports whether the principal acts for the whole account.
func (p Principal) IsManagement() bool { return p.KeyType == KeyManagement }

// What an identity key may do to its own identity: read it, rename it,
// set its voice agent, add inboxes and delete them (never its last one),
// and manage its identity's keys; never create or delete an identity. A
// phone number costs money at the provider, so buying one needs a
// management key or an identity key created with can_provision.

// MayProvision reports whether the principal may buy a phone number for an
// identity it can see.
func (p Principal) MayProvision() bool { return p.IsManagement() || p.CanProvision }

// MaySend reports whether the principal may send mail or texts itself.
// Every send goes through app's requireSend, which asks this.
func (p Principal) MaySend() bool { return p.IsManagement() || p.CanSend }

// SendRefusal is why p may not send d, or nil: a principal that may not
// send at all sends no draft either, and a draft awaiting approval is sent
// by a management key only (sending it is the approval).
func (p Principal) SendRefusal(d *Draft) error {
	if !p.MaySend() {
		return Forbidden("This key cannot send (its can_send is false): create a draft (POST /api/email-drafts/), which a management key approves by sending it.")
	}
	if d != nil && d.AwaitingApproval && !p.IsManagement() {
		return Forbidden("This draft awaits approval: a management key sends it.")
	}
	return nil
}

// Scope is the set of per-identity resources a request may see (spec §1).
// The zero IdentityID means every identity of the account.
type Scope struct {
	AccountID  string
	IdentityID string
	// Empty marks an identity key asking for another identity: every list is
	// empty and every single object is not found, without saying why.
	Empty bool
}

// Scope applies spec §1: the key authenticates, the requested identity (the
// `identity` query parameter, "" when absent) selects.
func (p Principal) Scope(requested string) Scope {
	s := Scope{AccountID: p.AccountID, IdentityID: requested}
	if p.KeyType == KeyIdentity {
		if requested != "" && requested != p.IdentityID {
			s.Empty = true
		}
		s.IdentityID = p.IdentityID
	}
	return s
}

// Allows reports whether an object owned by (accountID, identityID) is in scope.
func (s Scope) Allows(accountID, identityID string) bool {
	if s.Empty || accountID != s.AccountID {
		return false
	}
	return s.IdentityID == "" || s.IdentityID == identityID
}

// Single is the identity a create or send acts for: the bound one for an
// identity key, the requested one for a management key. It fails with a
// validation error on `field` when a management key names none.
func (s Scope) Single(field string) (string, error) {
	if s.Empty {
		return "", NotFound("Identity not found.")
	}
	if s.IdentityID == "" {
		return "", Invalid(field, "This parameter is required with a management key.")
	}
	return s.IdentityID, nil
}
