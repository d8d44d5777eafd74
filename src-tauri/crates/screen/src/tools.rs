//! The `screenshot` and `desktop` domain tools. Both share one [`Desktop`] (and so one snapshot
//! store), connected on first use so they can be registered on a machine without a display and
//! answer with a clear error there. Capture, see and the lists need no approval; every input
//! action does.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use futures::future::BoxFuture;
use osprey_tools::{ApprovalNeed, Call, CallFacts, Domain, DomainTool, FieldType, ToolContext};
use osprey_types::{ContentBlock, ErrorCode, ToolResult};
use serde_json::json;

use crate::actions::ActionTarget;
use crate::capture::CaptureBackend;
use crate::desktop::{Desktop, DesktopConfig, SeeOptions, SeeTarget};
use crate::error::{Error, Result};
use crate::geometry::{Point, Rect};
use crate::input::MouseButton;
use crate::render::{Quality, encode};
use crate::snapshot::Snapshot;

/// Builds the two tools around one shared desktop connection.
#[derive(Debug)]
pub struct ScreenTools;

impl ScreenTools {
    /// The `screenshot` and `desktop` tools, sharing one desktop and snapshot store. Nothing
    /// connects until the first call.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(config: DesktopConfig) -> (ScreenshotTool, DesktopTool) {
        let shared = SharedDesktop::new(config);
        (
            ScreenshotTool {
                desktop: shared.clone(),
                domain: screenshot_domain(),
            },
            DesktopTool {
                desktop: shared,
                domain: desktop_domain(),
            },
        )
    }

    /// The tools around an existing desktop (tests, or a host that made one already).
    pub fn with_desktop(desktop: Desktop) -> (ScreenshotTool, DesktopTool) {
        let shared = SharedDesktop {
            config: desktop.config().clone(),
            desktop: Arc::new(Mutex::new(Some(desktop))),
        };
        (
            ScreenshotTool {
                desktop: shared.clone(),
                domain: screenshot_domain(),
            },
            DesktopTool {
                desktop: shared,
                domain: desktop_domain(),
            },
        )
    }
}

/// A desktop connected on first use; a failed connection is retried on the next call (the
/// display may appear later).
#[derive(Clone, Debug)]
struct SharedDesktop {
    config: DesktopConfig,
    desktop: Arc<Mutex<Option<Desktop>>>,
}

impl SharedDesktop {
    fn new(config: DesktopConfig) -> SharedDesktop {
        SharedDesktop {
            config,
            desktop: Arc::new(Mutex::new(None)),
        }
    }

