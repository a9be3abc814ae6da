-- Mail you can trust: custom domains verified through the DNS with their
-- DKIM keys, the verdict on received mail, each recipient's fate and the
-- envelope token that brings bounces back, and suppressed addresses.

-- +goose Up
-- A domain's status can now fail; the table is rebuilt for the new CHECK
-- (SQLite cannot change one), keeping the columns in PostgreSQL's order.
CREATE TABLE custom_domains_new (
    domain          TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'verified', 'failed')),
    created_at      INTEGER NOT NULL,
    reason          TEXT NOT NULL DEFAULT '',
    checks          TEXT NOT NULL DEFAULT '{}', -- JSON: record purpose -> ok|missing|mismatch
    verified_at     INTEGER NOT NULL DEFAULT 0,
    last_checked_at INTEGER NOT NULL DEFAULT 0,
    next_check_at   INTEGER NOT NULL DEFAULT 0,
    claimed_until   INTEGER NOT NULL DEFAULT 0
);
INSERT INTO custom_domains_new (domain, account_id, status, created_at)
    SELECT domain, account_id, status, created_at FROM custom_domains;
DROP TABLE custom_domains;
ALTER TABLE custom_domains_new RENAME TO custom_domains;
CREATE INDEX custom_domains_account ON custom_domains (account_id, domain);
CREATE INDEX custom_domains_due ON custom_domains (next_check_at);

-- The private half is sealed with the vault cipher, bound to the row's id.
CREATE TABLE dkim_keys (
    id          TEXT PRIMARY KEY,
    domain      TEXT NOT NULL REFERENCES custom_domains (domain) ON DELETE CASCADE,
    selector    TEXT NOT NULL,
    algorithm   TEXT NOT NULL,
    public_key  TEXT NOT NULL,
    private_key BLOB NOT NULL,
    active      BOOLEAN NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE UNIQUE INDEX dkim_keys__selector ON dkim_keys (domain, selector);

-- Received mail's SPF, DKIM and DMARC results and verdict ('' when not
-- checked); sent mail's recipients (JSON: email, status, error) and the
-- token of its envelope sender.
ALTER TABLE email_messages ADD COLUMN auth_spf TEXT NOT NULL DEFAULT '';
ALTER TABLE email_messages ADD COLUMN auth_dkim TEXT NOT NULL DEFAULT '';
ALTER TABLE email_messages ADD COLUMN auth_dmarc TEXT NOT NULL DEFAULT '';
ALTER TABLE email_messages ADD COLUMN auth_verdict TEXT NOT NULL DEFAULT '';
ALTER TABLE email_messages ADD COLUMN auth_policy TEXT NOT NULL DEFAULT '';
ALTER TABLE email_messages ADD COLUMN recipients TEXT NOT NULL DEFAULT '[]';
ALTER TABLE email_messages ADD COLUMN bounce_token TEXT;
CREATE UNIQUE INDEX email_messages__bounce_token ON email_messages (bounce_token) WHERE bounce_token IS NOT NULL;

CREATE TABLE suppressions (
    account_id  TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    email       TEXT NOT NULL, -- lower-cased
    identity_id TEXT NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
    reason      TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (account_id, email)
);
CREATE INDEX suppressions_identity ON suppressions (identity_id, created_at);

-- +goose Down
DROP TABLE suppressions;
DROP INDEX email_messages__bounce_token;
ALTER TABLE email_messages DROP COLUMN bounce_token;
ALTER TABLE email_messages DROP COLUMN recipients;
ALTER TABLE email_messages DROP COLUMN auth_policy;
ALTER TABLE email_messages DROP COLUMN auth_verdict;
ALTER TABLE email_messages DROP COLUMN auth_dmarc;
ALTER TABLE email_messages DROP COLUMN auth_dkim;
ALTER TABLE email_messages DROP COLUMN auth_spf;
DROP TABLE dkim_keys;
CREATE TABLE custom_domains_old (
    domain     TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    status     TEXT NOT NULL CHECK (status IN ('verified', 'pending')),
    created_at INTEGER NOT NULL
);
INSERT INTO custom_domains_old (domain, account_id, status, created_at)
    SELECT domain, account_id, CASE status WHEN 'verified' THEN 'verified' ELSE 'pending' END, created_at FROM custom_domains;
DROP TABLE custom_domains;
ALTER TABLE custom_domains_old RENAME TO custom_domains;
CREATE INDEX custom_domains_account ON custom_domains (account_id, domain);
