-- Drafts' bodies count toward the storage quota (issue 11's quotas; the
-- audit found drafts outside every limit): triggers keep
-- accounts.storage_bytes in the transaction of every change to a draft,
-- in bytes (length of the text as a BLOB), cascaded deletes included.

-- +goose Up
UPDATE accounts SET storage_bytes = storage_bytes +
    (SELECT COALESCE(SUM(COALESCE(length(CAST(content AS BLOB)), 0) + length(CAST(html AS BLOB))), 0)
     FROM email_drafts WHERE account_id = accounts.id);
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

-- +goose Down
DROP TRIGGER email_drafts_storage_remove;
DROP TRIGGER email_drafts_storage_change;
DROP TRIGGER email_drafts_storage_add;
UPDATE accounts SET storage_bytes = storage_bytes -
    (SELECT COALESCE(SUM(COALESCE(length(CAST(content AS BLOB)), 0) + length(CAST(html AS BLOB))), 0)
     FROM email_drafts WHERE account_id = accounts.id);
