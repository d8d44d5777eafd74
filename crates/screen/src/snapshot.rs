//! The snapshot store: recent snapshots (their elements and how the image maps to the screen)
//! kept for a time-to-live and up to a count, so `desktop click B3` finds what `see` showed.
//! IDs never outlive their snapshot: a stale one is refused with an error telling the model to
//! take a new snapshot.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::capture::WindowInfo;
use crate::elements::Element;
use crate::error::{Error, Result};
use crate::geometry::Rect;

/// One `see`: the elements with their screen bounds, and where the image came from.
#[derive(Clone, Debug, Serialize)]
pub struct Snapshot {
    /// `s1`, `s2`, ... unique within the store.
    pub id: String,
    #[serde(skip)]
    pub taken: Instant,
    /// The window seen, `None` for the whole screen or a monitor.
    pub window: Option<WindowInfo>,
    /// The screen area captured.
    pub area: Rect,
    /// Image pixels per screen pixel (1.0 unless downscaled).
    pub scale: f64,
    pub elements: Vec<Element>,
    /// Why the element list may be incomplete.
    pub notes: Vec<String>,
}

impl Snapshot {
    pub fn element(&self, id: &str) -> Option<&Element> {
        self.elements
            .iter()
            .find(|e| e.id.eq_ignore_ascii_case(id.trim()))
    }
}

/// Snapshots kept in memory. Cheap to clone; shared by the `screenshot` and `desktop` tools.
#[derive(Clone, Debug)]
pub struct SnapshotStore {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug)]
struct Inner {
    snapshots: VecDeque<Arc<Snapshot>>,
    next_id: u64,
    ttl: Duration,
    capacity: usize,
}

impl Default for SnapshotStore {
    fn default() -> Self {
        SnapshotStore::new(Duration::from_secs(600), 16)
    }
}

impl SnapshotStore {
    pub fn new(ttl: Duration, capacity: usize) -> SnapshotStore {
        SnapshotStore {
            inner: Arc::new(Mutex::new(Inner {
                snapshots: VecDeque::new(),
                next_id: 1,
                ttl,
                capacity: capacity.max(1),
            })),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // The data stays consistent even if a holder panicked: every change is one push/pop.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stores a snapshot, giving it the next ID (the `id` passed in is replaced).
    pub fn insert(&self, mut snapshot: Snapshot) -> Arc<Snapshot> {
        let mut inner = self.lock();
        inner.expire(Instant::now());
        snapshot.id = format!("s{}", inner.next_id);
        inner.next_id += 1;
        let snapshot = Arc::new(snapshot);
        inner.snapshots.push_back(snapshot.clone());
        while inner.snapshots.len() > inner.capacity {
            inner.snapshots.pop_front();
        }
        snapshot
    }

    /// The latest live snapshot.
    pub fn latest(&self) -> Option<Arc<Snapshot>> {
        let mut inner = self.lock();
        inner.expire(Instant::now());
        inner.snapshots.back().cloned()
    }

    /// A live snapshot by ID, or the latest when `None`.
    pub fn get(&self, id: Option<&str>) -> Result<Arc<Snapshot>> {
        let mut inner = self.lock();
        inner.expire(Instant::now());
        match id.map(str::trim).filter(|s| !s.is_empty()) {
            None => inner
                .snapshots
                .back()
                .cloned()
                .ok_or_else(|| Error::Stale("there is no live snapshot".into())),
            Some(id) => inner
                .snapshots
                .iter()
                .find(|s| s.id == id)
                .cloned()
                .ok_or_else(|| Error::Stale(format!("snapshot {id} is unknown or has expired"))),
        }
    }

    /// The element `element_id` of the named snapshot, or of the latest.
    pub fn lookup(
        &self,
        snapshot_id: Option<&str>,
        element_id: &str,
    ) -> Result<(Arc<Snapshot>, Element)> {
        let snapshot = self.get(snapshot_id)?;
        match snapshot.element(element_id) {
            Some(element) => {
                let element = element.clone();
                Ok((snapshot, element))
            }
            None => Err(Error::Stale(format!(
                "snapshot {} has no element {element_id} (its IDs: {})",
                snapshot.id,
                summarise_ids(&snapshot.elements)
            ))),
        }
    }
}

impl Inner {
    fn expire(&mut self, now: Instant) {
        let ttl = self.ttl;
        self.snapshots
            .retain(|s| now.saturating_duration_since(s.taken) < ttl);
    }
}

fn summarise_ids(elements: &[Element]) -> String {
    if elements.is_empty() {
        return "none".into();
    }
    let ids: Vec<&str> = elements.iter().take(12).map(|e| e.id.as_str()).collect();
    let more = elements.len().saturating_sub(ids.len());
    if more > 0 {
        format!("{} and {more} more", ids.join(", "))
    } else {
        ids.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accessibility::{NodeRef, States};

    fn snapshot(ids: &[&str]) -> Snapshot {
        Snapshot {
            id: String::new(),
            taken: Instant::now(),
            window: None,
            area: Rect::new(0, 0, 100, 100),
            scale: 1.0,
            elements: ids
                .iter()
                .map(|id| Element {
                    id: id.to_string(),
                    role: accesskit::Role::Button,
                    kind: "button",
                    name: format!("name of {id}"),
                    value: None,
                    bounds: Rect::new(0, 0, 10, 10),
                    states: States::default(),
                    actions: vec![],
                    node: NodeRef(String::new()),
                })
                .collect(),
            notes: vec![],
        }
    }

    #[test]
    fn lookup_uses_the_latest_or_the_named_snapshot() {
        let store = SnapshotStore::default();
        let first = store.insert(snapshot(&["B1", "B2"]));
        let second = store.insert(snapshot(&["B1"]));
        assert_eq!((first.id.as_str(), second.id.as_str()), ("s1", "s2"));
        assert_eq!(store.lookup(None, "b1").unwrap().0.id, "s2");
        assert_eq!(store.lookup(Some("s1"), "B2").unwrap().1.name, "name of B2");
        let error = store.lookup(None, "B2").unwrap_err().to_string();
        assert!(
            error.contains("s2 has no element B2") && error.contains("take a new snapshot"),
            "{error}"
        );
    }

    #[test]
    fn expired_and_evicted_snapshots_are_refused() {
        let store = SnapshotStore::new(Duration::from_secs(60), 2);
        store.insert(snapshot(&["B1"]));
        store.insert(snapshot(&["B1"]));
        store.insert(snapshot(&["B1"]));
        let error = store.lookup(Some("s1"), "B1").unwrap_err().to_string();
        assert!(error.contains("s1 is unknown or has expired"), "{error}");
        assert!(store.lookup(Some("s2"), "B1").is_ok());

        let store = SnapshotStore::new(Duration::from_millis(0), 2);
        store.insert(snapshot(&["B1"]));
        let error = store.lookup(None, "B1").unwrap_err().to_string();
        assert!(
            error.contains("no live snapshot") && error.contains("take a new snapshot"),
            "{error}"
        );
    }
}
