//! Windows: UI Automation through the `windows` crate. The `IUIAutomation` object and every
//! element live on the backend's own worker thread (a multithreaded COM apartment), which walks
//! the control view of a window (`ElementFromHandle` on its HWND) within the shared limits
//! (`blocking.rs`). Elements are read with `Current*` properties and their patterns: Invoke
//! (`invoke`), Toggle (`toggle`, checked), SelectionItem (`select`, selected), ExpandCollapse
//! (`expand`/`collapse`), Value and RangeValue (the value; editable when not read-only).
//!
//! Compile-checked for `x86_64-pc-windows-gnu` on Linux; never run (see the crate README).
//!
//! COM calls are `unsafe` in the `windows` crate, so this module is the one place (with the
//! macOS backend) where the workspace's `unsafe_code = "deny"` is lifted, for OS API calls only.
#![allow(unsafe_code)]

use windows::Win32::Foundation::HWND;
use windows::Win32::System::Com::{
    CLSCTX_INPROC_SERVER, COINIT_MULTITHREADED, CoCreateInstance, CoInitializeEx,
};
use windows::Win32::UI::Accessibility::{
    CUIAutomation, ExpandCollapseState_Collapsed, ExpandCollapseState_Expanded, IUIAutomation,
    IUIAutomationCondition, IUIAutomationElement, IUIAutomationExpandCollapsePattern,
    IUIAutomationInvokePattern, IUIAutomationRangeValuePattern, IUIAutomationSelectionItemPattern,
    IUIAutomationTogglePattern, IUIAutomationValuePattern, ToggleState_On, TreeScope_Children,
    UIA_ExpandCollapsePatternId, UIA_InvokePatternId, UIA_PATTERN_ID, UIA_RangeValuePatternId,
    UIA_SelectionItemPatternId, UIA_TogglePatternId, UIA_ValuePatternId,
};
use windows::core::Interface;

use super::States;
use super::blocking::{BlockingBackend, ElementTree, Facts};
use super::platform_roles::uia_role;
use crate::capture::WindowInfo;
use crate::error::{Error, Result};
use crate::geometry::Rect;

/// The Windows accessibility backend.
pub type UiaBackend = BlockingBackend<Uia>;

impl BlockingBackend<Uia> {
    /// Starts the UI Automation thread. The argument (a D-Bus address on Linux) is unused.
    pub fn new(_session_bus_address: Option<String>) -> UiaBackend {
        BlockingBackend::spawn("osprey-uia", Uia::create)
    }
}

fn uia_error(error: windows::core::Error) -> Error {
    Error::Accessibility(format!("UI Automation: {error}"))
}

/// The automation object and the control-view condition, on the worker thread.
pub struct Uia {
    automation: IUIAutomation,
    control_view: IUIAutomationCondition,
}

impl Uia {
    fn create() -> Result<Uia> {
        // SAFETY: plain COM initialisation of this (the worker) thread; a repeated call returns
        // S_FALSE, which is fine. The thread never uninitialises, it lives as long as the backend.
        let initialised = unsafe { CoInitializeEx(None, COINIT_MULTITHREADED) };
        if initialised.is_err() {
            return Err(Error::Accessibility(format!(
                "COM could not be initialised: {initialised:?}"
            )));
        }
        // SAFETY: creates the system's UI Automation client object; the returned interface is
        // reference counted by the `windows` crate and used only on this thread.
        let automation: IUIAutomation =
            unsafe { CoCreateInstance(&CUIAutomation, None, CLSCTX_INPROC_SERVER) }
                .map_err(uia_error)?;
        // SAFETY: a getter on a valid interface.
        let control_view = unsafe { automation.ControlViewCondition() }.map_err(uia_error)?;
        Ok(Uia {
            automation,
            control_view,
        })
    }

    fn element_of_window(&self, id: u64) -> Option<IUIAutomationElement> {
        // An HWND is a pointer-sized handle; the window list carries it as an integer.
        let hwnd = HWND(id as usize as *mut core::ffi::c_void);
        // SAFETY: UI Automation validates the handle and fails for a closed window.
        unsafe { self.automation.ElementFromHandle(hwnd) }.ok()
    }
}

/// A pattern of the element, when it supports it.
fn pattern<T: Interface>(element: &IUIAutomationElement, id: UIA_PATTERN_ID) -> Option<T> {
    // SAFETY: asks a valid element for a pattern interface by its id and the matching IID
    // (`T::IID`); an unsupported pattern is an error or a null interface, both `Err` here.
    unsafe { element.GetCurrentPatternAs::<T>(id) }.ok()
}

impl ElementTree for Uia {
    type Element = IUIAutomationElement;

    fn window_root(&mut self, window: &WindowInfo) -> Result<Option<(Self::Element, String)>> {
        Ok(self
            .element_of_window(window.id)
            .map(|element| (element, format!("hwnd:{}", window.id))))
    }

    fn root_by_key(&mut self, key: &str) -> Result<Option<Self::Element>> {
        let id = key
            .strip_prefix("hwnd:")
            .and_then(|id| id.parse::<u64>().ok())
            .ok_or_else(|| Error::InvalidInput(format!("{key} is not a window reference")))?;
        Ok(self.element_of_window(id))
    }

