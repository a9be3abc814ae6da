-- Voice agents for real (issue 30). A voice agent gains a mode (redirect,
-- today's behaviour and the default, or stream), the agent's WebSocket
-- (stream_url), record_calls, and the secret that signs our upgrade to it
-- (sealed by the vault cipher, as webhook secrets are). A call keeps how it
-- reached its agent (mode, agent_url, record), the hash of its media URL's
-- one-time token ('' once used), what the bridge counted (stream_* columns,
-- stream_connected_at 0 until the agent connected), and why it ended.
-- A call we place is a send: a trigger logs it in sends, as 00028's do for
-- mail and texts. A recording is one row of call_recordings, counted in
-- the storage quota by the stored_bytes triggers of 00034, and deleted
-- with its call.

-- +goose Up
ALTER TABLE voice_agents ADD COLUMN mode TEXT NOT NULL DEFAULT 'redirect' CHECK (mode IN ('redirect', 'stream'));
ALTER TABLE voice_agents ADD COLUMN stream_url TEXT NOT NULL DEFAULT '';
ALTER TABLE voice_agents ADD COLUMN record_calls BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE voice_agents ADD COLUMN stream_secret BLOB;
ALTER TABLE calls ADD COLUMN mode TEXT NOT NULL DEFAULT '';
ALTER TABLE calls ADD COLUMN agent_url TEXT NOT NULL DEFAULT '';
ALTER TABLE calls ADD COLUMN record BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE calls ADD COLUMN media_token TEXT NOT NULL DEFAULT '';
ALTER TABLE calls ADD COLUMN stream_connected_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE calls ADD COLUMN frames_from_caller BIGINT NOT NULL DEFAULT 0;
ALTER TABLE calls ADD COLUMN frames_to_caller BIGINT NOT NULL DEFAULT 0;
ALTER TABLE calls ADD COLUMN frames_dropped BIGINT NOT NULL DEFAULT 0;
ALTER TABLE calls ADD COLUMN dtmf BIGINT NOT NULL DEFAULT 0;
ALTER TABLE calls ADD COLUMN recording_bytes BIGINT NOT NULL DEFAULT 0;
ALTER TABLE calls ADD COLUMN end_reason TEXT NOT NULL DEFAULT '';
CREATE INDEX calls_media_token ON calls (media_token) WHERE media_token <> '';
CREATE INDEX calls_active ON calls (account_id) WHERE ended_at = 0;
CREATE TABLE call_recordings (
    call_id      BIGINT PRIMARY KEY REFERENCES calls (id) ON DELETE CASCADE,
    account_id   TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    content      BLOB NOT NULL,
    stored_bytes BIGINT NOT NULL
);
-- +goose StatementBegin
CREATE TRIGGER call_recordings_storage_add AFTER INSERT ON call_recordings WHEN new.stored_bytes <> 0 BEGIN
    UPDATE accounts SET storage_bytes = storage_bytes + new.stored_bytes WHERE id = new.account_id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER call_recordings_storage_remove AFTER DELETE ON call_recordings WHEN old.stored_bytes <> 0 BEGIN
    UPDATE accounts SET storage_bytes = storage_bytes - old.stored_bytes WHERE id = old.account_id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER calls_send AFTER INSERT ON calls WHEN new.direction = 'outgoing' BEGIN
    DELETE FROM sends WHERE account_id = new.account_id AND sent_at < new.started_at - 3600000000;
    INSERT INTO sends (account_id, sent_at) VALUES (new.account_id, new.started_at);
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER calls_send;
DROP TRIGGER call_recordings_storage_remove;
DROP TRIGGER call_recordings_storage_add;
DROP TABLE call_recordings;
DROP INDEX calls_active;
DROP INDEX calls_media_token;
ALTER TABLE calls DROP COLUMN end_reason;
ALTER TABLE calls DROP COLUMN recording_bytes;
ALTER TABLE calls DROP COLUMN dtmf;
ALTER TABLE calls DROP COLUMN frames_dropped;
ALTER TABLE calls DROP COLUMN frames_to_caller;
ALTER TABLE calls DROP COLUMN frames_from_caller;
ALTER TABLE calls DROP COLUMN stream_connected_at;
ALTER TABLE calls DROP COLUMN media_token;
ALTER TABLE calls DROP COLUMN record;
ALTER TABLE calls DROP COLUMN agent_url;
ALTER TABLE calls DROP COLUMN mode;
ALTER TABLE voice_agents DROP COLUMN stream_secret;
ALTER TABLE voice_agents DROP COLUMN record_calls;
ALTER TABLE voice_agents DROP COLUMN stream_url;
ALTER TABLE voice_agents DROP COLUMN mode;
