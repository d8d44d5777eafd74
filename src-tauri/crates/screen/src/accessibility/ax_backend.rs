//! macOS: the Accessibility API (AX, HIServices) through `objc2-application-services` and
//! `objc2-core-foundation`. The application element (`AXUIElementCreateApplication` on the
//! window's pid, with a 1 s messaging timeout so a hung application cannot block a call for
//! long) gives its `AXWindows`; the window is matched by title, then bounds, and walked through
//! `AXChildren` within the shared limits (`blocking.rs`), on the backend's worker thread.
//! Elements are read attribute by attribute: role and subrole, title (else description), help,
//! value, enabled, focused, selected, expanded, position and size, and the action names
//! (`AXPress` becomes `press`). The process must be trusted for accessibility (System Settings >
//! Privacy & Security > Accessibility); otherwise every call answers with a message saying so.
//!
//! Coordinates are AX points; on a Retina display the capture (pixels) is twice as large, which
//! this backend does not yet correct.
//!
//! Compile-checked for `x86_64-apple-darwin` on Linux; never run (see the crate README).
//!
//! AX and Core Foundation calls are `unsafe` FFI, so this module is the one place (with the
//! Windows backend) where the workspace's `unsafe_code = "deny"` is lifted, for OS API calls only.
#![allow(unsafe_code)]

use std::ptr::NonNull;

use objc2_application_services::{AXError, AXUIElement, AXValue, AXValueType};
use objc2_core_foundation::{
    CFArray, CFBoolean, CFNumber, CFRetained, CFString, CFType, CGPoint, CGSize,
};

use super::States;
use super::blocking::{BlockingBackend, ElementTree, Facts};
use super::platform_roles::ax_role;
use crate::capture::WindowInfo;
use crate::error::{Error, Result};
use crate::geometry::Rect;

/// The macOS accessibility backend.
pub type AxBackend = BlockingBackend<Ax>;

impl BlockingBackend<Ax> {
    /// Starts the AX thread. The argument (a D-Bus address on Linux) is unused.
    pub fn new(_session_bus_address: Option<String>) -> AxBackend {
        BlockingBackend::spawn("osprey-ax", || Ok(Ax))
    }
}

/// How long one AX request to an application may block.
const MESSAGING_TIMEOUT_SECONDS: f32 = 1.0;

/// The AX state of the worker thread (none is needed between calls).
pub struct Ax;

type Element = CFRetained<AXUIElement>;

fn check(error: AXError) -> Result<()> {
    match error {
        AXError::Success => Ok(()),
        AXError::APIDisabled => Err(Error::Accessibility(
            "macOS has not granted accessibility access to Osprey: allow it in System Settings > Privacy & Security > Accessibility".into(),
        )),
        other => Err(Error::Accessibility(format!("AX error {}", other.0))),
    }
}

/// An attribute's value, owned.
fn attribute(element: &AXUIElement, name: &str) -> Result<Option<CFRetained<CFType>>> {
    let name = CFString::from_str(name);
    let mut value: *const CFType = std::ptr::null();
    // SAFETY: `value` is a valid out pointer for the call; on success AX stores a +1 retained
    // value (the Copy rule), whose ownership `CFRetained::from_raw` takes over exactly once.
    let error = unsafe { element.copy_attribute_value(&name, NonNull::from(&mut value)) };
    match error {
        AXError::Success => Ok(NonNull::new(value.cast_mut())
            // SAFETY: see above; the pointer is non-null and +1 retained.
            .map(|pointer| unsafe { CFRetained::from_raw(pointer) })),
        AXError::NoValue | AXError::AttributeUnsupported => Ok(None),
        other => check(other).map(|()| None),
    }
}

fn string(element: &AXUIElement, name: &str) -> Option<String> {
    attribute(element, name)
        .ok()
        .flatten()?
        .downcast::<CFString>()
        .ok()
        .map(|s| s.to_string())
}

fn boolean(element: &AXUIElement, name: &str) -> Option<bool> {
    let value = attribute(element, name).ok().flatten()?;
    match value.downcast::<CFBoolean>() {
        Ok(flag) => Some(flag.as_bool()),
        Err(value) => value
            .downcast::<CFNumber>()
            .ok()
            .and_then(|n| n.as_i64())
            .map(|n| n != 0),
    }
}

