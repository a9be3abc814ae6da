-- A message's and a thread's account and identity are its inbox's: the
-- foreign key on inbox_id, which cascades from identities and accounts
-- through inboxes, already removes them with either, so their own foreign
-- keys on account_id and identity_id only made each insert check twice
-- more (issue 32; PostgreSQL's migration drops them too).
--
-- SQLite cannot drop a column's REFERENCES clause, and rebuilding the two
-- largest tables would copy every message. Removing a foreign key changes
-- nothing stored, so the tables' definitions are edited in place, the way
-- SQLite's documentation gives for it (lang_altertable.html, "Making Other
-- Kinds Of Table Schema Changes"): the text in sqlite_schema, then the
-- schema read again, by this connection (writable_schema = RESET) and by
-- every other one (the table created and dropped moves the schema's
-- version on).

-- +goose Up
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(replace(sql,
        'account_id      TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE',
        'account_id      TEXT NOT NULL'),
        'identity_id     TEXT NOT NULL REFERENCES identities (id) ON DELETE CASCADE',
        'identity_id     TEXT NOT NULL')
    WHERE type = 'table' AND name = 'email_messages';
UPDATE sqlite_schema SET sql = replace(replace(sql,
        'account_id       TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE',
        'account_id       TEXT NOT NULL'),
        'identity_id      TEXT NOT NULL REFERENCES identities (id) ON DELETE CASCADE',
        'identity_id      TEXT NOT NULL')
    WHERE type = 'table' AND name = 'email_threads';
PRAGMA writable_schema = RESET;
CREATE TABLE schema_edited (x);
DROP TABLE schema_edited;

-- +goose Down
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(replace(sql,
        'account_id      TEXT NOT NULL',
        'account_id      TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE'),
        'identity_id     TEXT NOT NULL',
        'identity_id     TEXT NOT NULL REFERENCES identities (id) ON DELETE CASCADE')
    WHERE type = 'table' AND name = 'email_messages';
UPDATE sqlite_schema SET sql = replace(replace(sql,
        'account_id       TEXT NOT NULL',
        'account_id       TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE'),
        'identity_id      TEXT NOT NULL',
        'identity_id      TEXT NOT NULL REFERENCES identities (id) ON DELETE CASCADE')
    WHERE type = 'table' AND name = 'email_threads';
PRAGMA writable_schema = RESET;
CREATE TABLE schema_restored (x);
DROP TABLE schema_restored;