    fn facts(&mut self, element: &Self::Element) -> Option<Facts> {
        // SAFETY (this block): property getters and pattern queries on a valid element; an
        // element that vanished answers with UIA_E_ELEMENTNOTAVAILABLE, read as `None`/defaults.
        unsafe {
            let control_type = element.CurrentControlType().ok()?;
            let text = |value: windows::core::Result<windows::core::BSTR>| {
                value.map(|b| b.to_string()).unwrap_or_default()
            };
            let flag = |value: windows::core::Result<windows::core::BOOL>| {
                value.map(|b| b.as_bool()).unwrap_or(false)
            };
            let bounds = element.CurrentBoundingRectangle().ok().and_then(|r| {
                let (width, height) = (r.right - r.left, r.bottom - r.top);
                (width > 0 && height > 0)
                    .then(|| Rect::new(r.left, r.top, width as u32, height as u32))
            });
            let invoke: Option<IUIAutomationInvokePattern> = pattern(element, UIA_InvokePatternId);
            let toggle: Option<IUIAutomationTogglePattern> = pattern(element, UIA_TogglePatternId);
            let selection: Option<IUIAutomationSelectionItemPattern> =
                pattern(element, UIA_SelectionItemPatternId);
            let expand: Option<IUIAutomationExpandCollapsePattern> =
                pattern(element, UIA_ExpandCollapsePatternId);
            let value_pattern: Option<IUIAutomationValuePattern> =
                pattern(element, UIA_ValuePatternId);
            let range: Option<IUIAutomationRangeValuePattern> =
                pattern(element, UIA_RangeValuePatternId);

            let mut actions = Vec::new();
            if invoke.is_some() {
                actions.push("invoke".to_string());
            }
            if toggle.is_some() {
                actions.push("toggle".to_string());
            }
            if selection.is_some() {
                actions.push("select".to_string());
            }
            let expand_state = expand
                .as_ref()
                .and_then(|p| p.CurrentExpandCollapseState().ok());
            if expand.is_some() {
                actions.push("expand".to_string());
                actions.push("collapse".to_string());
            }
            let (value, editable) = match (&value_pattern, &range) {
                (Some(pattern), _) => (
                    Some(text(pattern.CurrentValue())),
                    !flag(pattern.CurrentIsReadOnly()),
                ),
                (None, Some(pattern)) => (
                    pattern.CurrentValue().ok().map(|v| format!("{v}")),
                    !flag(pattern.CurrentIsReadOnly()),
                ),
                (None, None) => (None, false),
            };
            let offscreen = flag(element.CurrentIsOffscreen());
            let states = States {
                focused: flag(element.CurrentHasKeyboardFocus()),
                focusable: flag(element.CurrentIsKeyboardFocusable()),
                enabled: flag(element.CurrentIsEnabled()),
                checked: toggle
                    .as_ref()
                    .and_then(|p| p.CurrentToggleState().ok())
                    .is_some_and(|s| s == ToggleState_On),
                selected: selection
                    .as_ref()
                    .is_some_and(|p| flag(p.CurrentIsSelected())),
                selectable: selection.is_some(),
                editable,
                visible: !offscreen,
                showing: !offscreen,
                expanded: expand_state == Some(ExpandCollapseState_Expanded),
            };
            Some(Facts {
                role: uia_role(control_type.0),
                platform_role: text(element.CurrentLocalizedControlType()),
                name: text(element.CurrentName()),
                description: text(element.CurrentHelpText()),
                value,
                states,
                bounds,
                actions,
            })
        }
    }

    fn children(&mut self, element: &Self::Element) -> Vec<Self::Element> {
        // SAFETY: FindAll on a valid element with a condition from the same automation object;
        // the array and its elements are reference counted by the `windows` crate.
        unsafe {
            let Ok(found) = element.FindAll(TreeScope_Children, &self.control_view) else {
                return Vec::new();
            };
            let count = found.Length().unwrap_or(0);
            (0..count)
                .filter_map(|i| found.GetElement(i).ok())
                .collect()
        }
    }

    fn do_action(&mut self, element: &Self::Element, action: &str) -> Result<()> {
        // SAFETY: pattern methods on a valid element; failures come back as HRESULT errors.
        unsafe {
            match action {
                "invoke" | "click" | "press" => {
                    let invoke: IUIAutomationInvokePattern =
                        pattern(element, UIA_InvokePatternId).ok_or_else(|| no_action(action))?;
                    invoke.Invoke().map_err(uia_error)
                }
                "toggle" => {
                    let toggle: IUIAutomationTogglePattern =
                        pattern(element, UIA_TogglePatternId).ok_or_else(|| no_action(action))?;
                    toggle.Toggle().map_err(uia_error)
                }
                "select" => {
                    let selection: IUIAutomationSelectionItemPattern =
                        pattern(element, UIA_SelectionItemPatternId)
                            .ok_or_else(|| no_action(action))?;
                    selection.Select().map_err(uia_error)
                }
                "expand" | "collapse" => {
                    let expand: IUIAutomationExpandCollapsePattern =
                        pattern(element, UIA_ExpandCollapsePatternId)
                            .ok_or_else(|| no_action(action))?;
                    let state = expand.CurrentExpandCollapseState().map_err(uia_error)?;
                    if action == "expand" && state == ExpandCollapseState_Collapsed {
                        expand.Expand().map_err(uia_error)
                    } else if action == "collapse" && state != ExpandCollapseState_Collapsed {
                        expand.Collapse().map_err(uia_error)
                    } else {
                        Ok(())
                    }
                }
                _ => Err(no_action(action)),
            }
        }
    }

    fn focus(&mut self, element: &Self::Element) -> Result<bool> {
        // SAFETY: SetFocus on a valid element; an element that cannot take focus fails.
        Ok(unsafe { element.SetFocus() }.is_ok())
    }
}

fn no_action(action: &str) -> Error {
    Error::InvalidInput(format!("the element has no action `{action}`"))
}
