package e2e

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/vaultcipher"
	"github.com/callsign/callsign/internal/server"
)

// rawRows reads every column of every row of table as bytes, straight from
// the database the service uses.
func (r *running) rawRows(table string) [][]byte {
	r.t.Helper()
	driver, dsn := "sqlite", r.env["CALLSIGN_DATABASE_URL"]
	if sqlstore.IsPostgresURL(dsn) {
		driver = "pgx"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		r.t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT * FROM " + table)
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]byte
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			r.t.Fatal(err)
		}
		var row []byte
		for _, v := range vals {
			row = append(row, fmt.Sprint(v)...)
			if b, ok := v.([]byte); ok {
				row = append(row, b...)
			}
		}
		out = append(out, row)
	}
	return out
}

func TestVaultValuesAreEncryptedAtRest(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, nil)
		mgmt := r.bootstrap("vault@example.com")
		var ident struct{ UUID string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "v"}, &ident)
		q := "?identity=" + ident.UUID
		if s := r.call("POST", "/api/passwords/"+q, mgmt, map[string]any{"domain": "bank.example", "username": "visible-user", "password": "PLAINTEXT-PASSWORD", "notes": "PLAINTEXT-NOTES"}, nil); s != 201 {
			t.Fatalf("password: %d", s)
		}
		if s := r.call("POST", "/api/secrets/"+q, mgmt, map[string]any{"key": "API_TOKEN", "value": "PLAINTEXT-SECRET"}, nil); s != 201 {
			t.Fatalf("secret: %d", s)
		}
		rows := append(r.rawRows("passwords"), r.rawRows("secrets")...)
		if len(rows) != 2 {
			t.Fatalf("%d rows", len(rows))
		}
		all := bytes.Join(rows, nil)
		if !bytes.Contains(all, []byte("visible-user")) || !bytes.Contains(all, []byte("API_TOKEN")) {
			t.Fatal("the raw read does not see the rows' plain columns; the check would prove nothing")
		}
		for _, plain := range []string{"PLAINTEXT-PASSWORD", "PLAINTEXT-NOTES", "PLAINTEXT-SECRET"} {
			if bytes.Contains(all, []byte(plain)) {
				t.Errorf("%s is stored in plaintext", plain)
			}
		}
		var back []struct{ Value string }
		r.call("GET", "/api/secrets/"+q, mgmt, nil, &back)
		if len(back) != 1 || back[0].Value != "PLAINTEXT-SECRET" {
			t.Fatalf("read back %+v", back)
		}
	})
}

func TestRotateKeyWhileServing(t *testing.T) {
	t.Parallel()
	r := start(t, sqlstore.SQLite, nil)
	mgmt := r.bootstrap("rotate@example.com")
	var ident struct{ UUID string }
	r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "v"}, &ident)
	q := "?identity=" + ident.UUID
	for i := range 5 {
		r.call("POST", "/api/secrets/"+q, mgmt, map[string]any{"key": fmt.Sprint("K", i), "value": fmt.Sprint("value-", i)}, nil)
	}
	path := server.VaultKeyFile(r.svc.Config())
	oldKeys, err := vaultcipher.ReadKeyFile(path)
	if err != nil || len(oldKeys) != 1 {
		t.Fatalf("key file: %v %d", err, len(oldKeys))
	}

	out, errOut, code := r.cli("", "vault", "rotate-key")
	if code != 0 {
		t.Fatalf("rotate-key: %d %s", code, errOut)
	}
	var rep struct {
		KeyID    string `json:"key_id"`
		Resealed int
		Retired  bool `json:"old_keys_retired"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Resealed != 5 || !rep.Retired {
		t.Fatalf("report %q: %+v %v", out, rep, err)
	}
	keys, _ := vaultcipher.ReadKeyFile(path)
	if len(keys) != 1 || bytes.Equal(keys[0], oldKeys[0]) || vaultcipher.KeyID(keys[0]) != rep.KeyID {
		t.Fatal("the old key is still in the key file")
	}
	// The running service reads every value, writes new ones, under the new key only.
	var back []struct{ Key, Value string }
	if s := r.call("GET", "/api/secrets/"+q, mgmt, nil, &back); s != 200 || len(back) != 5 || back[4].Value != "value-4" {
		t.Fatalf("after rotation: %d %+v", s, back)
	}
	if s := r.call("POST", "/api/secrets/"+q, mgmt, map[string]any{"key": "after", "value": "new"}, nil); s != 201 {
		t.Fatalf("write after rotation: %d", s)
	}
	retired, _ := vaultcipher.FromKeys(oldKeys[0])
	for _, row := range r.rawRows("secrets") {
		if _, err := retired.Open(row, nil); err == nil {
			t.Fatal("a value still opens under the retired key")
		}
	}
	if !strings.Contains(out, rep.KeyID) {
		t.Fatal("the report names the new key")
	}
}
