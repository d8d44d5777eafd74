//! An app's stdout and stderr: each line goes to `logs/<stream>.log` (rotated at a size cap,
//! keeping one `.1` backup) and, prefixed with `[app:<id>]`, to Osprey's stderr.

use std::path::{Path, PathBuf};

use tokio::fs::{File, OpenOptions};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

/// The longest line kept whole; longer output is split (an app printing without newlines must
/// not grow Osprey's memory).
const MAX_LINE: usize = 16 * 1024;

/// A log file that rotates to `<name>.1` when the next line would take it past `max_bytes`.
pub(crate) struct RotatingLog {
    path: PathBuf,
    max_bytes: u64,
    size: u64,
    file: Option<File>,
}

impl RotatingLog {
    pub(crate) async fn open(path: PathBuf, max_bytes: u64) -> std::io::Result<RotatingLog> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .await?;
        let size = file.metadata().await?.len();
        Ok(RotatingLog {
            path,
            max_bytes,
            size,
            file: Some(file),
        })
    }

    pub(crate) async fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        let length = line.len() as u64 + 1;
        if self.size > 0 && self.size + length > self.max_bytes {
            self.rotate().await?;
        }
        if let Some(file) = self.file.as_mut() {
            file.write_all(line).await?;
            file.write_all(b"\n").await?;
            file.flush().await?;
        }
        self.size += length;
        Ok(())
    }

    async fn rotate(&mut self) -> std::io::Result<()> {
        self.file = None;
        tokio::fs::rename(&self.path, backup_path(&self.path)).await?;
        self.file = Some(
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
                .await?,
        );
        self.size = 0;
        Ok(())
    }
}

pub(crate) fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".1");
    path.with_file_name(name)
}

/// Copies `stream` line by line into `log` and, when `echo`, onto Osprey's stderr, until the
/// stream ends (the app exited or closed it).
pub(crate) async fn pump(
    mut stream: impl AsyncRead + Unpin,
    mut log: RotatingLog,
    app_id: String,
    echo: bool,
) {
    let mut pending: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 8 * 1024];
    loop {
        let read = match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        pending.extend_from_slice(&chunk[..read]);
        while let Some(end) = pending
            .iter()
            .position(|b| *b == b'\n')
            .or_else(|| (pending.len() >= MAX_LINE).then_some(MAX_LINE))
        {
            let line: Vec<u8> = pending.drain(..end).collect();
            if pending.first() == Some(&b'\n') {
                pending.remove(0);
            }
            emit(&mut log, &app_id, &line, echo).await;
        }
    }
    if !pending.is_empty() {
        emit(&mut log, &app_id, &pending, echo).await;
    }
}

async fn emit(log: &mut RotatingLog, app_id: &str, line: &[u8], echo: bool) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // A full disk must not stop the app: the pipe keeps draining either way.
    let _ = log.write_line(line).await;
    if echo {
        eprintln!("[app:{app_id}] {}", String::from_utf8_lossy(line));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_rotate_into_one_backup() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stderr.log");
        let input: Vec<u8> = (0..30)
            .flat_map(|i| format!("line {i:02}\n").into_bytes())
            .collect();
        let log = RotatingLog::open(path.clone(), 64).await.unwrap();
        pump(input.as_slice(), log, "test".into(), false).await;
        let current = std::fs::read_to_string(&path).unwrap();
        let backup = std::fs::read_to_string(backup_path(&path)).unwrap();
        assert!(current.len() <= 64 && backup.len() <= 64);
        assert!(current.ends_with("line 29\n"), "{current}");
        // Every line is whole, and the backup holds the lines just before the current file's.
        let last_backup = backup.lines().last().unwrap();
        let first_current = current.lines().next().unwrap();
        let number = |line: &str| line[5..].parse::<u32>().unwrap();
        assert_eq!(number(last_backup) + 1, number(first_current));
        assert!(!dir.path().join("stderr.log.1.1").exists());
    }

    #[tokio::test]
    async fn endless_lines_are_split_and_a_last_partial_line_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stdout.log");
        let mut input = vec![b'x'; MAX_LINE * 2 + 10];
        input.extend_from_slice(b"\nend");
        let log = RotatingLog::open(path.clone(), 1 << 20).await.unwrap();
        pump(input.as_slice(), log, "test".into(), false).await;
        let text = std::fs::read_to_string(&path).unwrap();
        let lengths: Vec<usize> = text.lines().map(str::len).collect();
        assert_eq!(lengths, [MAX_LINE, MAX_LINE, 10, 3]);
    }
}
