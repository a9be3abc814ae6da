-- The event log (issue 14): what happened to an account, written in the
-- transaction of each change. seq is the API's event id: the account's
-- event_seq, moved under the account's row lock, so it grows per account
-- in commit order and "after" is an exact cursor. events_pruned is the
-- highest seq retention has deleted: a cursor below it has lost events.
-- identity_id has no foreign key: identity.deleted outlives its identity.

-- +goose Up
ALTER TABLE accounts ADD COLUMN event_seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE accounts ADD COLUMN events_pruned BIGINT NOT NULL DEFAULT 0;
CREATE TABLE events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id  TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    seq         BIGINT NOT NULL,
    identity_id TEXT,
    type        TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    data        TEXT NOT NULL
);
CREATE UNIQUE INDEX events__seq ON events (account_id, seq);
CREATE INDEX events_identity ON events (account_id, identity_id, seq);
CREATE INDEX events_created ON events (created_at);

-- +goose Down
DROP TABLE events;
ALTER TABLE accounts DROP COLUMN events_pruned;
ALTER TABLE accounts DROP COLUMN event_seq;
