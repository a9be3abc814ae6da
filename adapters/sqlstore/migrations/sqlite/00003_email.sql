-- Email: custom domains, threads, messages with their raw source and
-- attachments, and the outbox.

-- +goose Up
-- The last creation time given to an account's mail: times are made
-- strictly increasing per account, under this row's lock, so that a
-- created_after cursor never skips or repeats a message.
ALTER TABLE accounts ADD COLUMN mail_clock INTEGER NOT NULL DEFAULT 0;

CREATE TABLE custom_domains (
    domain     TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    status     TEXT NOT NULL CHECK (status IN ('verified', 'pending')),
    created_at INTEGER NOT NULL
);
CREATE INDEX custom_domains_account ON custom_domains (account_id, domain);

-- A thread's summary is kept up to date as messages arrive and are read,
-- so listing threads never scans messages.
CREATE TABLE email_threads (
    id               TEXT PRIMARY KEY,
    account_id       TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    identity_id      TEXT NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
    inbox_id         INTEGER NOT NULL REFERENCES inboxes (id) ON DELETE CASCADE,
    subject          TEXT NOT NULL DEFAULT '',
    preview          TEXT NOT NULL DEFAULT '',
    message_count    INTEGER NOT NULL DEFAULT 0,
    unread_count     INTEGER NOT NULL DEFAULT 0,
    attachment_names TEXT NOT NULL DEFAULT '[]', -- JSON array
    participants     TEXT NOT NULL DEFAULT '[]', -- JSON array
    last_message_at  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX email_threads_account ON email_threads (account_id, last_message_at);
CREATE INDEX email_threads_identity ON email_threads (identity_id, last_message_at);
CREATE INDEX email_threads_inbox ON email_threads (inbox_id, last_message_at);

CREATE TABLE email_messages (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id      TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    identity_id     TEXT NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
    inbox_id        INTEGER NOT NULL REFERENCES inboxes (id) ON DELETE CASCADE,
    thread_id       TEXT NOT NULL REFERENCES email_threads (id) ON DELETE CASCADE,
    message_id      TEXT NOT NULL,
    in_reply_to     TEXT NOT NULL DEFAULT '',
    refs            TEXT NOT NULL DEFAULT '[]', -- JSON array, oldest first
    from_email      TEXT NOT NULL DEFAULT '',
    from_name       TEXT NOT NULL DEFAULT '',
    to_addrs        TEXT NOT NULL DEFAULT '[]',
    cc_addrs        TEXT NOT NULL DEFAULT '[]',
    bcc_addrs       TEXT NOT NULL DEFAULT '[]',
    subject         TEXT NOT NULL DEFAULT '',
    text_body       TEXT NOT NULL DEFAULT '',
    html_body       TEXT NOT NULL DEFAULT '',
    direction       TEXT NOT NULL CHECK (direction IN ('incoming', 'outgoing')),
    is_read         BOOLEAN NOT NULL DEFAULT FALSE,
    delivery_status TEXT NOT NULL DEFAULT '',
    delivery_error  TEXT NOT NULL DEFAULT '',
    created_at      INTEGER NOT NULL
);
CREATE INDEX email_messages_account ON email_messages (account_id, created_at);
CREATE INDEX email_messages_identity ON email_messages (identity_id, created_at);
CREATE INDEX email_messages_inbox ON email_messages (inbox_id, created_at);
CREATE INDEX email_messages_thread ON email_messages (thread_id, created_at);
CREATE INDEX email_messages_message_id ON email_messages (inbox_id, message_id);

-- The RFC 5322 source, apart so that listing messages never reads it.
CREATE TABLE email_sources (
    message_id INTEGER PRIMARY KEY REFERENCES email_messages (id) ON DELETE CASCADE,
    raw        BLOB NOT NULL
);

-- Attachments of messages, and uploads not yet sent (message_id NULL).
CREATE TABLE attachments (
    id           TEXT PRIMARY KEY,
    account_id   TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    identity_id  TEXT NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
    message_id   INTEGER REFERENCES email_messages (id) ON DELETE CASCADE,
    position     INTEGER NOT NULL DEFAULT 0,
    filename     TEXT NOT NULL,
    content_type TEXT NOT NULL,
    size         INTEGER NOT NULL,
    inline       BOOLEAN NOT NULL DEFAULT FALSE,
    content_id   TEXT NOT NULL DEFAULT '',
    content      BLOB NOT NULL,
    created_at   INTEGER NOT NULL
);
CREATE INDEX attachments_message ON attachments (message_id, position);

CREATE TABLE email_outbox (
    message_id      INTEGER PRIMARY KEY REFERENCES email_messages (id) ON DELETE CASCADE,
    account_id      TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    envelope_from   TEXT NOT NULL,
    recipients      TEXT NOT NULL, -- JSON array: still to deliver
    failures        TEXT NOT NULL DEFAULT '[]', -- JSON array: "address: reason"
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    give_up_at      INTEGER NOT NULL,
    claimed_until   INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX email_outbox_due ON email_outbox (next_attempt_at);

-- +goose Down
DROP TABLE email_outbox;
DROP TABLE attachments;
DROP TABLE email_sources;
DROP TABLE email_messages;
DROP TABLE email_threads;
DROP TABLE custom_domains;
ALTER TABLE accounts DROP COLUMN mail_clock;
