-- PostgreSQL's migration 00027 compresses mail's large values with lz4;
-- SQLite stores them uncompressed, so here there is nothing to do.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
