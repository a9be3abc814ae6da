-- Certificates by ACME (issue 34): what the ACME client keeps (its account
-- key, and each certificate with its key), by the client's names, sealed by
-- the vault cipher (a sealed column, for key rotation); and a lease per
-- name, so that one instance at a time asks the certificate authority.

-- +goose Up
CREATE TABLE acme_cache (
    id         TEXT PRIMARY KEY,
    value      BYTEA NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE TABLE acme_leases (
    name          TEXT PRIMARY KEY,
    claimed_by    TEXT NOT NULL,
    claimed_until BIGINT NOT NULL
);

-- +goose Down
DROP TABLE acme_leases;
DROP TABLE acme_cache;
