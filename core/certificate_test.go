package core

import (
	"testing"
	"time"
)

func TestCertificateHost(t *testing.T) {
	fixed := []string{"callsign.example.com", "mx.example.com", ""}
	for _, tc := range []struct {
		host, domain string
		allowed      bool
	}{
		{"callsign.example.com", "", true},
		{"MX.Example.com.", "", true},
		{"mta-sts.customer.org", "customer.org", false}, // the caller asks whether it receives mail
		{"mta-sts.", "", false},
		{"stranger.example.net", "", false},
		{"", "", false},
	} {
		domain, allowed := CertificateHost(tc.host, fixed)
		if domain != tc.domain || allowed != tc.allowed {
			t.Errorf("CertificateHost(%q) = %q, %v; want %q, %v", tc.host, domain, allowed, tc.domain, tc.allowed)
		}
	}
}

func TestLeaseFree(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	if !LeaseFree("a", "a", now.Add(time.Minute), now) || LeaseFree("a", "b", now.Add(time.Minute), now) ||
		!LeaseFree("a", "b", now, now) || !LeaseFree("", "b", time.Time{}, now) {
		t.Fatal("a lease is free to its holder, or once it ran out")
	}
}
