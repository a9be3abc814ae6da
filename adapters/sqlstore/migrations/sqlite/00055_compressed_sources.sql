-- A message's source is kept compressed (S2) when that saves a tenth of it
-- or more: SQLite has no TOAST to do it, as PostgreSQL does with lz4
-- (00027). compressed says which form raw holds; rows written before stay
-- as they were. Sources are most of what a message takes on disk (about
-- 6 of 12 KB a message), and every page they take is written twice, to
-- the log and at its checkpoint (issue 32).

-- +goose Up
ALTER TABLE email_sources ADD COLUMN compressed BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
-- An older binary would serve a compressed source as it is: refuse while
-- any is stored (the CHECK fails).
CREATE TEMP TABLE compressed_sources_left (n INTEGER CHECK (n = 0));
INSERT INTO compressed_sources_left SELECT count(*) FROM email_sources WHERE compressed;
DROP TABLE compressed_sources_left;
ALTER TABLE email_sources DROP COLUMN compressed;
