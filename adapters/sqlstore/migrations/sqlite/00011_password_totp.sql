-- A password entry may keep a TOTP key (an otpauth URI), sealed by the
-- vault cipher like the password.

-- +goose Up
ALTER TABLE passwords ADD COLUMN totp BLOB;

-- +goose Down
ALTER TABLE passwords DROP COLUMN totp;
