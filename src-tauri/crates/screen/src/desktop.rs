//! [`Desktop`]: the platform backends put together (capture, accessibility, input) with the
//! snapshot store; the one handle the tools and the CLI use.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::accessibility::{
    AccessibilityBackend, AccessibilityTree, PlatformAccessibility, TreeLimits,
};
use crate::capture::{
    CaptureBackend, PlatformCapture, WindowInfo, find_window_by_app, find_window_by_title,
};
use crate::elements::{assign_ids, element_list};
use crate::error::{Error, Result};
use crate::geometry::Rect;
use crate::input::Input;
use crate::render::{Drawn, Encoded, Quality, annotate, downscale, encode};
use crate::snapshot::{Snapshot, SnapshotStore};

/// Where the backends connect. `None` fields fall back to the process environment (`DISPLAY`,
/// `DBUS_SESSION_BUS_ADDRESS`); tests and long-lived hosts pass them explicitly.
#[derive(Clone, Debug)]
pub struct DesktopConfig {
    /// The X11 display name (`":0"`). Linux only.
    pub x11_display: Option<String>,
    /// The D-Bus session bus address, through which the AT-SPI bus is found. Linux only.
    pub session_bus_address: Option<String>,
    /// Bounds on every accessibility walk.
    pub tree_limits: TreeLimits,
    /// How long snapshots stay usable, and how many are kept.
    pub snapshot_ttl: Duration,
    pub snapshot_capacity: usize,
    /// Where the latest snapshot is kept for later processes (the CLI: `<data>/snapshots`).
    pub snapshot_dir: Option<std::path::PathBuf>,
}

impl Default for DesktopConfig {
    fn default() -> Self {
        DesktopConfig {
            x11_display: None,
            session_bus_address: None,
            tree_limits: TreeLimits::default(),
            snapshot_ttl: Duration::from_secs(3600),
            snapshot_capacity: 16,
            snapshot_dir: None,
        }
    }
}

/// What `see` looks at.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum SeeTarget {
    /// The focused window, or the screen when none is focused.
    #[default]
    Focused,
    /// The whole screen (every monitor), with the elements of every visible window.
    Screen,
    /// One monitor by its id from `monitors()`.
    Monitor(u32),
    /// A window by title (exact, else a case-insensitive substring).
    WindowTitle(String),
    /// The front-most window of an application (by name).
    App(String),
    /// A window by its platform id.
    WindowId(u64),
}

/// How `see` renders its image.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SeeOptions {
    pub quality: Quality,
    /// Downscale the image to at most this width (the width tier). Either way it is at most
    /// [`osprey_types::model_image_size`].
    pub max_width: Option<u32>,
    /// Draw the element boxes and IDs.
    pub annotate: bool,
    /// Overrides the configured accessibility deadline (a tool call's remaining time).
    pub tree_timeout: Option<Duration>,
    /// List each element's screen box (left,top width x height) in the text. Off by default:
    /// actions take the ID, and the boxes are about half of the list's tokens.
    pub bounds: bool,
}

impl Default for SeeOptions {
    fn default() -> Self {
        SeeOptions {
            quality: Quality::Fast,
            max_width: None,
            annotate: true,
            tree_timeout: None,
            bounds: false,
        }
    }
}

/// What `see` returns: the stored snapshot, the encoded image and the element list text.
#[derive(Clone, Debug)]
pub struct Seen {
    pub snapshot: Arc<Snapshot>,
    pub image: Encoded,
    pub width: u32,
    pub height: u32,
    /// The header line, the element list and the notes.
    pub text: String,
    /// Where the boxes and labels were drawn (image pixels).
    pub drawn: Drawn,
    /// Time spent per stage, for logs and benchmarks.
    pub timings: Timings,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Timings {
    pub capture: Duration,
    pub tree: Duration,
    pub render: Duration,
    pub encode: Duration,
    pub total: Duration,
}

/// The desktop handle. Cheap to clone.
#[derive(Clone)]
pub struct Desktop {
    inner: Arc<Inner>,
}

struct Inner {
    config: DesktopConfig,
    capture: PlatformCapture,
    accessibility: PlatformAccessibility,
    snapshots: SnapshotStore,
    input: Input,
}

impl std::fmt::Debug for Desktop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Desktop")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl Desktop {
    /// Connects to the display. Fails with [`crate::Error::NoDisplay`] when there is none.
    pub fn new(config: DesktopConfig) -> Result<Desktop> {
        #[cfg(target_os = "linux")]
        let capture = PlatformCapture::connect(config.x11_display.as_deref())?;
        #[cfg(not(target_os = "linux"))]
        let capture = PlatformCapture::new()?;
        let accessibility = PlatformAccessibility::new(config.session_bus_address.clone());
        let mut snapshots = SnapshotStore::new(config.snapshot_ttl, config.snapshot_capacity);
        if let Some(directory) = &config.snapshot_dir {
            snapshots = snapshots.with_directory(directory.clone());
        }
        let config_display = config.x11_display.clone();
        Ok(Desktop {
            inner: Arc::new(Inner {
                config,
                capture,
                accessibility,
                snapshots,
                input: Input::new(config_display),
            }),
        })
    }

