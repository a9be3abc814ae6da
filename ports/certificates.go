package ports

import (
	"context"
	"time"
)

// CertificateStore keeps what ACME needs on every instance: the account key
// and the certificates with their keys, under the names the ACME client
// gives them, sealed by the app; and the leases that let one instance at a
// time ask the certificate authority for a name.
type CertificateStore interface {
	// CertificateEntry is the sealed value stored under key.
	CertificateEntry(ctx context.Context, key string) ([]byte, error)
	// PutCertificateEntry stores or replaces the value under key.
	PutCertificateEntry(ctx context.Context, key string, sealed []byte, at time.Time) error
	// DeleteCertificateEntry forgets key; a missing key is no error.
	DeleteCertificateEntry(ctx context.Context, key string) error
	// ClaimCertificateLease takes or renews the lease on name for holder
	// until until, when holder has it or it ran out at now
	// (core.LeaseFree); it reports whether holder has it.
	ClaimCertificateLease(ctx context.Context, name, holder string, now, until time.Time) (bool, error)
	// ReleaseCertificateLease ends holder's lease on name, if it has it.
	ReleaseCertificateLease(ctx context.Context, name, holder string) error
}
