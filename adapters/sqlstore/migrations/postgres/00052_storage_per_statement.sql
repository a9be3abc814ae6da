-- The storage quota's triggers (00034, 00036) updated the account's row
-- once per row written: ingest, which inserts a batch's messages in one
-- statement, made an account row version per message (1,133 updates of
-- accounts for 1,000 messages; issue 32). Inserts and deletes now add up
-- per statement, over the statement's transition table: one update per
-- account a statement touches, cascaded deletes included. A change of
-- stored_bytes (a draft edited) stays per row: a trigger on a column list
-- cannot read transition tables. SQLite keeps its triggers (it has no
-- statement-level ones), so its migration of this number changes nothing.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION account_storage_statement() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE accounts a SET storage_bytes = a.storage_bytes + r.bytes
        FROM (SELECT account_id, sum(stored_bytes)::bigint AS bytes FROM new_rows GROUP BY account_id) r
        WHERE a.id = r.account_id AND r.bytes <> 0;
    ELSE
        UPDATE accounts a SET storage_bytes = a.storage_bytes - r.bytes
        FROM (SELECT account_id, sum(stored_bytes)::bigint AS bytes FROM old_rows GROUP BY account_id) r
        WHERE a.id = r.account_id AND r.bytes <> 0;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
DROP TRIGGER email_messages_storage ON email_messages;
DROP TRIGGER attachments_storage ON attachments;
DROP TRIGGER email_drafts_storage ON email_drafts;
DROP TRIGGER call_recordings_storage ON call_recordings;
CREATE TRIGGER email_messages_storage AFTER UPDATE OF stored_bytes ON email_messages
    FOR EACH ROW EXECUTE FUNCTION account_storage_change();
CREATE TRIGGER email_messages_storage_add AFTER INSERT ON email_messages
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION account_storage_statement();
CREATE TRIGGER email_messages_storage_remove AFTER DELETE ON email_messages
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION account_storage_statement();
CREATE TRIGGER attachments_storage AFTER UPDATE OF stored_bytes ON attachments
    FOR EACH ROW EXECUTE FUNCTION account_storage_change();
CREATE TRIGGER attachments_storage_add AFTER INSERT ON attachments
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION account_storage_statement();
CREATE TRIGGER attachments_storage_remove AFTER DELETE ON attachments
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION account_storage_statement();
CREATE TRIGGER email_drafts_storage AFTER UPDATE OF stored_bytes ON email_drafts
    FOR EACH ROW EXECUTE FUNCTION account_storage_change();
CREATE TRIGGER email_drafts_storage_add AFTER INSERT ON email_drafts
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION account_storage_statement();
CREATE TRIGGER email_drafts_storage_remove AFTER DELETE ON email_drafts
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION account_storage_statement();
CREATE TRIGGER call_recordings_storage AFTER UPDATE OF stored_bytes ON call_recordings
    FOR EACH ROW EXECUTE FUNCTION account_storage_change();
CREATE TRIGGER call_recordings_storage_add AFTER INSERT ON call_recordings
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION account_storage_statement();
CREATE TRIGGER call_recordings_storage_remove AFTER DELETE ON call_recordings
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION account_storage_statement();

-- +goose Down
DROP TRIGGER call_recordings_storage_remove ON call_recordings;
DROP TRIGGER call_recordings_storage_add ON call_recordings;
DROP TRIGGER call_recordings_storage ON call_recordings;
DROP TRIGGER email_drafts_storage_remove ON email_drafts;
DROP TRIGGER email_drafts_storage_add ON email_drafts;
DROP TRIGGER email_drafts_storage ON email_drafts;
DROP TRIGGER attachments_storage_remove ON attachments;
DROP TRIGGER attachments_storage_add ON attachments;
DROP TRIGGER attachments_storage ON attachments;
DROP TRIGGER email_messages_storage_remove ON email_messages;
DROP TRIGGER email_messages_storage_add ON email_messages;
DROP TRIGGER email_messages_storage ON email_messages;
DROP FUNCTION account_storage_statement();
CREATE TRIGGER email_messages_storage AFTER INSERT OR UPDATE OF stored_bytes OR DELETE ON email_messages
    FOR EACH ROW EXECUTE FUNCTION account_storage_change();
CREATE TRIGGER attachments_storage AFTER INSERT OR UPDATE OF stored_bytes OR DELETE ON attachments
    FOR EACH ROW EXECUTE FUNCTION account_storage_change();
CREATE TRIGGER email_drafts_storage AFTER INSERT OR UPDATE OF stored_bytes OR DELETE ON email_drafts
    FOR EACH ROW EXECUTE FUNCTION account_storage_change();
CREATE TRIGGER call_recordings_storage AFTER INSERT OR UPDATE OF stored_bytes OR DELETE ON call_recordings
    FOR EACH ROW EXECUTE FUNCTION account_storage_change();
