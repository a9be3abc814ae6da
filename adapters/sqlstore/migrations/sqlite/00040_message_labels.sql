-- Labels (issue 31): the words an agent, or a mail client as IMAP
-- keywords, puts on a message. A row per label a message carries, written
-- only when one is added: receiving mail writes none. thread_id is the
-- message's (which never changes), so that a thread's labels (the union of
-- its messages') and the thread list's filter read this table alone.
-- Indexes: the primary key answers a message's labels and the message
-- list's filter for one message; message_labels_label starts the list
-- filters from a label (its messages or threads, from the index alone);
-- message_labels_thread answers a page of threads' labels, and the
-- cascade when a thread goes.

-- +goose Up
CREATE TABLE message_labels (
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    message_id INTEGER NOT NULL REFERENCES email_messages (id) ON DELETE CASCADE,
    thread_id  TEXT NOT NULL REFERENCES email_threads (id) ON DELETE CASCADE,
    label      TEXT NOT NULL,
    PRIMARY KEY (message_id, label)
);
CREATE INDEX message_labels_label ON message_labels (account_id, label, thread_id, message_id);
CREATE INDEX message_labels_thread ON message_labels (thread_id, label);

-- +goose Down
DROP TABLE message_labels;
