-- Drafts (unsent messages, sent later at once or at send_at), and the send
-- right of identity keys: a key without it drafts, and a management key
-- approves by sending.

-- +goose Up
ALTER TABLE api_keys ADD COLUMN can_send BOOLEAN NOT NULL DEFAULT TRUE;
CREATE TABLE email_drafts (
    id                UUID PRIMARY KEY,
    account_id        UUID NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    identity_id       UUID NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
    inbox_id          BIGINT NOT NULL REFERENCES inboxes (id) ON DELETE CASCADE,
    kind              TEXT NOT NULL,
    -- the message a reply or forward answers; NULL once it is deleted
    original_id       BIGINT REFERENCES email_messages (id) ON DELETE SET NULL,
    to_addrs          TEXT NOT NULL DEFAULT '[]',
    cc_addrs          TEXT NOT NULL DEFAULT '[]',
    bcc_addrs         TEXT NOT NULL DEFAULT '[]',
    subject           TEXT,
    content           TEXT,
    html              TEXT NOT NULL DEFAULT '',
    attachment_ids    TEXT NOT NULL DEFAULT '[]',
    send_at           BIGINT,
    awaiting_approval BOOLEAN NOT NULL DEFAULT FALSE,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL
);
CREATE INDEX email_drafts__account_id ON email_drafts (account_id, identity_id, created_at);
CREATE INDEX email_drafts__inbox_id ON email_drafts (inbox_id);
CREATE INDEX email_drafts__original_id ON email_drafts (original_id);

-- +goose Down
DROP TABLE email_drafts;
ALTER TABLE api_keys DROP COLUMN can_send;
