-- Call records (issue 14): calls to an identity's number, from the
-- provider's voice webhooks or the simulator. ended_at is 0 while the call
-- lasts, duration_seconds -1 until it ends; hang_up_at is when the
-- simulator ends a call it placed (0 for a provider's), kept here so that
-- a restart still ends it.

-- +goose Up
CREATE TABLE calls (
    id               BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id       UUID NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    identity_id      UUID NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
    phone_id         BIGINT NOT NULL REFERENCES phone_numbers (id) ON DELETE CASCADE,
    phone_number     TEXT NOT NULL,
    direction        TEXT NOT NULL CHECK (direction IN ('incoming', 'outgoing')),
    from_number      TEXT NOT NULL,
    to_number        TEXT NOT NULL,
    status           TEXT NOT NULL,
    started_at       BIGINT NOT NULL,
    ended_at         BIGINT NOT NULL DEFAULT 0,
    duration_seconds BIGINT NOT NULL,
    provider_sid     TEXT NOT NULL,
    hang_up_at       BIGINT NOT NULL DEFAULT 0
);
-- A provider's call id is stored once: a webhook delivered twice is one call.
CREATE UNIQUE INDEX calls__provider_sid ON calls (provider_sid);
CREATE INDEX calls_account ON calls (account_id, started_at);
CREATE INDEX calls_identity ON calls (identity_id, started_at);
CREATE INDEX calls_hang_up ON calls (hang_up_at) WHERE hang_up_at <> 0 AND ended_at = 0;

-- +goose Down
DROP TABLE calls;
