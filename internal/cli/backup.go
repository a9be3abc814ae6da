package cli

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/vaultcipher"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/config"
	"github.com/callsign/callsign/internal/server"
	"github.com/callsign/callsign/ports"
)

// A backup file is a gzip-compressed tar of two entries, in this order:
// manifest.json (backupManifest) and the SQLite database, whose size and
// SHA-256 the manifest gives, so any damage to the file is found before a
// byte of it is used.
const (
	backupFormat       = "callsign-backup/1"
	backupManifestName = "manifest.json"
	backupDatabaseName = "callsign.db"
	// maxManifestBytes bounds what restore reads before it trusts the file.
	maxManifestBytes = 64 << 10
)

// backupManifest says what a backup holds and what it needs: the key ids of
// the vault keys its sealed values were sealed under, never a key.
type backupManifest struct {
	Format        string    `json:"format"`
	CreatedAt     time.Time `json:"created_at"`
	Version       string    `json:"callsign_version"`
	SchemaVersion int64     `json:"schema_version"`
	Database      struct {
		Name   string `json:"name"`
		Size   int64  `json:"size"`
		SHA256 string `json:"sha256"`
	} `json:"database"`
	Vault struct {
		KeyIDs       []string `json:"key_ids"`
		SealedValues int      `json:"sealed_values"`
	} `json:"vault"`
}

func (c *cli) backupCommands() []*cobra.Command {
	backup := &cobra.Command{
		Use:   "backup FILE",
		Short: "Write a consistent copy of a running SQLite instance to FILE",
		Long: `Writes a consistent copy of the SQLite database to FILE while the service
runs (ingest goes on), with a manifest: schema version, time, and the ids of
the vault keys it needs. The vault key itself is never in the backup: keep
vault.key (or CALLSIGN_VAULT_KEY) safe separately. With PostgreSQL, use
pg_dump; this command prints how.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error { return c.backup(args[0]) },
	}
	restore := &cobra.Command{
		Use:   "restore FILE",
		Short: "Restore a backup into an empty data directory",
		Long: `Checks FILE (its checksum, its schema version against this build), writes
the database where CALLSIGN_DATABASE_URL points (which must not exist yet),
migrates it, and checks that the configured vault key opens every sealed
value before it finishes. Put vault.key in CALLSIGN_DATA_DIR (or set
CALLSIGN_VAULT_KEY) first.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error { return c.restore(args[0]) },
	}
	return []*cobra.Command{backup, restore}
}

// backup runs `callsign backup FILE`.
func (c *cli) backup(file string) error {
	cfg, err := c.config()
	if err != nil {
		return err
	}
	if sqlstore.IsPostgresURL(cfg.DatabaseURL) {
		return fmt.Errorf("the database is PostgreSQL: back it up with pg_dump, e.g. pg_dump --format=custom --file=%s '%s' (and keep the vault key with it)",
			file, redactedURL(cfg.DatabaseURL))
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s already exists; choose a new file", file)
	}
	ctx := context.Background()
	work, err := os.MkdirTemp(filepath.Dir(file), ".callsign-backup-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	copyPath := filepath.Join(work, backupDatabaseName)
	started := time.Now()
	if err := sqlstore.CopySQLite(ctx, cfg.DatabaseURL, copyPath); err != nil {
		return err
	}
	m, err := describeCopy(ctx, copyPath)
	if err != nil {
		return err
	}
	m.CreatedAt = started.UTC()
	m.Version = Version
	if err := writeBackup(file, work, copyPath, m); err != nil {
		return err
	}
	return json.NewEncoder(c.stdout).Encode(map[string]any{"backup": file, "schema_version": m.SchemaVersion,
		"database_bytes": m.Database.Size, "vault_key_ids": m.Vault.KeyIDs, "seconds": time.Since(started).Seconds()})
}

// describeCopy fills a manifest from the copy: checked page by page, its
// schema version, its checksum and the keys its sealed values need.
func describeCopy(ctx context.Context, path string) (backupManifest, error) {
	m := backupManifest{Format: backupFormat}
	db, err := sqlstore.Open(ctx, path, sqlstore.Options{})
	if err != nil {
		return m, err
	}
	if err := db.IntegrityCheck(ctx); err != nil {
		db.Close()
		return m, err
	}
	if m.SchemaVersion, err = db.SchemaVersion(ctx); err != nil {
		db.Close()
		return m, err
	}
	var after ports.SealedValue
	for {
		page, err := db.SealedValues(ctx, after, 500)
		if err != nil {
			db.Close()
			return m, err
		}
		if len(page) == 0 {
			break
		}
		for _, v := range page {
			m.Vault.SealedValues++
			if id, ok := vaultcipher.SealedKeyID(v.Sealed); ok && !slices.Contains(m.Vault.KeyIDs, id) {
				m.Vault.KeyIDs = append(m.Vault.KeyIDs, id)
			}
		}
		after = page[len(page)-1]
	}
	if err := db.Close(); err != nil {
		return m, err
	}
	m.Vault.KeyIDs = append(make([]string, 0), m.Vault.KeyIDs...) // [] rather than null
	m.Database.Name = backupDatabaseName
	m.Database.Size, m.Database.SHA256, err = fileDigest(path)
	return m, err
}

func fileDigest(path string) (int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	return n, hex.EncodeToString(h.Sum(nil)), err
}

// writeBackup writes the archive beside file and renames it into place
// once it is on disk, so a failed backup never leaves a file that looks whole.
func writeBackup(file, work, dbPath string, m backupManifest) error {
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	db, err := os.Open(dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	out, err := os.CreateTemp(work, "archive-*")
	if err != nil {
		return err
	}
	defer out.Close()
	// Mail compresses well, and the fastest level keeps the backup's CPU low.
	zw, err := gzip.NewWriterLevel(out, gzip.BestSpeed)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: backupManifestName, Mode: 0o600, Size: int64(len(manifest)), ModTime: m.CreatedAt}); err != nil {
		return err
	}
	if _, err := tw.Write(manifest); err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: backupDatabaseName, Mode: 0o600, Size: m.Database.Size, ModTime: m.CreatedAt}); err != nil {
		return err
	}
	if _, err := io.Copy(tw, db); err != nil {
		return err
	}
	if err := errors.Join(tw.Close(), zw.Close(), out.Sync(), out.Close()); err != nil {
		return err
	}
	return os.Rename(out.Name(), file)
}

