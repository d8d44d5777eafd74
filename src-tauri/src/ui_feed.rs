//! The main window's event feed: what the shell has for the page (the core's events, the tray's
//! snapshot, a page to show), in order, taken by the page with the long-polled command
//! `next_ui_events`.
//!
//! Why not Tauri events: Tauri delivers each event, and registers each listener, by evaluating a
//! script in the page, and wry asks for every script's result. WebKitGTK hands that result to the
//! app process as a JavaScript value, so the app process starts a JavaScript engine of its own at
//! the first one: 3.5 MiB more memory (its code and heap), held for nothing, and the page compiles
//! a new script for each streamed token. Here the events are the answers to the page's own calls
//! (Tauri's IPC protocol): one answer carries everything that came while the page was busy.
//!
//! A reader holds a cursor, the sequence number of the next event it wants. The feed keeps the
//! events no reader has confirmed yet (a reader confirms what it took by asking for what follows),
//! at most [`HELD`]; a reader that falls further behind is told so in the log and goes on from the
//! oldest event held. A page that loads starts at the end (`after: None`), as a Tauri listener
//! did: what came before it is dropped. A stale call of a page that reloaded only reads, so it
//! takes nothing from the new page.

use std::collections::VecDeque;
use std::sync::Mutex;

use osprey_types::{UiEvent, UiEventBatch};
use tokio::sync::watch;

/// At most this many events are held for a reader that has not come back for them.
pub const HELD: usize = 4096;

/// At most this many events go in one answer; the rest come with the next.
pub const BATCH: usize = 512;

pub struct UiFeed {
    held: Mutex<Held>,
    /// The sequence number after the newest event: readers wait for it to pass their cursor.
    end: watch::Sender<u64>,
}

#[derive(Default)]
struct Held {
    /// The sequence number of `events[0]`.
    first: u64,
    events: VecDeque<UiEvent>,
}

impl Held {
    fn end(&self) -> u64 {
        self.first + self.events.len() as u64
    }

    /// Drops the events before `cursor` (clamped to what is held).
    fn drop_before(&mut self, cursor: u64) {
        let delivered = cursor
            .saturating_sub(self.first)
            .min(self.events.len() as u64);
        self.events.drain(..delivered as usize);
        self.first += delivered;
    }
}

impl Default for UiFeed {
    fn default() -> Self {
        UiFeed {
            held: Mutex::new(Held::default()),
            end: watch::Sender::new(0),
        }
    }
}

impl UiFeed {
    /// Adds an event for the page.
    pub fn push(&self, event: UiEvent) {
        let mut held = self.lock();
        held.events.push_back(event);
        if held.events.len() > HELD {
            held.events.pop_front();
            held.first += 1;
        }
        // Under the lock: two pushes from different threads must not publish their ends in the
        // other order, which would leave a reader parked with an event waiting.
        self.end.send_replace(held.end());
    }

    /// The events from `after` on, waiting until there is one. `None` is a new reader: it gets no
    /// event and the cursor of the end, and everything held before it is dropped. A cursor past
    /// the end (never handed out) reads from the end.
    pub async fn next(&self, after: Option<u64>) -> UiEventBatch {
        let Some(after) = after else {
            let mut held = self.lock();
            let end = held.end();
            held.drop_before(end);
            return UiEventBatch {
                events: Vec::new(),
                next: end,
            };
        };
        let after = after.min(self.lock().end());
        let mut end = self.end.subscribe();
        // The sender is `self.end`, alive as long as `self`: the wait ends only by an event.
        let _ = end.wait_for(|&end| end > after).await;
        self.take(after)
    }

