//! Each model's context window as its server reported it, by provider, server and model, so a
//! new process sizes its requests without asking the server again.

use rusqlite::{OptionalExtension, params};

use crate::{Database, Result, now_ms};

#[derive(Clone, Debug)]
pub struct ModelWindows {
    db: Database,
}

impl ModelWindows {
    pub(crate) fn new(db: Database) -> Self {
        ModelWindows { db }
    }

    /// The window learned for `model` on the server at `base_url`, if any.
    pub fn get(&self, provider: &str, base_url: &str, model: &str) -> Result<Option<u64>> {
        let window: Option<i64> = self.db.with_conn(|c| {
            Ok(c.query_row(
                "SELECT window FROM model_windows
                 WHERE provider = ?1 AND base_url = ?2 AND model = ?3",
                params![provider, base_url, model],
                |row| row.get(0),
            )
            .optional()?)
        })?;
        Ok(window.and_then(|w| u64::try_from(w).ok()))
    }

    /// Records (or replaces) the window learned for `model` on the server at `base_url`.
    pub fn set(&self, provider: &str, base_url: &str, model: &str, window: u64) -> Result<()> {
        let window = i64::try_from(window).unwrap_or(i64::MAX).max(1);
        self.db.with_conn(|c| {
            c.execute(
                "INSERT INTO model_windows (provider, base_url, model, window, learned_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT(provider, base_url, model)
                 DO UPDATE SET window = excluded.window, learned_ms = excluded.learned_ms",
                params![provider, base_url, model, window, now_ms()],
            )?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::Database;

    #[test]
    fn a_window_is_kept_per_provider_server_and_model_across_reopening() {
        let dir = tempfile::tempdir().unwrap();
        {
            let windows = Database::open_in(dir.path()).unwrap().model_windows();
            windows.set("ollama", "http://a:1", "llama", 8192).unwrap();
            windows.set("ollama", "http://a:1", "llama", 16384).unwrap();
            windows.set("ollama", "http://b:1", "llama", 4096).unwrap();
        }
        let windows = Database::open_in(dir.path()).unwrap().model_windows();
        assert_eq!(
            windows.get("ollama", "http://a:1", "llama").unwrap(),
            Some(16384)
        );
        assert_eq!(
            windows.get("ollama", "http://b:1", "llama").unwrap(),
            Some(4096)
        );
        assert_eq!(windows.get("ollama", "http://a:1", "qwen").unwrap(), None);
        assert_eq!(windows.get("openai", "http://a:1", "llama").unwrap(), None);
    }
}
