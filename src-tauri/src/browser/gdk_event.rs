//! Input events made for GTK: the one place the desktop crate writes GDK structs. gtk-rs creates
//! an event but offers no setters for its fields. The events are filled in as WebKit's own test
//! runner fills them (WebKitTestRunner's `EventSenderProxyGtk`: `gdk_event_new`, the window and
//! device, `GDK_CURRENT_TIME`, then `gtk_main_do_event`), so WebKit takes them as a person's.
//! The alternatives fall short: GDK's `gdk_test_simulate_key` goes through XSendEvent, whose core
//! events GDK drops while it reads XInput 2 (as it does in Tauri's windows), and XTest moves the
//! person's pointer and types into whatever window has their focus.
#![allow(unsafe_code)]

use gtk::gdk;
use gtk::glib::translate::{IntoGlib, ToGlibPtr, ToGlibPtrMut};

/// What one key press or release carries.
#[derive(Clone, Copy, Debug)]
pub struct KeyFields {
    pub keyval: u32,
    pub keycode: u16,
    pub group: u8,
    pub modifiers: gdk::ModifierType,
}

/// A key press or release (`kind`) on `window` from `device`.
pub fn key_event(
    kind: gdk::EventType,
    window: &gdk::Window,
    device: Option<&gdk::Device>,
    fields: KeyFields,
) -> gdk::Event {
    assert!(matches!(
        kind,
        gdk::EventType::KeyPress | gdk::EventType::KeyRelease
    ));
    let mut event = gdk::Event::new(kind);
    // SAFETY: `event` was just created by gdk_event_new with a key type, so `key` is the
    // union's active member and every field is zeroed (`send_event`, a `time` of
    // GDK_CURRENT_TIME, `is_modifier` stay so). The window pointer is a new reference
    // (`to_glib_full`), which gdk_event_free releases with the event; `string` stays NULL,
    // which gdk_event_free and gdk_event_copy accept.
    unsafe {
        let raw: *mut gdk::ffi::GdkEvent = event.to_glib_none_mut().0;
        let key = &mut (*raw).key;
        key.window = window.to_glib_full();
        key.state = fields.modifiers.into_glib();
        key.keyval = fields.keyval;
        key.hardware_keycode = fields.keycode;
        key.group = fields.group;
    }
    event.set_device(device);
    event
}

/// A pointer event at `(x, y)` of `window`: a motion (`MotionNotify`), or a press or release
/// of `button`. `state` is the modifiers and buttons held before the event.
pub fn pointer_event(
    kind: gdk::EventType,
    window: &gdk::Window,
    device: Option<&gdk::Device>,
    (x, y): (f64, f64),
    button: u32,
    state: gdk::ModifierType,
) -> gdk::Event {
    assert!(matches!(
        kind,
        gdk::EventType::MotionNotify | gdk::EventType::ButtonPress | gdk::EventType::ButtonRelease
    ));
    // Whole pixels are enough to find the root position; the event keeps the exact ones.
    let (x_root, y_root) = window.root_coords(x as i32, y as i32);
    let mut event = gdk::Event::new(kind);
    // SAFETY: as in `key_event`, with `motion` or `button` the active member for `kind`; `axes`
    // stays NULL (a mouse has none), which gdk_event_free and gdk_event_copy accept. The device
    // is set afterwards through gdk_event_set_device, which fills the struct's field.
    unsafe {
        let raw: *mut gdk::ffi::GdkEvent = event.to_glib_none_mut().0;
        // The fields motion and button events share; the rest stay zero (`send_event`, a
        // `time` of GDK_CURRENT_TIME, `is_hint`).
        macro_rules! place {
            ($fields:expr) => {{
                let fields = $fields;
                fields.window = window.to_glib_full();
                fields.x = x;
                fields.y = y;
                fields.state = state.into_glib();
                fields.x_root = f64::from(x_root);
                fields.y_root = f64::from(y_root);
            }};
        }
        if kind == gdk::EventType::MotionNotify {
            place!(&mut (*raw).motion);
        } else {
            place!(&mut (*raw).button);
            (*raw).button.button = button;
        }
    }
    event.set_device(device);
    event
}
