-- A message received over SMTP keeps a hash of the bytes its sender sent
-- (hex SHA-256, before the trace fields we add), so that a sender retrying
-- a delivery it already made (after a crash, a lost 250) makes no copy:
-- core.FileMail compares it with the inbox's copy of the same Message-ID.

-- +goose Up
ALTER TABLE email_messages ADD COLUMN source_hash TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE email_messages DROP COLUMN source_hash;
