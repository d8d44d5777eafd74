//! Work tasks: the per-session to-do list a model keeps while it works (plan the steps, mark
//! them in progress and done). Each task belongs to one session; every change is scoped to that
//! session, so one conversation cannot edit another's list by guessing an id.

use rusqlite::{OptionalExtension, Row, params};

use crate::{Database, Result, now_ms};

/// Where a work task stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkStatus {
    Pending,
    InProgress,
    Done,
}

impl WorkStatus {
    pub const ALL: [WorkStatus; 3] = [
        WorkStatus::Pending,
        WorkStatus::InProgress,
        WorkStatus::Done,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            WorkStatus::Pending => "pending",
            WorkStatus::InProgress => "in_progress",
            WorkStatus::Done => "done",
        }
    }

    /// Parses `pending`, `in_progress` (also `in-progress`, `doing`), `done`.
    pub fn parse(text: &str) -> Option<WorkStatus> {
        match text.trim().to_ascii_lowercase().as_str() {
            "pending" | "todo" => Some(WorkStatus::Pending),
            "in_progress" | "in-progress" | "doing" => Some(WorkStatus::InProgress),
            "done" | "completed" => Some(WorkStatus::Done),
            _ => None,
        }
    }
}

/// One work task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkTask {
    pub id: i64,
    pub session_id: String,
    pub title: String,
    pub status: WorkStatus,
    pub notes: Option<String>,
    pub created_ms: i64,
    pub updated_ms: i64,
}

/// The fields an update changes; `None` leaves a field as it is. `notes: Some("")` clears them.
#[derive(Clone, Debug, Default)]
pub struct WorkTaskChange<'a> {
    pub title: Option<&'a str>,
    pub status: Option<WorkStatus>,
    pub notes: Option<&'a str>,
}

/// The work tasks repository.
#[derive(Clone, Debug)]
pub struct WorkTasks {
    db: Database,
}

const COLUMNS: &str = "id, session_id, title, status, notes, created_ms, updated_ms";

fn task_row(row: &Row<'_>) -> rusqlite::Result<WorkTask> {
    let status: String = row.get(3)?;
    Ok(WorkTask {
        id: row.get(0)?,
        session_id: row.get(1)?,
        title: row.get(2)?,
        // The column's CHECK constraint admits only the three names.
        status: WorkStatus::parse(&status).unwrap_or(WorkStatus::Pending),
        notes: row.get(4)?,
        created_ms: row.get(5)?,
        updated_ms: row.get(6)?,
    })
}

impl WorkTasks {
    pub(crate) fn new(db: Database) -> Self {
        WorkTasks { db }
    }

    /// Adds a task at the end of the session's list.
    pub fn create(
        &self,
        session_id: &str,
        title: &str,
        status: WorkStatus,
        notes: Option<&str>,
    ) -> Result<WorkTask> {
        let now = now_ms();
        let id = self.db.with_conn(|c| {
            c.execute(
                "INSERT INTO work_tasks (session_id, title, status, notes, created_ms, updated_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
                params![session_id, title, status.as_str(), notes, now],
            )?;
            Ok(c.last_insert_rowid())
        })?;
        Ok(self
            .get(session_id, id)?
            .expect("the row was inserted in this call"))
    }

    /// The task `id` if it belongs to `session_id`.
    pub fn get(&self, session_id: &str, id: i64) -> Result<Option<WorkTask>> {
        self.db.with_conn(|c| {
            Ok(c.query_row(
                &format!("SELECT {COLUMNS} FROM work_tasks WHERE id = ?1 AND session_id = ?2"),
                params![id, session_id],
                task_row,
            )
            .optional()?)
        })
    }

