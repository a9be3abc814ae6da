-- Full-text search over texts and contacts, as 00016 over mail: FTS5
-- tables, contentless (the text stays in its row), whose rowid is the
-- indexed row's rowid: the id of a text; the implicit rowid of a contact
-- (its key is a UUID), which VACUUM keeps (sqlstore's TestContactSearch-
-- SurvivesVacuum). Triggers write them in the statement, so in the
-- transaction, that writes the row, whoever writes it. Texts are stemmed
-- (Porter, English) like mail; contacts' names, addresses and numbers are
-- matched as whole words, not stemmed. Existing rows are indexed here.

-- +goose Up
CREATE VIRTUAL TABLE sms_search USING fts5(search_body,
    tokenize = 'porter unicode61 remove_diacritics 2', content = '', contentless_delete = 1);
INSERT INTO sms_search (rowid, search_body) SELECT id, body FROM sms_messages;
-- +goose StatementBegin
CREATE TRIGGER sms_search_insert AFTER INSERT ON sms_messages BEGIN
    INSERT INTO sms_search (rowid, search_body) VALUES (new.id, new.body);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER sms_search_update AFTER UPDATE OF body ON sms_messages BEGIN
    DELETE FROM sms_search WHERE rowid = old.id;
    INSERT INTO sms_search (rowid, search_body) VALUES (new.id, new.body);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER sms_search_delete AFTER DELETE ON sms_messages BEGIN
    DELETE FROM sms_search WHERE rowid = old.id;
END;
-- +goose StatementEnd

CREATE VIRTUAL TABLE contact_search USING fts5(search_text,
    tokenize = 'unicode61 remove_diacritics 2', content = '', contentless_delete = 1);
INSERT INTO contact_search (rowid, search_text)
    SELECT rowid, display_name || ' ' || nickname || ' ' || email || ' ' || phone_number FROM contacts;
-- +goose StatementBegin
CREATE TRIGGER contact_search_insert AFTER INSERT ON contacts BEGIN
    INSERT INTO contact_search (rowid, search_text)
        VALUES (new.rowid, new.display_name || ' ' || new.nickname || ' ' || new.email || ' ' || new.phone_number);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER contact_search_update AFTER UPDATE ON contacts BEGIN
    DELETE FROM contact_search WHERE rowid = old.rowid;
    INSERT INTO contact_search (rowid, search_text)
        VALUES (new.rowid, new.display_name || ' ' || new.nickname || ' ' || new.email || ' ' || new.phone_number);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER contact_search_delete AFTER DELETE ON contacts BEGIN
    DELETE FROM contact_search WHERE rowid = old.rowid;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER contact_search_delete;
DROP TRIGGER contact_search_update;
DROP TRIGGER contact_search_insert;
DROP TABLE contact_search;
DROP TRIGGER sms_search_delete;
DROP TRIGGER sms_search_update;
DROP TRIGGER sms_search_insert;
DROP TABLE sms_search;
