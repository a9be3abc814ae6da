package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/callsign/callsign/adapters/vaultcipher"
	"github.com/callsign/callsign/internal/server"
)

func (c *cli) vaultCommand() *cobra.Command {
	vault := group(&cobra.Command{Use: "vault", Short: "Manage the vault's encryption keys"})
	var keepOld bool
	rotate := leaf(&cobra.Command{
		Use:   "rotate-key",
		Short: "Re-encrypt the vault under a new key, without downtime",
		RunE:  func(*cobra.Command, []string) error { return c.rotateVaultKey(keepOld) },
	})
	rotate.Flags().BoolVar(&keepOld, "keep-old", false, "keep the old keys in the key file after re-encrypting")
	vault.AddCommand(rotate)
	return vault
}

// rotateVaultKey runs `callsign vault rotate-key`.
//
// With the key file of the data directory, it puts a fresh key first in
// the file, waits until running services have reloaded it (they reread the
// file within vaultcipher.ReloadInterval, and at once when they meet a value
// sealed under a key they do not know), re-encrypts every value still under
// an old key, sweeps once more for values written meanwhile, and retires
// the old keys (unless --keep-old). The service keeps serving throughout.
//
// With CALLSIGN_VAULT_KEY, keys live in the deployment's configuration: set
// the new key there and the old one in CALLSIGN_VAULT_PREVIOUS_KEYS, roll
// the instances, run this command to re-encrypt, then drop the old key.
func (c *cli) rotateVaultKey(keepOld bool) error {
	cfg, err := c.config()
	if err != nil {
		return err
	}
	ctx := context.Background()
	report := map[string]any{}
	fileMode := cfg.VaultKey == nil
	var newKey []byte
	if fileMode {
		path := server.VaultKeyFile(cfg)
		keys, err := vaultcipher.ReadKeyFile(path)
		if err != nil {
			return err
		}
		if newKey, err = vaultcipher.NewKey(); err != nil {
			return err
		}
		if err := vaultcipher.WriteKeyFile(path, append([][]byte{newKey}, keys...)); err != nil {
			return err
		}
		report["key_id"] = vaultcipher.KeyID(newKey)
		// Running services seal under the new key once they have reloaded the file.
		time.Sleep(2 * vaultcipher.ReloadInterval)
	} else {
		report["key_id"] = vaultcipher.KeyID(cfg.VaultKey)
	}

	svc, err := server.Open(ctx, cfg, c.logger(cfg.LogLevel))
	if err != nil {
		return err
	}
	defer svc.Close()
	svc.NoteGeneratedKeys(c.stderr)
	first, err := svc.App().Vault.Reseal(ctx)
	if err != nil {
		return fmt.Errorf("re-encrypting: %w", err)
	}
	sweep, err := svc.App().Vault.Reseal(ctx)
	if err != nil {
		return fmt.Errorf("re-encrypting: %w", err)
	}
	report["checked"] = first.Checked
	report["resealed"] = first.Resealed + sweep.Resealed
	if fileMode && !keepOld {
		if err := vaultcipher.WriteKeyFile(server.VaultKeyFile(cfg), [][]byte{newKey}); err != nil {
			return err
		}
		report["old_keys_retired"] = true
	}
	if !fileMode {
		report["next_step"] = "remove CALLSIGN_VAULT_PREVIOUS_KEYS from every instance"
	}
	return json.NewEncoder(c.stdout).Encode(report)
}
