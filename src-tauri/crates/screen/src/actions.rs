//! Desktop actions on element IDs or coordinates. An element is looked up in its snapshot and
//! then checked against the live window: moved means acting at its new place and saying so;
//! gone, changed or hidden means searching the window again for the same role and name (an
//! application that rebuilt its widgets) and acting on that, with a note, or, when there is
//! none, an error asking for a new snapshot. Clicks use the element's own
//! accessibility action when it offers one (press, click, activate, toggle), which works even
//! when the element is covered; everything else goes through the pointer and keyboard.

use std::time::{Duration, Instant};

use crate::accessibility::{AccessibleNode, NodeRef};
use crate::desktop::{Desktop, merge_trees};
use crate::elements::{Element, assign_ids, kind};
use crate::error::{Error, Result};
use crate::geometry::{Point, Rect};
use crate::input::MouseButton;
use crate::snapshot::Snapshot;

/// Where an action lands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ActionTarget {
    /// An element ID from a snapshot (the latest when `snapshot` is `None`).
    Element {
        snapshot: Option<String>,
        id: String,
    },
    /// A point in screen pixels.
    Point(Point),
}

/// An element found in its snapshot and checked against the live window.
#[derive(Clone, Debug)]
pub struct Located {
    pub element: Element,
    /// Where the element is now.
    pub bounds: Rect,
    /// Set when the element moved since the snapshot.
    pub note: Option<String>,
    pub current: AccessibleNode,
    pub window_id: Option<u64>,
}

/// Actions that mean "click" to AT-SPI, AX and UIA, in order of preference.
const CLICK_ACTIONS: [&str; 6] = ["click", "press", "activate", "toggle", "jump", "invoke"];

/// Whether the live element still carries the element's name (an element named from its
/// contents must still have no name of its own).
fn same_name(element: &Element, current: &AccessibleNode) -> bool {
    if element.name_from_contents {
        current.name.trim().is_empty()
    } else {
        current.name == element.name
    }
}

fn describe(element: &Element) -> String {
    format!("{} {} {:?}", element.id, element.kind, element.name)
}

impl Desktop {
    /// Finds an element of a snapshot and checks it against the live window. When its
    /// accessible reference is gone, points at something else or is hidden (an application that
    /// rebuilt its widgets), the element is searched for again in the live tree of the same
    /// window: the same role and name, the one nearest its old place. Only when none is there
    /// does the call fail, asking for a new snapshot.
    pub async fn locate(&self, snapshot: Option<&str>, id: &str) -> Result<Located> {
        let (snapshot, element) = self.snapshots().lookup(snapshot, id)?;
        let window_id = snapshot.window.as_ref().map(|w| w.id);
        let current = self.accessibility().refresh(&element.node).await?;
        let problem = match &current {
            None => Some(format!("{} is no longer in the window", describe(&element))),
            Some(current) if current.role != element.role || !same_name(&element, current) => {
                Some(format!(
                    "{} has changed: it is now a {:?} named {:?}",
                    describe(&element),
                    current.role,
                    current.name
                ))
            }
            Some(current) if !current.states.showing => {
                Some(format!("{} is no longer showing", describe(&element)))
            }
            Some(_) => None,
        };
        let (Some(current), None) = (current, &problem) else {
            let problem = problem.unwrap_or_default();
            return match self.reidentify(&snapshot, &element).await? {
                Some((found, current)) => {
                    let bounds = found.bounds;
                    Ok(Located {
                        note: Some(format!(
                            "{problem} (snapshot {}); acted on the {} {:?} now at ({bounds}) instead",
                            snapshot.id,
                            kind(found.role),
                            found.name
                        )),
                        element: Element {
                            id: element.id.clone(),
                            ..found
                        },
                        bounds,
                        current,
                        window_id,
                    })
                }
                None => Err(Error::Stale(format!(
                    "{problem} (snapshot {}), and the window has no {} named {:?} now",
                    snapshot.id,
                    kind(element.role),
                    element.name
                ))),
            };
        };
        let bounds = current.bounds.unwrap_or(element.bounds);
        let note = (bounds != element.bounds).then(|| {
            format!(
                "{} moved from ({}) to ({}); acted at its new position",
                element.id, element.bounds, bounds
            )
        });
        Ok(Located {
            element,
            bounds,
            note,
            current,
            window_id,
        })
    }

