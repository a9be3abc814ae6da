// Package dkimpytest checks DKIM signatures with a verifier nobody here
// wrote: dkimpy (Debian's python3-dkim, for the system's python3), looking
// keys up through dnspython at the test's own DNS server. Without dkimpy a
// test skips, unless CALLSIGN_TEST_REQUIRE_ALL=1 (CI), where it fails.
package dkimpytest

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Python is Debian's interpreter, which python3-dkim installs for (a
// pyenv python3 earlier on PATH would not have it).
const Python = "/usr/bin/python3"

const requireAllVar = "CALLSIGN_TEST_REQUIRE_ALL"

// script verifies every DKIM-Signature of the message on stdin with
// dkimpy's own DNS path, pointed at the server named by its arguments.
const script = `
import sys
import dkim, dns.resolver
resolver = dns.resolver.Resolver(configure=False)
resolver.nameservers = [sys.argv[1]]
resolver.port = int(sys.argv[2])
dns.resolver.default_resolver = resolver
message = sys.stdin.buffer.read()
d = dkim.DKIM(message)
count = sum(1 for name, _ in d.headers if name.lower() == b"dkim-signature")
if count == 0:
    print("no DKIM-Signature"); sys.exit(1)
for i in range(count):
    if not d.verify(idx=i):
        print("signature %d did not verify" % i); sys.exit(1)
print("%d signature(s) verified" % count)
`

// Verify runs dkimpy over raw with keys from the DNS server at dnsAddr
// (host:port) and returns what it said and whether every signature verified.
func Verify(t testing.TB, dnsAddr string, raw []byte) (output string, ok bool) {
	t.Helper()
	if err := exec.Command(Python, "-c", "import dkim, dns.resolver, nacl").Run(); err != nil {
		msg := "dkimpy is missing (apt-get install python3-dkim python3-nacl)"
		if os.Getenv(requireAllVar) == "1" {
			t.Fatalf("%s, and %s=1 requires it", msg, requireAllVar)
		}
		t.Skip(msg + ": skipping")
	}
	host, port, err := net.SplitHostPort(dnsAddr)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(Python, "-c", script, host, port)
	cmd.Stdin = bytes.NewReader(raw)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err == nil
}
