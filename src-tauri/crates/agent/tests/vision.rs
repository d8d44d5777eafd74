//! The vision tool end to end: a turn on a real provider client against a loopback server takes
//! a screenshot with a test camera tool, then asks the `vision` tool about it; the vision call
//! goes to the same server with the image in the provider's own format, on the vision model when
//! one is set. Files are read under the same guard and approval as `file read`.

#[path = "support/server.rs"]
mod server;
#[path = "support/wire.rs"]
mod wire;

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use futures::future::BoxFuture;
use osprey_agent::{Runner, SubAgentConfig, SubAgents, TurnRequest, VisionTool};
use osprey_db::Database;
use osprey_tools::domain::Domain;
use osprey_tools::file::FileTool;
use osprey_tools::{
    ApprovalNeed, Call, CallFacts, DomainTool, FixedApprover, Level, PathGuard, Policy, Registry,
    RegistryConfig, Safeguard, ToolContext,
};
use osprey_types::{ApprovalAnswer, ContentBlock, Origin, ToolResult};
use serde_json::{Value, json};
use server::RoutedServer;
use wire::{ScriptCall, Wire, offered_tools};

const AGENT: usize = 0;
const VISION: usize = 1;

fn who(body: &str) -> usize {
    if body.contains("You review a screenshot of a user interface")
        || body.contains("You look at one image for another agent")
    {
        VISION
    } else {
        AGENT
    }
}

/// A small PNG, base64.
fn png(width: u32, height: u32) -> Vec<u8> {
    let image = image::RgbImage::from_fn(width, height, |x, _| image::Rgb([x as u8, 90, 200]));
    let mut out = std::io::Cursor::new(Vec::new());
    image.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `camera screen shot` returns what `screenshot` returns: a line naming the snapshot and the
/// image.
struct Camera {
    domain: Domain,
    image: String,
}

impl DomainTool for Camera {
    fn domain(&self) -> &Domain {
        &self.domain
    }
    fn facts(&self, _call: &Call) -> CallFacts {
        CallFacts {
            summary: "shot".into(),
            ..Default::default()
        }
    }
    fn run<'a>(&'a self, _ctx: &'a ToolContext, _call: Call) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            ToolResult {
                content: vec![
                    ContentBlock::Text {
                        text: "Snapshot s4 of the window \"Settings\" at 0,0; image 24x16".into(),
                    },
                    ContentBlock::Image {
                        mime_type: "image/png".into(),
                        data: self.image.clone(),
                    },
                ],
                ..Default::default()
            }
        })
    }
}

struct Fixture {
    dir: tempfile::TempDir,
    db: Database,
    registry: Registry,
    subagents: SubAgents,
    shot: String,
}

fn fixture(vision_model: Option<&'static str>) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_in(dir.path()).unwrap();
    let home = dir.path().join("home");
    let workspace = home.join("project");
    std::fs::create_dir_all(&workspace).unwrap();
    let paths = PathGuard::new(Some(home.clone()), dir.path().join("data"));
    let registry = Registry::new(RegistryConfig {
        safeguard: Safeguard::new(paths.clone()),
        ..RegistryConfig::new(Policy::at_level(Level::Allowlist), dir.path().join("data"))
    });
    let subagents = SubAgents::new(&db, SubAgentConfig::default());
    let files = FileTool::new(paths)
        .with_base_dir(&workspace)
        .with_workspaces(vec![workspace.clone()]);
    registry.register_domain(
        VisionTool::new(db.sessions(), subagents.clone(), files)
            .with_model(Arc::new(move || vision_model.map(String::from))),
    );
    let shot = b64(&png(24, 16));
    registry.register_domain(Camera {
        domain: Domain::new("camera", "Takes a screenshot").resource(
            "screen",
            &[],
            &[("shot", "Take one", ApprovalNeed::None)],
        ),
        image: shot.clone(),
    });
    Fixture {
        dir,
        db,
        registry,
        subagents,
        shot,
    }
}

