package server

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/config"
)

// databaseConnectTimeout bounds the first connection to the database, so an
// unreachable server fails start-up instead of hanging it.
const databaseConnectTimeout = 15 * time.Second

// NoteGeneratedKeys says which key files this start created, once, so the
// operator backs them up.
func (s *Service) NoteGeneratedKeys(w io.Writer) {
	for _, path := range s.generatedKeys {
		why := "without it the vault's passwords and secrets cannot be read"
		if filepath.Base(path) == "jwt.key" {
			why = "it signs sign-in tokens and sessions, which all end if it is lost"
		}
		fmt.Fprintf(w, "Generated %s: back it up; %s.\n", path, why)
	}
}

// missingKeyFiles are the key files that opening the service will generate.
func missingKeyFiles(cfg config.Config) []string {
	var paths []string
	if cfg.VaultKey == nil {
		paths = append(paths, VaultKeyFile(cfg))
	}
	if cfg.JWTSecret == nil {
		paths = append(paths, jwtKeyFile(cfg))
	}
	var missing []string
	for _, p := range paths {
		if _, err := os.Stat(p); os.IsNotExist(err) {
			missing = append(missing, p)
		}
	}
	return missing
}

// checkDataDir makes sure the data directory can be written when anything
// lives there (the SQLite file, generated keys), so start-up fails with one
// line naming CALLSIGN_DATA_DIR instead of a later, stranger error.
func checkDataDir(cfg config.Config) error {
	if !StoresInDataDir(cfg) {
		return nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("CALLSIGN_DATA_DIR: cannot create %s: %w", cfg.DataDir, err)
	}
	probe, err := os.CreateTemp(cfg.DataDir, ".write-check-*")
	if err != nil {
		return fmt.Errorf("CALLSIGN_DATA_DIR: %s is not writable: %w", cfg.DataDir, err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// StoresInDataDir reports whether anything lives in the data directory:
// the SQLite file, or a key that is not configured.
func StoresInDataDir(cfg config.Config) bool {
	sqliteInDir := !sqlstore.IsPostgresURL(cfg.DatabaseURL) && filepath.Dir(filepath.Clean(cfg.DatabaseURL)) == filepath.Clean(cfg.DataDir)
	return sqliteInDir || cfg.VaultKey == nil || cfg.JWTSecret == nil
}

// DescribeDatabase names a database for messages without its password.
func DescribeDatabase(databaseURL string) string {
	if !sqlstore.IsPostgresURL(databaseURL) {
		return "the SQLite database " + databaseURL
	}
	u, err := url.Parse(databaseURL)
	if err != nil {
		return "the PostgreSQL database"
	}
	return "the PostgreSQL database at " + u.Host + u.Path
}