    /// The element of the snapshot's window (or, for a screen snapshot, of the windows in its
    /// area) that now has the same role and name, nearest to where the element was.
    async fn reidentify(
        &self,
        snapshot: &Snapshot,
        element: &Element,
    ) -> Result<Option<(Element, AccessibleNode)>> {
        let limits = self.config().tree_limits;
        let (trees, area) = match &snapshot.window {
            Some(seen) => {
                // The window as it is now (it may have moved), found by its id.
                let id = seen.id;
                let window = self
                    .windows()
                    .await?
                    .into_iter()
                    .find(|w| w.id == id)
                    .unwrap_or_else(|| seen.clone());
                let tree = self.tree(&window, limits).await?;
                let area = window.bounds;
                (vec![(window, tree)], area)
            }
            None => (
                self.visible_trees(snapshot.area, limits).await?,
                snapshot.area,
            ),
        };
        let (tree, _) = merge_trees(trees);
        let old_centre = element.bounds.center();
        let distance = |candidate: &Element| {
            let centre = candidate.bounds.center();
            let dx = i64::from(centre.x - old_centre.x);
            let dy = i64::from(centre.y - old_centre.y);
            dx * dx + dy * dy
        };
        let found = assign_ids(&tree, area)
            .into_iter()
            .filter(|candidate| {
                candidate.role == element.role
                    && candidate.name == element.name
                    && candidate.name_from_contents == element.name_from_contents
            })
            .min_by_key(distance);
        Ok(found.and_then(|found| {
            let node = tree.nodes.iter().find(|n| n.node == found.node)?.clone();
            Some((found, node))
        }))
    }

    async fn point_of(&self, target: &ActionTarget) -> Result<(Point, String, Option<String>)> {
        match target {
            ActionTarget::Point(point) => Ok((*point, format!("({},{})", point.x, point.y), None)),
            ActionTarget::Element { snapshot, id } => {
                let located = self.locate(snapshot.as_deref(), id).await?;
                Ok((
                    located.bounds.center(),
                    describe(&located.element),
                    located.note,
                ))
            }
        }
    }

    /// Clicks a target. A single left click on an element that offers a click-like
    /// accessibility action runs that action, unless `pointer` forces a real click.
    pub async fn click(
        &self,
        target: &ActionTarget,
        button: MouseButton,
        count: u32,
        pointer: bool,
    ) -> Result<String> {
        if let ActionTarget::Element { snapshot, id } = target
            && button == MouseButton::Left
            && count == 1
            && !pointer
        {
            let located = self.locate(snapshot.as_deref(), id).await?;
            let action = CLICK_ACTIONS
                .iter()
                .find(|a| located.current.actions.iter().any(|x| x == *a));
            if let Some(action) = action {
                self.accessibility()
                    .do_action(&located.element.node, action)
                    .await?;
                return Ok(with_note(
                    format!("{}: ran its `{action}` action", describe(&located.element)),
                    located.note,
                ));
            }
        }
        let (point, what, note) = self.point_of(target).await?;
        self.input().click(point, button, count).await?;
        let kind = match (button, count) {
            (MouseButton::Left, 1) => "clicked",
            (MouseButton::Left, 2) => "double-clicked",
            (MouseButton::Right, _) => "right-clicked",
            (MouseButton::Middle, _) => "middle-clicked",
            _ => "clicked",
        };
        Ok(with_note(
            format!("{kind} {what} at ({},{})", point.x, point.y),
            note,
        ))
    }

