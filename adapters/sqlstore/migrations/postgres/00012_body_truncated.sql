-- A message's stored text and HTML bodies are bounded (core.MaxStoredBody);
-- body_truncated says that one of them holds only the start of what was
-- sent. The raw source in email_sources stays whole.

-- +goose Up
ALTER TABLE email_messages ADD COLUMN body_truncated BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE email_messages DROP COLUMN body_truncated;
