//! The audit writer: the registry hands every call's row to a background thread that batches
//! them into SQLite, so auditing costs a channel send on the call's path.

use std::sync::mpsc;
use std::thread;

use osprey_db::{AuditEntry, AuditLog};

enum Message {
    Row(Box<AuditEntry>),
    Flush(mpsc::Sender<()>),
}

/// Where the registry sends audit rows. Cheap to clone.
#[derive(Clone, Debug)]
pub struct AuditSink {
    sender: Option<mpsc::Sender<Message>>,
}

impl AuditSink {
    /// Rows are written to `log` by a background thread.
    pub fn new(log: AuditLog) -> Self {
        let (sender, receiver) = mpsc::channel::<Message>();
        let spawned = thread::Builder::new()
            .name("osprey-audit".into())
            .spawn(move || {
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
            });
        match spawned {
            Ok(_) => AuditSink {
                sender: Some(sender),
            },
            Err(err) => {
                tracing::error!(%err, "could not start the audit writer; calls will not be audited");
                AuditSink { sender: None }
            }
        }
    }

    /// A sink that drops every row (benchmarks of the bare registry).
    pub fn discard() -> Self {
        AuditSink { sender: None }
    }

    pub fn record(&self, entry: AuditEntry) {
        if let Some(sender) = &self.sender {
            let _ = sender.send(Message::Row(Box::new(entry)));
        }
    }

    /// Blocks until every row recorded before this call is in the database.
    pub fn flush(&self) {
        if let Some(sender) = &self.sender {
            let (done, wait) = mpsc::channel();
            if sender.send(Message::Flush(done)).is_ok() {
                let _ = wait.recv();
            }
        }
    }
}
