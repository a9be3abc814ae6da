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
DROP TRIGGER email_messages_storage_add;
DROP TRIGGER email_messages_storage_remove;
DROP TRIGGER attachments_storage_add;
DROP TRIGGER attachments_storage_remove;
DROP TRIGGER email_drafts_storage_add;
DROP TRIGGER email_drafts_storage_change;
DROP TRIGGER email_drafts_storage_remove;
ALTER TABLE email_messages RENAME COLUMN source_bytes TO stored_bytes;
ALTER TABLE attachments ADD COLUMN stored_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE email_drafts ADD COLUMN stored_bytes INTEGER NOT NULL DEFAULT 0;
UPDATE attachments SET stored_bytes = length(content) WHERE length(content) <> 0;
UPDATE email_drafts SET stored_bytes = COALESCE(length(CAST(content AS BLOB)), 0) + length(CAST(html AS BLOB));
-- +goose StatementBegin
CREATE TRIGGER email_messages_storage_add AFTER INSERT ON email_messages WHEN new.stored_bytes <> 0 BEGIN
    UPDATE accounts SET storage_bytes = storage_bytes + new.stored_bytes WHERE id = new.account_id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER email_messages_storage_change AFTER UPDATE OF stored_bytes ON email_messages WHEN new.stored_bytes <> old.stored_bytes BEGIN
    UPDATE accounts SET storage_bytes = storage_bytes + new.stored_bytes - old.stored_bytes WHERE id = new.account_id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER email_messages_storage_remove AFTER DELETE ON email_messages WHEN old.stored_bytes <> 0 BEGIN
    UPDATE accounts SET storage_bytes = storage_bytes - old.stored_bytes WHERE id = old.account_id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER attachments_storage_add AFTER INSERT ON attachments WHEN new.stored_bytes <> 0 BEGIN
    UPDATE accounts SET storage_bytes = storage_bytes + new.stored_bytes WHERE id = new.account_id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER attachments_storage_change AFTER UPDATE OF stored_bytes ON attachments WHEN new.stored_bytes <> old.stored_bytes BEGIN
    UPDATE accounts SET storage_bytes = storage_bytes + new.stored_bytes - old.stored_bytes WHERE id = new.account_id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER attachments_storage_remove AFTER DELETE ON attachments WHEN old.stored_bytes <> 0 BEGIN
    UPDATE accounts SET storage_bytes = storage_bytes - old.stored_bytes WHERE id = old.account_id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER email_drafts_storage_add AFTER INSERT ON email_drafts WHEN new.stored_bytes <> 0 BEGIN
    UPDATE accounts SET storage_bytes = storage_bytes + new.stored_bytes WHERE id = new.account_id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER email_drafts_storage_change AFTER UPDATE OF stored_bytes ON email_drafts WHEN new.stored_bytes <> old.stored_bytes BEGIN
    UPDATE accounts SET storage_bytes = storage_bytes + new.stored_bytes - old.stored_bytes WHERE id = new.account_id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER email_drafts_storage_remove AFTER DELETE ON email_drafts WHEN old.stored_bytes <> 0 BEGIN
    UPDATE accounts SET storage_bytes = storage_bytes - old.stored_bytes WHERE id = old.account_id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER email_drafts_storage_remove;
DROP TRIGGER email_drafts_storage_change;
DROP TRIGGER email_drafts_storage_add;
DROP TRIGGER attachments_storage_remove;
DROP TRIGGER attachments_storage_change;
DROP TRIGGER attachments_storage_add;
DROP TRIGGER email_messages_storage_remove;
DROP TRIGGER email_messages_storage_change;
DROP TRIGGER email_messages_storage_add;
ALTER TABLE email_drafts DROP COLUMN stored_bytes;
ALTER TABLE attachments DROP COLUMN stored_bytes;
ALTER TABLE email_messages RENAME COLUMN stored_bytes TO source_bytes;
-- The triggers of 00028 and 00029 as they were.
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
-- +goose StatementBegin
CREATE TRIGGER email_drafts_storage_add AFTER INSERT ON email_drafts BEGIN
    UPDATE accounts SET storage_bytes = storage_bytes + COALESCE(length(CAST(new.content AS BLOB)), 0) + length(CAST(new.html AS BLOB))
    WHERE id = new.account_id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER email_drafts_storage_change AFTER UPDATE OF content, html ON email_drafts BEGIN
    UPDATE accounts SET storage_bytes = storage_bytes
        + COALESCE(length(CAST(new.content AS BLOB)), 0) + length(CAST(new.html AS BLOB))
        - COALESCE(length(CAST(old.content AS BLOB)), 0) - length(CAST(old.html AS BLOB))
    WHERE id = new.account_id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER email_drafts_storage_remove AFTER DELETE ON email_drafts BEGIN
    UPDATE accounts SET storage_bytes = storage_bytes - COALESCE(length(CAST(old.content AS BLOB)), 0) - length(CAST(old.html AS BLOB))
    WHERE id = old.account_id;
END;
-- +goose StatementEnd
