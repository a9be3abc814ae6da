package core

import "time"

// IdempotencyHeader is the request header that names an idempotency key.
const IdempotencyHeader = "Idempotency-Key"

// IdempotencyKeyTTL is how long a key is remembered: a repeat within it is
// answered from the key, a later one runs anew.
const IdempotencyKeyTTL = 24 * time.Hour

// IdempotencyLease is how long a request holds its key before another
// request may take it over. A request still running after that cannot
// record its effect any more (the key's token changed), so a takeover never
// makes the effect twice; it only turns a very slow request into a failed one.
const IdempotencyLease = time.Minute

// CheckIdempotencyKey validates a key: 1–255 printable ASCII characters.
func CheckIdempotencyKey(key string) error {
	if key == "" || len(key) > 255 {
		return Invalid(IdempotencyHeader, "Use 1 to 255 printable ASCII characters.")
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return Invalid(IdempotencyHeader, "Use 1 to 255 printable ASCII characters.")
		}
	}
	return nil
}

// IdempotencyRecord is what is kept of one key: which request took it (its
// fingerprint), who holds it now (Token, until LeaseUntil), what the
// request created (EffectKind and EffectID, written in the transaction that
// created it) and the answer it gave (Status and Body, once answered).
type IdempotencyRecord struct {
	Fingerprint []byte
	Token       string
	CreatedAt   time.Time
	LeaseUntil  time.Time
	EffectKind  string
	EffectID    string
	Status      int // 0 until answered
	Body        []byte
}

// IdempotencyOutcome is what a request carrying a known key does.
type IdempotencyOutcome int

const (
	// IdempotencyRun: the key is free (new, expired, or left by a request
	// that died before making its effect): take it and run the request.
	IdempotencyRun IdempotencyOutcome = iota
	// IdempotencyReplay: answer with the stored response.
	IdempotencyReplay
	// IdempotencyRecover: the effect was made but its answer never stored
	// (the process died in between): answer with the effect as it is now.
	IdempotencyRecover
	// IdempotencyBusy: the first request is still running (409).
	IdempotencyBusy
	// IdempotencyMismatch: the key was used with another request (422).
	IdempotencyMismatch
)

// JudgeIdempotencyKey decides what a request with fingerprint does given the
// key's record (nil when there is none). Stores ask it under the row's lock.
func JudgeIdempotencyKey(r *IdempotencyRecord, fingerprint []byte, now time.Time) IdempotencyOutcome {
	switch {
	case r == nil || !now.Before(r.CreatedAt.Add(IdempotencyKeyTTL)):
		return IdempotencyRun
	case string(r.Fingerprint) != string(fingerprint):
		return IdempotencyMismatch
	case r.Status != 0:
		return IdempotencyReplay
	case now.Before(r.LeaseUntil):
		return IdempotencyBusy
	case r.EffectKind != "":
		return IdempotencyRecover
	}
	return IdempotencyRun
}

// IdempotencyError is the error of a Busy or Mismatch outcome.
func IdempotencyError(o IdempotencyOutcome) error {
	switch o {
	case IdempotencyBusy:
		return Conflict("A request with this %s is still being processed; retry later.", IdempotencyHeader)
	case IdempotencyMismatch:
		msg := "This key was already used with a different request."
		return &Error{Kind: KindUnprocessable, Message: msg, Fields: map[string][]string{IdempotencyHeader: {msg}}}
	}
	return nil
}
