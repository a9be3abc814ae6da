package e2e

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/smtp"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/resolver/dnstest"
	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/internal/server"
)

// pebbleModule is the version of Let's Encrypt's test CA the tests run.
const pebbleModule = "github.com/letsencrypt/pebble/v2"
const pebbleVersion = "v2.10.3"

// pebble is Pebble built from the module cache (or the module proxy): its
// binary, and its directory, with the test CA its own HTTPS uses.
type pebble struct{ bin, dir string }

// buildPebble builds Pebble once per test run, or skips the test without
// it (fails with CALLSIGN_TEST_REQUIRE_ALL=1).
func buildPebble(t *testing.T) pebble {
	t.Helper()
	fail := func(what string, err error, out []byte) {
		msg := fmt.Sprintf("Pebble %s (%s@%s): %v %s", what, pebbleModule, pebbleVersion, err, out)
		if os.Getenv(requireAllVar) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	out, err := exec.Command("go", "mod", "download", "-json", pebbleModule+"@"+pebbleVersion).Output()
	var mod struct{ Dir string }
	if err != nil || json.Unmarshal(out, &mod) != nil || mod.Dir == "" {
		fail("cannot be downloaded", err, out)
	}
	bin := t.TempDir()
	cmd := exec.Command("go", "install", pebbleModule+"/cmd/pebble@"+pebbleVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+bin, "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		fail("cannot be built", err, out)
	}
	return pebble{bin: filepath.Join(bin, "pebble"), dir: mod.Dir}
}

func port(t *testing.T, addr string) int {
	_, p, err := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	if err != nil || n == 0 {
		t.Fatalf("no port in %q", addr)
	}
	return n
}

// run starts Pebble on loopback at listen (its directory): it validates
// http-01 on httpAddr's port and tls-alpn-01 on httpsAddr's, at the
// addresses dnsAddr gives names, and issues certificates valid for
// validity. It returns a pool with the roots of what it issues.
func (p pebble) run(t *testing.T, listen, httpAddr, httpsAddr, dnsAddr string, validity time.Duration) *x509.CertPool {
	t.Helper()
	manage := freeAddr(t)
	config := map[string]any{"pebble": map[string]any{
		"listenAddress": listen, "managementListenAddress": manage,
		"certificate": filepath.Join(p.dir, "test/certs/localhost/cert.pem"), "privateKey": filepath.Join(p.dir, "test/certs/localhost/key.pem"),
		"httpPort": port(t, httpAddr), "tlsPort": port(t, httpsAddr),
		"profiles": map[string]any{"default": map[string]any{"description": "short-lived, for renewals", "validityPeriod": int(validity.Seconds())}},
	}}
	file := filepath.Join(t.TempDir(), "pebble.json")
	b, _ := json.Marshal(config)
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(p.bin, "-config", file, "-dnsserver", dnsAddr)
	cmd.Env = append(os.Environ(), "PEBBLE_VA_NOSLEEP=1", "PEBBLE_VA_ALWAYS_VALID=0", "PEBBLE_WFE_NONCEREJECT=0")
	logs, err := os.Create(filepath.Join(t.TempDir(), "pebble.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		logs.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logs.Name())
			t.Logf("pebble:\n%s", b)
		}
	})
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.minica(t)}}}
	deadline := time.Now().Add(time.Minute)
	for {
		res, err := client.Get("https://" + manage + "/roots/0")
		if err == nil {
			roots, _ := io.ReadAll(res.Body)
			res.Body.Close()
			issued := x509.NewCertPool()
			if res.StatusCode == http.StatusOK && issued.AppendCertsFromPEM(roots) {
				return issued
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pebble serves no roots: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// minica is the test CA of Pebble's own HTTPS.
func (p pebble) minica(t *testing.T) *x509.CertPool {
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(filepath.Join(p.dir, "test/certs/pebble.minica.pem"))
	if err != nil || !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("pebble's minica: %v", err)
	}
	return pool
}

// TestACMEWithPebble gets certificates from Pebble, which validates the
// challenges against our own listeners, and checks that HTTPS, SMTP
// STARTTLS and IMAPS serve them to a client trusting only Pebble's roots,
// that a verified custom domain's MTA-STS host gets one and serves its
// policy over HTTPS, that plain HTTP redirects, that a second instance on the same database
// serves the same certificate without asking again, that the state is
// sealed in the database and never logged, and that certificates are
// renewed before they expire.
func TestACMEWithPebble(t *testing.T) {
	t.Parallel()
	peb := buildPebble(t)
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		dns := dnstest.Start(t)
		dns.Add(t, "callsign.test. 60 IN A 127.0.0.1", "mx.callsign.test. 60 IN A 127.0.0.1")
		key := make([]byte, 32)
		rand.Read(key)
		// Pebble's address goes into the configuration; Pebble starts
		// once the service's ports, which it validates on, are known.
		directory := freeAddr(t)
		env := map[string]string{
			"CALLSIGN_ACME": "on", "CALLSIGN_ACME_EMAIL": "ops@callsign.test", "CALLSIGN_ACME_DIRECTORY": "https://" + directory + "/dir",
			"CALLSIGN_HTTPS_ADDR": "127.0.0.1:0", "CALLSIGN_BASE_URL": "https://callsign.test", "CALLSIGN_MX_HOST": "mx.callsign.test",
			"CALLSIGN_IMAPS_ADDR": "127.0.0.1:0", "CALLSIGN_VAULT_KEY": base64.StdEncoding.EncodeToString(key), "CALLSIGN_LOG_LEVEL": "debug",
			"CALLSIGN_DNS_RESOLVER": dns.Addr,
		}
		// The certificates live 5 minutes and are renewed 30 s after they
		// are issued, plus autocert's jitter (up to a tenth of the window).
		const validity, renewBefore = 5 * time.Minute, 4*time.Minute + 30*time.Second
		tuning := func(s *server.Service) {
			s.ACMETuning = server.ACMETuning{Roots: peb.minica(t), RenewBefore: renewBefore}
		}
		r := startTuned(t, d, env, tuning)
		roots := peb.run(t, directory, r.svc.HTTPAddr(), r.svc.HTTPSAddr(), dns.Addr, validity)
		dial := func(addr string) func() (net.Conn, error) {
			return func() (net.Conn, error) { return net.Dial("tcp", addr) }
		}

		web := servedCert(t, roots, "callsign.test", dial(r.svc.HTTPSAddr()))
		if !slices.Contains(web.DNSNames, "callsign.test") {
			t.Fatalf("HTTPS certificate for %v", web.DNSNames)
		}
		api := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots},
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "tcp", r.svc.HTTPSAddr())
			}}}
		res, err := api.Get("https://callsign.test/api/health/ping/")
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("API over HTTPS: %v %v", res, err)
		}
		res.Body.Close()

		// Plain HTTP sends people to HTTPS, on its port.
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		req, _ := http.NewRequest(http.MethodGet, "http://"+r.svc.HTTPAddr()+"/api/health/ping/", nil)
		req.Host = "callsign.test"
		res, err = noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		want := fmt.Sprintf("https://callsign.test:%d/api/health/ping/", port(t, r.svc.HTTPSAddr()))
		if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != want {
			t.Fatalf("plain HTTP: %d %q, want a redirect to %s", res.StatusCode, res.Header.Get("Location"), want)
		}

		// The API is reached over HTTPS from here on; a custom domain that
		// receives mail gets a certificate for its MTA-STS host, which
		// serves its policy.
		r.baseURL, r.client = "https://callsign.test", api
		mgmt := r.bootstrap("owner@customer.example")
		var dom apiDomain
		if s := r.call("POST", "/api/domains/", mgmt, map[string]any{"name": "customer.example"}, &dom); s != http.StatusCreated {
			t.Fatalf("create the domain: %d %+v", s, dom)
		}
		publish(t, dns, dom)
		if r.call("POST", "/api/domains/customer.example/verify/", mgmt, nil, &dom); dom.Status != "verified" {
			t.Fatalf("verify the domain: %+v", dom)
		}
		dns.Add(t, "mta-sts.customer.example. 60 IN A 127.0.0.1")
		res, err = api.Get("https://mta-sts.customer.example/.well-known/mta-sts.txt")
		if err != nil {
			t.Fatalf("MTA-STS policy over HTTPS: %v", err)
		}
		policy, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(string(policy), "mx: mx.callsign.test") ||
			!slices.Contains(res.TLS.PeerCertificates[0].DNSNames, "mta-sts.customer.example") {
			t.Fatalf("MTA-STS policy: %d %q", res.StatusCode, policy)
		}

		// SMTP STARTTLS and IMAPS serve the MX host's certificate; a client
		// that names no server gets it too.
		mx := starttlsChain(t, r.svc.SMTPAddr(), &tls.Config{ServerName: "mx.callsign.test", RootCAs: roots})[0]
		imaps := servedCert(t, roots, "mx.callsign.test", dial(r.svc.IMAPSAddr()))
		if !slices.Contains(mx.DNSNames, "mx.callsign.test") || imaps.SerialNumber.Cmp(mx.SerialNumber) != 0 {
			t.Fatalf("SMTP certificate for %v, IMAPS serial %v and SMTP's %v", mx.DNSNames, imaps.SerialNumber, mx.SerialNumber)
		}
		anonymous := starttlsChain(t, r.svc.SMTPAddr(), &tls.Config{InsecureSkipVerify: true}) // checked below
		intermediates := x509.NewCertPool()
		for _, c := range anonymous[1:] {
			intermediates.AddCert(c)
		}
		if _, err := anonymous[0].Verify(x509.VerifyOptions{DNSName: "mx.callsign.test", Roots: roots, Intermediates: intermediates}); err != nil {
			t.Fatalf("STARTTLS without a server name: %v", err)
		}

		// A name outside the policy gets no certificate, and no order.
		conn, err := tls.Dial("tcp", r.svc.HTTPSAddr(), &tls.Config{ServerName: "stranger.test", RootCAs: roots})
		if err == nil {
			conn.Close()
			t.Fatal("a certificate for a stranger's name")
		}

		// The state is in the database, sealed: no PEM, no private key.
		sealed, err := r.svc.DB().CertificateEntry(context.Background(), "callsign.test")
		if err != nil || len(sealed) == 0 || strings.Contains(string(sealed), "PRIVATE KEY") || strings.Contains(string(sealed), "CERTIFICATE") {
			t.Fatalf("stored certificate: %v %.40q", err, sealed)
		}

		// A second instance on the same database serves the stored
		// certificates: nothing to ask the CA.
		env2 := maps.Clone(env)
		env2["CALLSIGN_DATABASE_URL"], env2["CALLSIGN_DATA_DIR"] = r.env["CALLSIGN_DATABASE_URL"], t.TempDir()
		r2 := startTuned(t, d, env2, tuning)
		other := servedCert(t, roots, "mx.callsign.test", dial(r2.svc.HTTPSAddr()))
		if other.SerialNumber.Cmp(mx.SerialNumber) != 0 && other.NotBefore.Before(mx.NotBefore.Add(time.Second)) {
			t.Fatalf("second instance serves serial %v, the first %v", other.SerialNumber, mx.SerialNumber)
		}

		// Renewal: a new certificate, with a new serial, before expiry.
		deadline := time.Now().Add(3 * time.Minute)
		for {
			renewed := servedCert(t, roots, "callsign.test", dial(r.svc.HTTPSAddr()))
			if renewed.SerialNumber.Cmp(web.SerialNumber) != 0 {
				if !renewed.NotAfter.After(web.NotAfter) {
					t.Fatalf("renewed certificate expires %v, the first %v", renewed.NotAfter, web.NotAfter)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no renewal of %v (expires %v)", web.SerialNumber, web.NotAfter)
			}
			time.Sleep(time.Second)
		}
		for _, logs := range []string{r.logs(), r2.logs()} {
			if strings.Contains(logs, "PRIVATE KEY") || strings.Contains(logs, "BEGIN") {
				t.Fatal("a key or certificate in the logs")
			}
		}
	})
}

// servedCert is the certificate a TLS handshake for name gets over what
// dial connects, verified against roots only.
func servedCert(t *testing.T, roots *x509.CertPool, name string, dial func() (net.Conn, error)) *x509.Certificate {
	t.Helper()
	conn, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return handshake(t, tls.Client(conn, &tls.Config{ServerName: name, RootCAs: roots}))
}

// starttlsChain is the certificates SMTP's STARTTLS presents.
func starttlsChain(t *testing.T, addr string, config *tls.Config) []*x509.Certificate {
	t.Helper()
	c, err := smtp.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.StartTLS(config); err != nil {
		t.Fatalf("STARTTLS: %v", err)
	}
	state, _ := c.TLSConnectionState()
	return state.PeerCertificates
}

func handshake(t *testing.T, tc *tls.Conn) *x509.Certificate {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		t.Fatalf("TLS for %q: %v", tc.ConnectionState().ServerName, err)
	}
	return tc.ConnectionState().PeerCertificates[0]
}
