//! The core's event bus: one tokio broadcast channel every part of the core emits
//! [`CoreEvent`]s on (chat turns, approvals, app states) and every shell subscribes to. The
//! desktop forwards them to the UI (`src-tauri/src/events.rs`); tests subscribe directly.
//! Emitting never blocks and never fails: with no subscriber the event is dropped, and a
//! subscriber that falls more than [`CAPACITY`] events behind loses the oldest ones (it sees
//! `RecvError::Lagged`) rather than slowing the core down.
//!
//! The channel holds each event behind an `Arc`. tokio lays out and writes all [`CAPACITY`] slots
//! when the channel is made; with the event inline (224 bytes, the size of its largest variant)
//! that was 1 MiB of the app's memory from the start, held whether anything was ever emitted.
//! A subscriber still receives its own `CoreEvent` ([`Receiver`]).

use std::sync::Arc;

pub use osprey_types::CoreEvent;
use tokio::sync::broadcast;
pub use tokio::sync::broadcast::error::{RecvError, TryRecvError};

/// Events a slow subscriber may fall behind before it loses some. Streaming text is the bulk;
/// a few thousand deltas cover a long reply.
pub const CAPACITY: usize = 4096;

/// A cheap-clone handle on the channel.
#[derive(Clone, Debug)]
pub struct EventBus {
    sender: broadcast::Sender<Arc<CoreEvent>>,
}

/// One subscriber's end of the bus: the events emitted since it subscribed, in order.
#[derive(Debug)]
pub struct Receiver(broadcast::Receiver<Arc<CoreEvent>>);

impl Receiver {
    /// The next event, waiting for one; `Lagged(n)` when `n` were lost to falling behind,
    /// `Closed` once the core is gone.
    pub async fn recv(&mut self) -> Result<CoreEvent, RecvError> {
        self.0.recv().await.map(Arc::unwrap_or_clone)
    }

    /// The next event if one is waiting.
    pub fn try_recv(&mut self) -> Result<CoreEvent, TryRecvError> {
        self.0.try_recv().map(Arc::unwrap_or_clone)
    }
}

impl Default for EventBus {
    fn default() -> Self {
        EventBus::new()
    }
}

impl EventBus {
    /// Needs no runtime.
    pub fn new() -> EventBus {
        let (sender, _) = broadcast::channel(CAPACITY);
        EventBus { sender }
    }

    pub fn emit(&self, event: CoreEvent) {
        // An error only means nobody listens right now.
        let _ = self.sender.send(Arc::new(event));
    }

    /// Events emitted from now on.
    pub fn subscribe(&self) -> Receiver {
        Receiver(self.sender.subscribe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_subscriber_gets_every_event_in_order() {
        let bus = EventBus::new();
        bus.emit(CoreEvent::ChatTurnStarted {
            session_id: "before anyone listened".into(),
        });
        let mut first = bus.subscribe();
        let mut second = bus.subscribe();
        for n in 0..3 {
            bus.emit(CoreEvent::ChatTextDelta {
                session_id: "s".into(),
                text: n.to_string(),
            });
        }
        for receiver in [&mut first, &mut second] {
            for n in 0..3 {
                match receiver.recv().await.unwrap() {
                    CoreEvent::ChatTextDelta { text, .. } => assert_eq!(text, n.to_string()),
                    other => panic!("unexpected {other:?}"),
                }
            }
        }
    }
}
