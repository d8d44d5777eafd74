use osprey_screen::{Quality, SeeOptions, SeeTarget};

use crate::harness::{FixtureApp, artifact, block_on, environment};

#[test]
fn see_assigns_ids_in_reading_order_and_lists_them() {
    let (environment, _lock) = environment();
    let app = FixtureApp::form(environment, "see", &[]);
    let desktop = environment.desktop();
    let seen = block_on(desktop.see(
        &SeeTarget::WindowTitle(app.title.clone()),
        SeeOptions::default(),
    ))
    .unwrap();
    std::fs::write(artifact("see-form.png"), &seen.image.bytes).unwrap();
    let snapshot = &seen.snapshot;
    let by_id = |id: &str| {
        snapshot
            .element(id)
            .unwrap_or_else(|| panic!("{id} in {}", seen.text))
    };
    assert_eq!(by_id("T1").name, "Name");
    assert_eq!(by_id("T2").name, "Email");
    assert_eq!(by_id("C1").name, "Subscribe");
    assert_eq!(by_id("P1").name, "Colour");
    assert_eq!(by_id("B1").name, "Save");
    assert_eq!(by_id("B2").name, "Cancel");
    let list_items: Vec<&str> = snapshot
        .elements
        .iter()
        .filter(|e| e.id.starts_with('I'))
        .map(|e| e.id.as_str())
        .collect();
    assert_eq!(list_items, ["I1", "I2", "I3"]);
    // GTK list rows have no name of their own: they are named by the labels they hold.
    assert_eq!(by_id("I1").name, "Apple");
    assert_eq!(by_id("I3").name, "Cherry");
    assert!(
        seen.text.contains(r#"I2 list item "Banana""#),
        "{}",
        seen.text
    );
    // Reading order: by 10 px band, then left to right.
    for pair in snapshot.elements.windows(2) {
        let (a, b) = (pair[0].bounds, pair[1].bounds);
        assert!(
            (a.y.div_euclid(10), a.x) <= (b.y.div_euclid(10), b.x),
            "{} before {}",
            pair[0].line(true),
            pair[1].line(true)
        );
    }
    // By default a line is the ID, role, name and states; the header gives the one rule that
    // maps a point of the image to the screen.
    assert!(
        seen.text.lines().any(|line| line == r#"B1 button "Save""#),
        "{}",
        seen.text
    );
    assert!(
        seen.text
            .lines()
            .any(|line| line == r#"C1 checkbox "Subscribe" unchecked"#),
        "{}",
        seen.text
    );
    assert!(
        seen.text
            .starts_with(&format!("Snapshot {} of window", snapshot.id))
    );
    let origin = snapshot.area.origin();
    assert!(
        seen.text.contains(&format!(
            "in_image: true (screen = ({},{}) + point).",
            origin.x, origin.y
        )),
        "{}",
        seen.text
    );
    let save = by_id("B1");
    assert!(!seen.text.contains(&format!("({})", save.bounds)));
    assert_eq!(
        (seen.width, seen.height),
        (app.window.bounds.width, app.window.bounds.height)
    );

    // A second look at the same window gives the same IDs for the same elements.
    let again = block_on(desktop.see(
        &SeeTarget::WindowTitle(app.title.clone()),
        SeeOptions::default(),
    ))
    .unwrap();
    let ids = |s: &osprey_screen::Snapshot| -> Vec<(String, String)> {
        s.elements
            .iter()
            .map(|e| (e.id.clone(), e.name.clone()))
            .collect()
    };
    assert_eq!(ids(&again.snapshot), ids(snapshot));
    assert_ne!(again.snapshot.id, snapshot.id);

    // `bounds` adds each element's screen box, inside the window.
    let boxed = block_on(desktop.see(
        &SeeTarget::WindowTitle(app.title.clone()),
        SeeOptions {
            bounds: true,
            ..SeeOptions::default()
        },
    ))
    .unwrap();
    let save = boxed.snapshot.element("B1").unwrap();
    assert!(app.window.bounds.contains(save.bounds.center()));
    assert!(
        boxed
            .text
            .lines()
            .any(|line| line == format!(r#"B1 button "Save" ({})"#, save.bounds)),
        "{}",
        boxed.text
    );
    assert!(boxed.text.contains("Coordinates are screen pixels"));
}

#[test]
fn annotated_image_differs_from_the_capture_only_inside_the_boxes() {
    let (environment, _lock) = environment();
    let app = FixtureApp::form(environment, "annotate", &[]);
    let desktop = environment.desktop();
    let target = SeeTarget::WindowTitle(app.title.clone());
    let raw = block_on(desktop.see(
        &target,
        SeeOptions {
            annotate: false,
            ..SeeOptions::default()
        },
    ))
    .unwrap();
    let annotated = block_on(desktop.see(&target, SeeOptions::default())).unwrap();
    std::fs::write(artifact("annotate-raw.png"), &raw.image.bytes).unwrap();
    std::fs::write(artifact("annotate-boxes.png"), &annotated.image.bytes).unwrap();
    let raw = image::load_from_memory(&raw.image.bytes).unwrap().to_rgb8();
    let boxed = image::load_from_memory(&annotated.image.bytes)
        .unwrap()
        .to_rgb8();
    assert_eq!(raw.dimensions(), boxed.dimensions());
    let regions: Vec<_> = annotated
        .drawn
        .boxes
        .iter()
        .flat_map(|(outline, label)| [*outline, *label])
        .collect();
    assert!(!regions.is_empty());
    let mut changed = 0;
    for (x, y, pixel) in boxed.enumerate_pixels() {
        if raw.get_pixel(x, y) != pixel {
            changed += 1;
            let point = osprey_screen::Point {
                x: x as i32,
                y: y as i32,
            };
            assert!(
                regions.iter().any(|r| r.contains(point)),
                "pixel {x},{y} changed outside every box"
            );
        }
    }
    assert!(changed > 0);
    // Every element's outline was drawn: its top-left corner changed colour.
    for (outline, _) in &annotated.drawn.boxes {
        let (x, y) = (outline.x.max(0) as u32, outline.y.max(0) as u32);
        assert_ne!(raw.get_pixel(x + 1, y + 1), boxed.get_pixel(x + 1, y + 1));
    }

    // Width tier: downscaled, with the scale recorded and boxes scaled with it.
    let small = block_on(desktop.see(
        &target,
        SeeOptions {
            max_width: Some(320),
            quality: Quality::Small,
            ..SeeOptions::default()
        },
    ))
    .unwrap();
    std::fs::write(artifact("annotate-small.jpg"), &small.image.bytes).unwrap();
    assert_eq!(small.width, 320);
    assert_eq!(small.image.mime_type, "image/jpeg");
    let scale = small.snapshot.scale;
    assert!((scale - 320.0 / f64::from(app.window.bounds.width)).abs() < 1e-9);
    assert!(small.text.contains("scaled"));
    // The header's rule maps a point of the image back to the screen: each element's box as
    // drawn, taken through it, lands on the element's screen box.
    let origin = small.snapshot.area.origin();
    assert!(
        small.text.contains(&format!(
            "in_image: true (screen = ({},{}) + point / {scale:.3}).",
            origin.x, origin.y
        )),
        "{}",
        small.text
    );
    let tolerance = 1.0 / scale + 1.0;
    for (element, (drawn, _)) in small.snapshot.elements.iter().zip(&small.drawn.boxes) {
        let x = f64::from(origin.x) + f64::from(drawn.x) / scale;
        let y = f64::from(origin.y) + f64::from(drawn.y) / scale;
        assert!(
            (x - f64::from(element.bounds.x)).abs() <= tolerance
                && (y - f64::from(element.bounds.y)).abs() <= tolerance,
            "{} drawn at {drawn} maps to {x:.0},{y:.0}",
            element.line(true)
        );
    }
}

#[test]
fn stale_element_ids_are_refused_with_a_clear_error() {
    let (environment, _lock) = environment();
    let app = FixtureApp::form(environment, "stale", &[]);
    let desktop = environment.desktop();
    let seen = block_on(desktop.see(
        &SeeTarget::WindowTitle(app.title.clone()),
        SeeOptions::default(),
    ))
    .unwrap();
    let store = desktop.snapshots();
    assert_eq!(store.lookup(None, "B1").unwrap().1.name, "Save");
    let error = store.lookup(None, "B99").unwrap_err().to_string();
    assert!(error.contains("has no element B99") && error.contains("take a new snapshot"));
    let error = store.lookup(Some("s999"), "B1").unwrap_err().to_string();
    assert!(
        error.contains("s999 is unknown or has expired") && error.contains("take a new snapshot")
    );
    assert!(store.lookup(Some(&seen.snapshot.id), "T1").is_ok());
}

#[test]
fn a_hung_application_cannot_stall_see_past_its_deadline() {
    let (environment, _lock) = environment();
    let app = FixtureApp::form(environment, "see hung", &[]);
    let desktop = environment.desktop();
    let target = SeeTarget::WindowTitle(app.title.clone());
    // Warm the connection, then stop the application: its accessibility requests go unanswered.
    block_on(desktop.see(&target, SeeOptions::default())).unwrap();
    app.signal("STOP");
    let options = SeeOptions {
        tree_timeout: Some(std::time::Duration::from_millis(700)),
        ..SeeOptions::default()
    };
    let started = std::time::Instant::now();
    let seen = block_on(desktop.see(&target, options));
    let took = started.elapsed();
    app.signal("CONT");
    let seen = seen.unwrap();
    assert!(
        took < std::time::Duration::from_millis(1500),
        "took {took:?}"
    );
    assert!(seen.text.contains("did not answer"), "{}", seen.text);
    // The picture still comes back.
    assert_eq!(
        (seen.width, seen.height),
        (app.window.bounds.width, app.window.bounds.height)
    );
}

#[test]
fn the_picture_is_taken_after_the_tree_is_read() {
    let (environment, _lock) = environment();
    let app = FixtureApp::form(environment, "see order", &[]);
    let desktop = environment.desktop();
    let before = desktop.capture().capture_window(&app.window).unwrap();
    // A stopped application keeps `see` waiting on its tree; meanwhile the screen changes: a
    // window with more buttons opens over it. The old order took the picture at once, beside
    // the walk, and so showed the screen as it was before the change.
    app.signal("STOP");
    let seeing = std::thread::spawn({
        let desktop = desktop.clone();
        let target = SeeTarget::WindowTitle(app.title.clone());
        move || {
            block_on(desktop.see(
                &target,
                SeeOptions {
                    annotate: false,
                    tree_timeout: Some(std::time::Duration::from_secs(20)),
                    ..SeeOptions::default()
                },
            ))
        }
    });
    let cover = FixtureApp::form(environment, "see cover", &["--buttons", "4"]);
    let after = desktop.capture().capture_window(&app.window).unwrap();
    assert_ne!(
        before, after,
        "the covering window changed nothing on screen"
    );
    app.signal("CONT");
    let seen = seeing.join().unwrap().unwrap();
    assert!(
        seen.text.contains(r#"button "Save""#),
        "the stopped window's own tree: {}",
        seen.text
    );
    let image = image::load_from_memory(&seen.image.bytes)
        .unwrap()
        .to_rgb8();
    std::fs::write(artifact("see-after-tree.png"), &seen.image.bytes).unwrap();
    assert!(image == after, "the picture is older than the tree");
    drop(cover);
}

#[test]
fn see_once_saves_ids_that_a_later_desktop_can_use() {
    let (environment, _lock) = environment();
    let app = FixtureApp::form(environment, "see once", &[]);
    let directory = crate::harness::artifact(&format!("snapshots-{}", std::process::id()));
    let mut config = environment.config();
    config.snapshot_dir = Some(directory.clone());
    let seen = block_on(osprey_screen::see_once(
        config.clone(),
        SeeTarget::WindowTitle(app.title.clone()),
        SeeOptions::default(),
    ))
    .unwrap();
    assert!(seen.image.bytes.starts_with(b"\x89PNG"));
    assert!(
        seen.text.contains(r#"C1 checkbox "Subscribe""#),
        "{}",
        seen.text
    );
    // A new desktop (as in a new `osprey tool` process) acts on C1 from that snapshot.
    let later = osprey_screen::Desktop::new(config).unwrap();
    let message = block_on(later.click(
        &osprey_screen::ActionTarget::Element {
            snapshot: None,
            id: "C1".into(),
        },
        osprey_screen::MouseButton::Left,
        1,
        false,
    ))
    .unwrap();
    assert!(message.contains("C1 checkbox"), "{message}");
    app.lines
        .wait_for("toggled True", std::time::Duration::from_secs(5), |l| {
            l == "toggled True"
        });
    std::fs::remove_dir_all(directory).unwrap();
}

/// A whole screen is scaled to the size a model takes as it is (1920 x 1080 to 1456 x 819):
/// larger, Claude would scale it again before looking, and the points it answers would not be
/// in the picture Osprey sent.
#[test]
fn a_whole_screen_goes_at_the_size_models_take_as_it_is() {
    let (environment, _lock) = environment();
    let _app = FixtureApp::form(environment, "whole screen", &[]);
    let desktop = environment.desktop();
    let seen = block_on(desktop.see(&SeeTarget::Screen, SeeOptions::default())).unwrap();
    std::fs::write(artifact("see-screen.png"), &seen.image.bytes).unwrap();
    let area = seen.snapshot.area;
    assert!(area.width > seen.width, "{area}: {}", seen.text);
    assert_eq!(
        (seen.width, seen.height),
        osprey_types::model_image_size(area.width, area.height)
    );
    let decoded = image::load_from_memory(&seen.image.bytes).unwrap();
    assert_eq!(
        (decoded.width(), decoded.height()),
        (seen.width, seen.height)
    );
    assert!(
        seen.snapshot.elements.iter().any(|e| e.name == "Save"),
        "{}",
        seen.text
    );
}
