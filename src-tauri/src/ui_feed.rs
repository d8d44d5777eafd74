//! The main window's event feed: what the shell has for the page (the core's events, the tray's
//! snapshot, a page to show), in order, taken by the page with the long-polled command
//! `next_ui_events`.
//!
//! Why not Tauri events: Tauri delivers each event, and registers each listener, by evaluating a
//! script in the page, and wry asks for every script's result. WebKitGTK hands that result to the
//! app process as a JavaScript value, so the app process started a JavaScript engine of its own
//! at the first one (1.1 MiB more over the app's processes, debug build: its code pages were
//! mostly shared with the web process), and the page compiled a new script for each streamed
//! token. Here the events are the answers to the page's own calls (Tauri's IPC protocol): one
//! answer carries everything that came while the page was busy.
//!
//! A reader holds a cursor, the sequence number of the next event it wants. The feed keeps the
//! events no reader has confirmed yet (a reader confirms what it took by asking for what follows),
//! at most [`HELD`]; a reader that falls further behind is told so in the log and goes on from the
//! oldest event held. A page that loads starts at the end (`after: None`), as a Tauri listener
//! did: what came before it is dropped. A stale call of a page that reloaded only reads, so it
//! takes nothing from the new page.

use std::collections::VecDeque;

use osprey_types::{UiEvent, UiEventBatch};
use tokio::sync::watch;

/// At most this many events are held for a reader that has not come back for them.
pub const HELD: usize = 4096;

/// At most this many events go in one answer; the rest come with the next.
pub const BATCH: usize = 512;

/// The held events live in a watch channel: a push changes them and wakes the parked readers,
/// who wait for the end to pass their cursor; there is no second copy of the end to keep in step.
#[derive(Default)]
pub struct UiFeed(watch::Sender<Held>);

#[derive(Default)]
struct Held {
    /// The sequence number of `events[0]`.
    first: u64,
    events: VecDeque<UiEvent>,
}

impl Held {
    /// The sequence number after the newest event.
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

impl UiFeed {
    /// Adds an event for the page.
    pub fn push(&self, event: UiEvent) {
        self.0.send_modify(|held| {
            held.events.push_back(event);
            if held.events.len() > HELD {
                held.events.pop_front();
                held.first += 1;
            }
        });
    }

    /// The events from `after` on, waiting until there is one. `None` is a new reader: it gets no
    /// event and the cursor of the end, and everything held before it is dropped. A cursor past
    /// the end (never handed out) reads from the end.
    pub async fn next(&self, after: Option<u64>) -> UiEventBatch {
        let Some(after) = after else {
            let mut next = 0;
            self.quietly(|held| {
                next = held.end();
                held.drop_before(next);
            });
            return UiEventBatch {
                events: Vec::new(),
                next,
            };
        };
        let after = after.min(self.0.borrow().end());
        // The sender lives as long as `self`: the wait ends only by an event.
        let _ = self.0.subscribe().wait_for(|held| held.end() > after).await;
        let mut batch = UiEventBatch {
            events: Vec::new(),
            next: after,
        };
        self.quietly(|held| {
            held.drop_before(after);
            if after < held.first {
                tracing::warn!(
                    missed = held.first - after,
                    "the window fell behind the shell's events; it goes on from the oldest held"
                );
            }
            batch.events = held.events.iter().take(BATCH).cloned().collect();
            batch.next = held.first + batch.events.len() as u64;
        });
        batch
    }

    /// Changes what is held without waking anyone: dropping delivered events is no news.
    fn quietly(&self, change: impl FnOnce(&mut Held)) {
        self.0.send_if_modified(|held| {
            change(held);
            false
        });
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
        assert_eq!(feed.0.borrow().events.len(), 1);
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
        assert_eq!(feed.0.borrow().events.len(), HELD);
        let batch = feed.next(Some(cursor)).await;
        assert_eq!(batch.events.len(), BATCH);
        assert_eq!(routes(&batch)[0], "10");
        assert_eq!(batch.next, 10 + BATCH as u64);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_reader_gets_every_event_of_pushers_on_other_threads() {
        // The core's forwarder and the tray push from different threads; a reader parked on the
        // last cursor must be woken by the last push, whichever thread made it.
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