    fn take(&self, after: u64) -> UiEventBatch {
        let mut held = self.lock();
        held.drop_before(after);
        if after < held.first {
            tracing::warn!(
                missed = held.first - after,
                "the window fell behind the shell's events; it goes on from the oldest held"
            );
        }
        let events: Vec<UiEvent> = held.events.iter().take(BATCH).cloned().collect();
        UiEventBatch {
            next: held.first + events.len() as u64,
            events,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        // Nothing panics while the lock is held; a poisoned lock still holds whole events.
        self.held
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    fn nav(route: &str) -> UiEvent {
        UiEvent::Navigate {
            route: route.into(),
        }
    }

    fn routes(batch: &UiEventBatch) -> Vec<&str> {
        batch
            .events
            .iter()
            .map(|event| match event {
                UiEvent::Navigate { route } => route.as_str(),
                other => panic!("not a navigation: {other:?}"),
            })
            .collect()
    }

    const DEADLINE: Duration = Duration::from_secs(10);

    /// A call of the page, waiting on the feed in a task of its own.
    fn reader(feed: &Arc<UiFeed>, after: u64) -> tokio::task::JoinHandle<UiEventBatch> {
        let feed = feed.clone();
        tokio::spawn(async move { feed.next(Some(after)).await })
    }

    #[tokio::test]
    async fn a_new_reader_starts_at_the_end_and_gets_what_follows_in_order() {
        let feed = UiFeed::default();
        feed.push(nav("before"));
        let start = feed.next(None).await;
        assert!(start.events.is_empty());
        assert_eq!(start.next, 1);
        feed.push(nav("a"));
        feed.push(nav("b"));
        let batch = feed.next(Some(start.next)).await;
        assert_eq!(routes(&batch), ["a", "b"]);
        assert_eq!(batch.next, 3);
        // Asking for what follows confirms the batch: it is no longer held.
        feed.push(nav("c"));
        let batch = feed.next(Some(batch.next)).await;
        assert_eq!(routes(&batch), ["c"]);
        assert_eq!(feed.lock().events.len(), 1);
    }

    #[tokio::test]
    async fn a_reader_waits_for_the_next_event() {
        let feed = Arc::new(UiFeed::default());
        let cursor = feed.next(None).await.next;
        let reader = reader(&feed, cursor);
        // The reader is parked on the feed, not answered empty.
        tokio::task::yield_now().await;
        assert!(!reader.is_finished());
        feed.push(nav("store"));
        let batch = tokio::time::timeout(DEADLINE, reader)
            .await
            .expect("the reader was not woken")
            .expect("the reader panicked");
        assert_eq!(routes(&batch), ["store"]);
    }

    #[tokio::test]
    async fn a_stale_reader_takes_nothing_from_the_new_one() {
        // A page that reloads leaves its last call waiting; the new page starts its own cursor.
        let feed = Arc::new(UiFeed::default());
        let old = feed.next(None).await.next;
        let stale = reader(&feed, old);
        let new = feed.next(None).await.next;
        feed.push(nav("chat"));
        let stale = tokio::time::timeout(DEADLINE, stale)
            .await
            .unwrap()
            .unwrap();
        let fresh = feed.next(Some(new)).await;
        assert_eq!(routes(&stale), ["chat"]);
        assert_eq!(routes(&fresh), ["chat"]);
    }

    #[tokio::test]
    async fn a_reader_far_behind_goes_on_from_the_oldest_held() {
        let feed = UiFeed::default();
        let cursor = feed.next(None).await.next;
        for n in 0..HELD + 10 {
            feed.push(nav(&n.to_string()));
        }
        assert_eq!(feed.lock().events.len(), HELD);
        let batch = feed.next(Some(cursor)).await;
        assert_eq!(batch.events.len(), BATCH);
        assert_eq!(routes(&batch)[0], "10");
        assert_eq!(batch.next, 10 + BATCH as u64);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_reader_gets_every_event_of_pushers_on_other_threads() {
        // The core's forwarder and the tray push from different threads; a reader parked on the
        // last cursor must be woken by the last push, whichever thread made it. (The ends are
        // published under the lock, so they cannot go out in the wrong order; that window is
        // too narrow for this test to hit reliably, which checks delivery across threads.)
        const PUSHERS: usize = 4;
        const EACH: usize = 500;
        for _ in 0..20 {
            let feed = Arc::new(UiFeed::default());
            let mut cursor = feed.next(None).await.next;
            let pushers: Vec<_> = (0..PUSHERS)
                .map(|p| {
                    let feed = feed.clone();
                    std::thread::spawn(move || {
                        for n in 0..EACH {
                            feed.push(nav(&format!("{p}-{n}")));
                        }
                    })
                })
                .collect();
            let mut seen = 0;
            while seen < PUSHERS * EACH {
                let batch = tokio::time::timeout(DEADLINE, feed.next(Some(cursor)))
                    .await
                    .expect("a reader stayed parked with events waiting");
                seen += batch.events.len();
                cursor = batch.next;
            }
            for pusher in pushers {
                pusher.join().unwrap();
            }
            assert_eq!(seen, PUSHERS * EACH);
        }
    }

    #[tokio::test]
    async fn a_cursor_past_the_end_waits_for_the_next_event() {
        let feed = UiFeed::default();
        feed.push(nav("a"));
        let feed = Arc::new(feed);
        let reader = reader(&feed, 99);
        tokio::task::yield_now().await;
        assert!(!reader.is_finished());
        feed.push(nav("b"));
        let batch = tokio::time::timeout(DEADLINE, reader)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(routes(&batch), ["b"]);
        assert_eq!(batch.next, 2);
    }
}
