-- Webhooks (issue 14): endpoints that receive the account's events, and one
-- delivery row per (event, endpoint), written in the event's transaction so
-- a delivery exists if and only if its event does. Secrets are sealed by the
-- vault cipher (listed among the sealed columns for key rotation).

-- +goose Up
CREATE TABLE webhooks (
    id              TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    url             TEXT NOT NULL,
    event_types     TEXT NOT NULL,
    identities      TEXT NOT NULL,
    description     TEXT NOT NULL,
    enabled         BOOLEAN NOT NULL,
    disabled_reason TEXT NOT NULL,
    secret          BLOB NOT NULL,
    previous_secret BLOB,
    previous_until  BIGINT NOT NULL,
    last_success_at BIGINT NOT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);
CREATE INDEX webhooks_account ON webhooks (account_id, created_at);
CREATE TABLE webhook_deliveries (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook_id      TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    account_id      TEXT NOT NULL,
    event_id        BIGINT NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL,
    status_code     INTEGER NOT NULL,
    error           TEXT NOT NULL,
    latency_ms      BIGINT NOT NULL,
    next_attempt_at BIGINT NOT NULL,
    claimed_until   BIGINT NOT NULL,
    created_at      BIGINT NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, id);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);

-- +goose Down
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
