-- Idempotency keys (Idempotency-Key): the first request's fingerprint, who
-- holds the key (token, lease), what it created (effect, written in the
-- effect's own transaction) and its answer. Kept 24 hours.

-- +goose Up
CREATE TABLE idempotency_keys (
    account_id  UUID NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    scope       TEXT NOT NULL,
    key         TEXT NOT NULL,
    fingerprint BYTEA NOT NULL,
    token       TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    lease_until BIGINT NOT NULL,
    effect_kind TEXT,
    effect_id   TEXT,
    status      INTEGER NOT NULL DEFAULT 0,
    body        BYTEA,
    PRIMARY KEY (account_id, scope, key)
);
CREATE INDEX idempotency_keys__created_at ON idempotency_keys (created_at);

-- +goose Down
DROP TABLE idempotency_keys;
