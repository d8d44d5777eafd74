use std::time::Duration;

use osprey_screen::accessibility::AccessibleNode;
use osprey_screen::{ActionTarget, Desktop, MouseButton, SeeOptions, SeeTarget};

use crate::harness::{FixtureApp, block_on, environment, wait_until};

const REACT: Duration = Duration::from_secs(5);

fn element(id: &str) -> ActionTarget {
    ActionTarget::Element {
        snapshot: None,
        id: id.into(),
    }
}

fn see(desktop: &Desktop, app: &FixtureApp) {
    block_on(desktop.see(
        &SeeTarget::WindowTitle(app.title.clone()),
        SeeOptions::default(),
    ))
    .unwrap();
}

/// The element as the accessibility tree reports it now.
fn live(desktop: &Desktop, id: &str) -> AccessibleNode {
    let (_, element) = desktop.snapshots().lookup(None, id).unwrap();
    block_on(desktop.accessibility().refresh(&element.node))
        .unwrap()
        .expect("element still exists")
}

#[test]
fn clicking_the_checkbox_toggles_it_through_the_action_and_the_pointer() {
    let (environment, _lock) = environment();
    let app = FixtureApp::form(environment, "click", &[]);
    let desktop = environment.desktop();
    see(&desktop, &app);
    assert_eq!(
        desktop.snapshots().lookup(None, "C1").unwrap().1.name,
        "Subscribe"
    );
    assert!(!live(&desktop, "C1").states.checked);

    // Its accessibility action.
    let message = block_on(desktop.click(&element("C1"), MouseButton::Left, 1, false)).unwrap();
    assert!(message.contains("action"), "{message}");
    app.lines
        .wait_for("toggled True", REACT, |l| l == "toggled True");
    wait_until("AT-SPI reports checked", REACT, || {
        live(&desktop, "C1").states.checked
    });

    // A real pointer click at its centre.
    let message = block_on(desktop.click(&element("C1"), MouseButton::Left, 1, true)).unwrap();
    assert!(message.starts_with("clicked C1 checkbox"), "{message}");
    app.lines
        .wait_for("toggled False", REACT, |l| l == "toggled False");
    wait_until("AT-SPI reports unchecked", REACT, || {
        !live(&desktop, "C1").states.checked
    });

    // A pointer click on a button reaches the application's handler.
    block_on(desktop.click(&element("B1"), MouseButton::Left, 1, true)).unwrap();
    app.lines
        .wait_for("clicked Save", REACT, |l| l == "clicked Save");
}

#[test]
fn typing_into_a_text_field_sets_its_text() {
    let (environment, _lock) = environment();
    let app = FixtureApp::form(environment, "type", &[]);
    let desktop = environment.desktop();
    see(&desktop, &app);
    let text = "héllo wörld 42";
    let message = block_on(desktop.type_text(Some(&element("T2")), text)).unwrap();
    assert!(message.contains("T2 text field \"Email\""), "{message}");
    app.lines.wait_for("the Email text", REACT, |l| {
        l == format!("text Email {text}")
    });
    wait_until("AT-SPI reads the text back", REACT, || {
        live(&desktop, "T2").value.as_deref() == Some(text)
    });
    assert_eq!(
        live(&desktop, "T1").value.as_deref(),
        Some(""),
        "Name untouched"
    );

    // A chord on the element, then plain typing into the focused field.
    block_on(desktop.key(Some(&element("T2")), "ctrl+a")).unwrap();
    block_on(desktop.type_text(None, "X")).unwrap();
    wait_until("select-all then typing replaced the text", REACT, || {
        live(&desktop, "T2").value.as_deref() == Some("X")
    });
}

#[test]
fn acting_on_an_element_of_a_closed_window_asks_for_a_new_snapshot() {
    let (environment, _lock) = environment();
    let app = FixtureApp::form(environment, "closed", &[]);
    let desktop = environment.desktop();
    see(&desktop, &app);
    let pid = app.pid();
    drop(app);
    wait_until("the fixture to exit", REACT, || {
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
    });
    let error = block_on(desktop.click(&element("B1"), MouseButton::Left, 1, false))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("no longer in the window") && error.contains("take a new snapshot"),
        "{error}"
    );
}

