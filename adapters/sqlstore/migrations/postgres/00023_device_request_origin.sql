-- A device request keeps the address it came from (as the API saw the
-- client: the peer, or X-Forwarded-For from a trusted proxy), so that the
-- approval page can show who asks, with when (created_at).

-- +goose Up
ALTER TABLE device_grants ADD COLUMN requested_from TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE device_grants DROP COLUMN requested_from;
