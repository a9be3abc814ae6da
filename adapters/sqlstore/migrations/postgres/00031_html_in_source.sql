-- A received message's HTML body is what the parser reads from its source,
-- which is stored anyway: a message stored with html_in_source keeps an
-- empty html_body and the store reads the HTML back from the source when
-- one message is read (sqlstore.Options.Parser). Stored twice, it made a
-- 5 KB message take about 2 KB more on disk and in every commit. Rows
-- written before keep their HTML.

-- +goose Up
ALTER TABLE email_messages ADD COLUMN html_in_source BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
-- Messages stored without their HTML then show none; their sources keep it.
ALTER TABLE email_messages DROP COLUMN html_in_source;
