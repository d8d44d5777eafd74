use std::time::Duration;

use base64::Engine as _;
use osprey_screen::{DesktopConfig, ScreenTools};
use osprey_tools::{
    AskMode, AuditSink, Level, OriginRules, PathGuard, Policy, PolicyConfig, Registry,
    RegistryConfig, Safeguard, ToolContext,
};
use osprey_types::{ContentBlock, ErrorCode, Origin, ToolResult};
use serde_json::json;

use crate::harness::{Environment, FixtureApp, block_on, environment};

// A deadline, not a pause: under load (a full run on two cores) GTK can take seconds to react.
const REACT: Duration = Duration::from_secs(20);

fn registry(environment: &Environment, level: Level) -> Registry {
    let registry = Registry::new(RegistryConfig {
        policy: Policy::new(
            PolicyConfig {
                level,
                ask: AskMode::Off,
                ..PolicyConfig::default()
            },
            None,
        )
        .unwrap(),
        origin_rules: OriginRules::default(),
        safeguard: Safeguard::new(PathGuard::new(
            None,
            std::env::temp_dir().join("osprey-screen-tests-data"),
        )),
        audit: AuditSink::discard(),
        output_cap: 64 * 1024,
    });
    let (screenshot, desktop) = ScreenTools::new(environment.config());
    registry.register_domain(screenshot);
    registry.register_domain(desktop);
    registry
}

fn call(registry: &Registry, tool: &str, input: serde_json::Value) -> ToolResult {
    let ctx = ToolContext::new(Origin::User, Duration::from_secs(20));
    block_on(registry.execute(&ctx, tool, input))
}

fn image_of(result: &ToolResult) -> image::RgbImage {
    let data = result
        .content
        .iter()
        .find_map(|b| match b {
            ContentBlock::Image { mime_type, data } if mime_type == "image/png" => Some(data),
            _ => None,
        })
        .expect("a PNG block");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    image::load_from_memory(&bytes).unwrap().to_rgb8()
}

