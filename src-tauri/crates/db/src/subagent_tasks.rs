//! Sub-agent tasks: a child session spawned from a parent session, with its depth, the prompt it
//! was given, and how it ended. The row is the link between the two sessions and what the
//! parent polls; the child's own conversation is an ordinary session.

use rusqlite::{OptionalExtension, Row, params};

use crate::{Database, Result, now_ms};

/// One sub-agent task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubAgentTask {
    pub id: i64,
    pub parent_session_id: String,
    /// The child's session (its messages and tool calls live there).
    pub session_id: String,
    /// 1 for a child of a top-level session, 2 for a grandchild, ...
    pub depth: i64,
    pub prompt: String,
    pub model: Option<String>,
    /// `running`, `done`, `failed`, `cancelled`, `timed_out`, `interrupted` (Osprey stopped while
    /// it ran).
    pub status: String,
    /// The child's final answer (or what it had said when it was stopped).
    pub result: Option<String>,
    pub error: Option<String>,
    pub timeout_ms: i64,
    pub created_ms: i64,
    pub finished_ms: Option<i64>,
    /// The child's own last report of where it stands (`set_status`).
    pub progress: Option<String>,
    /// The agent type it was spawned as (`researcher`, ...); `None` for an untyped child.
    pub agent_type: Option<String>,
    /// `task`, or `branch` (its result is delivered into the parent's conversation).
    pub kind: String,
    /// When a branch's result was handed to its parent's conversation.
    pub delivered_ms: Option<i64>,
}

/// What a new task starts with.
#[derive(Clone, Debug)]
pub struct NewSubAgentTask<'a> {
    pub parent_session_id: &'a str,
    pub depth: i64,
    pub prompt: &'a str,
    pub model: Option<&'a str>,
    pub timeout_ms: i64,
    pub agent_type: Option<&'a str>,
}

/// The sub-agent tasks repository.
#[derive(Clone, Debug)]
pub struct SubAgentTasks {
    db: Database,
}

const COLUMNS: &str = "id, parent_session_id, session_id, depth, prompt, model, status, result, \
                       error, timeout_ms, created_ms, finished_ms, progress, agent_type, kind, \
                       delivered_ms";

fn task_row(row: &Row<'_>) -> rusqlite::Result<SubAgentTask> {
    Ok(SubAgentTask {
        id: row.get(0)?,
        parent_session_id: row.get(1)?,
        session_id: row.get(2)?,
        depth: row.get(3)?,
        prompt: row.get(4)?,
        model: row.get(5)?,
        status: row.get(6)?,
        result: row.get(7)?,
        error: row.get(8)?,
        timeout_ms: row.get(9)?,
        created_ms: row.get(10)?,
        finished_ms: row.get(11)?,
        progress: row.get(12)?,
        agent_type: row.get(13)?,
        kind: row.get(14)?,
        delivered_ms: row.get(15)?,
    })
}

impl SubAgentTasks {
    pub(crate) fn new(db: Database) -> Self {
        SubAgentTasks { db }
    }

    /// Records a running task; its child session id is `<parent>/task-<id>`.
    pub fn start(&self, new: &NewSubAgentTask<'_>) -> Result<SubAgentTask> {
        let id = self.db.with_conn(|c| {
            let tx = c.transaction()?;
            // The child's session id is derived from the row id, so insert with a placeholder
            // and fix it in the same transaction.
            tx.execute(
                "INSERT INTO subagent_tasks
                    (parent_session_id, session_id, depth, prompt, model, status, timeout_ms, created_ms,
                     agent_type)
                 VALUES (?1, '', ?2, ?3, ?4, 'running', ?5, ?6, ?7)",
                params![
                    new.parent_session_id,
                    new.depth,
                    new.prompt,
                    new.model,
                    new.timeout_ms,
                    now_ms(),
                    new.agent_type
                ],
            )?;
            let id = tx.last_insert_rowid();
            tx.execute(
                "UPDATE subagent_tasks SET session_id = ?2 WHERE id = ?1",
                params![id, format!("{}/task-{id}", new.parent_session_id)],
            )?;
            tx.commit()?;
            Ok(id)
        })?;
        Ok(self.get(id)?.expect("the row was inserted in this call"))
    }

