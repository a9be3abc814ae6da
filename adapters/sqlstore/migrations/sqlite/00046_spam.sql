-- Spam verdicts from rspamd (issue 34). Both columns stay NULL when no
-- filter is configured, so a message costs no more to store: spam is the
-- verdict as JSON ({score, action, symbols}), is_spam files the message
-- as spam (out of lists, threads and the IMAP INBOX). The partial index
-- serves the IMAP Junk folder and holds spam rows only.

-- +goose Up
ALTER TABLE email_messages ADD COLUMN spam TEXT;
ALTER TABLE email_messages ADD COLUMN is_spam BOOLEAN;
CREATE INDEX email_messages_junk ON email_messages (inbox_id, id) WHERE is_spam IS TRUE;

-- +goose Down
DROP INDEX email_messages_junk;
ALTER TABLE email_messages DROP COLUMN is_spam;
ALTER TABLE email_messages DROP COLUMN spam;
