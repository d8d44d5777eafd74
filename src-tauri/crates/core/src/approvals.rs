//! The approval broker: the [`Approver`] the desktop attaches to the registry. A tool call that
//! needs a person's answer becomes a pending request: the broker emits
//! [`CoreEvent::ApprovalRequested`] (with the deadline), waits for [`ApprovalBroker::answer`]
//! from the UI, and denies when the deadline passes. Whatever ends the wait is announced with
//! [`CoreEvent::ApprovalResolved`]: answered, timed out, or withdrawn (the caller stopped
//! waiting, e.g. its turn was cancelled and the registry dropped the question).
//!
//! What an answer means is the registry's business, not the broker's: the registry remembers
//! "always this session" and stores grants through the policy, and writes the audit row with the
//! decision (`ask:once`, `ask:session`, `ask:grant`, or `approval_denied`). The broker only
//! carries questions and answers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use osprey_tools::Approver;
pub use osprey_types::PendingApproval;
use osprey_types::{ApprovalAnswer, ApprovalRequest, ApprovalResolution, CoreEvent};
use tokio::sync::oneshot;

use crate::events::EventBus;

/// How long a question waits for an answer before it is denied.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Why an answer could not be delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnswerError {
    NotPending(String),
}

impl std::fmt::Display for AnswerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AnswerError::NotPending(id) => write!(
                f,
                "no pending approval `{id}`: it was answered already, timed out, or its turn was cancelled"
            ),
        }
    }
}

impl std::error::Error for AnswerError {}

impl AnswerError {
    /// The stable code the UI branches on.
    pub fn code(&self) -> &'static str {
        match self {
            AnswerError::NotPending(_) => "approval_not_pending",
        }
    }
}

/// A cheap-clone handle; every clone sees the same pending questions.
#[derive(Clone)]
pub struct ApprovalBroker {
    inner: Arc<Inner>,
}

struct Inner {
    events: EventBus,
    timeout_ms: std::sync::atomic::AtomicU64,
    pending: Mutex<HashMap<String, Waiting>>,
}

struct Waiting {
    pending: PendingApproval,
    reply: oneshot::Sender<ApprovalAnswer>,
}

impl std::fmt::Debug for ApprovalBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalBroker")
            .field("timeout", &self.timeout())
            .field("pending", &self.pending().len())
            .finish()
    }
}

impl ApprovalBroker {
    pub fn new(events: EventBus, timeout: Duration) -> ApprovalBroker {
        ApprovalBroker {
            inner: Arc::new(Inner {
                events,
                timeout_ms: std::sync::atomic::AtomicU64::new(millis(timeout)),
                pending: Mutex::new(HashMap::new()),
            }),
        }
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_millis(
            self.inner
                .timeout_ms
                .load(std::sync::atomic::Ordering::Relaxed),
        )
    }

    /// Applies to questions asked from now on.
    pub fn set_timeout(&self, timeout: Duration) {
        self.inner
            .timeout_ms
            .store(millis(timeout), std::sync::atomic::Ordering::Relaxed);
    }

    /// The questions waiting now, oldest deadline first.
    pub fn pending(&self) -> Vec<PendingApproval> {
        let mut list: Vec<PendingApproval> = self
            .lock()
            .values()
            .map(|waiting| waiting.pending.clone())
            .collect();
        list.sort_by_key(|p| p.deadline_ms);
        list
    }

    /// Delivers the person's answer to the question `request_id`.
    pub fn answer(&self, request_id: &str, answer: ApprovalAnswer) -> Result<(), AnswerError> {
        let waiting = self
            .lock()
            .remove(request_id)
            .ok_or_else(|| AnswerError::NotPending(request_id.to_string()))?;
        // The asker may have gone in the meantime (cancelled between our remove and this send);
        // its drop guard then finds nothing to withdraw, so announce the answer either way.
        let _ = waiting.reply.send(answer.clone());
        self.inner.events.emit(CoreEvent::ApprovalResolved {
            request_id: request_id.to_string(),
            resolution: ApprovalResolution::Answered { answer },
        });
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiting>> {
        self.inner.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Removes the question if still pending and says how it ended.
    fn resolve(&self, request_id: &str, resolution: ApprovalResolution) {
        if self.lock().remove(request_id).is_some() {
            self.inner.events.emit(CoreEvent::ApprovalResolved {
                request_id: request_id.to_string(),
                resolution,
            });
        }
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Withdraws the question when the asking future is dropped before it finished (the registry
/// drops it when the call is cancelled).
struct WithdrawOnDrop {
    broker: ApprovalBroker,
    request_id: String,
    armed: bool,
}

impl Drop for WithdrawOnDrop {
    fn drop(&mut self) {
        if self.armed {
            self.broker
                .resolve(&self.request_id, ApprovalResolution::Withdrawn);
        }
    }
}

impl Approver for ApprovalBroker {
    fn ask(&self, mut request: ApprovalRequest) -> BoxFuture<'static, ApprovalAnswer> {
        let broker = self.clone();
        Box::pin(async move {
            let timeout = broker.timeout();
            let deadline_ms = osprey_db::now_ms()
                .saturating_add(i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX));
            let (reply, answer) = oneshot::channel();
            {
                let mut pending = broker.lock();
                // Ids come from the registry's call ids and are unique; a repeat (a caller reusing
                // an id) must not silently replace the first question's answer channel.
                if pending.contains_key(&request.id) {
                    request.id = format!("{}#{}", request.id, pending.len() + 1);
                }
                pending.insert(
                    request.id.clone(),
                    Waiting {
                        pending: PendingApproval {
                            request: request.clone(),
                            deadline_ms,
                        },
                        reply,
                    },
                );
            }
            let request_id = request.id.clone();
            let mut guard = WithdrawOnDrop {
                broker: broker.clone(),
                request_id: request_id.clone(),
                armed: true,
            };
            broker.inner.events.emit(CoreEvent::ApprovalRequested {
                request,
                deadline_ms,
            });
            let outcome = tokio::time::timeout(timeout, answer).await;
            let answer = match outcome {
                Ok(Ok(answer)) => answer,
                // The sender is only dropped when the broker forgets the question without
                // answering; treat it as no.
                Ok(Err(_)) => ApprovalAnswer::Deny,
                Err(_) => {
                    tracing::info!(request = %request_id, "approval timed out: denied");
                    broker.resolve(&request_id, ApprovalResolution::TimedOut);
                    ApprovalAnswer::Deny
                }
            };
            // Finished normally: nothing left to withdraw.
            guard.armed = false;
            answer
        })
    }
}

/// The question timeout from the `approvals.timeout_seconds` setting, else [`DEFAULT_TIMEOUT`].
pub fn stored_timeout(stored: &osprey_db::Settings) -> Duration {
    match crate::settings::read::<Option<u64>>(stored, crate::settings::APPROVAL_TIMEOUT) {
        Some(seconds) if (5..=3600).contains(&seconds) => Duration::from_secs(seconds),
        Some(seconds) => {
            tracing::warn!(
                seconds,
                "approvals.timeout_seconds out of range; using 120 s"
            );
            DEFAULT_TIMEOUT
        }
        None => DEFAULT_TIMEOUT,
    }
}
