//! The clipboard on a real X display, checked by another X client (python3-gi's Gtk.Clipboard):
//! text and a PNG image Osprey writes are read there while Osprey keeps serving them, text the
//! other client owns is read here, and clear empties it. arboard connects to the process's own
//! DISPLAY and this crate never changes the environment, so the session runs in a child test
//! process started with DISPLAY set.

use std::process::{Command, Stdio};

use osprey_platform::{OsConfig, OsTool};
use serde_json::json;

use crate::harness::{Guarded, STARTUP, call, display, ok_text, python_with_gi};

const READER: &str = r#"
import sys, gi
gi.require_version('Gtk', '3.0')
gi.require_version('Gdk', '3.0')
from gi.repository import Gtk, Gdk
clipboard = Gtk.Clipboard.get(Gdk.SELECTION_CLIPBOARD)
if sys.argv[1] == 'text':
    print(repr(clipboard.wait_for_text()))
elif sys.argv[1] == 'image':
    image = clipboard.wait_for_image()
    print('none' if image is None else '%dx%d %s' % (image.get_width(), image.get_height(),
          list(image.get_pixels()[:4])))
else:
    clipboard.set_text(sys.argv[2], -1)
    print('ready', flush=True)
    Gtk.main()
"#;

/// What another X client sees on the clipboard.
fn other_client(mode: &str) -> String {
    let output = Command::new("timeout")
        .args(["20", python_with_gi(), "-c", READER, mode])
        .stdin(Stdio::null())
        .output()
        .expect("running the python clipboard reader");
    assert!(output.status.success(), "reader failed: {output:?}");
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

#[test]
fn clipboard_round_trips_with_another_x_client() {
    let (display, _lock) = display();
    let status = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "clipboard::clipboard_session_on_display",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("DISPLAY", &display.name)
        .env_remove("WAYLAND_DISPLAY")
        .status()
        .unwrap();
    assert!(
        status.success(),
        "the clipboard session failed (see its output above)"
    );
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "run by clipboard_round_trips_with_another_x_client in a process with DISPLAY set"]
async fn clipboard_session_on_display() {
    let display = std::env::var("DISPLAY").expect("started with DISPLAY");
    let tool = OsTool::new(OsConfig::default());
    let text = "Osprey wrote this: ünïcödé ✓";
    let message = ok_text(
        &call(
            &tool,
            json!({"resource": "clipboard", "action": "write", "text": text}),
        )
        .await,
    );
    assert_eq!(message, "Put 28 characters on the clipboard.");
    assert_eq!(
        ok_text(&call(&tool, json!({"resource": "clipboard", "action": "read"})).await),
        text
    );
    // Another client reads it while this process keeps serving the selection.
    assert_eq!(
        tokio::task::block_in_place(|| other_client("text")),
        format!("{text:?}").replace('"', "'")
    );

    // An image: a 3x2 PNG, read by the other client with its pixels.
    let temp = tempfile::tempdir().unwrap();
    let png = temp.path().join("red.png");
    image::RgbaImage::from_pixel(3, 2, image::Rgba([200, 10, 20, 255]))
        .save(&png)
        .unwrap();
    let message = ok_text(
        &call(&tool, json!({"resource": "clipboard", "action": "write", "format": "image", "path": png.to_str().unwrap()}))
            .await,
    );
    assert_eq!(message, "Put a 3x2 image on the clipboard.");
    assert_eq!(
        tokio::task::block_in_place(|| other_client("image")),
        "3x2 [200, 10, 20, 255]"
    );
    let result = call(
        &tool,
        json!({"resource": "clipboard", "action": "read", "format": "image"}),
    )
    .await;
    assert_eq!(result.content.len(), 2, "{result:?}");
    assert!(result.text_content().contains("Clipboard image 3x2"));
    let saved = temp.path().join("back.png");
    ok_text(
        &call(&tool, json!({"resource": "clipboard", "action": "read", "format": "image", "path": saved.to_str().unwrap()}))
            .await,
    );
    let back = image::open(&saved).unwrap().into_rgba8();
    assert_eq!(
        (back.width(), back.height(), back.get_pixel(2, 1).0),
        (3, 2, [200, 10, 20, 255])
    );

    // Text another client owns is read here.
    let mut writer = Guarded::spawn(
        "timeout",
        &["60", python_with_gi(), "-c", READER, "write", "from GTK"],
        &[("DISPLAY", &display)],
    );
    writer
        .lines()
        .wait_for("writer owns the clipboard", STARTUP, |l| l == "ready");
    assert_eq!(
        ok_text(&call(&tool, json!({"resource": "clipboard", "action": "read"})).await),
        "from GTK"
    );
    drop(writer);

    ok_text(
        &call(
            &tool,
            json!({"resource": "clipboard", "action": "write", "text": "gone soon"}),
        )
        .await,
    );
    ok_text(&call(&tool, json!({"resource": "clipboard", "action": "clear"})).await);
    assert_eq!(
        ok_text(&call(&tool, json!({"resource": "clipboard", "action": "read"})).await),
        "The clipboard holds no text."
    );
    assert_eq!(tokio::task::block_in_place(|| other_client("text")), "None");

    let result = call(&tool, json!({"resource": "clipboard", "action": "write", "format": "image", "path": "relative.png"})).await;
    assert!(
        result.is_error && result.text_content().contains("must be absolute"),
        "{result:?}"
    );
    let result = call(&tool, json!({"resource": "clipboard", "action": "write"})).await;
    assert!(
        result.is_error && result.text_content().contains("needs `text`"),
        "{result:?}"
    );
}
