-- Allow and block rules of an identity (identity_id set) or of the whole
-- account (identity_id NULL), and the blocked flag of messages they caught
-- after the fact (mail with an empty envelope sender, texts).

-- +goose Up
CREATE TABLE rules (
    id          UUID PRIMARY KEY,
    account_id  UUID NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    identity_id UUID REFERENCES identities (id) ON DELETE CASCADE,
    channel     TEXT NOT NULL,
    direction   TEXT NOT NULL,
    action      TEXT NOT NULL,
    pattern     TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE INDEX rules__account_id ON rules (account_id, channel, direction);
ALTER TABLE email_messages ADD COLUMN blocked BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE sms_messages ADD COLUMN blocked BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE sms_messages DROP COLUMN blocked;
ALTER TABLE email_messages DROP COLUMN blocked;
DROP TABLE rules;
