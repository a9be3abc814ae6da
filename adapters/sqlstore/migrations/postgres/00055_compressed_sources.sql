-- SQLite keeps a message's source compressed (S2) when that saves a tenth
-- of it; compressed says which form raw holds. PostgreSQL's sources are
-- compressed by TOAST (lz4, 00027), so here it is always false, and the
-- column is only there for the queries both dialects share.

-- +goose Up
ALTER TABLE email_sources ADD COLUMN compressed BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE email_sources DROP COLUMN compressed;
