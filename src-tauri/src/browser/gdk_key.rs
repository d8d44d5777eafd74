//! A key event made for GTK: the one GDK struct the desktop crate writes. gtk-rs creates a key
//! event but offers no setters for its fields, and the alternatives fall short: GDK's own
//! `gdk_test_simulate_key` goes through XSendEvent, whose core events GDK drops while it reads
//! XInput 2 (as it does in Tauri's windows), and XTest types into whatever window has the
//! person's focus.
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

/// A key press or release (`kind`) on `window` from `device`, as the X server would report a
/// person's key.
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
    // union's active member and every field is zeroed. The window pointer is a new reference
    // (`to_glib_full`), which gdk_event_free releases with the event; `string` stays NULL,
    // which gdk_event_free and gdk_event_copy accept.
    unsafe {
        let raw: *mut gdk::ffi::GdkEvent = event.to_glib_none_mut().0;
        let key = &mut (*raw).key;
        key.window = window.to_glib_full();
        key.send_event = 0;
        key.time = 0;
        key.state = fields.modifiers.into_glib();
        key.keyval = fields.keyval;
        key.hardware_keycode = fields.keycode;
        key.group = fields.group;
        key.is_modifier = 0;
    }
    event.set_device(device);
    event
}
