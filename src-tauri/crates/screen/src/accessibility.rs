//! The accessibility tree of a window: what each element is (role, normalised to
//! [`accesskit::Role`]), its name, description, value, states, on-screen bounds and actions.
//! One [`AccessibilityBackend`] per platform: AT-SPI over D-Bus on Linux (in-process, zbus),
//! AX on macOS and UI Automation on Windows. Every walk is bounded by depth, node count and a
//! deadline: a huge or hung application yields a partial tree with a note, never a hang.

use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use crate::capture::WindowInfo;
use crate::error::Result;
use crate::geometry::Rect;

#[cfg(target_os = "linux")]
mod atspi_backend;
#[cfg(target_os = "linux")]
pub use atspi_backend::AtspiBackend as PlatformAccessibility;

// Shared by the macOS and Windows backends; compiled everywhere so its tests run on Linux.
#[cfg_attr(target_os = "linux", allow(dead_code))]
pub(crate) mod blocking;
pub(crate) mod platform_roles;

#[cfg(target_os = "windows")]
mod uia_backend;
#[cfg(target_os = "windows")]
pub use uia_backend::UiaBackend as PlatformAccessibility;

#[cfg(target_os = "macos")]
mod ax_backend;
#[cfg(target_os = "macos")]
pub use ax_backend::AxBackend as PlatformAccessibility;

#[cfg(not(any(target_os = "linux", target_os = "windows", target_os = "macos")))]
mod unsupported;
#[cfg(not(any(target_os = "linux", target_os = "windows", target_os = "macos")))]
pub use unsupported::NoAccessibility as PlatformAccessibility;

/// An opaque, platform-specific reference to one element, good for later actions on it
/// (Linux: `bus-name|object-path`; macOS and Windows: the window's key and the child-index path
/// from it, `hwnd:1234#0.3.1`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NodeRef(pub String);

/// The states the pipeline and the model care about.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct States {
    pub focused: bool,
    pub focusable: bool,
    pub enabled: bool,
    pub checked: bool,
    pub selected: bool,
    pub selectable: bool,
    pub editable: bool,
    pub visible: bool,
    pub showing: bool,
    pub expanded: bool,
}

/// One element of the tree.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AccessibleNode {
    pub node: NodeRef,
    #[serde(serialize_with = "serialize_role")]
    pub role: accesskit::Role,
    /// The platform's own role name (`push button`, `AXButton`, `Button`).
    pub platform_role: String,
    pub name: String,
    pub description: String,
    /// Text content of text fields, the current value of sliders and spin buttons.
    pub value: Option<String>,
    pub states: States,
    /// Screen bounds, when the element has any.
    pub bounds: Option<Rect>,
    /// Action names the element offers (`click`, `press`, `activate`, `toggle`, ...).
    pub actions: Vec<String>,
    /// Indices of the children in [`AccessibilityTree::nodes`].
    pub children: Vec<usize>,
    pub depth: u32,
}

fn serialize_role<S: serde::Serializer>(role: &accesskit::Role, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{role:?}"))
}

/// A window's tree, root first, in pre-order.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AccessibilityTree {
    pub nodes: Vec<AccessibleNode>,
    /// False when a limit (depth, nodes, deadline) cut the walk short.
    pub complete: bool,
    /// Why the tree is partial or empty, for the model and for logs.
    pub notes: Vec<String>,
    #[serde(skip)]
    pub elapsed: Duration,
    /// How many elements came from the application's cache rather than per-element requests.
    #[serde(skip)]
    pub from_cache: usize,
    /// Whether the requests went straight to the application rather than through a bus.
    #[serde(skip)]
    pub direct: bool,
}

/// Bounds on one walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeLimits {
    pub max_depth: u32,
    pub max_nodes: usize,
    /// How long the whole walk may take, from the call.
    pub timeout: Duration,
    /// Read the application's own cache of its tree in one call where it offers one (AT-SPI's
    /// Cache interface), fetching per element only what the cache lacks. False forces the
    /// element-by-element walk (tests compare the two; both give the same tree).
    pub use_cache: bool,
    /// Talk to the walked application over its own socket where it offers one (AT-SPI's
    /// `GetApplicationBusAddress`) instead of through the bus daemon. False routes every request
    /// through the bus.
    pub direct: bool,
}

impl Default for TreeLimits {
    fn default() -> Self {
        TreeLimits {
            max_depth: 48,
            max_nodes: 4000,
            timeout: Duration::from_secs(3),
            use_cache: true,
            direct: true,
        }
    }
}

impl TreeLimits {
    pub fn deadline_from(&self, start: Instant) -> Instant {
        start + self.timeout
    }
}

/// What the platform layer must provide for accessibility.
pub trait AccessibilityBackend: Send + Sync {
    /// The tree of a window (found through its process id and title), within the limits.
    fn window_tree<'a>(
        &'a self,
        window: &'a WindowInfo,
        limits: TreeLimits,
    ) -> BoxFuture<'a, Result<AccessibilityTree>>;

    /// The element as it is now (no children), or `None` when it no longer exists.
    fn refresh<'a>(&'a self, node: &'a NodeRef) -> BoxFuture<'a, Result<Option<AccessibleNode>>>;

    /// Runs one of the element's actions by name.
    fn do_action<'a>(&'a self, node: &'a NodeRef, action: &'a str) -> BoxFuture<'a, Result<()>>;

    /// Moves keyboard focus to the element; false when it cannot take focus.
    fn focus<'a>(&'a self, node: &'a NodeRef) -> BoxFuture<'a, Result<bool>>;
}

impl AccessibilityTree {
    /// The first node whose role and name match (for tests and lookups by name).
    pub fn find(&self, role: accesskit::Role, name: &str) -> Option<&AccessibleNode> {
        self.nodes.iter().find(|n| n.role == role && n.name == name)
    }
}

/// Reorders level-ordered nodes (children after parents, with child links) into pre-order.
pub(crate) fn pre_order(nodes: Vec<AccessibleNode>) -> Vec<AccessibleNode> {
    if nodes.is_empty() {
        return nodes;
    }
    let mut order = Vec::with_capacity(nodes.len());
    let mut stack = vec![0usize];
    while let Some(index) = stack.pop() {
        order.push(index);
        stack.extend(nodes[index].children.iter().rev());
    }
    let mut new_index = vec![usize::MAX; nodes.len()];
    for (position, old) in order.iter().enumerate() {
        new_index[*old] = position;
    }
    let mut slots: Vec<Option<AccessibleNode>> = nodes.into_iter().map(Some).collect();
    order
        .iter()
        .filter_map(|old| slots[*old].take())
        .map(|mut node| {
            node.children = node.children.iter().map(|c| new_index[*c]).collect();
            node
        })
        .collect()
}