    /// Types text, first focusing the target element (or clicking the target point).
    pub async fn type_text(&self, target: Option<&ActionTarget>, text: &str) -> Result<String> {
        let mut what = "the focused element".to_string();
        let mut note = None;
        let mut element_node = None;
        match target {
            None => {}
            Some(ActionTarget::Point(point)) => {
                self.input().click(*point, MouseButton::Left, 1).await?;
                what = format!("({},{})", point.x, point.y);
            }
            Some(ActionTarget::Element { snapshot, id }) => {
                let located = self.locate(snapshot.as_deref(), id).await?;
                self.focus_element(&located).await?;
                what = describe(&located.element);
                note = located.note.clone();
                element_node = Some(located.element.node.clone());
            }
        }
        self.input().type_text(text).await?;
        let mut message = format!("typed {} characters into {what}", text.chars().count());
        if let Some(node) = element_node
            && let Some(value) = self.settled_value(&node, text).await
        {
            message.push_str(&format!("; its text is now {value:?}"));
        }
        Ok(with_note(message, note))
    }

    /// An element's text once the application has handled the keys just sent: the server
    /// delivers them asynchronously, so the value is read until it holds the typed text, or
    /// for half a second (a field may filter or limit what it takes); `None` when the element
    /// has no text value.
    async fn settled_value(&self, node: &NodeRef, typed: &str) -> Option<String> {
        let deadline = Instant::now() + Duration::from_millis(500);
        loop {
            let value = self.accessibility().refresh(node).await.ok()??.value?;
            if value.contains(typed) || Instant::now() >= deadline {
                return Some(value);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Gives an element keyboard focus: raise its window, ask the element, and fall back to
    /// clicking its centre; then wait (up to a second) until it reports focus.
    pub async fn focus_element(&self, located: &Located) -> Result<()> {
        if located.current.states.focused {
            return Ok(());
        }
        if let Some(window) = located.window_id {
            // Best effort: without a window manager this sets the X input focus directly.
            let _ = self
                .blocking(move |capture| capture.focus_window(window))
                .await;
        }
        let asked = self
            .accessibility()
            .focus(&located.element.node)
            .await
            .unwrap_or(false);
        if !asked {
            self.input()
                .click(located.bounds.center(), MouseButton::Left, 1)
                .await?;
        }
        let deadline = Instant::now() + Duration::from_secs(1);
        loop {
            if let Ok(Some(now)) = self.accessibility().refresh(&located.element.node).await
                && now.states.focused
            {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Error::Input(format!(
                    "{} did not take keyboard focus",
                    describe(&located.element)
                )));
            }
            tokio::time::sleep(Duration::from_millis(15)).await;
        }
    }

    /// Presses a key chord (`ctrl+s`), optionally after focusing an element.
    pub async fn key(&self, target: Option<&ActionTarget>, chord: &str) -> Result<String> {
        let mut note = None;
        if let Some(ActionTarget::Element { snapshot, id }) = target {
            let located = self.locate(snapshot.as_deref(), id).await?;
            self.focus_element(&located).await?;
            note = located.note;
        }
        self.input().key(chord).await?;
        Ok(with_note(format!("pressed {chord}"), note))
    }

    pub async fn scroll(&self, target: &ActionTarget, dx: i32, dy: i32) -> Result<String> {
        let (point, what, note) = self.point_of(target).await?;
        self.input().scroll(point, dx, dy).await?;
        Ok(with_note(
            format!("scrolled {what} by {dx},{dy} notches"),
            note,
        ))
    }

    pub async fn drag(&self, from: &ActionTarget, to: &ActionTarget) -> Result<String> {
        let (start, from_what, from_note) = self.point_of(from).await?;
        let (end, to_what, to_note) = self.point_of(to).await?;
        self.input().drag(start, end).await?;
        let note = match (from_note, to_note) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        };
        Ok(with_note(
            format!("dragged from {from_what} to {to_what}"),
            note,
        ))
    }

    pub async fn move_pointer(&self, target: &ActionTarget) -> Result<String> {
        let (point, what, note) = self.point_of(target).await?;
        self.input().move_to(point).await?;
        Ok(with_note(
            format!("moved the pointer to {what} ({},{})", point.x, point.y),
            note,
        ))
    }
}

fn with_note(message: String, note: Option<String>) -> String {
    match note {
        Some(note) => format!("{message}. Note: {note}"),
        None => message,
    }
}
