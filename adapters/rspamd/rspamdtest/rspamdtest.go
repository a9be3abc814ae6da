// Package rspamdtest runs a throwaway rspamd (Debian's rspamd) for tests:
// one controller worker on a loopback port, the configuration of
// testdata/rspamd.conf in a temporary directory, Bayes statistics in the
// machine's Redis (127.0.0.1:6379, a database of its own). It starts in a
// second or two; start one per test package.
//
// Without rspamd or Redis a test skips, unless CALLSIGN_TEST_REQUIRE_ALL=1
// (CI), where it fails: a CI run never passes by leaving the real filter
// out.
package rspamdtest

import (
	_ "embed"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// RequireAllVar names the variable that turns a missing peer into a failure.
const RequireAllVar = "CALLSIGN_TEST_REQUIRE_ALL"

// RedisAddr is where the statistics go.
const RedisAddr = "127.0.0.1:6379"

// GTUBE is the test pattern rspamd always rejects; AddHeaderGTUBE is the
// test variant it answers "add header" for (enable_test_patterns).
const (
	GTUBE          = "XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X"
	AddHeaderGTUBE = "YJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X"
)

//go:embed testdata/rspamd.conf
var config string

// Server is a running rspamd.
type Server struct {
	URL  string // the controller: /checkv2, /learnspam, /learnham
	dir  string
	cmd  *exec.Cmd
	stop sync.Once
}

// TB is what Start needs of a test (testing.TB; a TestMain passes its own).
type TB interface {
	Helper()
	Skip(args ...any)
	Fatalf(format string, args ...any)
}

// Missing says why no rspamd can run here ("" when one can).
func Missing() string {
	if _, err := exec.LookPath("rspamd"); err != nil {
		return "rspamd is not installed (apt-get install rspamd)"
	}
	c, err := net.DialTimeout("tcp", RedisAddr, 2*time.Second)
	if err != nil {
		return "Redis does not answer at " + RedisAddr
	}
	c.Close()
	return ""
}

// Required reports whether a missing rspamd fails the run (CI).
func Required() bool { return os.Getenv(RequireAllVar) == "1" }

// Start runs rspamd and waits until its controller answers; the caller
// stops it (Stop). It skips t without rspamd, or fails under
// CALLSIGN_TEST_REQUIRE_ALL=1.
func Start(t TB) *Server {
	t.Helper()
	if missing := Missing(); missing != "" {
		if Required() {
			t.Fatalf("%s, and %s=1 requires every real peer", missing, RequireAllVar)
		}
		t.Skip(missing)
	}
	s, err := start()
	if err != nil {
		t.Fatalf("rspamd: %v", err)
	}
	return s
}

func start() (*Server, error) {
	dir, err := os.MkdirTemp("", "rspamd-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	// Databases 12 to 15 spread parallel packages; a clash costs nothing
	// (learning a message twice is answered "already learned").
	conf := strings.NewReplacer("{{DIR}}", dir, "{{PORT}}", strconv.Itoa(port), "{{REDIS}}", RedisAddr,
		"{{REDIS_DB}}", strconv.Itoa(12+port%4)).Replace(config)
	if err := os.WriteFile(filepath.Join(dir, "rspamd.conf"), []byte(conf), 0o644); err != nil {
		return nil, err
	}
	args := []string{"-f", "-c", filepath.Join(dir, "rspamd.conf")}
	if os.Geteuid() == 0 { // rspamd refuses to run its workers as root unless told
		args = append(args, "-u", "root", "-g", "root", "-i")
	}
	cmd := exec.Command("rspamd", args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its workers stop with it
	out, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		return nil, err
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{URL: fmt.Sprintf("http://127.0.0.1:%d", port), dir: dir, cmd: cmd}
	// Loading takes a second or two, longer on a loaded machine.
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(s.URL + "/ping")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
	}
	log, _ := os.ReadFile(filepath.Join(dir, "rspamd.log"))
	s.Stop()
	return nil, fmt.Errorf("the controller did not answer within 2 minutes; log:\n%s", log)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Stop ends rspamd and its workers, and removes its directory; a second
// call does nothing.
func (s *Server) Stop() {
	s.stop.Do(func() {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		os.RemoveAll(s.dir)
	})
}
