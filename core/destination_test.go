package core

import (
	"errors"
	"net/netip"
	"testing"
)

func TestHostIPReadsEveryNotationAResolverAccepts(t *testing.T) {
	for host, want := range map[string]string{
		"127.0.0.1":        "127.0.0.1",
		"0x7f.1":           "127.0.0.1",
		"0X7F.0.0.1":       "127.0.0.1",
		"2130706433":       "127.0.0.1",
		"017700000001":     "127.0.0.1",
		"0177.0.0.01":      "127.0.0.1",
		"127.1":            "127.0.0.1",
		"10.1.2":           "10.1.0.2",
		"0xa9fea9fe":       "169.254.169.254",
		"localhost":        "127.0.0.1",
		"LocalHost.":       "127.0.0.1",
		"imap.localhost":   "127.0.0.1",
		"::ffff:127.0.0.1": "127.0.0.1",
		"::ffff:7f00:1":    "127.0.0.1",
		"fd00:ec2::254":    "fd00:ec2::254",
		"203.0.113.9":      "203.0.113.9",
		"0":                "0.0.0.0",
		"0x":               "0.0.0.0",
		"4294967295":       "255.255.255.255",
		"1.2.3.4.":         "1.2.3.4",
	} {
		got, ok := HostIP(host)
		if !ok || got.String() != want {
			t.Errorf("HostIP(%q) = %v, %v; want %s", host, got, ok, want)
		}
	}
	for _, host := range []string{"imap.example.org", "4294967296", "1.2.3.4.5", "256.1.1.1", "1.2.65536", "0x1g", "08", "", "1..2", "-1", "+1", "example.123"} {
		if ip, ok := HostIP(host); ok {
			t.Errorf("HostIP(%q) = %v; want a name for the DNS", host, ip)
		}
	}
}

func TestClassifyDestination(t *testing.T) {
	for addr, want := range map[string]DestinationClass{
		"127.0.0.1":              DestinationLoopback,
		"127.255.0.9":            DestinationLoopback,
		"::1":                    DestinationLoopback,
		"::ffff:127.0.0.1":       DestinationLoopback,
		"::127.0.0.1":            DestinationLoopback,
		"64:ff9b::7f00:1":        DestinationLoopback,
		"2002:7f00:1::":          DestinationLoopback,
		"10.0.0.1":               DestinationPrivate,
		"172.16.5.4":             DestinationPrivate,
		"172.31.255.255":         DestinationPrivate,
		"192.168.1.1":            DestinationPrivate,
		"::ffff:192.168.1.1":     DestinationPrivate,
		"fd12:3456::1":           DestinationPrivate,
		"fec0::1":                DestinationPrivate,
		"169.254.1.1":            DestinationLinkLocal,
		"fe80::1":                DestinationLinkLocal,
		"fe80::1%eth0":           DestinationLinkLocal,
		"100.64.0.1":             DestinationSharedCGNAT,
		"100.127.255.254":        DestinationSharedCGNAT,
		"224.0.0.1":              DestinationMulticast,
		"239.255.255.250":        DestinationMulticast,
		"ff02::1":                DestinationMulticast,
		"0.0.0.0":                DestinationUnspecified,
		"0.1.2.3":                DestinationUnspecified,
		"::":                     DestinationUnspecified,
		"255.255.255.255":        DestinationReserved,
		"169.254.169.254":        DestinationMetadata,
		"::ffff:169.254.169.254": DestinationMetadata,
		"fd00:ec2::254":          DestinationMetadata,
		"8.8.8.8":                DestinationPublic,
		"100.63.255.255":         DestinationPublic,
		"100.128.0.0":            DestinationPublic,
		"172.32.0.1":             DestinationPublic,
		"2001:4860:4860::8888":   DestinationPublic,
		"::ffff:8.8.8.8":         DestinationPublic,
		"64:ff9b::808:808":       DestinationPublic,
	} {
		if got := ClassifyDestination(netip.MustParseAddr(addr)); got != want {
			t.Errorf("ClassifyDestination(%s) = %q; want %q", addr, got, want)
		}
	}
}

func TestDestinationPolicy(t *testing.T) {
	strict := DestinationPolicy{}
	public := []netip.Addr{netip.MustParseAddr("203.0.113.9"), netip.MustParseAddr("2001:db8::1")}
	if err := strict.CheckAll("imap.example.org", public); err != nil {
		t.Fatalf("public addresses refused: %v", err)
	}
	mixed := append(public, netip.MustParseAddr("10.0.0.5"))
	err := strict.CheckAll("imap.example.org", mixed)
	var de *DestinationError
	if !errors.As(err, &de) || de.Class != DestinationPrivate || de.Host != "imap.example.org" {
		t.Fatalf("one private address among public ones: %v; want a refusal naming the private address", err)
	}
	if want := "imap.example.org resolves to 10.0.0.5, a private address, which the server does not connect to"; err.Error() != want {
		t.Errorf("message %q; want %q", err, want)
	}
	if err := (DestinationPolicy{AllowPrivate: true}).CheckAll("x", mixed); err != nil {
		t.Errorf("AllowPrivate refused: %v", err)
	}
}

func TestIsLoopbackHostKnowsOddNotations(t *testing.T) {
	for _, h := range []string{"localhost", "127.0.0.1", "0x7f.1", "2130706433", "::1", "::ffff:127.0.0.1"} {
		if !IsLoopbackHost(h) {
			t.Errorf("IsLoopbackHost(%q) = false", h)
		}
	}
	for _, h := range []string{"10.0.0.1", "imap.example.org", "8.8.8.8"} {
		if IsLoopbackHost(h) {
			t.Errorf("IsLoopbackHost(%q) = true", h)
		}
	}
}
