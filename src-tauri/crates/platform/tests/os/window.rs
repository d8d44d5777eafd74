//! Windows on a real display: GTK windows under openbox are listed with their facts, focused,
//! moved, resized, maximized, minimized, restored and closed through the window manager.

use std::time::Duration;

use osprey_platform::{OsConfig, OsTool};
use serde_json::json;

use crate::harness::{STARTUP, call, display, gtk_window, ok_text, private_bus, wait_until};

fn line_of<'a>(list: &'a str, title: &str) -> &'a str {
    list.lines()
        .find(|l| l.contains(&format!("{title:?}")))
        .unwrap_or_else(|| panic!("{title} not in:\n{list}"))
}

// The display lock is held for the whole test on purpose: it keeps other tests' windows off the
// screen; each test has its own runtime, so no task of another test waits on it.
#[allow(clippy::await_holding_lock)]
#[tokio::test(flavor = "multi_thread")]
async fn windows_are_listed_focused_moved_resized_and_closed() {
    let (display, _lock) = display();
    let (_bus, bus) = private_bus();
    let tool = OsTool::new(OsConfig {
        x11_display: Some(display.name.clone()),
        ..OsConfig::default()
    });
    let mut first = gtk_window(&display.name, &bus, "Osprey Notes");
    let mut second = gtk_window(&display.name, &bus, "Osprey Mail");
    let (first, second) = (first.lines(), second.lines());
    first.wait_for("first mapped", STARTUP, |l| l == "ready");
    second.wait_for("second mapped", STARTUP, |l| l == "ready");

    let list_now =
        || async { ok_text(&call(&tool, json!({"resource": "window", "action": "list"})).await) };
    let handle = tokio::runtime::Handle::current();
    let wait_for = |what: &str, check: &dyn Fn(&str) -> bool| {
        tokio::task::block_in_place(|| {
            wait_until(what, Duration::from_secs(20), || {
                check(&handle.block_on(list_now()))
            })
        })
    };

    let list = list_now().await;
    let notes = line_of(&list, "Osprey Notes");
    // `<id> "<title>" app <class> pid <pid> at x,y WxH workspace N`
    assert!(notes.contains("app Osprey-fixture pid "), "{notes}");
    assert!(notes.contains(" workspace 0"), "{notes}");
    assert!(!notes.contains(" pid ?"), "{notes}");
    let notes_id: u64 = notes.split(' ').next().unwrap().parse().unwrap();

    ok_text(
        &call(
            &tool,
            json!({"resource": "window", "action": "focus", "window": "Notes"}),
        )
        .await,
    );
    wait_for("Notes focused", &|l| {
        line_of(l, "Osprey Notes").contains("focused")
    });
    ok_text(
        &call(
            &tool,
            json!({"resource": "window", "action": "focus", "window": "osprey mail"}),
        )
        .await,
    );
    wait_for("Mail focused", &|l| {
        line_of(l, "Osprey Mail").contains("focused")
            && !line_of(l, "Osprey Notes").contains("focused")
    });

    ok_text(
        &call(
            &tool,
            json!({"resource": "window", "action": "move", "window": notes_id.to_string(), "x": 300, "y": 250}),
        )
        .await,
    );
    wait_for("Notes moved", &|l| {
        line_of(l, "Osprey Notes").contains(" at 300,250 ")
    });
    ok_text(
        &call(
            &tool,
            json!({"resource": "window", "action": "resize", "window": "Osprey Notes", "width": 500, "height": 400}),
        )
        .await,
    );
    wait_for("Notes resized", &|l| {
        line_of(l, "Osprey Notes").contains(" 500x400")
    });

    ok_text(
        &call(
            &tool,
            json!({"resource": "window", "action": "maximize", "window": "Osprey Notes"}),
        )
        .await,
    );
    wait_for("Notes maximized", &|l| {
        line_of(l, "Osprey Notes").contains("maximized")
    });
    ok_text(
        &call(
            &tool,
            json!({"resource": "window", "action": "minimize", "window": "Osprey Notes"}),
        )
        .await,
    );
    wait_for("Notes minimized", &|l| {
        line_of(l, "Osprey Notes").contains("minimized")
    });
    ok_text(
        &call(
            &tool,
            json!({"resource": "window", "action": "restore", "window": "Osprey Notes"}),
        )
        .await,
    );
    wait_for("Notes restored", &|l| {
        let line = line_of(l, "Osprey Notes");
        !line.contains("minimized") && !line.contains("maximized")
    });

    // Ambiguous and unknown targets name the candidates; nothing is touched.
    let result = call(
        &tool,
        json!({"resource": "window", "action": "close", "window": "osprey"}),
    )
    .await;
    assert!(
        result.is_error && result.text_content().contains("several windows"),
        "{result:?}"
    );
    let result = call(
        &tool,
        json!({"resource": "window", "action": "close", "window": "Calculator"}),
    )
    .await;
    assert!(
        result.is_error && result.text_content().contains("open windows"),
        "{result:?}"
    );
    let result = call(
        &tool,
        json!({"resource": "window", "action": "move", "window": "Notes"}),
    )
    .await;
    assert!(
        result.is_error && result.text_content().contains("needs `x`"),
        "{result:?}"
    );

    ok_text(
        &call(
            &tool,
            json!({"resource": "window", "action": "close", "window": "Osprey Mail"}),
        )
        .await,
    );
    tokio::task::block_in_place(|| second.wait_for("Mail closed", STARTUP, |l| l == "closed"));
    ok_text(
        &call(
            &tool,
            json!({"resource": "window", "action": "close", "window": notes_id.to_string()}),
        )
        .await,
    );
    tokio::task::block_in_place(|| first.wait_for("Notes closed", STARTUP, |l| l == "closed"));
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_display_the_answer_is_service_unavailable() {
    let tool = OsTool::new(OsConfig {
        x11_display: Some(":4079".into()),
        ..OsConfig::default()
    });
    let result = call(&tool, json!({"resource": "window", "action": "list"})).await;
    assert_eq!(
        result.code.map(|c| c.as_str()),
        Some("service_unavailable"),
        "{result:?}"
    );
    assert!(result.text_content().contains("Wayland"), "{result:?}");
}
