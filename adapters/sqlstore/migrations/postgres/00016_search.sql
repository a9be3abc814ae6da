-- Full-text search over mail: a tsvector per message with a GIN index, of
-- its subject (weight A) and text (weight B: its text body, up to 200,000
-- bytes, and the text of its text/* attachments), in the 'english'
-- configuration (Snowball stemmer, stop words dropped), Latin accents folded
-- by search_fold as core.SearchWords folds the query's words. Rows are
-- written beside their message in the same transaction (sqlstore.storeMail)
-- and go with it (ON DELETE CASCADE). Existing messages are indexed here
-- (without their attachments' text, which only the source holds).

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION search_fold(s TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT replace(replace(translate(lower(s),
        'àáâãäåçèéêëìíîïñòóôõöùúûüýÿÀÁÂÃÄÅÇÈÉÊËÌÍÎÏÑÒÓÔÕÖÙÚÛÜÝ',
        'aaaaaaceeeeiiiinooooouuuuyyaaaaaaceeeeiiiinooooouuuuy'), 'ß', 'ss'), chr(160), ' ')
$$;
-- +goose StatementEnd
CREATE TABLE email_search (
    email_id   BIGINT PRIMARY KEY REFERENCES email_messages (id) ON DELETE CASCADE,
    doc        TSVECTOR NOT NULL
);
CREATE INDEX email_search_doc ON email_search USING GIN (doc);
INSERT INTO email_search (email_id, doc)
    SELECT id, setweight(to_tsvector('english', search_fold(subject)), 'A') ||
               setweight(to_tsvector('english', search_fold(left(text_body, 200000))), 'B')
    FROM email_messages;

-- +goose Down
DROP TABLE email_search;
DROP FUNCTION search_fold(TEXT);
