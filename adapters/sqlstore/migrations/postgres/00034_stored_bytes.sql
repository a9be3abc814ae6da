-- What a row takes of the storage quota is core's to say (issue 35:
-- core.MessageStoredBytes, AttachmentStoredBytes, DraftStoredBytes): the
-- store writes the figure in stored_bytes with the row, and the triggers
-- of 00028 and 00029, which worked it out themselves, now only add and
-- subtract that column, still in the transaction of every change,
-- cascaded deletes included. A message's source_bytes was that figure
-- already and is renamed, so the largest table is not rewritten; the
-- back-fill is the old triggers' formula, so every account's
-- storage_bytes stays as it was.

-- +goose Up
DROP TRIGGER email_messages_storage ON email_messages;
DROP TRIGGER attachments_storage ON attachments;
DROP TRIGGER email_drafts_storage ON email_drafts;
DROP FUNCTION draft_storage_change();
ALTER TABLE email_messages RENAME COLUMN source_bytes TO stored_bytes;
ALTER TABLE attachments ADD COLUMN stored_bytes BIGINT NOT NULL DEFAULT 0;
ALTER TABLE email_drafts ADD COLUMN stored_bytes BIGINT NOT NULL DEFAULT 0;
UPDATE attachments SET stored_bytes = octet_length(content) WHERE octet_length(content) <> 0;
UPDATE email_drafts SET stored_bytes = COALESCE(octet_length(content), 0) + octet_length(html);
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION account_storage_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    delta BIGINT := 0;
    account UUID;
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        delta := delta + NEW.stored_bytes; account := NEW.account_id;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        delta := delta - OLD.stored_bytes; account := OLD.account_id;
    END IF;
    IF delta <> 0 THEN
        UPDATE accounts SET storage_bytes = storage_bytes + delta WHERE id = account;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER email_messages_storage AFTER INSERT OR UPDATE OF stored_bytes OR DELETE ON email_messages
    FOR EACH ROW EXECUTE FUNCTION account_storage_change();
CREATE TRIGGER attachments_storage AFTER INSERT OR UPDATE OF stored_bytes OR DELETE ON attachments
    FOR EACH ROW EXECUTE FUNCTION account_storage_change();
CREATE TRIGGER email_drafts_storage AFTER INSERT OR UPDATE OF stored_bytes OR DELETE ON email_drafts
    FOR EACH ROW EXECUTE FUNCTION account_storage_change();

-- +goose Down
DROP TRIGGER email_drafts_storage ON email_drafts;
DROP TRIGGER attachments_storage ON attachments;
DROP TRIGGER email_messages_storage ON email_messages;
ALTER TABLE email_drafts DROP COLUMN stored_bytes;
ALTER TABLE attachments DROP COLUMN stored_bytes;
ALTER TABLE email_messages RENAME COLUMN stored_bytes TO source_bytes;
-- The functions and triggers of 00028 and 00029 as they were.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION account_storage_change() RETURNS trigger LANGUAGE plpgsql AS $$
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
-- +goose StatementBegin
CREATE FUNCTION draft_storage_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    delta BIGINT := 0;
    account UUID;
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        delta := delta + COALESCE(octet_length(NEW.content), 0) + octet_length(NEW.html);
        account := NEW.account_id;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        delta := delta - COALESCE(octet_length(OLD.content), 0) - octet_length(OLD.html);
        account := OLD.account_id;
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
CREATE TRIGGER email_drafts_storage AFTER INSERT OR UPDATE OF content, html OR DELETE ON email_drafts
    FOR EACH ROW EXECUTE FUNCTION draft_storage_change();
