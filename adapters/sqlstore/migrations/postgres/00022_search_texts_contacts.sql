-- Full-text search over texts and contacts, as 00016 over mail: a tsvector
-- per row with a GIN index, written by triggers in the statement, so in
-- the transaction, that writes the row, whoever writes it, and gone with
-- it (ON DELETE CASCADE). Texts: 'english' (stemmed, stop words dropped),
-- Latin accents folded by search_fold, like mail. Contacts: 'simple'
-- (whole words, no stop words: a name is not English), with the
-- punctuation of addresses and numbers made spaces first so that an
-- address is its words, as SQLite's tokenizer and core.SearchWords cut it.
-- Existing rows are indexed here.

-- +goose Up
CREATE TABLE sms_search (
    sms_id  BIGINT PRIMARY KEY REFERENCES sms_messages (id) ON DELETE CASCADE,
    doc     TSVECTOR NOT NULL
);
CREATE INDEX sms_search_doc ON sms_search USING GIN (doc);
INSERT INTO sms_search (sms_id, doc) SELECT id, to_tsvector('english', search_fold(body)) FROM sms_messages;
-- +goose StatementBegin
CREATE FUNCTION sms_search_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO sms_search (sms_id, doc) VALUES (NEW.id, to_tsvector('english', search_fold(NEW.body)))
        ON CONFLICT (sms_id) DO UPDATE SET doc = EXCLUDED.doc;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER sms_search_write AFTER INSERT OR UPDATE OF body ON sms_messages
    FOR EACH ROW EXECUTE FUNCTION sms_search_write();

-- +goose StatementBegin
CREATE FUNCTION contact_search_vector(display_name TEXT, nickname TEXT, email TEXT, phone_number TEXT)
RETURNS TSVECTOR LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_tsvector('simple', translate(search_fold(display_name || ' ' || nickname || ' ' || email || ' ' || phone_number),
        '@._-+/:', '       '))
$$;
-- +goose StatementEnd
CREATE TABLE contact_search (
    contact_id  UUID PRIMARY KEY REFERENCES contacts (id) ON DELETE CASCADE,
    doc         TSVECTOR NOT NULL
);
CREATE INDEX contact_search_doc ON contact_search USING GIN (doc);
INSERT INTO contact_search (contact_id, doc)
    SELECT id, contact_search_vector(display_name, nickname, email, phone_number) FROM contacts;
-- +goose StatementBegin
CREATE FUNCTION contact_search_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO contact_search (contact_id, doc)
        VALUES (NEW.id, contact_search_vector(NEW.display_name, NEW.nickname, NEW.email, NEW.phone_number))
        ON CONFLICT (contact_id) DO UPDATE SET doc = EXCLUDED.doc;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER contact_search_write AFTER INSERT OR UPDATE ON contacts
    FOR EACH ROW EXECUTE FUNCTION contact_search_write();

-- +goose Down
DROP TRIGGER contact_search_write ON contacts;
DROP FUNCTION contact_search_write();
DROP TABLE contact_search;
DROP FUNCTION contact_search_vector(TEXT, TEXT, TEXT, TEXT);
DROP TRIGGER sms_search_write ON sms_messages;
DROP FUNCTION sms_search_write();
DROP TABLE sms_search;
