-- When a call's media bridge ended (issue 30), 0 while it runs or before
-- the agent connected: a call the provider reports ended while its bridge
-- runs gets its call.completed when the bridge's counts are stored, so the
-- event carries them.

-- +goose Up
ALTER TABLE calls ADD COLUMN stream_ended_at BIGINT NOT NULL DEFAULT 0;
-- Bridges from before are taken as ended: a call still running gets its
-- call.completed from the provider's report, as it would have.
UPDATE calls SET stream_ended_at = stream_connected_at WHERE stream_connected_at <> 0;
-- Bridges whose instance stopped before they reported (EndStaleStreams).
CREATE INDEX calls_open_streams ON calls (ended_at) WHERE stream_connected_at <> 0 AND stream_ended_at = 0;

-- +goose Down
DROP INDEX calls_open_streams;
ALTER TABLE calls DROP COLUMN stream_ended_at;
