//! Versioned schema migrations, tracked in SQLite's `user_version`. Each step runs in its own
//! transaction, so a failure leaves the file at the last good version.

use std::path::Path;

use rusqlite::Connection;

use crate::{Error, Result};

/// The schema steps in order; step `i` brings the file from version `i` to `i + 1`.
pub(crate) const STEPS: &[&str] = &[
    // 1: audit log, grants, settings.
    r#"
    CREATE TABLE audit (
        id          INTEGER PRIMARY KEY,
        at_ms       INTEGER NOT NULL,
        tool        TEXT NOT NULL,
        resource    TEXT,
        action      TEXT,
        origin      TEXT NOT NULL,
        session_id  TEXT,
        decision    TEXT NOT NULL,
        code        TEXT,
        duration_us INTEGER NOT NULL,
        error       TEXT,
        summary     TEXT
    );
    CREATE INDEX audit_at ON audit(at_ms);
    CREATE INDEX audit_session ON audit(session_id, at_ms);

    CREATE TABLE grants (
        id          INTEGER PRIMARY KEY,
        scope_kind  TEXT NOT NULL,
        scope_value TEXT NOT NULL,
        session_id  TEXT,
        expires_ms  INTEGER,
        created_ms  INTEGER NOT NULL
    );

    CREATE TABLE settings (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    "#,
    // 2: chat sessions, their messages (content is the agent's JSON) and tool calls.
    r#"
    CREATE TABLE sessions (
        id          TEXT PRIMARY KEY,
        title       TEXT,
        origin      TEXT NOT NULL,
        status      TEXT NOT NULL DEFAULT 'idle',
        provider    TEXT,
        model       TEXT,
        created_ms  INTEGER NOT NULL,
        updated_ms  INTEGER NOT NULL
    );
    CREATE INDEX sessions_updated ON sessions(updated_ms);

    CREATE TABLE messages (
        id            INTEGER PRIMARY KEY,
        session_id    TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq           INTEGER NOT NULL,
        role          TEXT NOT NULL,
        content       TEXT NOT NULL,
        input_tokens  INTEGER,
        output_tokens INTEGER,
        created_ms    INTEGER NOT NULL,
        UNIQUE (session_id, seq)
    );

    CREATE TABLE tool_calls (
        id          INTEGER PRIMARY KEY,
        session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        call_id     TEXT NOT NULL,
        message_seq INTEGER NOT NULL,
        name        TEXT NOT NULL,
        input       TEXT NOT NULL,
        status      TEXT NOT NULL,
        result      TEXT,
        code        TEXT,
        started_ms  INTEGER NOT NULL,
        finished_ms INTEGER
    );
    CREATE INDEX tool_calls_session ON tool_calls(session_id, id);
    "#,
    // 3: memory (tacit / daily / entity layers, namespaces) with an FTS5 index over title and
    // content. The index is external-content (`content='memories'`), so the text is stored once;
    // the triggers keep it in step with every insert, update and delete.
    r#"
    CREATE TABLE memories (
        id          INTEGER PRIMARY KEY,
        layer       TEXT NOT NULL CHECK (layer IN ('tacit', 'daily', 'entity')),
        namespace   TEXT NOT NULL DEFAULT 'default',
        key         TEXT,
        content     TEXT NOT NULL,
        created_ms  INTEGER NOT NULL,
        updated_ms  INTEGER NOT NULL
    );
    CREATE UNIQUE INDEX memories_key ON memories(namespace, key) WHERE key IS NOT NULL;
    CREATE INDEX memories_list ON memories(namespace, layer, updated_ms);

    CREATE VIRTUAL TABLE memories_fts USING fts5(
        key, content, content='memories', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts(rowid, key, content) VALUES (new.id, new.key, new.content);
    END;
    CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, key, content)
            VALUES ('delete', old.id, old.key, old.content);
    END;
    CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, key, content)
            VALUES ('delete', old.id, old.key, old.content);
        INSERT INTO memories_fts(rowid, key, content) VALUES (new.id, new.key, new.content);
    END;
    "#,
    // 4: reminders (one-shot and cron) and the history of their runs. `next_run_ms` is NULL once
    // a one-shot has fired; `enabled = 0` is paused. `session_id` has no foreign key on purpose: a
    // reminder may name a session that is created only when it first fires, and it outlives the
    // deletion of its session (it then runs in a new one).
    r#"
    CREATE TABLE reminders (
        id          INTEGER PRIMARY KEY,
        session_id  TEXT,
        title       TEXT NOT NULL,
        prompt      TEXT NOT NULL,
        kind        TEXT NOT NULL CHECK (kind IN ('one_shot', 'cron')),
        schedule    TEXT NOT NULL,
        timezone    TEXT NOT NULL,
        next_run_ms INTEGER,
        enabled     INTEGER NOT NULL DEFAULT 1,
        origin      TEXT NOT NULL,
        created_ms  INTEGER NOT NULL,
        updated_ms  INTEGER NOT NULL,
        last_run_ms INTEGER
    );
    CREATE INDEX reminders_due ON reminders(next_run_ms) WHERE enabled = 1 AND next_run_ms IS NOT NULL;

    CREATE TABLE reminder_runs (
        id           INTEGER PRIMARY KEY,
        reminder_id  INTEGER NOT NULL REFERENCES reminders(id) ON DELETE CASCADE,
        trigger      TEXT NOT NULL,
        scheduled_ms INTEGER,
        started_ms   INTEGER NOT NULL,
        finished_ms  INTEGER,
        outcome      TEXT NOT NULL CHECK (outcome IN ('running', 'ok', 'error', 'interrupted')),
        session_id   TEXT,
        error        TEXT,
        output       TEXT
    );
    CREATE INDEX reminder_runs_reminder ON reminder_runs(reminder_id, id);
    "#,
    // 5: work tasks (the per-session to-do list a model keeps) and sub-agent tasks (a child
    // session spawned from a parent session). Neither has a foreign key to `sessions`: a work
    // task can be written by a call outside a stored turn, and a sub-agent's row is written
    // before its child session exists.
    r#"
    CREATE TABLE work_tasks (
        id          INTEGER PRIMARY KEY,
        session_id  TEXT NOT NULL,
        title       TEXT NOT NULL,
        status      TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'in_progress', 'done')),
        notes       TEXT,
        created_ms  INTEGER NOT NULL,
        updated_ms  INTEGER NOT NULL
    );
    CREATE INDEX work_tasks_session ON work_tasks(session_id, id);

    CREATE TABLE subagent_tasks (
        id                INTEGER PRIMARY KEY,
        parent_session_id TEXT NOT NULL,
        session_id        TEXT NOT NULL,
        depth             INTEGER NOT NULL,
        prompt            TEXT NOT NULL,
        model             TEXT,
        status            TEXT NOT NULL CHECK (status IN
                              ('running', 'done', 'failed', 'cancelled', 'timed_out', 'interrupted')),
        result            TEXT,
        error             TEXT,
        timeout_ms        INTEGER NOT NULL,
        created_ms        INTEGER NOT NULL,
        finished_ms       INTEGER
    );
    CREATE INDEX subagent_tasks_parent ON subagent_tasks(parent_session_id, id);
    CREATE INDEX subagent_tasks_session ON subagent_tasks(session_id);
    "#,
    // 6: optional embeddings of memories (little-endian f32s), one per memory and model. A
    // changed content makes its vector wrong, so the trigger drops it and it is embedded again.
    r#"
    CREATE TABLE memory_vectors (
        memory_id  INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
        model      TEXT NOT NULL,
        vector     BLOB NOT NULL
    );
    CREATE INDEX memory_vectors_model ON memory_vectors(model);
    CREATE TRIGGER memory_vectors_stale AFTER UPDATE OF content ON memories
    WHEN old.content IS NOT new.content
    BEGIN
        DELETE FROM memory_vectors WHERE memory_id = old.id;
    END;
    "#,
    // 7: the task graph a session's agents share (and a sub-agent's progress note) (the root conversation's session id names the
    // graph): tasks with a status and result, and their dependencies, which may only point at
    // tasks that existed when a task was created, so the graph has no cycles.
    r#"
    CREATE TABLE graph_tasks (
        id            INTEGER PRIMARY KEY,
        graph         TEXT NOT NULL,
        title         TEXT NOT NULL,
        description   TEXT,
        status        TEXT NOT NULL DEFAULT 'open' CHECK (status IN
                          ('open', 'submitted', 'done', 'deferred')),
        result        TEXT,
        feedback      TEXT,
        created_by    TEXT NOT NULL,
        submitted_by  TEXT,
        created_ms    INTEGER NOT NULL,
        updated_ms    INTEGER NOT NULL
    );
    CREATE INDEX graph_tasks_graph ON graph_tasks(graph, id);
    CREATE TABLE graph_task_deps (
        task_id     INTEGER NOT NULL REFERENCES graph_tasks(id) ON DELETE CASCADE,
        depends_on  INTEGER NOT NULL REFERENCES graph_tasks(id) ON DELETE CASCADE,
        PRIMARY KEY (task_id, depends_on)
    );
    -- A sub-agent's own report of where it stands (set_status), shown to its parent.
    ALTER TABLE subagent_tasks ADD COLUMN progress TEXT;
    -- A branch (a child forked from its parent's conversation) delivers its result into that
    -- conversation once; `delivered_ms` says it has.
    ALTER TABLE subagent_tasks ADD COLUMN kind TEXT NOT NULL DEFAULT 'task';
    ALTER TABLE subagent_tasks ADD COLUMN delivered_ms INTEGER;
    "#,
    // 8: each model's context window as its server reported it (Ollama's `/api/show`), so a new
    // process sizes its requests without asking again.
    r#"
    CREATE TABLE model_windows (
        provider    TEXT NOT NULL,
        base_url    TEXT NOT NULL,
        model       TEXT NOT NULL,
        window      INTEGER NOT NULL CHECK (window > 0),
        learned_ms  INTEGER NOT NULL,
        PRIMARY KEY (provider, base_url, model)
    );
    "#,
    // 9: the agent type a sub-agent task was spawned as (`researcher`, ...), none for untyped.
    r#"
    ALTER TABLE subagent_tasks ADD COLUMN agent_type TEXT;
    "#,
    // 10: what a memory is worth and where it came from (importance 1 to 5, the origin and
    // session that stored it, a JSON object of metadata), how often it was used (recall and
    // search hits, which rank it up), its tags, and associations between memories (followed
    // one hop when recalling). Links and tags go with their memory. The full-text index is
    // kept in step on changes to key and content only.
    r#"
    ALTER TABLE memories ADD COLUMN importance INTEGER NOT NULL DEFAULT 3
        CHECK (importance BETWEEN 1 AND 5);
    ALTER TABLE memories ADD COLUMN source TEXT;
    ALTER TABLE memories ADD COLUMN source_session TEXT;
    ALTER TABLE memories ADD COLUMN metadata TEXT;
    ALTER TABLE memories ADD COLUMN access_count INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE memories ADD COLUMN accessed_ms INTEGER;
    CREATE TABLE memory_tags (
        memory_id  INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
        tag        TEXT NOT NULL,
        PRIMARY KEY (memory_id, tag)
    ) WITHOUT ROWID;
    CREATE INDEX memory_tags_tag ON memory_tags(tag, memory_id);
    CREATE TABLE memory_links (
        from_id     INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
        to_id       INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
        relation    TEXT NOT NULL,
        created_ms  INTEGER NOT NULL,
        PRIMARY KEY (from_id, to_id, relation),
        CHECK (from_id <> to_id)
    ) WITHOUT ROWID;
    CREATE INDEX memory_links_to ON memory_links(to_id);
    -- Counting a use must not re-index the text: the index follows key and content only.
    DROP TRIGGER memories_au;
    CREATE TRIGGER memories_au AFTER UPDATE OF key, content ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, key, content)
            VALUES ('delete', old.id, old.key, old.content);
        INSERT INTO memories_fts(rowid, key, content) VALUES (new.id, new.key, new.content);
    END;
    "#,
    // 11: a shell command a reminder runs when it fires (approved by the person when the
    // reminder was created or the command changed); its output goes to the turn or the notice.
    r#"
    ALTER TABLE reminders ADD COLUMN command TEXT;
    "#,
    // 12: where this Osprey is in each store's event stream (the `id:` of the last event it
    // applied), so a restart or a dropped connection resumes with `Last-Event-ID`.
    r#"
    CREATE TABLE store_cursors (
        store_url      TEXT PRIMARY KEY,
        last_event_id  TEXT NOT NULL,
        updated_ms     INTEGER NOT NULL
    );
    "#,
    // 13: where a reminder's output is delivered besides its session (a channel or comm bridge,
    // a recipient, a thread), as JSON; approved by the person when it was set.
    r#"
    ALTER TABLE reminders ADD COLUMN deliver TEXT;
    "#,
    // 14: installs the store pushed (the person installed an app elsewhere) whose question has
    // not been answered yet, so a stop while it is asked asks it again at the next start.
    r#"
    CREATE TABLE store_pending_installs (
        store_url   TEXT NOT NULL,
        app_id      TEXT NOT NULL,
        created_ms  INTEGER NOT NULL,
        PRIMARY KEY (store_url, app_id)
    );
    "#,
    // 15: how often each tool ran, per session and per day, for the quotas in
    // `tools.quotas` (per-day counts must survive a restart). `scope` is `day:YYYY-MM-DD` (UTC)
    // or `session:<id>`; `key` is a quota's subject (`shell`, `shell.bash.exec`).
    r#"
    CREATE TABLE IF NOT EXISTS tool_usage (
        scope       TEXT NOT NULL,
        key         TEXT NOT NULL,
        count       INTEGER NOT NULL,
        updated_ms  INTEGER NOT NULL,
        PRIMARY KEY (scope, key)
    ) WITHOUT ROWID;
    "#,
    // 16: the topics the agent subscribed to through each comm app, so they are subscribed again
    // after Osprey restarts (not only after the app relaunches).
    r#"
    CREATE TABLE comm_subscriptions (
        app_id      TEXT NOT NULL,
        topic       TEXT NOT NULL,
        created_ms  INTEGER NOT NULL,
        PRIMARY KEY (app_id, topic)
    ) WITHOUT ROWID;
    "#,
];

pub(crate) const LATEST: i64 = STEPS.len() as i64;

pub(crate) fn migrate(path: &Path, conn: &mut Connection) -> Result<()> {
    let current: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    if current > LATEST {
        return Err(Error::TooNew {
            path: path.to_path_buf(),
            found: current,
            supported: LATEST,
        });
    }
    for (index, sql) in STEPS.iter().enumerate().skip(current as usize) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", index as i64 + 1)?;
        tx.commit()?;
    }
    Ok(())
}
