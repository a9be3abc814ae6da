-- A delivery keeps its last attempt's request and answer for the console:
-- header fields and the first 4 KB of each body (core.WebhookExchange as
-- JSON; '' before an attempt).

-- +goose Up
ALTER TABLE webhook_deliveries ADD COLUMN last_exchange TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE webhook_deliveries DROP COLUMN last_exchange;
