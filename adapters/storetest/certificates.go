package storetest

import (
	"testing"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

func testCertificateEntries(t *testing.T, f *fixture) {
	if _, err := f.s.CertificateEntry(f.ctx, "mx.example.org"); core.KindOf(err) != core.KindNotFound {
		t.Fatalf("missing entry: %v", err)
	}
	f.must(f.s.PutCertificateEntry(f.ctx, "mx.example.org", []byte("first"), f.now))
	f.must(f.s.PutCertificateEntry(f.ctx, "mx.example.org", []byte("second"), f.now.Add(time.Hour)))
	f.must(f.s.PutCertificateEntry(f.ctx, "acme_account+key", []byte("account"), f.now))
	if v, err := f.s.CertificateEntry(f.ctx, "mx.example.org"); err != nil || string(v) != "second" {
		t.Fatalf("replaced entry: %q %v", v, err)
	}
	values, err := f.s.SealedValues(f.ctx, ports.SealedValue{}, 100)
	f.must(err)
	if len(values) != 2 || values[0].Table != "acme_cache" || values[0].ID != "acme_account+key" || values[1].ID != "mx.example.org" {
		t.Fatalf("sealed values %+v", values)
	}
	ok, err := f.s.ReplaceSealed(f.ctx, values[1], []byte("resealed"))
	f.must(err)
	if v, _ := f.s.CertificateEntry(f.ctx, "mx.example.org"); !ok || string(v) != "resealed" {
		t.Fatalf("reseal: %v %q", ok, v)
	}
	f.must(f.s.DeleteCertificateEntry(f.ctx, "mx.example.org"))
	f.must(f.s.DeleteCertificateEntry(f.ctx, "mx.example.org")) // gone already: no error
	if _, err := f.s.CertificateEntry(f.ctx, "mx.example.org"); core.KindOf(err) != core.KindNotFound {
		t.Fatalf("deleted entry: %v", err)
	}
}

func testCertificateLeases(t *testing.T, f *fixture) {
	claim := func(holder string, now time.Time) bool {
		t.Helper()
		ok, err := f.s.ClaimCertificateLease(f.ctx, "mx.example.org", holder, now, now.Add(time.Minute))
		f.must(err)
		return ok
	}
	if !claim("a", f.now) {
		t.Fatal("a free name was not leased")
	}
	if claim("b", f.now.Add(30*time.Second)) {
		t.Fatal("b took a's running lease")
	}
	if !claim("a", f.now.Add(50*time.Second)) {
		t.Fatal("a could not renew its lease")
	}
	if claim("b", f.now.Add(time.Minute)) {
		t.Fatal("b took a's renewed lease")
	}
	if ok, err := f.s.ClaimCertificateLease(f.ctx, "other.example.org", "b", f.now, f.now.Add(time.Minute)); err != nil || !ok {
		t.Fatalf("leases are per name: %v %v", ok, err)
	}
	f.must(f.s.ReleaseCertificateLease(f.ctx, "mx.example.org", "b")) // not b's: kept
	if claim("b", f.now.Add(time.Minute)) {
		t.Fatal("another's release ended a's lease")
	}
	f.must(f.s.ReleaseCertificateLease(f.ctx, "mx.example.org", "a"))
	if !claim("b", f.now.Add(time.Minute)) {
		t.Fatal("b could not take a released lease")
	}
	if !claim("a", f.now.Add(3*time.Minute)) {
		t.Fatal("a could not take b's lease once it ran out")
	}
}
