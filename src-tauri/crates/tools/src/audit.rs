//! The audit writer: the registry hands every call's row to a background thread that batches
//! them into SQLite, so auditing costs a channel send on the call's path.

use std::sync::{Arc, mpsc};
use std::thread;

use osprey_db::{AuditEntry, AuditLog};

enum Message {
    Row(Box<AuditEntry>),
    Flush(mpsc::Sender<()>),
}

/// Where the registry sends audit rows. Cheap to clone. When the last clone is dropped the
/// writer finishes the rows already sent before the drop returns, so a process that exits right
/// after a call (the CLI) loses none.
#[derive(Clone, Debug)]
pub struct AuditSink {
    inner: Option<Arc<Writer>>,
}

#[derive(Debug)]
struct Writer {
    sender: Option<mpsc::Sender<Message>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Closing the channel ends the writer's loop once it has written what is queued.
        self.sender.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl AuditSink {
    /// Rows are written to `log` by a background thread.
    pub fn new(log: AuditLog) -> Self {
        let (sender, receiver) = mpsc::channel::<Message>();
        let spawned = thread::Builder::new()
            .name("osprey-audit".into())
            .spawn(move || write_rows(&log, &receiver));
        match spawned {
            Ok(thread) => AuditSink {
                inner: Some(Arc::new(Writer {
                    sender: Some(sender),
                    thread: Some(thread),
                })),
            },
            Err(err) => {
                tracing::error!(%err, "could not start the audit writer; calls will not be audited");
                AuditSink { inner: None }
            }
        }
    }

    /// A sink that drops every row (benchmarks of the bare registry).
    pub fn discard() -> Self {
        AuditSink { inner: None }
    }

    fn sender(&self) -> Option<&mpsc::Sender<Message>> {
        self.inner.as_ref().and_then(|w| w.sender.as_ref())
    }

    pub fn record(&self, entry: AuditEntry) {
        if let Some(sender) = self.sender() {
            let _ = sender.send(Message::Row(Box::new(entry)));
        }
    }

    /// Blocks until every row recorded before this call is in the database.
    pub fn flush(&self) {
        if let Some(sender) = self.sender() {
            let (done, wait) = mpsc::channel();
            if sender.send(Message::Flush(done)).is_ok() {
                let _ = wait.recv();
            }
        }
    }
}

/// The writer thread: batches whatever is queued into one transaction.
fn write_rows(log: &AuditLog, receiver: &mpsc::Receiver<Message>) {
    let mut batch: Vec<AuditEntry> = Vec::new();
    let mut waiting: Vec<mpsc::Sender<()>> = Vec::new();
    while let Ok(first) = receiver.recv() {
        let mut next = Some(first);
        while let Some(message) = next {
            match message {
                Message::Row(row) => batch.push(*row),
                Message::Flush(done) => waiting.push(done),
            }
            next = if batch.len() < 512 {
                receiver.try_recv().ok()
            } else {
                None
            };
        }
        if !batch.is_empty() {
            if let Err(err) = log.insert_many(&batch) {
                tracing::error!(%err, rows = batch.len(), "could not write audit rows");
            }
            batch.clear();
        }
        for done in waiting.drain(..) {
            let _ = done.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: i64) -> AuditEntry {
        AuditEntry {
            at_ms: n,
            tool: "t".into(),
            resource: None,
            action: None,
            origin: "user".into(),
            session_id: None,
            decision: "allow".into(),
            code: None,
            duration_us: 1,
            error: None,
            summary: None,
        }
    }

    #[test]
    fn dropping_the_last_sink_writes_every_queued_row() {
        let db = osprey_db::Database::open_in_memory().unwrap();
        let sink = AuditSink::new(db.audit());
        let clone = sink.clone();
        for n in 0..2000 {
            clone.record(entry(n));
        }
        drop(clone);
        drop(sink);
        assert_eq!(db.audit().count().unwrap(), 2000);
    }
}
