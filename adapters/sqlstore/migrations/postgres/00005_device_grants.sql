-- Device authorizations (RFC 8628): a client polls with its device code
-- (stored as a SHA-256 hash) while a person approves or denies the request
-- on the verification page, typing the short user code.

-- +goose Up
CREATE TABLE device_grants (
    id               UUID PRIMARY KEY,
    device_code_hash BYTEA NOT NULL,
    user_code        TEXT NOT NULL,
    client_name      TEXT NOT NULL DEFAULT '',
    status           TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'redeemed')),
    account_id       UUID REFERENCES accounts (id) ON DELETE CASCADE,
    identity_id      UUID REFERENCES identities (id) ON DELETE CASCADE,
    interval_seconds BIGINT NOT NULL,
    created_at       BIGINT NOT NULL,
    expires_at       BIGINT NOT NULL,
    last_polled_at   BIGINT,
    CHECK ((status = 'pending') = (account_id IS NULL)),
    CHECK ((status IN ('approved', 'redeemed')) = (identity_id IS NOT NULL))
);
CREATE UNIQUE INDEX device_grants__device_code ON device_grants (device_code_hash);
CREATE UNIQUE INDEX device_grants__user_code ON device_grants (user_code);
CREATE INDEX device_grants_expiry ON device_grants (expires_at);

-- +goose Down
DROP TABLE device_grants;