#[test]
fn see_needs_no_approval_and_input_does() {
    let (environment, _lock) = environment();
    let app = FixtureApp::form(environment, "tool policy", &[]);
    let registry = registry(environment, Level::Deny);
    let seen = call(
        &registry,
        "screenshot",
        json!({"action": "see", "window": app.title}),
    );
    assert!(!seen.is_error, "{seen:?}");
    let text = seen.text_content();
    assert!(text.lines().any(|l| l == r#"B1 button "Save""#), "{text}");
    // The tool's `bounds` field adds the screen boxes.
    let boxed = call(
        &registry,
        "screenshot",
        json!({"action": "see", "window": app.title, "bounds": true}),
    )
    .text_content();
    assert!(
        boxed
            .lines()
            .any(|l| l.starts_with(r#"B1 button "Save" ("#)),
        "{boxed}"
    );
    let image = image_of(&seen);
    assert_eq!(
        image.dimensions(),
        (app.window.bounds.width, app.window.bounds.height)
    );

    let refused = call(
        &registry,
        "desktop",
        json!({"action": "click", "element": "C1"}),
    );
    assert_eq!(refused.code, Some(ErrorCode::PolicyDenied), "{refused:?}");
    // Nothing reached the application.
    assert!(app.lines.drain().iter().all(|l| !l.starts_with("toggled")));

    let listed = call(
        &registry,
        "desktop",
        json!({"action": "list", "resource": "window"}),
    );
    assert!(listed.text_content().contains(&app.title), "{listed:?}");
}

#[test]
fn desktop_tool_clicks_types_and_lists_through_the_registry() {
    let (environment, _lock) = environment();
    let app = FixtureApp::form(environment, "tool input", &[]);
    let registry = registry(environment, Level::Full);
    let seen = call(
        &registry,
        "screenshot",
        json!({"action": "see", "window": app.title}),
    );
    assert!(!seen.is_error, "{seen:?}");

    let clicked = call(
        &registry,
        "desktop",
        json!({"action": "click", "element": "C1"}),
    );
    assert!(!clicked.is_error, "{clicked:?}");
    app.lines
        .wait_for("toggled True", REACT, |l| l == "toggled True");

    let typed = call(
        &registry,
        "desktop",
        json!({"action": "type", "element": "T1", "text": "Ada"}),
    );
    assert!(!typed.is_error, "{typed:?}");
    app.lines
        .wait_for("text Name Ada", REACT, |l| l == "text Name Ada");
    assert!(
        typed.text_content().contains(r#"its text is now "Ada""#),
        "{typed:?}"
    );

    let apps = call(
        &registry,
        "desktop",
        json!({"action": "list", "resource": "app"}),
    );
    assert!(
        apps.text_content().to_lowercase().contains("form.py"),
        "{apps:?}"
    );

    let stale = call(
        &registry,
        "desktop",
        json!({"action": "click", "element": "B99"}),
    );
    assert_eq!(stale.code, Some(ErrorCode::InvalidInput));
    assert!(
        stale.text_content().contains("take a new snapshot"),
        "{stale:?}"
    );

    let missing = call(&registry, "desktop", json!({"action": "click"}));
    assert!(
        missing.text_content().contains("needs `element`"),
        "{missing:?}"
    );

    // A capture of a region is the plain pixels: the fixture's magenta square.
    let bounds = app.window.bounds;
    let captured = call(
        &registry,
        "screenshot",
        json!({"action": "capture", "region": [bounds.x, bounds.y, 40, 40]}),
    );
    let image = image_of(&captured);
    assert_eq!(image.dimensions(), (40, 40));
    assert!(image.pixels().all(|p| p.0 == [255, 0, 255]));

    // A real pointer double click activates a list row (single clicks only select).
    let double = call(
        &registry,
        "desktop",
        json!({"action": "double_click", "element": "I2"}),
    );
    assert!(!double.is_error, "{double:?}");
    app.lines
        .wait_for("activated 1", REACT, |l| l == "activated 1");
}

/// The numbers in `x,y wxh` (a box or an area in see's text).
fn rect_numbers(text: &str) -> [f64; 4] {
    let numbers: Vec<f64> = text
        .split(|c: char| !(c.is_ascii_digit() || c == '-'))
        .filter(|part| !part.is_empty())
        .map(|part| part.parse().unwrap())
        .collect();
    [numbers[0], numbers[1], numbers[2], numbers[3]]
}

#[test]
fn a_point_of_a_scaled_snapshot_image_acts_on_the_screen_under_it() {
    let (environment, _lock) = environment();
    let app = FixtureApp::form(environment, "image point", &[]);
    let registry = registry(environment, Level::Full);
    let seen = call(
        &registry,
        "screenshot",
        json!({"action": "see", "window": app.title, "max_width": 320, "bounds": true}),
    )
    .text_content();
    // Where the checkbox is in the picture the model got: its screen box through the header's
    // area and scale.
    let header = seen.lines().next().unwrap();
    let area = rect_numbers(header.split(" at ").nth(1).unwrap());
    let scale: f64 = header
        .split("(scaled ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(scale < 1.0, "{seen}");
    let checkbox = seen.lines().find(|l| l.starts_with("C1 ")).unwrap();
    let [x, y, w, h] = rect_numbers(checkbox.split('(').nth(1).unwrap());
    let in_image = |screen: f64, origin: f64| ((screen - origin) * scale).round() as i64;
    let (ix, iy) = (
        in_image(x + w / 2.0, area[0]),
        in_image(y + h / 2.0, area[1]),
    );

    let clicked = call(
        &registry,
        "desktop",
        json!({"action": "click", "x": ix, "y": iy, "in_image": true, "pointer": true}),
    );
    assert!(!clicked.is_error, "{clicked:?}");
    app.lines
        .wait_for("toggled True", REACT, |l| l == "toggled True");

    // A point outside the picture is refused, not guessed at.
    let outside = call(
        &registry,
        "desktop",
        json!({"action": "click", "x": 400, "y": 5, "in_image": true}),
    );
    assert_eq!(outside.code, Some(ErrorCode::InvalidInput), "{outside:?}");
    assert!(
        outside.text_content().contains("outside snapshot"),
        "{outside:?}"
    );
}

#[test]
fn without_a_display_the_tools_say_so() {
    let (screenshot, _) = ScreenTools::new(DesktopConfig {
        x11_display: Some(":4243".into()),
        ..DesktopConfig::default()
    });
    let registry = Registry::new(RegistryConfig {
        policy: Policy::new(PolicyConfig::default(), None).unwrap(),
        origin_rules: OriginRules::default(),
        safeguard: Safeguard::new(PathGuard::new(None, std::env::temp_dir())),
        audit: AuditSink::discard(),
        output_cap: 64 * 1024,
    });
    registry.register_domain(screenshot);
    let result = call(&registry, "screenshot", json!({"action": "see"}));
    assert!(result.is_error);
    assert!(
        result.text_content().contains("no display available"),
        "{result:?}"
    );
}
