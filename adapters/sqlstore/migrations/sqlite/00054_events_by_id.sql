-- Expired events are found in id order (sqlstore.PruneEvents): the index
-- of their times cost every event, so every received message, one more
-- index entry (issue 32).

-- +goose Up
DROP INDEX events_created;

-- +goose Down
CREATE INDEX events_created ON events (created_at);