    fn peek(&self) -> Option<Desktop> {
        self.desktop
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    async fn get(&self) -> Result<Desktop> {
        if let Some(desktop) = self.peek() {
            return Ok(desktop);
        }
        let config = self.config.clone();
        let desktop = tokio::task::spawn_blocking(move || Desktop::new(config))
            .await
            .map_err(|e| Error::Display(format!("connecting failed: {e}")))??;
        let mut slot = self.desktop.lock().unwrap_or_else(|p| p.into_inner());
        Ok(slot.get_or_insert(desktop).clone())
    }
}

fn error_result(error: Error) -> ToolResult {
    let code = match &error {
        Error::Stale(_) | Error::InvalidInput(_) | Error::NotFound(_) => ErrorCode::InvalidInput,
        Error::Timeout { .. } => ErrorCode::Timeout,
        _ => ErrorCode::ToolFailed,
    };
    ToolResult::error(code, error.to_string())
}

/// Runs a tool's work, stopping at the person's cancel.
async fn guarded(
    ctx: &ToolContext,
    work: impl std::future::Future<Output = Result<ToolResult>>,
) -> ToolResult {
    tokio::select! {
        result = work => result.unwrap_or_else(error_result),
        _ = ctx.cancel.cancelled() => ToolResult::error(ErrorCode::Cancelled, "cancelled"),
    }
}

fn image_result(text: String, bytes: &[u8], mime_type: &str) -> ToolResult {
    ToolResult {
        content: vec![
            ContentBlock::Text { text },
            ContentBlock::Image {
                mime_type: mime_type.to_string(),
                data: base64::engine::general_purpose::STANDARD.encode(bytes),
            },
        ],
        is_error: false,
        code: None,
        ..Default::default()
    }
}

fn i32_field(call: &Call, key: &str) -> Option<i32> {
    call.input
        .get(key)
        .and_then(serde_json::Value::as_i64)
        .and_then(|v| i32::try_from(v).ok())
}

/// The target of a see or capture call, from its fields.
fn see_target(call: &Call) -> SeeTarget {
    if let Some(title) = call.str("window") {
        SeeTarget::WindowTitle(title.to_string())
    } else if let Some(id) = call.u64("window_id") {
        SeeTarget::WindowId(id)
    } else if let Some(app) = call.str("app") {
        SeeTarget::App(app.to_string())
    } else if let Some(monitor) = call.u64("monitor") {
        SeeTarget::Monitor(monitor as u32)
    } else if call.bool("screen") == Some(true) {
        SeeTarget::Screen
    } else {
        SeeTarget::Focused
    }
}

fn see_options(call: &Call, ctx: &ToolContext, annotate: bool) -> Result<SeeOptions> {
    let quality = match call.str("quality") {
        None => Quality::Fast,
        Some(q) => Quality::parse(q).ok_or_else(|| {
            Error::InvalidInput(format!("quality must be fast, lossless or small, not {q}"))
        })?,
    };
    // Leave a little of the call's time for rendering and encoding.
    let left = ctx
        .deadline
        .saturating_duration_since(Instant::now())
        .saturating_sub(Duration::from_millis(500));
    Ok(SeeOptions {
        quality,
        max_width: call.u64("max_width").map(|w| w as u32),
        annotate,
        tree_timeout: Some(left.max(Duration::from_millis(200))),
        bounds: call.bool("bounds") == Some(true),
    })
}

fn screenshot_domain() -> Domain {
    use ApprovalNeed::None as Free;
    Domain::new(
        "screenshot",
        "See the screen. `see` returns an image of a window (the focused one unless you name \
         it) with numbered boxes on everything you can act on, and the list of those elements \
         (`B3 button \"Save\"`: ID, role, name, then value and states; `bounds: true` adds each \
         one's screen box). Use the IDs with the desktop tool. `capture` returns a plain image of \
         a window, a monitor, the screen or a region.",
    )
    .closed_world()
    .resource(
        "screen",
        &["image", "window", "snapshot"],
        &[
            (
                "see",
                "Annotated snapshot with element IDs and the element list",
                Free,
            ),
            ("capture", "Plain image, no accessibility tree", Free),
        ],
    )
    .field(
        "window",
        FieldType::String,
        "Window title (exact, else a case-insensitive part)",
    )
    .field("window_id", FieldType::Integer, "Window id from desktop window list")
    .field("app", FieldType::String, "Application name: its front-most window")
    .field("monitor", FieldType::Integer, "Monitor id: the whole monitor")
    .field("screen", FieldType::Boolean, "The whole screen with every visible window's elements")
    .field(
        "region",
        FieldType::Array(Box::new(FieldType::Integer)),
        "capture only: [left, top, width, height] in screen pixels",
    )
    .field(
        "bounds",
        FieldType::Boolean,
        "see only: list each element's screen box (left,top width x height)",
    )
    .field("quality", FieldType::String, "Image encoding")
    .one_of(&["fast", "lossless", "small"])
    .default_value(json!("fast"))
    .field(
        "max_width",
        FieldType::Integer,
        "Downscale the image to at most this many pixels wide (it is never larger than models take as it is, 1456x819 for a 1920x1080 screen; coordinates in the text stay screen pixels)",
    )
}

fn desktop_domain() -> Domain {
    use ApprovalNeed::{None as Free, Required};
    Domain::new(
        "desktop",
        "Use the desktop with the mouse and keyboard. Target an element by its ID from the \
         latest `screenshot see` (`element: \"B3\"`; clicks use the element's own action when it \
         has one), or a point (`x`, `y`): screen pixels, or a pixel of the snapshot's image \
         with `in_image: true`. After acting, take a new snapshot to \
         see the result. Also lists and focuses windows and lists applications.",
    )
    .resource(
        "input",
        &["mouse", "keyboard", "element"],
        &[
            (
                "click",
                "Left click (an element's own action when offered)",
                Required,
            ),
            ("double_click", "Double click", Required),
            ("right_click", "Right click", Required),
            (
                "type",
                "Type text into the element (focused first) or the focused element",
                Required,
            ),
            (
                "key",
                "Press a key chord: enter, ctrl+s, alt+f4, ctrl+shift+t",
                Required,
            ),
            (
                "scroll",
                "Scroll at the element or point (dy > 0 scrolls down)",
                Required,
            ),
            (
                "drag",
                "Drag from the element/point to to_element or to_x/to_y",
                Required,
            ),
            ("move", "Move the pointer", Required),
            ("focus", "Give the element keyboard focus", Required),
        ],
    )
    .resource(
        "window",
        &["windows"],
        &[
            ("list", "Open windows with ids, titles, apps, bounds", Free),
            ("focus", "Raise and focus a window", Required),
        ],
    )
    .resource(
        "app",
        &["apps", "application"],
        &[("list", "Applications with windows", Free)],
    )
    .field(
        "element",
        FieldType::String,
        "Element ID from a snapshot (B3, T1)",
    )
    .required_for(&["input.focus"])
    .field(
        "snapshot",
        FieldType::String,
        "Snapshot ID (default: the latest)",
    )
    .field("x", FieldType::Integer, "Screen x in pixels (with in_image, the image's)")
    .field("y", FieldType::Integer, "Screen y in pixels (with in_image, the image's)")
    .field(
        "in_image",
        FieldType::Boolean,
        "x, y, to_x, to_y are pixels of the snapshot's image (the latest see unless `snapshot`); Osprey maps them to the screen",
    )
    .field("to_element", FieldType::String, "drag: target element ID")
    .field("to_x", FieldType::Integer, "drag: target x")
    .field("to_y", FieldType::Integer, "drag: target y")
    .field("text", FieldType::String, "Text to type (any Unicode)")
    .required_for(&["type"])
    .field(
        "keys",
        FieldType::String,
        "Key chord: modifiers and a key joined by +",
    )
    .required_for(&["key"])
    .field(
        "dx",
        FieldType::Integer,
        "scroll: notches right (negative: left)",
    )
    .field(
        "dy",
        FieldType::Integer,
        "scroll: notches down (negative: up)",
    )
    .field(
        "pointer",
        FieldType::Boolean,
        "click: always use a real mouse click, not the element's action",
    )
    .field(
        "window",
        FieldType::String,
        "window focus: the window's title, or its id from window list",
    )
    .required_for(&["window.focus"])
}

/// The `screenshot` tool.
#[derive(Debug)]
pub struct ScreenshotTool {
    desktop: SharedDesktop,
    domain: Domain,
}

impl ScreenshotTool {
    async fn see(&self, ctx: &ToolContext, call: &Call) -> Result<ToolResult> {
        let desktop = self.desktop.get().await?;
        let seen = desktop
            .see(&see_target(call), see_options(call, ctx, true)?)
            .await?;
        Ok(image_result(
            seen.text,
            &seen.image.bytes,
            seen.image.mime_type,
        ))
    }

