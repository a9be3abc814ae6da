package memory

import (
	"context"
	"time"

	"github.com/callsign/callsign/core"
)

// certificateTables are ACME's cache and leases, by key and by name.
type certificateTables struct {
	entries map[string]*certificateEntry
	leases  map[string]certificateLease
}

// certificateEntry is a sealed value, by pointer for key rotation.
type certificateEntry struct{ value []byte }

type certificateLease struct {
	holder string
	until  time.Time
}

func (s *Store) certificateTables() *certificateTables {
	if s.certificates.entries == nil {
		s.certificates = certificateTables{entries: map[string]*certificateEntry{}, leases: map[string]certificateLease{}}
	}
	return &s.certificates
}

func (s *Store) CertificateEntry(ctx context.Context, key string) ([]byte, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	e, ok := s.certificateTables().entries[key]
	if !ok {
		return nil, core.NotFound("Certificate entry not found.")
	}
	return clone(e.value), nil
}

func (s *Store) PutCertificateEntry(ctx context.Context, key string, sealed []byte, at time.Time) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.certificateTables().entries[key] = &certificateEntry{value: clone(sealed)}
	return nil
}

func (s *Store) DeleteCertificateEntry(ctx context.Context, key string) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	delete(s.certificateTables().entries, key)
	return nil
}

func (s *Store) ClaimCertificateLease(ctx context.Context, name, holder string, now, until time.Time) (bool, error) {
	if err := s.lock(); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	t := s.certificateTables()
	l := t.leases[name]
	if !core.LeaseFree(l.holder, holder, l.until, now) {
		return false, nil
	}
	t.leases[name] = certificateLease{holder: holder, until: until}
	return true, nil
}

func (s *Store) ReleaseCertificateLease(ctx context.Context, name, holder string) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	t := s.certificateTables()
	if t.leases[name].holder == holder {
		delete(t.leases, name)
	}
	return nil
}
