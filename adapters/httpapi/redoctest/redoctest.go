// Package redoctest fetches the Redoc script that the API's reference page
// loads from a CDN, so tests can check its integrity hash and serve it to a
// browser that has no network.
package redoctest

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Script fetches a version of the Redoc script from npm (with npm pack): the
// file the reference page loads from the CDN. Without npm it skips, unless
// CALLSIGN_TEST_REQUIRE_ALL=1 (CI) makes that a failure.
func Script(t testing.TB, version string) []byte {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		if os.Getenv("CALLSIGN_TEST_REQUIRE_ALL") == "1" {
			t.Fatal("npm is not installed, and CALLSIGN_TEST_REQUIRE_ALL=1 requires this test")
		}
		t.Skip("npm is not installed")
	}
	dir := t.TempDir()
	cmd := exec.Command(npm, "pack", "--silent", "redoc@"+version)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("npm pack redoc@%s: %v", version, err)
	}
	f, err := os.Open(filepath.Join(dir, strings.TrimSpace(string(out))))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if err != nil {
			t.Fatalf("no bundles/redoc.standalone.js in the package: %v", err)
		}
		if hdr.Name == "package/bundles/redoc.standalone.js" {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}
