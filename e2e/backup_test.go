package e2e

import (
	"archive/tar"
	"compress/gzip"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/smtp"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/internal/cli"
)

// TestBackupWhileMailArrives: `callsign backup` copies a running SQLite
// instance while mail arrives as fast as one sender can send it; every
// message acknowledged before the backup started is in the copy `callsign
// restore` puts in a new data directory, the vault reads there, and the
// restored service starts. A damaged backup, one from a newer schema, and a
// restore without the vault key are refused with a clear error.
func TestBackupWhileMailArrives(t *testing.T) {
	t.Parallel()
	r := start(t, sqlstore.SQLite, nil)
	mgmt := r.bootstrap("backup@example.com")
	var ident struct{ UUID, Inbox string }
	r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Kept"}, &ident)
	if s := r.call("POST", "/api/secrets/?identity="+ident.UUID, mgmt, map[string]any{"key": "TOKEN", "value": "kept-secret"}, nil); s != 201 {
		t.Fatalf("secret: %d", s)
	}

	// One sender on one connection, as fast as it goes, until the backup ends.
	var (
		mu    sync.Mutex
		acked []string
	)
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		c, err := smtp.Dial(r.svc.SMTPAddr())
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id := fmt.Sprintf("backup-%d@example.org", i)
			if err := send(c, ident.Inbox, id); err != nil {
				t.Errorf("send %d: %v", i, err)
				return
			}
			mu.Lock()
			acked = append(acked, id)
			mu.Unlock()
		}
	}()
	poll(t, "mail arriving", func() bool { mu.Lock(); defer mu.Unlock(); return len(acked) >= 20 })

	file := filepath.Join(t.TempDir(), "callsign.backup")
	mu.Lock()
	before := append([]string(nil), acked...)
	mu.Unlock()
	out, errOut, code := r.cli("", "backup", file)
	close(stop)
	<-stopped
	if code != 0 {
		t.Fatalf("backup: %d %s", code, errOut)
	}
	var report struct {
		SchemaVersion int64    `json:"schema_version"`
		KeyIDs        []string `json:"vault_key_ids"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil || report.SchemaVersion == 0 || len(report.KeyIDs) != 1 {
		t.Fatalf("backup printed %q (%v)", out, err)
	}
	mu.Lock()
	t.Logf("%d messages acknowledged before the backup began, %d by its end", len(before), len(acked))
	mu.Unlock()

	// Restoring needs the vault key, and an empty place for the database.
	dir := t.TempDir()
	env := map[string]string{"CALLSIGN_DATA_DIR": dir, "CALLSIGN_DATABASE_URL": filepath.Join(dir, "callsign.db")}
	restore := func(file string) (string, int) {
		var out, errOut strings.Builder
		code := cli.Run([]string{"restore", file}, strings.NewReader(""), &out, &errOut, func(k string) string { return env[k] })
		return out.String() + errOut.String(), code
	}
	if msg, code := restore(file); code != 1 || !strings.Contains(msg, "needs key "+report.KeyIDs[0]) {
		t.Fatalf("restore without the vault key: %d %s", code, msg)
	}
	for _, bad := range []struct{ name, want string }{
		{damaged(t, file), "damaged"},
		{truncated(t, file), "not a usable Callsign backup"},
		{fromTheFuture(t, file), "newer Callsign"},
	} {
		if msg, code := restore(bad.name); code != 1 || !strings.Contains(msg, bad.want) {
			t.Errorf("restore %s: %d %s", filepath.Base(bad.name), code, msg)
		}
	}
	if _, err := os.Stat(env["CALLSIGN_DATABASE_URL"]); !os.IsNotExist(err) {
		t.Fatalf("a refused restore left a database behind: %v", err)
	}
	key, err := os.ReadFile(filepath.Join(r.env["CALLSIGN_DATA_DIR"], "vault.key"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "vault.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	if msg, code := restore(file); code != 0 {
		t.Fatalf("restore: %d %s", code, msg)
	}
	if msg, code := restore(file); code != 1 || !strings.Contains(msg, "already exists") {
		t.Fatalf("a restore over a database: %d %s", code, msg)
	}

	db, err := sql.Open("sqlite", env["CALLSIGN_DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]bool{}
	rows, err := db.Query("SELECT message_id FROM email_messages")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		stored[id] = true
	}
	rows.Close()
	db.Close()
	for _, id := range before {
		if !stored[id] {
			t.Errorf("%s was acknowledged before the backup began and is not in it", id)
		}
	}

	restored := start(t, sqlstore.SQLite, env)
	var secrets []struct{ Value string }
	if s := restored.call("GET", "/api/secrets/?identity="+ident.UUID, mgmt, nil, &secrets); s != 200 || len(secrets) != 1 || secrets[0].Value != "kept-secret" {
		t.Fatalf("the restored vault: %d %+v", s, secrets)
	}
}

// damaged copies a backup with one byte of its database changed.
func damaged(t *testing.T, file string) string {
	return rewritten(t, file, "damaged", func(name string, body []byte) []byte {
		if name == "callsign.db" {
			body[len(body)/2] ^= 0xff
		}
		return body
	})
}

// fromTheFuture copies a backup whose manifest claims a newer schema.
func fromTheFuture(t *testing.T, file string) string {
	return rewritten(t, file, "future", func(name string, body []byte) []byte {
		if name != "manifest.json" {
			return body
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		m["schema_version"] = 1 << 40
		out, _ := json.Marshal(m)
		return out
	})
}

// truncated copies the first half of a backup.
func truncated(t *testing.T, file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), "truncated.backup")
	if err := os.WriteFile(name, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}

// rewritten copies a backup archive, passing each entry through change.
func rewritten(t *testing.T, file, name string, change func(name string, body []byte) []byte) string {
	t.Helper()
	in, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	outName := filepath.Join(t.TempDir(), name+".backup")
	out, err := os.Create(outName)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(out)
	tw := tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		body = change(h.Name, body)
		h.Size = int64(len(body))
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	out.Close()
	return outName
}
