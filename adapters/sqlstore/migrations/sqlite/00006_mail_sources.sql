-- IMAP mailboxes that feed inboxes: settings (the password sealed like
-- vault values), the delivery cursor and the worker's state.

-- +goose Up
CREATE TABLE mail_sources (
    id            TEXT PRIMARY KEY, -- the inbox's uuid: one source per inbox
    account_id    TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    identity_id   TEXT NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
    inbox_id      INTEGER NOT NULL REFERENCES inboxes (id) ON DELETE CASCADE,
    host          TEXT NOT NULL,
    port          INTEGER NOT NULL,
    username      TEXT NOT NULL,
    password      BLOB NOT NULL,
    tls           TEXT NOT NULL CHECK (tls IN ('implicit', 'starttls', 'plain')),
    folder        TEXT NOT NULL,
    uid_validity  INTEGER NOT NULL DEFAULT 0,
    last_uid      INTEGER NOT NULL DEFAULT 0,
    connected     BOOLEAN NOT NULL DEFAULT FALSE,
    last_error    TEXT NOT NULL DEFAULT '',
    last_sync_at  INTEGER,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);
CREATE UNIQUE INDEX mail_sources__inbox ON mail_sources (inbox_id);
CREATE INDEX mail_sources_account ON mail_sources (account_id);

-- +goose Down
DROP TABLE mail_sources;
