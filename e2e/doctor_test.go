package e2e

import (
	"net"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/internal/cli"
)

// dnsServer answers DNS over UDP on loopback from a table of MX and A
// records; any other name does not exist.
func dnsServer(t *testing.T, mx map[string]string, a map[string]string) string {
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, peer, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			var req dnsmessage.Message
			if req.Unpack(buf[:n]) != nil || len(req.Questions) != 1 {
				continue
			}
			q := req.Questions[0]
			name := strings.TrimSuffix(q.Name.String(), ".")
			res := dnsmessage.Message{Header: dnsmessage.Header{ID: req.ID, Response: true, Authoritative: true, RCode: dnsmessage.RCodeNameError},
				Questions: req.Questions}
			head := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}
			if host, ok := mx[name]; ok {
				res.RCode = dnsmessage.RCodeSuccess
				if q.Type == dnsmessage.TypeMX {
					head.Type = dnsmessage.TypeMX
					res.Answers = append(res.Answers, dnsmessage.Resource{Header: head,
						Body: &dnsmessage.MXResource{Pref: 10, MX: dnsmessage.MustNewName(host + ".")}})
				}
			}
			if ip, ok := a[name]; ok {
				res.RCode = dnsmessage.RCodeSuccess
				if q.Type == dnsmessage.TypeA {
					head.Type = dnsmessage.TypeA
					res.Answers = append(res.Answers, dnsmessage.Resource{Header: head,
						Body: &dnsmessage.AResource{A: [4]byte(net.ParseIP(ip).To4())}})
				}
			}
			out, err := res.Pack()
			if err == nil {
				_, _ = conn.WriteTo(out, peer)
			}
		}
	}()
	return conn.LocalAddr().String()
}

// doctorLines runs callsign doctor with env and returns its report by check.
func doctorLines(t *testing.T, env map[string]string, args ...string) (map[string]string, string, int) {
	t.Helper()
	var out, errOut strings.Builder
	code := cli.Run(append([]string{"doctor"}, args...), strings.NewReader(""), &out, &errOut, func(k string) string { return env[k] })
	lines := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if line == "" {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			t.Fatalf("report line %q", line)
		}
		name := fields[1]
		if name == "dns" {
			name += " " + fields[2]
		}
		lines[name] = line
	}
	return lines, errOut.String(), code
}

func TestDoctor(t *testing.T) {
	t.Parallel()
	relay := newTestRelay(t)
	relay.listen(t, "127.0.0.1:0")
	dns := dnsServer(t, map[string]string{"agents.example.com": "mx.example.com"}, map[string]string{"bare.example.net": "192.0.2.7"})
	r := start(t, sqlstore.SQLite, nil)
	env := map[string]string{}
	for k, v := range r.env {
		env[k] = v
	}
	env["CALLSIGN_MAIL_DOMAINS"] = "agents.localhost,agents.example.com,bare.example.net"
	env["CALLSIGN_SMTP_RELAY"] = "smtp://relayuser:relaypass@" + relay.addr
	env["CALLSIGN_SMTP_RELAY_CA"] = relay.caFile

	lines, errOut, code := doctorLines(t, env, "--dns-server", dns)
	if code != 0 || errOut != "" || len(lines) != 7 {
		t.Fatalf("exit %d, %s\n%v", code, errOut, lines)
	}
	for name, want := range map[string]string{
		"database":               "ok    database               the SQLite database",
		"relay":                  "ok    relay                  " + relay.addr + " accepts a session (STARTTLS when offered, AUTH as relayuser); no mail sent",
		"telephony":              "skip  telephony",
		"dns agents.localhost":   "skip  dns agents.localhost",
		"dns agents.example.com": "ok    dns agents.example.com MX mx.example.com (10)",
		"dns bare.example.net":   "ok    dns bare.example.net   no MX; senders use its address 192.0.2.7",
		"disk":                   "ok    disk",
	} {
		if !strings.HasPrefix(lines[name], want) {
			t.Errorf("%s: %q, want %q…", name, lines[name], want)
		}
	}
	if len(relay.received()) != 0 {
		t.Fatal("the relay check sent mail")
	}

	// What fails says what and exits 1: wrong relay password, a domain
	// without DNS, a database this build has not migrated.
	env["CALLSIGN_SMTP_RELAY"] = "smtp://relayuser:wrong-password@" + relay.addr
	env["CALLSIGN_MAIL_DOMAINS"] = "nowhere.example.org"
	env["CALLSIGN_DATABASE_URL"] = t.TempDir() + "/missing.db"
	lines, errOut, code = doctorLines(t, env, "--dns-server", dns)
	if code != 1 || !strings.Contains(errOut, "3 of 5 checks failed") {
		t.Fatalf("exit %d, %s\n%v", code, errOut, lines)
	}
	for name, want := range map[string]string{
		"database":                "FAIL  database",
		"relay":                   "FAIL  relay",
		"dns nowhere.example.org": "FAIL  dns nowhere.example.org no MX and no address record",
	} {
		if !strings.HasPrefix(lines[name], want) {
			t.Errorf("%s: %q, want %q…", name, lines[name], want)
		}
	}
	if !strings.Contains(lines["relay"], "AUTH") || strings.Contains(lines["relay"], "wrong-password") {
		t.Errorf("relay: %q should say AUTH failed, without the password", lines["relay"])
	}
	if _, errOut, code := doctorLines(t, env, "--dns-server", "nonsense"); code != 2 || !strings.Contains(errOut, "--dns-server") {
		t.Errorf("a bad --dns-server: %d %s", code, errOut)
	}
}