    pub fn get(&self, id: i64) -> Result<Option<SubAgentTask>> {
        self.db.with_conn(|c| {
            Ok(c.query_row(
                &format!("SELECT {COLUMNS} FROM subagent_tasks WHERE id = ?1"),
                [id],
                task_row,
            )
            .optional()?)
        })
    }

    /// The task whose child session is `session_id`, if that session is a sub-agent's.
    pub fn by_session(&self, session_id: &str) -> Result<Option<SubAgentTask>> {
        self.db.with_conn(|c| {
            Ok(c.query_row(
                &format!("SELECT {COLUMNS} FROM subagent_tasks WHERE session_id = ?1"),
                [session_id],
                task_row,
            )
            .optional()?)
        })
    }

    /// The conversation `session_id` belongs to: walks up the sub-agent links (a child's task
    /// names its parent) to the session no sub-agent runs in. Names a conversation's task graph
    /// and its team.
    pub fn root_session(&self, session_id: &str) -> Result<String> {
        let mut current = session_id.to_string();
        // Depth is limited (at most 16), so a short walk always ends.
        for _ in 0..32 {
            match self.by_session(&current)? {
                Some(task) => current = task.parent_session_id,
                None => break,
            }
        }
        Ok(current)
    }

    /// The tasks spawned from `parent_session_id`, newest first.
    pub fn list(&self, parent_session_id: &str, limit: u32) -> Result<Vec<SubAgentTask>> {
        self.db.with_conn(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM subagent_tasks WHERE parent_session_id = ?1
                 ORDER BY id DESC LIMIT ?2"
            ))?;
            let rows = stmt.query_map(params![parent_session_id, limit], task_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Records how a running task ended; a task that already ended keeps its first ending. An
    /// `interrupted` mark is only a guess made at start-up (another process sharing the database
    /// may still be running the child), so a real ending replaces it.
    pub fn finish(
        &self,
        id: i64,
        status: &str,
        result: Option<&str>,
        error: Option<&str>,
    ) -> Result<bool> {
        self.db.with_conn(|c| {
            Ok(c.execute(
                "UPDATE subagent_tasks SET status = ?2, result = ?3, error = ?4, finished_ms = ?5
                 WHERE id = ?1 AND status IN ('running', 'interrupted')",
                params![id, status, result, error, now_ms()],
            )? > 0)
        })
    }

    /// Records the child's report of where it stands; false when there is no such task.
    pub fn set_progress(&self, id: i64, progress: &str) -> Result<bool> {
        self.db.with_conn(|c| {
            Ok(c.execute(
                "UPDATE subagent_tasks SET progress = ?2 WHERE id = ?1",
                params![id, progress],
            )? > 0)
        })
    }

    /// Marks the task a branch: its result is delivered into its parent's conversation.
    pub fn mark_branch(&self, id: i64) -> Result<()> {
        self.db.with_conn(|c| {
            c.execute(
                "UPDATE subagent_tasks SET kind = 'branch' WHERE id = ?1",
                [id],
            )?;
            Ok(())
        })
    }

    /// The branches of `parent_session_id` that ended and were not yet delivered, oldest
    /// first, now marked delivered (each is handed out once).
    pub fn take_ended_branches(&self, parent_session_id: &str) -> Result<Vec<SubAgentTask>> {
        self.db.with_conn(|c| {
            let tx = c.transaction()?;
            let tasks: Vec<SubAgentTask> = {
                let mut stmt = tx.prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM subagent_tasks WHERE parent_session_id = ?1
                     AND kind = 'branch' AND status != 'running' AND delivered_ms IS NULL
                     ORDER BY id"
                ))?;
                stmt.query_map([parent_session_id], task_row)?
                    .collect::<rusqlite::Result<_>>()?
            };
            for task in &tasks {
                tx.execute(
                    "UPDATE subagent_tasks SET delivered_ms = ?2 WHERE id = ?1",
                    params![task.id, now_ms()],
                )?;
            }
            tx.commit()?;
            Ok(tasks)
        })
    }

    /// Starts an ended task again (an interactive worker taking a follow-up): `running`, with
    /// its ending cleared. False when it is running already.
    pub fn resume(&self, id: i64) -> Result<bool> {
        self.db.with_conn(|c| {
            Ok(c.execute(
                "UPDATE subagent_tasks SET status = 'running', error = NULL, finished_ms = NULL
                 WHERE id = ?1 AND status != 'running'",
                [id],
            )? > 0)
        })
    }

    /// Marks every task still `running` as `interrupted` (at start-up: no child outlives the
    /// process that ran it). Returns how many.
    pub fn interrupt_running(&self) -> Result<usize> {
        self.db.with_conn(|c| {
            Ok(c.execute(
                "UPDATE subagent_tasks SET status = 'interrupted', finished_ms = ?1,
                    error = 'Osprey stopped while the sub-agent was running'
                 WHERE status = 'running'",
                [now_ms()],
            )?)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_links_parent_and_child_sessions_and_ends_once() {
        let db = Database::open_in_memory().unwrap();
        let tasks = db.subagent_tasks();
        let task = tasks
            .start(&NewSubAgentTask {
                parent_session_id: "chat",
                depth: 1,
                prompt: "count the files",
                model: None,
                timeout_ms: 300_000,
                agent_type: Some("researcher"),
            })
            .unwrap();
        assert_eq!(task.session_id, format!("chat/task-{}", task.id));
        assert_eq!(task.status, "running");
        assert_eq!(task.agent_type.as_deref(), Some("researcher"));
        assert_eq!(task.kind, "task");
        tasks.mark_branch(task.id).unwrap();
        assert_eq!(tasks.get(task.id).unwrap().unwrap().kind, "branch");
        assert_eq!(
            tasks.by_session(&task.session_id).unwrap().unwrap().depth,
            1
        );
        assert!(tasks.by_session("chat").unwrap().is_none());

        assert!(
            tasks
                .finish(task.id, "done", Some("42 files"), None)
                .unwrap()
        );
        // A late cancel does not overwrite the answer.
        assert!(!tasks.finish(task.id, "cancelled", None, None).unwrap());
        let done = tasks.get(task.id).unwrap().unwrap();
        assert_eq!(done.status, "done");
        assert_eq!(done.result.as_deref(), Some("42 files"));
        assert!(done.finished_ms.is_some());
        assert_eq!(tasks.list("chat", 10).unwrap().len(), 1);
    }

    #[test]
    fn running_tasks_are_interrupted_at_start_up() {
        let dir = tempfile::tempdir().unwrap();
        let id = {
            let db = Database::open_in(dir.path()).unwrap();
            db.subagent_tasks()
                .start(&NewSubAgentTask {
                    parent_session_id: "p",
                    depth: 1,
                    prompt: "x",
                    model: Some("m"),
                    timeout_ms: 1000,
                    agent_type: None,
                })
                .unwrap()
                .id
        };
        let db = Database::open_in(dir.path()).unwrap();
        assert_eq!(db.subagent_tasks().interrupt_running().unwrap(), 1);
        assert_eq!(
            db.subagent_tasks().get(id).unwrap().unwrap().status,
            "interrupted"
        );
        // The process that really ran it (another one sharing the file) has the last word.
        assert!(
            db.subagent_tasks()
                .finish(id, "done", Some("ok"), None)
                .unwrap()
        );
        assert!(
            !db.subagent_tasks()
                .finish(id, "cancelled", None, None)
                .unwrap()
        );
        assert_eq!(db.subagent_tasks().get(id).unwrap().unwrap().status, "done");
    }
}
