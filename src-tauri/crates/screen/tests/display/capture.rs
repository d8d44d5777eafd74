use osprey_screen::{CaptureBackend, Rect};

use crate::harness::{FixtureApp, environment};

const MAGENTA: [u8; 3] = [255, 0, 255];

#[test]
fn monitors_cover_the_screen() {
    let (environment, _lock) = environment();
    let desktop = environment.desktop();
    let monitors = desktop.capture().monitors().unwrap();
    assert!(!monitors.is_empty());
    let screen = desktop.capture().screen_bounds().unwrap();
    for monitor in &monitors {
        assert!(
            monitor.bounds.intersection(&screen) == Some(monitor.bounds),
            "{monitor:?}"
        );
        let image = desktop.capture().capture_monitor(monitor).unwrap();
        assert_eq!(
            (image.width(), image.height()),
            (monitor.bounds.width, monitor.bounds.height)
        );
    }
}

#[test]
fn window_is_listed_with_metadata_and_captured_at_its_bounds() {
    let (environment, _lock) = environment();
    let app = FixtureApp::form(environment, "capture", &[]);
    let desktop = environment.desktop();
    let window = &app.window;
    assert_eq!(window.app_name.to_lowercase(), "form.py");
    assert!(window.pid.is_some(), "GTK sets _NET_WM_PID: {window:?}");
    assert!(!window.minimized);
    assert!(
        window.bounds.width >= 300 && window.bounds.height >= 200,
        "{window:?}"
    );

    // The fixture paints a 40x40 magenta square at the top-left of its client area.
    let image = desktop.capture().capture_window(window).unwrap();
    assert_eq!(
        (image.width(), image.height()),
        (window.bounds.width, window.bounds.height)
    );
    for (x, y) in [(0, 0), (39, 0), (0, 39), (39, 39), (20, 20)] {
        assert_eq!(image.get_pixel(x, y).0, MAGENTA, "window pixel at {x},{y}");
    }
    assert_ne!(
        image.get_pixel(45, 45).0,
        MAGENTA,
        "the square is only 40 px wide"
    );

    // The same pixels sit at the window's bounds in a full-screen capture.
    let screen = desktop
        .capture()
        .capture_region(desktop.capture().screen_bounds().unwrap())
        .unwrap();
    for y in 0..window.bounds.height.min(120) {
        for x in 0..window.bounds.width.min(200) {
            let on_screen = screen.get_pixel(
                (window.bounds.x + x as i32) as u32,
                (window.bounds.y + y as i32) as u32,
            );
            assert_eq!(on_screen, image.get_pixel(x, y), "pixel {x},{y}");
        }
    }

    // A region capture is clipped to the screen and refuses regions fully outside it.
    let region = desktop
        .capture()
        .capture_region(Rect::new(
            window.bounds.x + 10,
            window.bounds.y + 10,
            20,
            20,
        ))
        .unwrap();
    assert_eq!(region.get_pixel(0, 0).0, MAGENTA);
    let error = desktop
        .capture()
        .capture_region(Rect::new(-500, -500, 100, 100))
        .unwrap_err();
    assert!(error.to_string().contains("outside the screen"), "{error}");
}

#[test]
fn no_display_is_a_clear_error() {
    let error = osprey_screen::Desktop::new(osprey_screen::DesktopConfig {
        x11_display: Some(":4242".into()),
        ..Default::default()
    })
    .unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("no display available") && text.contains(":4242"),
        "{text}"
    );
}

#[test]
fn shared_memory_and_socket_captures_agree() {
    let (environment, _lock) = environment();
    let app = FixtureApp::form(environment, "shm", &[]);
    let capture =
        osprey_screen::capture::PlatformCapture::connect(Some(&environment.display)).unwrap();
    assert!(capture.uses_shared_memory(), "Xvfb offers MIT-SHM 1.2");
    let shared = capture.capture_region(app.window.bounds).unwrap();
    let socket = capture.capture_over_socket(app.window.bounds).unwrap();
    assert!(
        capture.uses_shared_memory(),
        "the shared path did not fall back"
    );
    assert_eq!(shared.get_pixel(0, 0).0, MAGENTA);
    assert!(shared == socket, "the two paths return the same pixels");
    // A larger region after a smaller one re-sizes nothing and still agrees.
    let screen = capture.screen_bounds().unwrap();
    assert_eq!(
        capture.capture_region(screen).unwrap(),
        capture.capture_over_socket(screen).unwrap()
    );
}
