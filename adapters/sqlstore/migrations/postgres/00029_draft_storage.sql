-- Drafts' bodies count toward the storage quota (issue 11's quotas; the
-- audit found drafts outside every limit): a trigger keeps
-- accounts.storage_bytes in the transaction of every change to a draft,
-- in bytes, cascaded deletes included.

-- +goose Up
UPDATE accounts SET storage_bytes = storage_bytes +
    (SELECT COALESCE(SUM(COALESCE(octet_length(content), 0) + octet_length(html)), 0)
     FROM email_drafts WHERE account_id = accounts.id);
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
CREATE TRIGGER email_drafts_storage AFTER INSERT OR UPDATE OF content, html OR DELETE ON email_drafts
    FOR EACH ROW EXECUTE FUNCTION draft_storage_change();

-- +goose Down
DROP TRIGGER email_drafts_storage ON email_drafts;
DROP FUNCTION draft_storage_change();
UPDATE accounts SET storage_bytes = storage_bytes -
    (SELECT COALESCE(SUM(COALESCE(octet_length(content), 0) + octet_length(html)), 0)
     FROM email_drafts WHERE account_id = accounts.id);