    pub fn config(&self) -> &DesktopConfig {
        &self.inner.config
    }

    /// The capture backend (monitors, windows, images).
    pub fn capture(&self) -> &dyn CaptureBackend {
        &self.inner.capture
    }

    /// The accessibility backend. Its connection is made on first use and belongs to the tokio
    /// runtime that made it: use one `Desktop` within one runtime.
    pub fn accessibility(&self) -> &dyn AccessibilityBackend {
        &self.inner.accessibility
    }

    /// The accessibility tree of a window, within the limits.
    pub async fn tree(&self, window: &WindowInfo, limits: TreeLimits) -> Result<AccessibilityTree> {
        self.inner.accessibility.window_tree(window, limits).await
    }

    /// Whether a window manager runs (always true where the platform has one built in).
    pub fn window_manager_running(&self) -> Result<bool> {
        #[cfg(target_os = "linux")]
        return self.inner.capture.window_manager_running();
        #[cfg(not(target_os = "linux"))]
        return Ok(true);
    }

    /// The input device (pointer and keyboard).
    pub fn input(&self) -> &Input {
        &self.inner.input
    }

    /// The snapshots `see` stored.
    pub fn snapshots(&self) -> &SnapshotStore {
        &self.inner.snapshots
    }

    /// Runs blocking capture work off the async threads.
    pub(crate) async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&dyn CaptureBackend) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let desktop = self.clone();
        tokio::task::spawn_blocking(move || work(desktop.capture()))
            .await
            .map_err(|e| Error::Display(format!("capture worker failed: {e}")))?
    }

    /// Lists windows (front-most last).
    pub async fn windows(&self) -> Result<Vec<WindowInfo>> {
        self.blocking(|capture| capture.windows()).await
    }

    /// Resolves a target to a window (or `None` for screen and monitor targets) and an area.
    pub async fn resolve(&self, target: &SeeTarget) -> Result<(Option<WindowInfo>, Rect)> {
        let target = target.clone();
        self.blocking(move |capture| {
            let windows = || capture.windows();
            let window = match &target {
                SeeTarget::Screen => None,
                SeeTarget::Monitor(id) => {
                    let monitors = capture.monitors()?;
                    let monitor = monitors.iter().find(|m| m.id == *id).ok_or_else(|| {
                        Error::NotFound(format!(
                            "no monitor {id}; the monitors are: {}",
                            monitors
                                .iter()
                                .map(|m| format!("{} ({})", m.id, m.name))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    })?;
                    return Ok((None, monitor.bounds));
                }
                SeeTarget::Focused => windows()?.into_iter().find(|w| w.focused),
                SeeTarget::WindowTitle(title) => {
                    let list = windows()?;
                    Some(find_window_by_title(&list, title).cloned().ok_or_else(|| {
                        Error::NotFound(format!(
                            "no window titled {title:?}; open windows: {}",
                            window_titles(&list)
                        ))
                    })?)
                }
                SeeTarget::App(app) => {
                    let list = windows()?;
                    Some(find_window_by_app(&list, app).cloned().ok_or_else(|| {
                        Error::NotFound(format!(
                            "no window of an application named {app:?}; open windows: {}",
                            window_titles(&list)
                        ))
                    })?)
                }
                SeeTarget::WindowId(id) => Some(
                    windows()?
                        .into_iter()
                        .find(|w| w.id == *id)
                        .ok_or_else(|| Error::NotFound(format!("no window with id {id}")))?,
                ),
            };
            let screen = capture.screen_bounds()?;
            match window {
                Some(window) => {
                    let area = window.bounds.intersection(&screen).ok_or_else(|| {
                        Error::NotFound(format!(
                            "window {:?} is off screen ({})",
                            window.title, window.bounds
                        ))
                    })?;
                    Ok((Some(window), area))
                }
                None => Ok((None, screen)),
            }
        })
        .await
    }

    /// Takes a snapshot: capture, accessibility tree, element IDs, annotated and encoded image;
    /// stores it and returns it with the element list.
    pub async fn see(&self, target: &SeeTarget, options: SeeOptions) -> Result<Seen> {
        let start = Instant::now();
        let (window, area) = self.resolve(target).await?;
        let mut limits = self.inner.config.tree_limits;
        if let Some(timeout) = options.tree_timeout {
            limits.timeout = limits.timeout.min(timeout);
        }
        // The tree first, then the picture: a window that changes while its tree is read (a view
        // still painting, a dialog opening) is shown as it is after the walk, never older than
        // the elements listed on it. The capture is the quick part (a few milliseconds).
        let started = Instant::now();
        let trees = match &window {
            Some(window) => vec![(window.clone(), self.tree(window, limits).await?)],
            None => self.visible_trees(area, limits).await?,
        };
        let tree_time = started.elapsed();
        let started = Instant::now();
        let image = self
            .blocking(move |capture| capture.capture_region(area))
            .await?;
        let capture_time = started.elapsed();

        let (merged, notes) = merge_trees(trees);
        let render_start = Instant::now();
        let elements = assign_ids(&merged, area);
        let (mut image, scale) = downscale(&image, options.max_width);
        let drawn = if options.annotate {
            annotate(&mut image, area.origin(), scale, &elements)
        } else {
            Drawn::default()
        };
        let render_time = render_start.elapsed();
        let encode_start = Instant::now();
        let encoded = encode(&image, options.quality)?;
        let encode_time = encode_start.elapsed();

        let snapshot = self.inner.snapshots.insert(Snapshot {
            id: String::new(),
            taken: Instant::now(),
            taken_unix_ms: 0,
            window: window.clone(),
            area,
            scale,
            elements,
            notes,
        });
        let text = describe(&snapshot, image.width(), image.height(), options.bounds);
        Ok(Seen {
            width: image.width(),
            height: image.height(),
            snapshot,
            image: encoded,
            text,
            drawn,
            timings: Timings {
                capture: capture_time,
                tree: tree_time,
                render: render_time,
                encode: encode_time,
                total: start.elapsed(),
            },
        })
    }

    /// Trees of every visible window in `area`, with elements hidden under a higher window
    /// removed (their bounds cleared), walked together under one deadline.
    pub(crate) async fn visible_trees(
        &self,
        area: Rect,
        limits: TreeLimits,
    ) -> Result<Vec<(WindowInfo, AccessibilityTree)>> {
        let windows: Vec<WindowInfo> = self
            .windows()
            .await?
            .into_iter()
            .filter(|w| !w.minimized && w.bounds.intersection(&area).is_some())
            .collect();
        let trees = futures::future::join_all(windows.iter().map(|w| self.tree(w, limits))).await;
        let mut out = Vec::new();
        for (position, (window, tree)) in windows.iter().zip(trees).enumerate() {
            let mut tree = match tree {
                Ok(tree) => tree,
                Err(error) => AccessibilityTree {
                    notes: vec![error.to_string()],
                    ..AccessibilityTree::default()
                },
            };
            let above: Vec<Rect> = windows[position + 1..].iter().map(|w| w.bounds).collect();
            for node in &mut tree.nodes {
                if let Some(bounds) = node.bounds
                    && above.iter().any(|b| b.contains(bounds.center()))
                {
                    node.bounds = None;
                }
            }
            out.push((window.clone(), tree));
        }
        Ok(out)
    }
}

/// One tree of several windows' trees (child links shifted to the merged positions), and their
/// notes prefixed by the window's title.
pub(crate) fn merge_trees(
    trees: Vec<(WindowInfo, AccessibilityTree)>,
) -> (AccessibilityTree, Vec<String>) {
    let mut notes = Vec::new();
    let mut merged = AccessibilityTree {
        complete: true,
        ..AccessibilityTree::default()
    };
    for (window, tree) in trees {
        for note in &tree.notes {
            notes.push(format!("{}: {note}", window.title));
        }
        merged.complete &= tree.complete;
        merged.from_cache += tree.from_cache;
        let offset = merged.nodes.len();
        merged.nodes.extend(tree.nodes.into_iter().map(|mut node| {
            for child in &mut node.children {
                *child += offset;
            }
            node
        }));
    }
    (merged, notes)
}

fn window_titles(windows: &[WindowInfo]) -> String {
    if windows.is_empty() {
        return "none".into();
    }
    windows
        .iter()
        .rev()
        .take(20)
        .map(|w| format!("{:?}", w.title))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The text `see` returns: what was seen and how the image maps to the screen, the elements
/// (with their screen boxes when `bounds`), and the notes.
pub fn describe(snapshot: &Snapshot, width: u32, height: u32, bounds: bool) -> String {
    let what = match &snapshot.window {
        Some(w) => format!(
            "window {:?} (app {}, pid {})",
            w.title,
            w.app_name,
            w.pid.map(|p| p.to_string()).unwrap_or_else(|| "?".into())
        ),
        None => "screen".to_string(),
    };
    let mut text = format!(
        "Snapshot {} of {what} at {}; image {width}x{height}",
        snapshot.id, snapshot.area
    );
    let scaled = (snapshot.scale - 1.0).abs() > f64::EPSILON;
    if scaled {
        text.push_str(&format!(" (scaled {:.3})", snapshot.scale));
    }
    if bounds {
        text.push_str(
            ". Coordinates are screen pixels (left,top width x height); use an ID with desktop actions.\n",
        );
    } else {
        // The boxes cost about half of each line's tokens; an ID is what actions take, a point
        // of the picture is taken as it is with `in_image`, and the rule is there for the rest.
        let origin = snapshot.area.origin();
        text.push_str(&format!(
            ". Act on an ID with the desktop tool, or on a point of this image with in_image: true \
             (screen = ({},{}) + point",
            origin.x, origin.y
        ));
        if scaled {
            text.push_str(&format!(" / {:.3}", snapshot.scale));
        }
        text.push_str(").\n");
    }
    if snapshot.elements.is_empty() {
        text.push_str("No actionable elements found.");
    } else {
        text.push_str(&element_list(&snapshot.elements, bounds));
    }
    for note in &snapshot.notes {
        text.push_str("\nNote: ");
        text.push_str(note);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accessibility::{AccessibleNode, NodeRef, States};

    fn node(name: &str, children: Vec<usize>) -> AccessibleNode {
        AccessibleNode {
            node: NodeRef(format!("test|{name}")),
            role: accesskit::Role::ListItem,
            platform_role: "list item".into(),
            name: name.into(),
            description: String::new(),
            value: None,
            states: States::default(),
            bounds: None,
            actions: Vec::new(),
            children,
            depth: 0,
        }
    }

    fn window(title: &str) -> WindowInfo {
        WindowInfo {
            id: 1,
            title: title.into(),
            app_name: "test".into(),
            pid: None,
            bounds: Rect::new(0, 0, 10, 10),
            focused: false,
            minimized: false,
        }
    }

    #[test]
    fn merged_trees_keep_their_child_links_and_notes() {
        let first = AccessibilityTree {
            nodes: vec![node("a", vec![1]), node("b", vec![])],
            complete: true,
            ..AccessibilityTree::default()
        };
        let second = AccessibilityTree {
            nodes: vec![
                node("row", vec![1, 2]),
                node("Apple", vec![]),
                node("Red", vec![]),
            ],
            complete: false,
            notes: vec!["partial".into()],
            ..AccessibilityTree::default()
        };
        let (merged, notes) = merge_trees(vec![(window("One"), first), (window("Two"), second)]);
        assert_eq!(merged.nodes.len(), 5);
        assert_eq!(merged.nodes[0].children, [1]);
        // The second window's row points at its own labels, now at 3 and 4.
        assert_eq!(merged.nodes[2].children, [3, 4]);
        assert!(!merged.complete);
        assert_eq!(notes, ["Two: partial"]);
    }
}
