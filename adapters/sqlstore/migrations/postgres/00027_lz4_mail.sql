-- Mail's large values (bodies, raw sources, events' data) are compressed
-- with lz4 where the server has it (PostgreSQL 14+ built with lz4): pglz
-- was the largest single cost of storing a message in the backends' CPU
-- (9% under c=16 ingest), all of it inside the account's lock that orders
-- creation times. Only new values are affected; old ones read as before.
-- Without lz4 nothing changes.

-- +goose Up
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
        ALTER TABLE email_messages ALTER COLUMN text_body SET COMPRESSION lz4, ALTER COLUMN html_body SET COMPRESSION lz4;
        ALTER TABLE email_sources ALTER COLUMN raw SET COMPRESSION lz4;
        ALTER TABLE events ALTER COLUMN data SET COMPRESSION lz4;
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
ALTER TABLE email_messages ALTER COLUMN text_body SET COMPRESSION DEFAULT, ALTER COLUMN html_body SET COMPRESSION DEFAULT;
ALTER TABLE email_sources ALTER COLUMN raw SET COMPRESSION DEFAULT;
ALTER TABLE events ALTER COLUMN data SET COMPRESSION DEFAULT;
