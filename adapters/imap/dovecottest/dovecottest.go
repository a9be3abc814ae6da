// Package dovecottest runs a throwaway Dovecot (Debian's dovecot-imapd) on
// a loopback port for tests: its own configuration in a temporary
// directory, users from a passwd file, maildirs beside it, and nothing of
// the system's configuration. Dovecot needs root to switch to its users.
//
// Without Dovecot a test skips, unless CALLSIGN_TEST_REQUIRE_ALL=1 (CI),
// where it fails: a CI run never passes by leaving the real server out.
package dovecottest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
)

// RequireAllVar names the variable that turns a missing peer into a failure.
const RequireAllVar = "CALLSIGN_TEST_REQUIRE_ALL"

// Server is a running Dovecot.
type Server struct {
	t    testing.TB
	dir  string
	Host string
	Port int
	cmd  *exec.Cmd
}

const dovecotBinary = "/usr/sbin/dovecot"

// Start runs Dovecot with the users given (name → password).
func Start(t testing.TB, users map[string]string) *Server {
	t.Helper()
	var missing string
	if _, err := os.Stat(dovecotBinary); err != nil {
		missing = "Dovecot is not installed (apt-get install dovecot-imapd)"
	} else if os.Geteuid() != 0 {
		missing = "Dovecot needs root to switch to its mail user"
	}
	if missing != "" {
		if os.Getenv(RequireAllVar) == "1" {
			t.Fatalf("%s, and %s=1 requires every real peer", missing, RequireAllVar)
		}
		t.Skip(missing)
	}
	// The mail processes run as nobody, who must reach the maildirs.
	dir, err := os.MkdirTemp("", "dovecot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, d := range []string{dir, filepath.Join(dir, "mail")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	var passwd strings.Builder
	for user, pass := range users {
		fmt.Fprintf(&passwd, "%s:{PLAIN}%s\n", user, pass)
	}
	if err := os.WriteFile(filepath.Join(dir, "users"), []byte(passwd.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, dir: dir, Host: "127.0.0.1", Port: freePort(t)}
	if err := os.WriteFile(filepath.Join(dir, "dovecot.conf"), []byte(s.config()), 0o644); err != nil {
		t.Fatal(err)
	}
	s.start()
	t.Cleanup(s.Stop)
	return s
}

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func (s *Server) config() string {
	return strings.NewReplacer("DIR", s.dir, "PORT", strconv.Itoa(s.Port)).Replace(`
base_dir = DIR/run
state_dir = DIR/state
log_path = DIR/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain
auth_failure_delay = 0
default_login_user = dovenull
default_internal_user = dovecot
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u DIR/users
}
userdb {
  driver = static
  args = uid=nobody gid=nogroup home=DIR/mail/%u
}
mail_location = maildir:~/Maildir
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = PORT
  }
  inet_listener imaps {
    port = 0
  }
}
# No growing delay after failed logins: tests count the attempts themselves.
service anvil {
  unix_listener anvil-auth-penalty {
    mode = 0
  }
}
service stats {
  unix_listener stats-reader {
    mode = 0666
  }
  unix_listener stats-writer {
    mode = 0666
  }
}
`)
}

// Addr is host:port.
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

func (s *Server) start() {
	s.t.Helper()
	s.cmd = exec.Command(dovecotBinary, "-F", "-c", filepath.Join(s.dir, "dovecot.conf"))
	var out bytes.Buffer
	s.cmd.Stdout, s.cmd.Stderr = &out, &out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // so Stop reaches the children too
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("starting Dovecot: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(s.dir, "dovecot.log"))
			s.t.Fatalf("Dovecot did not listen on %s: %v\n%s%s", s.Addr(), err, out.String(), log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills Dovecot and every process it started, dropping every
// connection at once, as a crash or a network failure would.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Restart stops Dovecot and starts it again on the same port and mail.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// Client logs in as a user.
func (s *Server) Client(user, password string) *imapclient.Client {
	s.t.Helper()
	c, err := imapclient.DialInsecure(s.Addr(), nil)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := c.Login(user, password).Wait(); err != nil {
		c.Close()
		s.t.Fatalf("logging in to Dovecot as %s: %v", user, err)
	}
	s.t.Cleanup(func() { c.Close() })
	return c
}

// Append stores raw messages in a folder, creating it when needed, and
// returns the folder's UIDVALIDITY.
func (s *Server) Append(user, password, folder string, raws ...string) uint32 {
	s.t.Helper()
	c := s.Client(user, password)
	defer c.Logout()
	if folder != "INBOX" {
		_ = c.Create(folder, nil).Wait() // already there is fine
	}
	for _, raw := range raws {
		cmd := c.Append(folder, int64(len(raw)), nil)
		if _, err := cmd.Write([]byte(raw)); err != nil {
			s.t.Fatal(err)
		}
		if err := cmd.Close(); err != nil {
			s.t.Fatal(err)
		}
		if _, err := cmd.Wait(); err != nil {
			s.t.Fatalf("APPEND to %s: %v", folder, err)
		}
	}
	st, err := c.Status(folder, &imap.StatusOptions{UIDValidity: true}).Wait()
	if err != nil {
		s.t.Fatal(err)
	}
	return st.UIDValidity
}

// Recreate deletes a folder and makes it anew, which gives it a new
// UIDVALIDITY, and fills it with raws.
func (s *Server) Recreate(user, password, folder string, raws ...string) uint32 {
	s.t.Helper()
	c := s.Client(user, password)
	if err := c.Delete(folder).Wait(); err != nil {
		s.t.Fatalf("deleting %s: %v", folder, err)
	}
	c.Logout()
	return s.Append(user, password, folder, raws...)
}

// Log is what Dovecot has logged, for a failing test to show.
func (s *Server) Log() string {
	log, _ := os.ReadFile(filepath.Join(s.dir, "dovecot.log"))
	return string(log)
}

// Logins counts the successful and failed logins Dovecot has logged.
func (s *Server) Logins() (ok, failed int) {
	for _, line := range strings.Split(s.Log(), "\n") {
		switch {
		case strings.Contains(line, "imap-login: Info: Login:"):
			ok++
		case strings.Contains(line, "imap-login: Info:") && strings.Contains(line, "auth failed"):
			failed++
		}
	}
	return ok, failed
}
