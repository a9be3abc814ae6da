-- Quotas per account (issue 11): the bytes an account's mail takes are
-- kept on its row (storage_bytes), so that the check at RCPT reads one row
-- instead of summing its messages. Triggers keep it, in the transaction
-- of every change, cascaded deletes included: each message's source
-- (source_bytes, written with the message) and each attachment's stored
-- bytes (uploads; a received or sent attachment's bytes stay in its
-- message's source). Sends per hour are counted in `sends`, a row per
-- message or text sent, written by triggers with it: deleting what was
-- sent does not give the send back. Each send prunes its account's rows
-- older than an hour (core.SendWindow), so the table holds about an hour. When a whole account is deleted the triggers find
-- its row already gone and change nothing.

-- +goose Up
ALTER TABLE email_messages ADD COLUMN source_bytes BIGINT NOT NULL DEFAULT 0;
ALTER TABLE accounts ADD COLUMN storage_bytes BIGINT NOT NULL DEFAULT 0;
UPDATE email_messages SET source_bytes = COALESCE((SELECT octet_length(raw) FROM email_sources WHERE message_id = email_messages.id), 0);
UPDATE accounts SET storage_bytes =
    (SELECT COALESCE(SUM(source_bytes), 0) FROM email_messages WHERE account_id = accounts.id) +
    (SELECT COALESCE(SUM(octet_length(content)), 0) FROM attachments WHERE account_id = accounts.id);
-- +goose StatementBegin
CREATE FUNCTION account_storage_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    delta BIGINT;
    account UUID;
BEGIN
    -- Each branch names only the columns of its table.
    IF TG_TABLE_NAME = 'email_messages' AND TG_OP = 'INSERT' THEN
        delta := NEW.source_bytes; account := NEW.account_id;
    ELSIF TG_TABLE_NAME = 'email_messages' THEN
        delta := -OLD.source_bytes; account := OLD.account_id;
    ELSIF TG_OP = 'INSERT' THEN
        delta := octet_length(NEW.content); account := NEW.account_id;
    ELSE
        delta := -octet_length(OLD.content); account := OLD.account_id;
    END IF;
    IF delta <> 0 THEN
        UPDATE accounts SET storage_bytes = storage_bytes + delta WHERE id = account;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER email_messages_storage AFTER INSERT OR DELETE ON email_messages
    FOR EACH ROW EXECUTE FUNCTION account_storage_change();
CREATE TRIGGER attachments_storage AFTER INSERT OR DELETE ON attachments
    FOR EACH ROW EXECUTE FUNCTION account_storage_change();
CREATE TABLE sends (
    account_id UUID NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    sent_at    BIGINT NOT NULL
);
CREATE INDEX sends_account ON sends (account_id, sent_at);
INSERT INTO sends (account_id, sent_at)
    SELECT account_id, created_at FROM email_messages WHERE direction = 'outgoing' AND created_at >= (extract(epoch FROM now())::BIGINT - 3600) * 1000000
    UNION ALL
    SELECT account_id, created_at FROM sms_messages WHERE direction = 'outgoing' AND created_at >= (extract(epoch FROM now())::BIGINT - 3600) * 1000000;
-- +goose StatementBegin
CREATE FUNCTION account_send() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM sends WHERE account_id = NEW.account_id AND sent_at < NEW.created_at - 3600000000;
    INSERT INTO sends (account_id, sent_at) VALUES (NEW.account_id, NEW.created_at);
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER email_messages_send AFTER INSERT ON email_messages
    FOR EACH ROW WHEN (NEW.direction = 'outgoing') EXECUTE FUNCTION account_send();
CREATE TRIGGER sms_messages_send AFTER INSERT ON sms_messages
    FOR EACH ROW WHEN (NEW.direction = 'outgoing') EXECUTE FUNCTION account_send();

-- +goose Down
DROP TRIGGER sms_messages_send ON sms_messages;
DROP TRIGGER email_messages_send ON email_messages;
DROP FUNCTION account_send();
DROP TABLE sends;
DROP TRIGGER attachments_storage ON attachments;
DROP TRIGGER email_messages_storage ON email_messages;
DROP FUNCTION account_storage_change();
ALTER TABLE accounts DROP COLUMN storage_bytes;
ALTER TABLE email_messages DROP COLUMN source_bytes;
