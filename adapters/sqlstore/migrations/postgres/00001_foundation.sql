-- Accounts, API keys, identities and inboxes.
-- Times are integer microseconds since the Unix epoch (UTC), as in SQLite,
-- so one set of queries and one cursor arithmetic serve both dialects.
-- Unique indexes are named <table>__<field>, the field the API reports a clash on.

-- +goose Up
CREATE TABLE accounts (
    id                  UUID PRIMARY KEY,
    email               TEXT NOT NULL,
    password_hash       TEXT NOT NULL DEFAULT '',
    subscription_active BOOLEAN NOT NULL DEFAULT TRUE,
    created_at          BIGINT NOT NULL
);
CREATE UNIQUE INDEX accounts__email ON accounts (lower(email));

CREATE TABLE identities (
    id         UUID PRIMARY KEY,
    account_id UUID NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX identities__name ON identities (account_id, name);
CREATE INDEX identities_account ON identities (account_id, created_at);

CREATE TABLE api_keys (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id   UUID NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    key_type     TEXT NOT NULL CHECK (key_type IN ('management', 'identity')),
    identity_id  UUID REFERENCES identities (id) ON DELETE CASCADE,
    name         TEXT NOT NULL DEFAULT '',
    prefix       TEXT NOT NULL,
    hash         BYTEA NOT NULL,
    created_at   BIGINT NOT NULL,
    last_used_at BIGINT,
    CHECK ((key_type = 'identity') = (identity_id IS NOT NULL))
);
CREATE UNIQUE INDEX api_keys__hash ON api_keys (hash);
CREATE INDEX api_keys_account ON api_keys (account_id, key_type);

-- Addresses are stored lower-cased, so a plain unique index is case-insensitive.
CREATE TABLE inboxes (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    uuid        UUID NOT NULL,
    account_id  UUID NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    identity_id UUID NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
    email       TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE UNIQUE INDEX inboxes__uuid ON inboxes (uuid);
CREATE UNIQUE INDEX inboxes__email ON inboxes (email);
CREATE INDEX inboxes_identity ON inboxes (identity_id, id);
CREATE INDEX inboxes_account ON inboxes (account_id, id);

-- +goose Down
DROP TABLE inboxes;
DROP TABLE api_keys;
DROP TABLE identities;
DROP TABLE accounts;
