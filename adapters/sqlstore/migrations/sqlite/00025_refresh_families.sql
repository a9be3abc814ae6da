-- The refresh tokens of each password sign-in (core.RefreshFamily): the
-- generation of the one token that may be used next, and when the family
-- was revoked because an older token came back.

-- +goose Up
CREATE TABLE refresh_families (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    generation INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    revoked_at INTEGER
);
CREATE INDEX refresh_families_account ON refresh_families (account_id);
CREATE INDEX refresh_families_expiry ON refresh_families (expires_at);

-- +goose Down
DROP TABLE refresh_families;
