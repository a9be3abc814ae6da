-- PostgreSQL's storage-quota triggers add up per statement from this
-- migration on (see its file); SQLite has no statement-level triggers and
-- keeps its per-row ones (00034), so nothing changes here.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
