-- Passwords and secrets (sealed values: key id, nonce and AES-GCM ciphertext)
-- and contacts.

-- +goose Up
CREATE TABLE passwords (
    id          UUID PRIMARY KEY,
    account_id  UUID NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    identity_id UUID NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
    domain      TEXT NOT NULL,
    host        TEXT NOT NULL, -- lower-cased host of domain, for the domain filter
    username    TEXT NOT NULL DEFAULT '',
    password    BYTEA NOT NULL,
    notes       BYTEA,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE INDEX passwords_identity ON passwords (identity_id, created_at, id);
CREATE INDEX passwords_account ON passwords (account_id, created_at, id);
CREATE INDEX passwords_host ON passwords (account_id, host);

CREATE TABLE secrets (
    id          UUID PRIMARY KEY,
    account_id  UUID NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    identity_id UUID NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
    key         TEXT NOT NULL,
    value       BYTEA NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE UNIQUE INDEX secrets__key ON secrets (identity_id, key);
CREATE INDEX secrets_identity ON secrets (identity_id, created_at, id);
CREATE INDEX secrets_account ON secrets (account_id, created_at, id);

CREATE TABLE contacts (
    id           UUID PRIMARY KEY,
    account_id   UUID NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    identity_id  UUID NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
    email        TEXT NOT NULL DEFAULT '',
    display_name TEXT NOT NULL DEFAULT '',
    nickname     TEXT NOT NULL DEFAULT '',
    phone_number TEXT NOT NULL DEFAULT '',
    source       TEXT NOT NULL CHECK (source IN ('auto', 'manual')),
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE UNIQUE INDEX contacts__email ON contacts (identity_id, lower(email)) WHERE email <> '';
CREATE UNIQUE INDEX contacts__phone_number ON contacts (identity_id, phone_number) WHERE phone_number <> '';
CREATE INDEX contacts_identity ON contacts (identity_id, created_at, id);
CREATE INDEX contacts_account ON contacts (account_id, created_at, id);

-- +goose Down
DROP TABLE contacts;
DROP TABLE secrets;
DROP TABLE passwords;
