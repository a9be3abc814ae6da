-- Quotas per account (issue 11): the bytes an account's mail takes are
-- kept on its row (storage_bytes), so that the check at RCPT reads one row
-- instead of summing its messages. Triggers keep it, in the transaction
-- of every change, cascaded deletes included: each message's source
-- (source_bytes, written with the message) and each attachment's stored
-- bytes (uploads; a received or sent attachment's bytes stay in its
-- message's source). Sends per hour are counted in `sends`, a row per
-- message or text sent, written by triggers with it: deleting what was
-- sent does not give the send back. Each send prunes its account's rows
-- older than an hour (core.SendWindow), so the table holds about an hour.

-- +goose Up
ALTER TABLE email_messages ADD COLUMN source_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE accounts ADD COLUMN storage_bytes INTEGER NOT NULL DEFAULT 0;
UPDATE email_messages SET source_bytes = COALESCE((SELECT length(raw) FROM email_sources WHERE message_id = email_messages.id), 0);
UPDATE accounts SET storage_bytes =
    (SELECT COALESCE(SUM(source_bytes), 0) FROM email_messages WHERE account_id = accounts.id) +
    (SELECT COALESCE(SUM(length(content)), 0) FROM attachments WHERE account_id = accounts.id);
-- +goose StatementBegin
CREATE TRIGGER email_messages_storage_add AFTER INSERT ON email_messages WHEN new.source_bytes <> 0 BEGIN
    UPDATE accounts SET storage_bytes = storage_bytes + new.source_bytes WHERE id = new.account_id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER email_messages_storage_remove AFTER DELETE ON email_messages WHEN old.source_bytes <> 0 BEGIN
    UPDATE accounts SET storage_bytes = storage_bytes - old.source_bytes WHERE id = old.account_id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER attachments_storage_add AFTER INSERT ON attachments WHEN length(new.content) <> 0 BEGIN
    UPDATE accounts SET storage_bytes = storage_bytes + length(new.content) WHERE id = new.account_id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER attachments_storage_remove AFTER DELETE ON attachments WHEN length(old.content) <> 0 BEGIN
    UPDATE accounts SET storage_bytes = storage_bytes - length(old.content) WHERE id = old.account_id;
END;
-- +goose StatementEnd
CREATE TABLE sends (
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    sent_at    INTEGER NOT NULL
);
CREATE INDEX sends_account ON sends (account_id, sent_at);
INSERT INTO sends (account_id, sent_at)
    SELECT account_id, created_at FROM email_messages WHERE direction = 'outgoing' AND created_at >= (strftime('%s', 'now') - 3600) * 1000000
    UNION ALL
    SELECT account_id, created_at FROM sms_messages WHERE direction = 'outgoing' AND created_at >= (strftime('%s', 'now') - 3600) * 1000000;
-- +goose StatementBegin
CREATE TRIGGER email_messages_send AFTER INSERT ON email_messages WHEN new.direction = 'outgoing' BEGIN
    DELETE FROM sends WHERE account_id = new.account_id AND sent_at < new.created_at - 3600000000;
    INSERT INTO sends (account_id, sent_at) VALUES (new.account_id, new.created_at);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER sms_messages_send AFTER INSERT ON sms_messages WHEN new.direction = 'outgoing' BEGIN
    DELETE FROM sends WHERE account_id = new.account_id AND sent_at < new.created_at - 3600000000;
    INSERT INTO sends (account_id, sent_at) VALUES (new.account_id, new.created_at);
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER sms_messages_send;
DROP TRIGGER email_messages_send;
DROP TABLE sends;
DROP TRIGGER attachments_storage_remove;
DROP TRIGGER attachments_storage_add;
DROP TRIGGER email_messages_storage_remove;
DROP TRIGGER email_messages_storage_add;
ALTER TABLE accounts DROP COLUMN storage_bytes;
ALTER TABLE email_messages DROP COLUMN source_bytes;
