//! The snapshot store: recent snapshots (their elements and how the image maps to the screen)
//! kept for a time-to-live and up to a count, so `desktop click B3` finds what `see` showed.
//! IDs never outlive their snapshot: a stale one is refused with an error telling the model to
//! take a new snapshot. With a directory, the latest snapshot is also written to
//! `latest.json` there, so a later process (`osprey see` then `osprey tool desktop ...`) can use
//! its IDs while they are fresh; element references stay valid as long as the application runs.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::capture::WindowInfo;
use crate::elements::Element;
use crate::error::{Error, Result};
use crate::geometry::Rect;

/// One `see`: the elements with their screen bounds, and where the image came from.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Snapshot {
    /// `s1`, `s2`, ... unique within the store.
    pub id: String,
    /// When it was taken (the store sets it).
    #[serde(skip, default = "Instant::now")]
    pub taken: Instant,
    /// The same moment as Unix milliseconds, for snapshots read back from disk.
    #[serde(default)]
    pub taken_unix_ms: u64,
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
    directory: Option<PathBuf>,
}

fn unix_ms(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
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
                directory: None,
            })),
        }
    }

    /// Also keeps the latest snapshot in `directory/latest.json` and reads it back when this
    /// store has none (a new process).
    pub fn with_directory(self, directory: PathBuf) -> SnapshotStore {
        self.lock().directory = Some(directory);
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // The data stays consistent even if a holder panicked: every change is one push/pop.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stores a snapshot, giving it the next ID (the `id` passed in is replaced).
    pub fn insert(&self, mut snapshot: Snapshot) -> Arc<Snapshot> {
        let mut inner = self.lock();
        inner.expire(Instant::now());
        inner.load_persisted();
        snapshot.id = format!("s{}", inner.next_id);
        snapshot.taken = Instant::now();
        snapshot.taken_unix_ms = unix_ms(SystemTime::now());
        inner.next_id += 1;
        let snapshot = Arc::new(snapshot);
        inner.push(snapshot.clone());
        inner.persist(&snapshot);
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
        inner.load_persisted();
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
    fn push(&mut self, snapshot: Arc<Snapshot>) {
        self.snapshots.push_back(snapshot);
        while self.snapshots.len() > self.capacity {
            self.snapshots.pop_front();
        }
    }

    fn persist(&self, snapshot: &Snapshot) {
        let Some(directory) = &self.directory else {
            return;
        };
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(directory)?;
            let temporary = directory.join("latest.json.tmp");
            std::fs::write(&temporary, serde_json::to_vec(snapshot)?)?;
            // Rename, so a reader never sees half a file.
            std::fs::rename(&temporary, directory.join("latest.json"))
        };
        if let Err(error) = write() {
            tracing::warn!(%error, "could not save the snapshot to {}", directory.display());
        }
    }

    /// Adopts the snapshot saved by another process when it is newer than ours and fresh.
    fn load_persisted(&mut self) {
        let Some(directory) = &self.directory else {
            return;
        };
        let Ok(bytes) = std::fs::read(directory.join("latest.json")) else {
            return;
        };
        let Ok(mut snapshot) = serde_json::from_slice::<Snapshot>(&bytes) else {
            return;
        };
        let age = Duration::from_millis(
            unix_ms(SystemTime::now()).saturating_sub(snapshot.taken_unix_ms),
        );
        let known = self
            .snapshots
            .iter()
            .any(|s| s.taken_unix_ms >= snapshot.taken_unix_ms);
        if age >= self.ttl || known {
            return;
        }
        snapshot.taken = Instant::now().checked_sub(age).unwrap_or_else(Instant::now);
        for element in &mut snapshot.elements {
            element.kind = crate::elements::kind(element.role);
        }
        if let Some(number) = snapshot
            .id
            .strip_prefix('s')
            .and_then(|n| n.parse::<u64>().ok())
        {
            self.next_id = self.next_id.max(number + 1);
        }
        // Our own IDs may clash with the other process's; theirs is the newer truth.
        let id = snapshot.id.clone();
        self.snapshots.retain(|s| s.id != id);
        self.push(Arc::new(snapshot));
    }

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
            taken_unix_ms: 0,
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
                    name_from_contents: false,
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

    #[test]
    fn a_new_store_on_the_same_directory_reads_the_latest_snapshot() {
        let directory = std::env::temp_dir().join(format!(
            "osprey-snapshot-test-{}-{}",
            std::process::id(),
            unix_ms(SystemTime::now())
        ));
        let first = SnapshotStore::default().with_directory(directory.clone());
        first.insert(snapshot(&["B1"]));
        let saved = first.insert(snapshot(&["B1", "T1"]));
        let second = SnapshotStore::default().with_directory(directory.clone());
        let (found, element) = second.lookup(None, "T1").unwrap();
        assert_eq!(found.id, saved.id);
        assert_eq!(element.kind, "button");
        // New snapshots continue the numbering.
        assert_eq!(second.insert(snapshot(&["B1"])).id, "s3");
        let expired =
            SnapshotStore::new(Duration::from_millis(0), 4).with_directory(directory.clone());
        assert!(expired.lookup(None, "B1").is_err());
        std::fs::remove_dir_all(directory).unwrap();
    }
}