    async fn capture(&self, ctx: &ToolContext, call: &Call) -> Result<ToolResult> {
        let desktop = self.desktop.get().await?;
        let options = see_options(call, ctx, false)?;
        let area = match call.input.get("region").and_then(|v| v.as_array()) {
            Some(values) => {
                let numbers: Vec<i64> = values.iter().filter_map(|v| v.as_i64()).collect();
                let [x, y, w, h] = numbers[..] else {
                    return Err(Error::InvalidInput(
                        "region must be [left, top, width, height]".into(),
                    ));
                };
                if w <= 0 || h <= 0 {
                    return Err(Error::InvalidInput(
                        "region width and height must be positive".into(),
                    ));
                }
                Rect::new(x as i32, y as i32, w as u32, h as u32)
            }
            None => desktop.resolve(&see_target(call)).await?.1,
        };
        let image = desktop
            .blocking(move |capture: &dyn CaptureBackend| capture.capture_region(area))
            .await?;
        let (image, scale) = crate::render::downscale(&image, options.max_width);
        let encoded = encode(&image, options.quality)?;
        let mut text = format!(
            "Captured {area}; image {}x{}",
            image.width(),
            image.height()
        );
        if (scale - 1.0).abs() > f64::EPSILON {
            text.push_str(&format!(" (scaled {scale:.3})"));
        }
        Ok(image_result(text, &encoded.bytes, encoded.mime_type))
    }
}

impl DomainTool for ScreenshotTool {
    fn domain(&self) -> &Domain {
        &self.domain
    }

    fn facts(&self, call: &Call) -> CallFacts {
        CallFacts {
            approval: ApprovalNeed::None,
            summary: format!("{} {:?}", call.action(), see_target(call)),
            ..CallFacts::default()
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext, call: Call) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            guarded(ctx, async {
                match call.action() {
                    "see" => self.see(ctx, &call).await,
                    "capture" => self.capture(ctx, &call).await,
                    other => Err(Error::InvalidInput(format!("unknown action {other}"))),
                }
            })
            .await
        })
    }
}

/// The `desktop` tool.
#[derive(Debug)]
pub struct DesktopTool {
    desktop: SharedDesktop,
    domain: Domain,
}

