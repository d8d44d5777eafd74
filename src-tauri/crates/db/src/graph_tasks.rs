//! The task graph: tasks a session's agents share (the conversation, its workers and their
//! workers), with dependencies. The graph is named by the root conversation's session id; every
//! read and change is scoped to one graph, so an id from another graph is not found. Who may do
//! what (workers submit, orchestrators create, complete and reject) is the agent tool's and the
//! registry's business, not this table's.

use rusqlite::{OptionalExtension, Row, params};

use crate::{Database, Result, now_ms};

/// Where a graph task stands. A task is also *blocked* while a dependency is not done, which
/// is worked out from the dependencies, not stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphStatus {
    /// New: waiting for a worker.
    Open,
    /// A worker submitted a result; an orchestrator completes or rejects it.
    Submitted,
    Done,
    /// Rejected: back in the queue with feedback.
    Deferred,
}

impl GraphStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            GraphStatus::Open => "open",
            GraphStatus::Submitted => "submitted",
            GraphStatus::Done => "done",
            GraphStatus::Deferred => "deferred",
        }
    }

    fn parse(text: &str) -> GraphStatus {
        match text {
            "submitted" => GraphStatus::Submitted,
            "done" => GraphStatus::Done,
            "deferred" => GraphStatus::Deferred,
            _ => GraphStatus::Open,
        }
    }
}

/// One task of a graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphTask {
    pub id: i64,
    pub graph: String,
    pub title: String,
    pub description: Option<String>,
    pub status: GraphStatus,
    pub result: Option<String>,
    /// Why it was last rejected.
    pub feedback: Option<String>,
    pub created_by: String,
    pub submitted_by: Option<String>,
    pub depends_on: Vec<i64>,
    pub created_ms: i64,
    pub updated_ms: i64,
}

impl GraphTask {
    /// Its dependencies that are not done (among `all`, the graph's tasks): it waits for them.
    pub fn blocked_by(&self, all: &[GraphTask]) -> Vec<i64> {
        self.depends_on
            .iter()
            .copied()
            .filter(|id| {
                all.iter()
                    .find(|t| t.id == *id)
                    .is_none_or(|t| t.status != GraphStatus::Done)
            })
            .collect()
    }
}

/// The graph tasks repository.
#[derive(Clone, Debug)]
pub struct GraphTasks {
    db: Database,
}

const COLUMNS: &str = "id, graph, title, description, status, result, feedback, created_by, \
                       submitted_by, created_ms, updated_ms";

fn task_row(row: &Row<'_>) -> rusqlite::Result<GraphTask> {
    let status: String = row.get(4)?;
    Ok(GraphTask {
        id: row.get(0)?,
        graph: row.get(1)?,
        title: row.get(2)?,
        description: row.get(3)?,
        status: GraphStatus::parse(&status),
        result: row.get(5)?,
        feedback: row.get(6)?,
        created_by: row.get(7)?,
        submitted_by: row.get(8)?,
        depends_on: Vec::new(),
        created_ms: row.get(9)?,
        updated_ms: row.get(10)?,
    })
}