// restore runs `callsign restore FILE`.
func (c *cli) restore(file string) error {
	cfg, err := c.config()
	if err != nil {
		return err
	}
	if sqlstore.IsPostgresURL(cfg.DatabaseURL) {
		return errors.New("the database is PostgreSQL: restore a pg_dump backup with pg_restore")
	}
	target := strings.TrimPrefix(cfg.DatabaseURL, "file:")
	for _, p := range []string{target, target + "-wal"} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s already exists: restore into an empty data directory (or point CALLSIGN_DATABASE_URL at a new file)", p)
		}
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		return err
	}
	restoring := target + ".restoring"
	defer os.Remove(restoring)
	defer os.Remove(restoring + "-shm")
	defer os.Remove(restoring + "-wal")
	m, err := extractBackup(file, restoring)
	if err != nil {
		return err
	}
	if len(m.Vault.KeyIDs) > 0 && cfg.VaultKey == nil {
		if _, err := os.Stat(server.VaultKeyFile(cfg)); err != nil {
			return fmt.Errorf("the backup's vault needs key %s: put the vault.key it was made with in %s, or set CALLSIGN_VAULT_KEY",
				strings.Join(m.Vault.KeyIDs, ", "), cfg.DataDir)
		}
	}
	check, version, err := c.openRestored(cfg, restoring)
	if err != nil {
		return err
	}
	if check.Unreadable > 0 {
		return fmt.Errorf("the configured vault key does not open %d of %d sealed values; the backup needs key %s",
			check.Unreadable, check.Checked, strings.Join(m.Vault.KeyIDs, ", "))
	}
	// The WAL, if closing left one, goes with its database.
	if err := os.Rename(restoring+"-wal", target+"-wal"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.Rename(restoring, target); err != nil {
		return err
	}
	return json.NewEncoder(c.stdout).Encode(map[string]any{"restored": target, "backup_created_at": m.CreatedAt,
		"schema_version": version, "vault_values_checked": check.Checked})
}

// openRestored opens the restored database as the service would (which
// migrates it to this build's schema) and checks its vault.
func (c *cli) openRestored(cfg config.Config, path string) (check app.VaultCheck, version int64, err error) {
	cfg.DatabaseURL = path
	ctx := context.Background()
	svc, err := server.Open(ctx, cfg, c.logger(cfg.LogLevel))
	if err != nil {
		return check, 0, err
	}
	defer func() { err = errors.Join(err, svc.Close()) }()
	svc.NoteGeneratedKeys(c.stderr)
	if check, err = svc.App().Vault.Check(ctx); err != nil {
		return check, 0, err
	}
	version, err = svc.DB().SchemaVersion(ctx)
	return check, version, err
}

// extractBackup checks a backup file and writes its database to dest. It
// refuses a file that is damaged, is not a backup, or comes from a newer
// schema than this build knows.
func extractBackup(file, dest string) (backupManifest, error) {
	var m backupManifest
	bad := func(why string, args ...any) error {
		return fmt.Errorf("%s is not a usable Callsign backup: %s", file, fmt.Sprintf(why, args...))
	}
	f, err := os.Open(file)
	if err != nil {
		return m, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return m, bad("%v", err)
	}
	tr := tar.NewReader(zr)
	h, err := tr.Next()
	if err != nil || h.Name != backupManifestName || h.Size > maxManifestBytes {
		return m, bad("it does not start with its manifest")
	}
	if err := json.NewDecoder(io.LimitReader(tr, maxManifestBytes)).Decode(&m); err != nil {
		return m, bad("its manifest does not read: %v", err)
	}
	if m.Format != backupFormat {
		return m, bad("format %q, expected %q", m.Format, backupFormat)
	}
	latest, err := sqlstore.LatestSchemaVersion(sqlstore.SQLite)
	if err != nil {
		return m, err
	}
	if m.SchemaVersion > latest {
		return m, fmt.Errorf("%s comes from a newer Callsign (schema version %d; this build knows up to %d): restore it with that version or later",
			file, m.SchemaVersion, latest)
	}
	if h, err = tr.Next(); err != nil || h.Name != m.Database.Name || h.Size != m.Database.Size {
		return m, bad("its database entry is missing or cut short")
	}
	out, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return m, err
	}
	hash := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, hash), tr)
	if err = errors.Join(err, out.Sync(), out.Close()); err != nil {
		return m, bad("%v", err)
	}
	if n != m.Database.Size || hex.EncodeToString(hash.Sum(nil)) != m.Database.SHA256 {
		return m, bad("its database does not match the manifest's checksum (the file is damaged)")
	}
	return m, nil
}

// redactedURL hides a database URL's password for printing.
func redactedURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "DATABASE_URL"
	}
	return u.Redacted()
}