/// The snapshot whose image the call's points are in (`in_image: true`), else `None`: the points
/// are screen pixels.
fn image_of_call(desktop: &Desktop, call: &Call) -> Result<Option<Arc<Snapshot>>> {
    if call.bool("in_image") != Some(true) {
        return Ok(None);
    }
    desktop.snapshots().get(call.str("snapshot")).map(Some)
}

/// A point of the call in screen pixels: `x_key`, `y_key` as they are, or, with `image`, a
/// pixel of that snapshot's image taken back to the screen through its origin and scale. A
/// point outside the image is refused rather than guessed at.
fn point_of(
    call: &Call,
    x_key: &str,
    y_key: &str,
    image: Option<&Snapshot>,
) -> Result<Option<Point>> {
    let (Some(x), Some(y)) = (i32_field(call, x_key), i32_field(call, y_key)) else {
        return Ok(None);
    };
    let Some(snapshot) = image else {
        return Ok(Some(Point { x, y }));
    };
    let to_screen = |value: i32| (f64::from(value) / snapshot.scale).round() as i32;
    let point = Point {
        x: snapshot.area.x + to_screen(x),
        y: snapshot.area.y + to_screen(y),
    };
    if !snapshot.area.contains(point) {
        return Err(Error::InvalidInput(format!(
            "({x},{y}) is outside snapshot {}'s image, which shows {}",
            snapshot.id, snapshot.area
        )));
    }
    Ok(Some(point))
}

fn target_of(
    call: &Call,
    element_key: &str,
    x_key: &str,
    y_key: &str,
    image: Option<&Snapshot>,
) -> Result<Option<ActionTarget>> {
    if let Some(id) = call.str(element_key) {
        return Ok(Some(ActionTarget::Element {
            snapshot: call.str("snapshot").map(str::to_string),
            id: id.to_string(),
        }));
    }
    Ok(point_of(call, x_key, y_key, image)?.map(ActionTarget::Point))
}

fn required_target(call: &Call, image: Option<&Snapshot>) -> Result<ActionTarget> {
    target_of(call, "element", "x", "y", image)?.ok_or_else(|| {
        Error::InvalidInput(format!(
            "desktop {} needs `element` (an ID from screenshot see) or both `x` and `y`",
            call.action()
        ))
    })
}

impl DesktopTool {
    async fn input(&self, call: &Call) -> Result<ToolResult> {
        let desktop = self.desktop.get().await?;
        let pointer = call.bool("pointer").unwrap_or(false);
        let image = image_of_call(&desktop, call)?;
        let image = image.as_deref();
        let required_target = |call: &Call| required_target(call, image);
        let target_of =
            |call: &Call, element: &str, x: &str, y: &str| target_of(call, element, x, y, image);
        let message = match call.action() {
            "click" => {
                desktop
                    .click(&required_target(call)?, MouseButton::Left, 1, pointer)
                    .await?
            }
            "double_click" => {
                desktop
                    .click(&required_target(call)?, MouseButton::Left, 2, true)
                    .await?
            }
            "right_click" => {
                desktop
                    .click(&required_target(call)?, MouseButton::Right, 1, true)
                    .await?
            }
            "type" => {
                let text = call.str("text").unwrap_or_default();
                desktop
                    .type_text(target_of(call, "element", "x", "y")?.as_ref(), text)
                    .await?
            }
            "key" => {
                let keys = call.str("keys").unwrap_or_default();
                desktop
                    .key(target_of(call, "element", "x", "y")?.as_ref(), keys)
                    .await?
            }
            "scroll" => {
                let dx = i32_field(call, "dx").unwrap_or(0);
                let dy = i32_field(call, "dy").unwrap_or(if dx == 0 { 3 } else { 0 });
                desktop.scroll(&required_target(call)?, dx, dy).await?
            }
            "drag" => {
                let to = target_of(call, "to_element", "to_x", "to_y")?.ok_or_else(|| {
                    Error::InvalidInput(
                        "desktop drag needs `to_element` or both `to_x` and `to_y`".into(),
                    )
                })?;
                desktop.drag(&required_target(call)?, &to).await?
            }
            "move" => desktop.move_pointer(&required_target(call)?).await?,
            "focus" => {
                let id = call.str("element").unwrap_or_default();
                let located = desktop.locate(call.str("snapshot"), id).await?;
                desktop.focus_element(&located).await?;
                format!("{} has keyboard focus", located.element.id)
            }
            other => return Err(Error::InvalidInput(format!("unknown action {other}"))),
        };
        Ok(ToolResult::text(message))
    }