fn with_dependencies(c: &rusqlite::Connection, mut task: GraphTask) -> Result<GraphTask> {
    let mut stmt = c.prepare_cached(
        "SELECT depends_on FROM graph_task_deps WHERE task_id = ?1 ORDER BY depends_on",
    )?;
    task.depends_on = stmt
        .query_map([task.id], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(task)
}

impl GraphTasks {
    pub(crate) fn new(db: Database) -> Self {
        GraphTasks { db }
    }

    /// Adds a task. `depends_on` must name tasks of the same graph (the caller checks, and
    /// gets `None` back when one is not there).
    pub fn create(
        &self,
        graph: &str,
        title: &str,
        description: Option<&str>,
        depends_on: &[i64],
        created_by: &str,
    ) -> Result<Option<GraphTask>> {
        let now = now_ms();
        let id = self.db.with_conn(|c| {
            let tx = c.transaction()?;
            for dependency in depends_on {
                let found: Option<i64> = tx
                    .query_row(
                        "SELECT id FROM graph_tasks WHERE id = ?1 AND graph = ?2",
                        params![dependency, graph],
                        |r| r.get(0),
                    )
                    .optional()?;
                if found.is_none() {
                    return Ok(None);
                }
            }
            tx.execute(
                "INSERT INTO graph_tasks (graph, title, description, status, created_by,
                 created_ms, updated_ms) VALUES (?1, ?2, ?3, 'open', ?4, ?5, ?5)",
                params![graph, title, description, created_by, now],
            )?;
            let id = tx.last_insert_rowid();
            for dependency in depends_on {
                tx.execute(
                    "INSERT OR IGNORE INTO graph_task_deps (task_id, depends_on) VALUES (?1, ?2)",
                    params![id, dependency],
                )?;
            }
            tx.commit()?;
            Ok(Some(id))
        })?;
        match id {
            Some(id) => self.get(graph, id),
            None => Ok(None),
        }
    }

    /// The task `id` of `graph`.
    pub fn get(&self, graph: &str, id: i64) -> Result<Option<GraphTask>> {
        self.db.with_conn(|c| {
            let task = c
                .query_row(
                    &format!("SELECT {COLUMNS} FROM graph_tasks WHERE id = ?1 AND graph = ?2"),
                    params![id, graph],
                    task_row,
                )
                .optional()?;
            task.map(|t| with_dependencies(c, t)).transpose()
        })
    }

    /// Every task of `graph`, oldest first.
    pub fn list(&self, graph: &str) -> Result<Vec<GraphTask>> {
        self.db.with_conn(|c| {
            let tasks: Vec<GraphTask> = {
                let mut stmt = c.prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM graph_tasks WHERE graph = ?1 ORDER BY id"
                ))?;
                stmt.query_map([graph], task_row)?
                    .collect::<rusqlite::Result<_>>()?
            };
            tasks.into_iter().map(|t| with_dependencies(c, t)).collect()
        })
    }

    /// Sets the task's status, with its result (`None` keeps it), feedback (`None` keeps it)
    /// and who submitted (`None` keeps it). Returns the task as it is now.
    pub fn set_status(
        &self,
        graph: &str,
        id: i64,
        status: GraphStatus,
        result: Option<&str>,
        feedback: Option<&str>,
        submitted_by: Option<&str>,
    ) -> Result<Option<GraphTask>> {
        self.db.with_conn(|c| {
            c.execute(
                "UPDATE graph_tasks SET status = ?3, result = COALESCE(?4, result),
                 feedback = COALESCE(?5, feedback), submitted_by = COALESCE(?6, submitted_by),
                 updated_ms = ?7 WHERE id = ?1 AND graph = ?2",
                params![
                    id,
                    graph,
                    status.as_str(),
                    result,
                    feedback,
                    submitted_by,
                    now_ms()
                ],
            )?;
            Ok(())
        })?;
        self.get(graph, id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_keep_their_dependencies_and_stay_in_their_graph() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open_in(dir.path()).unwrap();
        let graph = db.graph_tasks();
        let first = graph
            .create("g", "Gather", None, &[], "g")
            .unwrap()
            .unwrap();
        let second = graph
            .create("g", "Write", Some("from the notes"), &[first.id], "g")
            .unwrap()
            .unwrap();
        assert_eq!(second.depends_on, [first.id]);
        assert_eq!(second.status, GraphStatus::Open);
        // A dependency in another graph is not there.
        assert!(
            graph
                .create("other", "x", None, &[first.id], "o")
                .unwrap()
                .is_none()
        );
        assert!(graph.get("other", first.id).unwrap().is_none());
        let done = graph
            .set_status(
                "g",
                first.id,
                GraphStatus::Submitted,
                Some("notes"),
                None,
                Some("w"),
            )
            .unwrap()
            .unwrap();
        assert_eq!(done.result.as_deref(), Some("notes"));
        let back = graph
            .set_status(
                "g",
                first.id,
                GraphStatus::Deferred,
                None,
                Some("too short"),
                None,
            )
            .unwrap()
            .unwrap();
        assert_eq!(back.status, GraphStatus::Deferred);
        assert_eq!(back.result.as_deref(), Some("notes"));
        assert_eq!(back.feedback.as_deref(), Some("too short"));
        assert_eq!(back.submitted_by.as_deref(), Some("w"));
        assert_eq!(graph.list("g").unwrap().len(), 2);
    }
}