    /// Changes a task of the session; `None` when it has no task `id`.
    pub fn update(
        &self,
        session_id: &str,
        id: i64,
        change: &WorkTaskChange<'_>,
    ) -> Result<Option<WorkTask>> {
        let changed = self.db.with_conn(|c| {
            Ok(c.execute(
                "UPDATE work_tasks SET
                    title = coalesce(?3, title),
                    status = coalesce(?4, status),
                    notes = CASE WHEN ?5 IS NULL THEN notes WHEN ?5 = '' THEN NULL ELSE ?5 END,
                    updated_ms = ?6
                 WHERE id = ?1 AND session_id = ?2",
                params![
                    id,
                    session_id,
                    change.title,
                    change.status.map(WorkStatus::as_str),
                    change.notes,
                    now_ms()
                ],
            )?)
        })?;
        if changed == 0 {
            return Ok(None);
        }
        self.get(session_id, id)
    }

    /// Removes a task of the session; `false` when it has no task `id`.
    pub fn delete(&self, session_id: &str, id: i64) -> Result<bool> {
        self.db.with_conn(|c| {
            Ok(c.execute(
                "DELETE FROM work_tasks WHERE id = ?1 AND session_id = ?2",
                params![id, session_id],
            )? > 0)
        })
    }

    /// The session's tasks in the order they were created, optionally only those in `status`.
    pub fn list(&self, session_id: &str, status: Option<WorkStatus>) -> Result<Vec<WorkTask>> {
        self.db.with_conn(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM work_tasks
                 WHERE session_id = ?1 AND (?2 IS NULL OR status = ?2) ORDER BY id"
            ))?;
            let rows = stmt.query_map(
                params![session_id, status.map(WorkStatus::as_str)],
                task_row,
            )?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_update_delete_and_list_stay_within_their_session() {
        let db = Database::open_in_memory().unwrap();
        let tasks = db.work_tasks();
        let a = tasks
            .create("s1", "read the report", WorkStatus::Pending, None)
            .unwrap();
        let b = tasks
            .create(
                "s1",
                "write the summary",
                WorkStatus::Pending,
                Some("short"),
            )
            .unwrap();
        tasks
            .create("s2", "someone else's", WorkStatus::Pending, None)
            .unwrap();

        let updated = tasks
            .update(
                "s1",
                a.id,
                &WorkTaskChange {
                    status: Some(WorkStatus::Done),
                    notes: Some("read twice"),
                    ..Default::default()
                },
            )
            .unwrap()
            .unwrap();
        assert_eq!(updated.status, WorkStatus::Done);
        assert_eq!(updated.title, "read the report");
        assert_eq!(updated.notes.as_deref(), Some("read twice"));

        // Empty notes clear them; nothing else changes.
        let cleared = tasks
            .update(
                "s1",
                b.id,
                &WorkTaskChange {
                    notes: Some(""),
                    ..Default::default()
                },
            )
            .unwrap()
            .unwrap();
        assert_eq!(cleared.notes, None);
        assert_eq!(cleared.status, WorkStatus::Pending);

        // Another session cannot touch s1's tasks.
        assert!(
            tasks
                .update("s2", a.id, &WorkTaskChange::default())
                .unwrap()
                .is_none()
        );
        assert!(!tasks.delete("s2", a.id).unwrap());

        let titles = |status| -> Vec<String> {
            tasks
                .list("s1", status)
                .unwrap()
                .into_iter()
                .map(|t| t.title)
                .collect()
        };
        assert_eq!(titles(None), ["read the report", "write the summary"]);
        assert_eq!(titles(Some(WorkStatus::Done)), ["read the report"]);

        assert!(tasks.delete("s1", a.id).unwrap());
        assert_eq!(titles(None), ["write the summary"]);
        assert_eq!(tasks.list("s2", None).unwrap().len(), 1);
    }

    #[test]
    fn statuses_parse_from_the_names_models_use() {
        for status in WorkStatus::ALL {
            assert_eq!(WorkStatus::parse(status.as_str()), Some(status));
        }
        assert_eq!(
            WorkStatus::parse("In-Progress"),
            Some(WorkStatus::InProgress)
        );
        assert_eq!(WorkStatus::parse("blocked"), None);
    }
}