/// The ID the latest snapshot gave the element with this name.
fn id_named(desktop: &Desktop, name: &str) -> String {
    let (snapshot, _) = desktop.snapshots().lookup(None, "B1").unwrap();
    snapshot
        .elements
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no {name:?} in {:?}", snapshot.elements))
        .id
        .clone()
}

/// Waits until the element the snapshot knows by `id` is gone from the live tree.
fn wait_gone(desktop: &Desktop, id: &str) {
    let (_, element) = desktop.snapshots().lookup(None, id).unwrap();
    wait_until(&format!("{id}'s accessible object to go"), REACT, || {
        block_on(desktop.accessibility().refresh(&element.node))
            .unwrap()
            .is_none()
    });
}

#[test]
fn an_element_rebuilt_by_its_application_is_found_again_by_role_and_name() {
    let (environment, _lock) = environment();
    let app = FixtureApp::form(environment, "rebuild", &["--dynamic"]);
    let desktop = environment.desktop();
    see(&desktop, &app);
    let rebuild = id_named(&desktop, "Rebuild");
    block_on(desktop.click(&element(&rebuild), MouseButton::Left, 1, false)).unwrap();
    app.lines.wait_for("rebuilt", REACT, |l| l == "rebuilt");
    wait_gone(&desktop, &rebuild);

    // The snapshot's reference is dead; the same ID still reaches the new button.
    let message = block_on(desktop.click(&element(&rebuild), MouseButton::Left, 1, false)).unwrap();
    assert!(
        message.contains("is no longer in the window")
            && message.contains(r#"acted on the button "Rebuild" now at"#),
        "{message}"
    );
    app.lines
        .wait_for("the second click", REACT, |l| l == "clicked Rebuild");
    // A real pointer click on the re-identified button lands too.
    app.lines.wait_for("rebuilt", REACT, |l| l == "rebuilt");
    let message = block_on(desktop.click(&element(&rebuild), MouseButton::Left, 1, true)).unwrap();
    assert!(message.starts_with("clicked B"), "{message}");
    app.lines
        .wait_for("the pointer click", REACT, |l| l == "clicked Rebuild");
}

#[test]
fn an_element_that_moved_is_clicked_at_its_new_place() {
    let (environment, _lock) = environment();
    let app = FixtureApp::form(environment, "wander", &["--dynamic"]);
    let desktop = environment.desktop();
    see(&desktop, &app);
    let wander = id_named(&desktop, "Wander");
    let (_, before) = desktop.snapshots().lookup(None, &wander).unwrap();
    // A real pointer click: it moves the button to the end of its row.
    block_on(desktop.click(&element(&wander), MouseButton::Left, 1, true)).unwrap();
    app.lines.wait_for("wandered", REACT, |l| l == "wandered");
    wait_until("the button to move", REACT, || {
        live(&desktop, &wander).bounds != Some(before.bounds)
    });
    // The old snapshot's bounds are wrong now; the click goes where the button is.
    let message = block_on(desktop.click(&element(&wander), MouseButton::Left, 1, true)).unwrap();
    assert!(
        message.contains(&format!("{wander} moved from ({})", before.bounds)),
        "{message}"
    );
    app.lines
        .wait_for("the second click", REACT, |l| l == "clicked Wander");
}

#[test]
fn an_element_removed_from_a_live_window_asks_for_a_new_snapshot() {
    let (environment, _lock) = environment();
    let app = FixtureApp::form(environment, "vanish", &["--dynamic"]);
    let desktop = environment.desktop();
    see(&desktop, &app);
    let vanish = id_named(&desktop, "Vanish");
    block_on(desktop.click(&element(&vanish), MouseButton::Left, 1, false)).unwrap();
    app.lines.wait_for("vanished", REACT, |l| l == "vanished");
    wait_gone(&desktop, &vanish);
    let error = block_on(desktop.click(&element(&vanish), MouseButton::Left, 1, false))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(r#"the window has no button named "Vanish" now"#)
            && error.contains("take a new snapshot"),
        "{error}"
    );
    // Nothing was clicked in its place.
    assert!(
        !app.lines.drain().iter().any(|l| l.starts_with("clicked")),
        "a click reached the application"
    );
}
