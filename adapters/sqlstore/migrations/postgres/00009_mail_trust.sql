-- Mail you can trust: custom domains verified through the DNS with their
-- DKIM keys, the verdict on received mail, each recipient's fate and the
-- envelope token that brings bounces back, and suppressed addresses.

-- +goose Up
ALTER TABLE custom_domains DROP CONSTRAINT custom_domains_status_check;
ALTER TABLE custom_domains ADD CONSTRAINT custom_domains_status_check CHECK (status IN ('pending', 'verified', 'failed'));
ALTER TABLE custom_domains ADD COLUMN reason TEXT NOT NULL DEFAULT '';
ALTER TABLE custom_domains ADD COLUMN checks TEXT NOT NULL DEFAULT '{}'; -- JSON: record purpose -> ok|missing|mismatch
ALTER TABLE custom_domains ADD COLUMN verified_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE custom_domains ADD COLUMN last_checked_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE custom_domains ADD COLUMN next_check_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE custom_domains ADD COLUMN claimed_until BIGINT NOT NULL DEFAULT 0;
CREATE INDEX custom_domains_due ON custom_domains (next_check_at);

-- The private half is sealed with the vault cipher, bound to the row's id.
CREATE TABLE dkim_keys (
    id          UUID PRIMARY KEY,
    domain      TEXT NOT NULL REFERENCES custom_domains (domain) ON DELETE CASCADE,
    selector    TEXT NOT NULL,
    algorithm   TEXT NOT NULL,
    public_key  TEXT NOT NULL,
    private_key BYTEA NOT NULL,
    active      BOOLEAN NOT NULL,
    created_at  BIGINT NOT NULL
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
    account_id  UUID NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    email       TEXT NOT NULL, -- lower-cased
    identity_id UUID NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
    reason      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
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
DROP INDEX custom_domains_due;
ALTER TABLE custom_domains DROP COLUMN claimed_until;
ALTER TABLE custom_domains DROP COLUMN next_check_at;
ALTER TABLE custom_domains DROP COLUMN last_checked_at;
ALTER TABLE custom_domains DROP COLUMN verified_at;
ALTER TABLE custom_domains DROP COLUMN checks;
ALTER TABLE custom_domains DROP COLUMN reason;
UPDATE custom_domains SET status = 'pending' WHERE status = 'failed';
ALTER TABLE custom_domains DROP CONSTRAINT custom_domains_status_check;
ALTER TABLE custom_domains ADD CONSTRAINT custom_domains_status_check CHECK (status IN ('verified', 'pending'));