fn runner(fx: &Fixture, wire: Wire, url: &str) -> Runner {
    wire.runner(url, &fx.registry, &fx.db, &fx.subagents, "chat-model", 5)
}

fn call(id: &'static str, name: &'static str, args: Value) -> ScriptCall {
    ScriptCall { id, name, args }
}

/// The camera takes a screenshot.
fn shot() -> ScriptCall {
    call(
        "call_shot",
        "camera",
        json!({"resource": "screen", "action": "shot"}),
    )
}

/// The text of the stored result of the session's vision call with `action` (Ollama's wire
/// has no call ids of its own, so they are not the script's).
fn result_text(fx: &Fixture, session: &str, action: &str) -> String {
    let calls = fx.db.sessions().tool_calls(session).unwrap();
    let call = calls
        .iter()
        .find(|c| c.name == "vision" && c.input["action"] == action)
        .unwrap_or_else(|| panic!("no vision {action} in {calls:?}"));
    call.result.as_ref().unwrap()["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn a_ui_review_of_a_screenshot_comes_back_as_a_structured_report_on_the_vision_model() {
    for wire in wire::ALL {
        let fx = fixture(Some("vision-model"));
        let report = json!({"summary": "The save button is clipped.", "findings": [
            {"severity": "minor", "category": "content", "description": "Typo: Sumbit",
             "location": "footer", "suggestion": "Submit"},
            {"severity": "major", "category": "layout", "description": "Save is clipped",
             "location": "bottom right", "suggestion": "Give the footer room"}]});
        let server = RoutedServer::start(
            who,
            vec![
                vec![
                    wire.turn("", &[shot()]),
                    wire.turn(
                        "",
                        &[call(
                            "call_qa",
                            "vision",
                            json!({"action": "ui_qa", "snapshot": "s4",
                                   "prompt": "the footer"}),
                        )],
                    ),
                    wire.turn("The footer needs work.", &[]),
                ],
                vec![wire.turn(&format!("Here is the report:\n{report}"), &[])],
            ],
        )
        .await;
        let outcome = runner(&fx, wire, &server.url)
            .run_turn(TurnRequest::new("main", "Check the settings window."))
            .await
            .unwrap();
        assert_eq!(outcome.text, "The footer needs work.", "{wire:?}");

        let result: Value = serde_json::from_str(&result_text(&fx, "main", "ui_qa")).unwrap();
        assert_eq!(result["structured"], true, "{wire:?}: {result}");
        assert_eq!(result["summary"], "The save button is clipped.");
        assert_eq!(result["findings"][0]["severity"], "major", "worst first");
        assert_eq!(result["findings"][0]["category"], "layout");
        assert_eq!(result["findings"][1]["description"], "Typo: Sumbit");
        assert_eq!(result["model"], "vision-model");
        assert_eq!(result["image"], "screen snapshot s4");
        assert!(result["when"].as_str().unwrap().ends_with('Z'));

        // The vision request: the vision model, the screenshot's bytes in the wire's own image
        // form, the focus, and no tools.
        let seen = server.seen(VISION);
        assert_eq!(seen.len(), 1, "{wire:?}");
        let body: Value = serde_json::from_str(&seen[0]).unwrap();
        assert_eq!(body["model"], "vision-model", "{wire:?}");
        assert!(
            seen[0].contains(&fx.shot),
            "{wire:?}: the image was not sent"
        );
        assert!(seen[0].contains("the footer"));
        assert!(offered_tools(&seen[0]).is_empty());
    }
}

#[tokio::test]
async fn a_review_in_prose_falls_back_to_free_text_and_analyze_answers_a_question() {
    let wire = Wire::OpenAi;
    let fx = fixture(None);
    let server = RoutedServer::start(
        who,
        vec![
            vec![
                wire.turn("", &[shot()]),
                wire.turn("", &[call("call_qa", "vision", json!({"action": "ui_qa"}))]),
                wire.turn(
                    "",
                    &[call(
                        "call_ask",
                        "vision",
                        json!({"action": "analyze", "question": "What colour is it?"}),
                    )],
                ),
                wire.turn("done", &[]),
            ],
            vec![
                wire.turn("It looks cramped, and the contrast is low.", &[]),
                wire.turn("Mostly blue.", &[]),
            ],
        ],
    )
    .await;
    runner(&fx, wire, &server.url)
        .run_turn(TurnRequest::new("main", "Look."))
        .await
        .unwrap();
    let qa: Value = serde_json::from_str(&result_text(&fx, "main", "ui_qa")).unwrap();
    assert_eq!(qa["structured"], false);
    assert_eq!(qa["report"], "It looks cramped, and the contrast is low.");
    assert_eq!(qa["findings"], json!([]));
    assert_eq!(qa["model"], "chat-model", "no vision model: the chat's own");
    assert_eq!(qa["image"], "the newest image in this conversation");

    let answer = result_text(&fx, "main", "analyze");
    assert!(answer.contains("Mostly blue."), "{answer}");
    assert!(answer.contains("not instructions"), "{answer}");
    assert!(server.seen(VISION)[1].contains("What colour is it?"));
}

#[tokio::test]
async fn image_files_are_read_as_file_read_reads_them() {
    let wire = Wire::Anthropic;
    let fx = fixture(None);
    let workspace = fx.dir.path().join("home/project");
    let picture = png(30, 20);
    std::fs::write(workspace.join("mock.png"), &picture).unwrap();
    let outside = fx.dir.path().join("home/Pictures");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("holiday.png"), png(8, 8)).unwrap();
    let ssh = fx.dir.path().join("home/.ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_ed25519.png"), png(8, 8)).unwrap();

    let server = RoutedServer::start(who, vec![vec![], vec![wire.turn("A gradient.", &[])]]).await;
    let _runner = runner(&fx, wire, &server.url);
    let denier = Arc::new(FixedApprover::new(ApprovalAnswer::Deny));
    let ctx = ToolContext::new(Origin::User, Duration::from_secs(30))
        .with_session("main")
        .with_approver(denier.clone());
    let look = |path: &str| {
        let registry = fx.registry.clone();
        let ctx = ctx.clone();
        let input = json!({"action": "analyze", "path": path});
        async move { registry.execute(&ctx, "vision", input).await }
    };

    // In the workspace (relative to it): read unasked, sent as it is.
    let inside = look("mock.png").await;
    assert!(!inside.is_error, "{inside:?}");
    assert!(inside.text_content().contains("A gradient."));
    assert!(server.seen(VISION)[0].contains(&b64(&picture)));
    assert!(denier.asked().is_empty());

    // Outside the workspace folders: asked, as file read asks; denied here.
    let elsewhere = look("~/Pictures/holiday.png").await;
    assert!(elsewhere.is_error);
    assert_eq!(denier.asked().len(), 1);
    assert!(
        denier.asked()[0].summary.contains("holiday.png"),
        "{:?}",
        denier.asked()[0]
    );

    // A secret folder: refused by the safeguard before anyone is asked.
    let secret = look("~/.ssh/id_ed25519.png").await;
    assert!(secret.is_error);
    assert_eq!(
        denier.asked().len(),
        1,
        "the safeguard refuses without asking"
    );

    // Without an image in the conversation and without a path: a clear error.
    let none = fx
        .registry
        .execute(
            &ctx.clone().with_session("empty"),
            "vision",
            json!({"action": "analyze"}),
        )
        .await;
    assert!(none.is_error);
    assert!(
        none.text_content()
            .contains("no image in this conversation")
    );
    assert_eq!(
        server.seen(VISION).len(),
        1,
        "nothing else reached the model"
    );
}