/// The elements of an array-valued attribute (`AXChildren`, `AXWindows`).
fn elements(element: &AXUIElement, name: &str) -> Vec<Element> {
    let Some(array) = attribute(element, name)
        .ok()
        .flatten()
        .and_then(|v| v.downcast::<CFArray>().ok())
    else {
        return Vec::new();
    };
    // SAFETY: every CFArray holds CF objects; each one is checked with a downcast below, so
    // viewing the elements as `CFType` claims nothing about their concrete type.
    let array = unsafe { CFRetained::cast_unchecked::<CFArray<CFType>>(array) };
    array
        .iter()
        .filter_map(|item| item.downcast::<AXUIElement>().ok())
        .collect()
}

/// A point- or size-valued attribute.
fn geometry<T: Default>(element: &AXUIElement, name: &str, kind: AXValueType) -> Option<T> {
    let value = attribute(element, name)
        .ok()
        .flatten()?
        .downcast::<AXValue>()
        .ok()?;
    let mut out = T::default();
    // SAFETY: `kind` matches `T` at every call site (CGPoint with AXValueType::CGPoint, CGSize
    // with AXValueType::CGSize), so AX writes a value of exactly `T`'s layout into `out`.
    let ok = unsafe { value.value(kind, NonNull::from(&mut out).cast()) };
    ok.then_some(out)
}

fn bounds(element: &AXUIElement) -> Option<Rect> {
    let position: CGPoint = geometry(element, "AXPosition", AXValueType::CGPoint)?;
    let size: CGSize = geometry(element, "AXSize", AXValueType::CGSize)?;
    (size.width >= 1.0 && size.height >= 1.0).then(|| {
        Rect::new(
            position.x.round() as i32,
            position.y.round() as i32,
            size.width.round() as u32,
            size.height.round() as u32,
        )
    })
}

/// The element's actions as AX names (`AXPress`).
fn action_names(element: &AXUIElement) -> Vec<String> {
    let mut names: *const CFArray = std::ptr::null();
    // SAFETY: valid out pointer; on success a +1 retained CFArray of CFStrings, owned below.
    let error = unsafe { element.copy_action_names(NonNull::from(&mut names)) };
    if error != AXError::Success {
        return Vec::new();
    }
    let Some(pointer) = NonNull::new(names.cast_mut()) else {
        return Vec::new();
    };
    // SAFETY: non-null and +1 retained (see above); the elements are checked by downcast.
    let array =
        unsafe { CFRetained::cast_unchecked::<CFArray<CFType>>(CFRetained::from_raw(pointer)) };
    array
        .iter()
        .filter_map(|name| name.downcast::<CFString>().ok())
        .map(|name| name.to_string())
        .collect()
}

/// `AXPress` -> `press`, `AXShowMenu` -> `showmenu`.
fn action_word(name: &str) -> String {
    name.strip_prefix("AX").unwrap_or(name).to_lowercase()
}

fn application(pid: i32) -> Element {
    // SAFETY: creates a reference to the application with this pid; AX checks the pid on use.
    let application = unsafe { AXUIElement::new_application(pid) };
    // SAFETY: a plain setter on a valid element. Best effort: the default timeout is 6 s.
    let _ = unsafe { application.set_messaging_timeout(MESSAGING_TIMEOUT_SECONDS) };
    application
}

/// The window of `application` with this title (else these bounds, else the only one).
fn find_window(
    application: &AXUIElement,
    title: &str,
    bounds_wanted: Option<Rect>,
) -> Option<Element> {
    let windows = elements(application, "AXWindows");
    if let Some(window) = windows
        .iter()
        .find(|w| string(w, "AXTitle").as_deref() == Some(title))
    {
        return Some(window.clone());
    }
    if let Some(wanted) = bounds_wanted
        && let Some(window) = windows.iter().find(|w| bounds(w) == Some(wanted))
    {
        return Some(window.clone());
    }
    (windows.len() == 1).then(|| windows[0].clone())
}

