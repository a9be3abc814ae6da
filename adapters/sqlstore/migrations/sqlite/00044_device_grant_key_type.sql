-- A device login grants one key: an identity key (the default) or, when
-- the person chooses it, a management key, which has no identity. The
-- client may ask for one (requested_*), which the approval page only
-- preselects; key_type is what the person approved ('' until then).
-- Grants approved before this migration hand out an identity key.

-- +goose Up
-- Rebuilt for the new CHECK (SQLite cannot change one), in PostgreSQL's column order.
CREATE TABLE device_grants_new (
    id                 TEXT PRIMARY KEY,
    device_code_hash   BLOB NOT NULL,
    user_code          TEXT NOT NULL,
    client_name        TEXT NOT NULL DEFAULT '',
    status             TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'redeemed')),
    account_id         TEXT REFERENCES accounts (id) ON DELETE CASCADE,
    identity_id        TEXT REFERENCES identities (id) ON DELETE CASCADE,
    interval_seconds   INTEGER NOT NULL,
    created_at         INTEGER NOT NULL,
    expires_at         INTEGER NOT NULL,
    last_polled_at     INTEGER,
    requested_from     TEXT NOT NULL DEFAULT '',
    requested_key_type TEXT NOT NULL DEFAULT 'identity' CHECK (requested_key_type IN ('identity', 'management')),
    requested_identity TEXT NOT NULL DEFAULT '',
    key_type           TEXT NOT NULL DEFAULT '' CHECK (key_type IN ('', 'identity', 'management')),
    CHECK ((status = 'pending') = (account_id IS NULL)),
    CHECK ((status IN ('approved', 'redeemed') AND key_type = 'identity') = (identity_id IS NOT NULL))
);
INSERT INTO device_grants_new (id, device_code_hash, user_code, client_name, status, account_id, identity_id,
        interval_seconds, created_at, expires_at, last_polled_at, requested_from, key_type)
    SELECT id, device_code_hash, user_code, client_name, status, account_id, identity_id,
        interval_seconds, created_at, expires_at, last_polled_at, requested_from,
        CASE WHEN status IN ('approved', 'redeemed') THEN 'identity' ELSE '' END
    FROM device_grants;
DROP TABLE device_grants;
ALTER TABLE device_grants_new RENAME TO device_grants;
CREATE UNIQUE INDEX device_grants__device_code ON device_grants (device_code_hash);
CREATE UNIQUE INDEX device_grants__user_code ON device_grants (user_code);
CREATE INDEX device_grants_expiry ON device_grants (expires_at);

-- +goose Down
CREATE TABLE device_grants_old (
    id               TEXT PRIMARY KEY,
    device_code_hash BLOB NOT NULL,
    user_code        TEXT NOT NULL,
    client_name      TEXT NOT NULL DEFAULT '',
    status           TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'redeemed')),
    account_id       TEXT REFERENCES accounts (id) ON DELETE CASCADE,
    identity_id      TEXT REFERENCES identities (id) ON DELETE CASCADE,
    interval_seconds INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    expires_at       INTEGER NOT NULL,
    last_polled_at   INTEGER,
    requested_from   TEXT NOT NULL DEFAULT '',
    CHECK ((status = 'pending') = (account_id IS NULL)),
    CHECK ((status IN ('approved', 'redeemed')) = (identity_id IS NOT NULL))
);
INSERT INTO device_grants_old SELECT id, device_code_hash, user_code, client_name, status, account_id, identity_id,
        interval_seconds, created_at, expires_at, last_polled_at, requested_from
    FROM device_grants WHERE key_type <> 'management';
DROP TABLE device_grants;
ALTER TABLE device_grants_old RENAME TO device_grants;
CREATE UNIQUE INDEX device_grants__device_code ON device_grants (device_code_hash);
CREATE UNIQUE INDEX device_grants__user_code ON device_grants (user_code);
CREATE INDEX device_grants_expiry ON device_grants (expires_at);