    async fn window(&self, call: &Call) -> Result<ToolResult> {
        let desktop = self.desktop.get().await?;
        let windows = desktop.windows().await?;
        match call.action() {
            "list" => {
                if windows.is_empty() {
                    return Ok(ToolResult::text("No windows."));
                }
                let lines: Vec<String> = windows
                    .iter()
                    .rev()
                    .map(|w| {
                        let mut line = format!(
                            "{} {:?} app {} pid {} ({})",
                            w.id,
                            w.title,
                            w.app_name,
                            w.pid.map(|p| p.to_string()).unwrap_or_else(|| "?".into()),
                            w.bounds
                        );
                        if w.focused {
                            line.push_str(" focused");
                        }
                        if w.minimized {
                            line.push_str(" minimized");
                        }
                        line
                    })
                    .collect();
                Ok(ToolResult::text(format!(
                    "Windows, front-most first:\n{}",
                    lines.join("\n")
                )))
            }
            "focus" => {
                let wanted = call.str("window").unwrap_or_default();
                let by_id = wanted
                    .parse::<u64>()
                    .ok()
                    .and_then(|id| windows.iter().find(|w| w.id == id));
                let window = by_id
                    .or_else(|| crate::capture::find_window_by_title(&windows, wanted))
                    .cloned()
                    .ok_or_else(|| {
                        Error::NotFound(format!(
                            "no such window; open windows: {}",
                            windows
                                .iter()
                                .map(|w| format!("{:?}", w.title))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    })?;
                let id = window.id;
                desktop
                    .blocking(move |capture: &dyn CaptureBackend| capture.focus_window(id))
                    .await?;
                Ok(ToolResult::text(format!("focused {:?}", window.title)))
            }
            other => Err(Error::InvalidInput(format!("unknown action {other}"))),
        }
    }

    async fn apps(&self) -> Result<ToolResult> {
        let desktop = self.desktop.get().await?;
        let windows = desktop.windows().await?;
        let mut apps: Vec<(String, Option<u32>, usize)> = Vec::new();
        for w in &windows {
            match apps
                .iter_mut()
                .find(|(name, pid, _)| *name == w.app_name && *pid == w.pid)
            {
                Some(entry) => entry.2 += 1,
                None => apps.push((w.app_name.clone(), w.pid, 1)),
            }
        }
        if apps.is_empty() {
            return Ok(ToolResult::text("No applications with windows."));
        }
        let lines: Vec<String> = apps
            .iter()
            .map(|(name, pid, count)| {
                format!(
                    "{name} pid {} ({count} window{})",
                    pid.map(|p| p.to_string()).unwrap_or_else(|| "?".into()),
                    if *count == 1 { "" } else { "s" }
                )
            })
            .collect();
        Ok(ToolResult::text(lines.join("\n")))
    }
}

impl DomainTool for DesktopTool {
    fn domain(&self) -> &Domain {
        &self.domain
    }

    fn facts(&self, call: &Call) -> CallFacts {
        // Name the element as the person saw it, when the snapshot is at hand.
        let element = call.str("element").map(|id| {
            self.desktop
                .peek()
                .and_then(|d| d.snapshots().lookup(call.str("snapshot"), id).ok())
                .map(|(_, e)| format!("{} {} {:?}", e.id, e.kind, e.name))
                .unwrap_or_else(|| id.to_string())
        });
        // A point of an image is shown on the screen, where the person can find it.
        let image = self
            .desktop
            .peek()
            .and_then(|d| image_of_call(&d, call).ok().flatten());
        let point = match point_of(call, "x", "y", image.as_deref()) {
            Ok(Some(point)) => Some(format!("({},{})", point.x, point.y)),
            _ => match (i32_field(call, "x"), i32_field(call, "y")) {
                (Some(x), Some(y)) => Some(format!("({x},{y}) in the image")),
                _ => None,
            },
        };
        let mut summary = format!("desktop {}", call.action());
        if let Some(target) = element.or(point) {
            summary.push_str(&format!(" {target}"));
        }
        if let Some(text) = call.str("text") {
            summary.push_str(&format!(
                " text {:?}",
                text.chars().take(60).collect::<String>()
            ));
        }
        if let Some(keys) = call.str("keys") {
            summary.push_str(&format!(" keys {keys}"));
        }
        if let Some(window) = call.str("window") {
            summary.push_str(&format!(" window {window:?}"));
        }
        CallFacts {
            approval: self.domain.approval_of(call),
            summary,
            ..CallFacts::default()
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext, call: Call) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            guarded(ctx, async {
                match call.resource() {
                    "input" => self.input(&call).await,
                    "window" => self.window(&call).await,
                    "app" => self.apps().await,
                    other => Err(Error::InvalidInput(format!("unknown resource {other}"))),
                }
            })
            .await
        })
    }
}