impl ElementTree for Ax {
    type Element = Element;

    fn window_root(&mut self, window: &WindowInfo) -> Result<Option<(Element, String)>> {
        let Some(pid) = window.pid else {
            return Ok(None);
        };
        let application = application(pid as i32);
        // Surfaces "access not granted" as an error instead of an empty tree.
        attribute(&application, "AXRole")?;
        Ok(
            find_window(&application, &window.title, Some(window.bounds))
                .map(|root| (root, format!("ax:{pid}:{}", window.title))),
        )
    }

    fn root_by_key(&mut self, key: &str) -> Result<Option<Element>> {
        let mut parts = key.splitn(3, ':');
        let (Some("ax"), Some(pid), Some(title)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(Error::InvalidInput(format!(
                "{key} is not a window reference"
            )));
        };
        let pid: i32 = pid
            .parse()
            .map_err(|_| Error::InvalidInput(format!("{key} is not a window reference")))?;
        Ok(find_window(&application(pid), title, None))
    }

    fn facts(&mut self, element: &Element) -> Option<Facts> {
        // An element that is gone no longer answers for its role.
        let role = string(element, "AXRole")?;
        let subrole = string(element, "AXSubrole").unwrap_or_default();
        let title = string(element, "AXTitle").unwrap_or_default();
        let description = string(element, "AXDescription").unwrap_or_default();
        let (name, description) = if title.is_empty() {
            (description, string(element, "AXHelp").unwrap_or_default())
        } else {
            (title, description)
        };
        let value = attribute(element, "AXValue").ok().flatten();
        let (value, number) = match value {
            Some(value) => match value.downcast::<CFString>() {
                Ok(text) => (Some(text.to_string()), None),
                Err(value) => {
                    let number = value.downcast::<CFNumber>().ok().and_then(|n| n.as_f64());
                    (number.map(|n| format!("{n}")), number)
                }
            },
            None => (None, None),
        };
        let toggles = matches!(role.as_str(), "AXCheckBox" | "AXRadioButton");
        let editable = matches!(role.as_str(), "AXTextField" | "AXTextArea" | "AXComboBox");
        let hidden = boolean(element, "AXHidden").unwrap_or(false);
        let actions = action_names(element)
            .iter()
            .map(|name| action_word(name))
            .collect();
        let states = States {
            focused: boolean(element, "AXFocused").unwrap_or(false),
            focusable: editable,
            enabled: boolean(element, "AXEnabled").unwrap_or(true),
            checked: toggles && number == Some(1.0),
            selected: boolean(element, "AXSelected").unwrap_or(false),
            selectable: matches!(role.as_str(), "AXRow" | "AXCell" | "AXTab" | "AXMenuItem"),
            editable,
            visible: !hidden,
            showing: !hidden,
            expanded: boolean(element, "AXExpanded").unwrap_or(false),
        };
        Some(Facts {
            role: ax_role(&role, &subrole),
            platform_role: role,
            name,
            description,
            // Checkbox values (0/1) are states, not values.
            value: if toggles { None } else { value },
            states,
            bounds: bounds(element),
            actions,
        })
    }

    fn children(&mut self, element: &Element) -> Vec<Element> {
        elements(element, "AXChildren")
    }

    fn do_action(&mut self, element: &Element, action: &str) -> Result<()> {
        let wanted = match action {
            "click" | "invoke" | "activate" => "press",
            other => other,
        };
        let name = action_names(element)
            .into_iter()
            .find(|name| action_word(name) == wanted)
            .ok_or_else(|| Error::InvalidInput(format!("the element has no action `{action}`")))?;
        // SAFETY: performs a named action the element itself listed.
        check(unsafe { element.perform_action(&CFString::from_str(&name)) })
    }

    fn focus(&mut self, element: &Element) -> Result<bool> {
        let attribute = CFString::from_str("AXFocused");
        // SAFETY: sets a boolean attribute on a valid element; AX rejects it when unsettable.
        let error = unsafe { element.set_attribute_value(&attribute, CFBoolean::new(true)) };
        Ok(error == AXError::Success)
    }
}
