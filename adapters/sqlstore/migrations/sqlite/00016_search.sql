-- Full-text search over mail: an FTS5 index of each message's subject and
-- text (its text body, up to 200,000 bytes, and the text of its text/*
-- attachments), stemmed by the Porter stemmer (English), case and accents
-- folded. Contentless: the text stays in email_messages; the index holds
-- only what matching needs. Rows are written beside their message in the
-- same transaction (sqlstore.storeMail) and removed with it (the trigger,
-- which also runs for cascaded deletes). Existing messages are indexed here
-- (without their attachments' text, which only the source holds).

-- +goose Up
CREATE VIRTUAL TABLE email_search USING fts5(search_subject, search_body,
    tokenize = 'porter unicode61 remove_diacritics 2', content = '', contentless_delete = 1);
INSERT INTO email_search (rowid, search_subject, search_body)
    SELECT id, subject, substr(text_body, 1, 200000) FROM email_messages;
-- +goose StatementBegin
CREATE TRIGGER email_search_delete AFTER DELETE ON email_messages BEGIN
    DELETE FROM email_search WHERE rowid = old.id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER email_search_delete;
DROP TABLE email_search;
