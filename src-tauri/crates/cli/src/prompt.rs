//! Approval questions on the terminal: `y` (once), `N` (no, the default), `a` (always for this
//! session). Questions go to stderr so stdout stays the tool's output; answers come from stdin,
//! so scripts can pipe them. End of input counts as no.

use std::io::{BufRead, Write};
use std::sync::Mutex;

use futures::future::BoxFuture;
use osprey_tools::Approver;
use osprey_types::{ApprovalAnswer, ApprovalRequest};

/// One question at a time, even when calls run in parallel.
static TERMINAL: Mutex<()> = Mutex::new(());

#[derive(Debug, Clone, Copy)]
pub struct TerminalApprover;

impl Approver for TerminalApprover {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'static, ApprovalAnswer> {
        Box::pin(async move {
            tokio::task::spawn_blocking(move || ask_blocking(&request))
                .await
                .unwrap_or(ApprovalAnswer::Deny)
        })
    }
}

fn ask_blocking(request: &ApprovalRequest) -> ApprovalAnswer {
    let _turn = TERMINAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut err = std::io::stderr().lock();
    let what = [
        Some(request.tool.as_str()),
        request.resource.as_deref(),
        request.action.as_deref(),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" ");
    let _ = writeln!(
        err,
        "\nApproval needed ({what}, origin {}):\n  {}",
        request.origin, request.summary
    );
    if let Some(details) = &request.details {
        let _ = write!(err, "{}", details_text(details));
    }
    if request.once_only {
        let _ = write!(err, "Allow this once? [y] yes, [N] no: ");
    } else {
        let _ = write!(err, "Allow? [y] once, [a] always this session, [N] no: ");
    }
    let _ = err.flush();
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => {
            let _ = writeln!(err, "(no answer: denied)");
            ApprovalAnswer::Deny
        }
        Ok(_) => parse_answer(&line),
    }
}

/// What an install's question shows besides its summary: version, publisher, signer, each
/// permission in plain words, files and notes, one per line.
fn details_text(details: &osprey_types::ApprovalDetails) -> String {
    let mut text = format!("  {}\n", details.title);
    if let Some(publisher) = &details.publisher {
        let label = if details.kind == "skill" {
            "Author"
        } else {
            "Publisher"
        };
        text.push_str(&format!("  {label}: {publisher}\n"));
    }
    if let Some(signer) = &details.signer {
        text.push_str(&format!("  Signed by: {signer}\n"));
    }
    if details.kind == "app" {
        if details.permissions.is_empty() {
            text.push_str("  Permissions: none\n");
        } else {
            text.push_str("  Permissions:\n");
            for permission in &details.permissions {
                text.push_str(&format!(
                    "    - {} ({})\n",
                    permission.explanation, permission.permission
                ));
            }
        }
    }
    if !details.files.is_empty() {
        text.push_str(&format!("  Files: {}\n", details.files.join(", ")));
    }
    for note in &details.notes {
        text.push_str(&format!("  {note}\n"));
    }
    text
}

fn parse_answer(line: &str) -> ApprovalAnswer {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => ApprovalAnswer::Once,
        "a" | "always" => ApprovalAnswer::AlwaysThisSession,
        _ => ApprovalAnswer::Deny,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse_with_no_as_the_default() {
        assert_eq!(parse_answer("y\n"), ApprovalAnswer::Once);
        assert_eq!(parse_answer(" YES "), ApprovalAnswer::Once);
        assert_eq!(parse_answer("a"), ApprovalAnswer::AlwaysThisSession);
        assert_eq!(parse_answer("\n"), ApprovalAnswer::Deny);
        assert_eq!(parse_answer("n"), ApprovalAnswer::Deny);
        assert_eq!(parse_answer("sure"), ApprovalAnswer::Deny);
    }

    #[test]
    fn an_install_question_lists_the_publisher_signer_and_permissions_in_words() {
        let details = osprey_types::ApprovalDetails {
            title: "Install the app Units 1.0.0 from the store".into(),
            kind: "app".into(),
            name: "Units".into(),
            id: "com.example.units".into(),
            version: Some("1.0.0".into()),
            publisher: Some("Acme Apps".into()),
            signer: Some("the store at http://127.0.0.1:8787, which signs ... key 3f1c".into()),
            permissions: osprey_apps::permissions::explained(&["network:api.example.com".into()]),
            files: vec![],
            notes: vec!["It runs in Osprey's app sandbox.".into()],
        };
        let text = details_text(&details);
        assert!(
            text.contains("  Install the app Units 1.0.0 from the store\n"),
            "{text}"
        );
        assert!(text.contains("  Publisher: Acme Apps\n"), "{text}");
        assert!(
            text.contains("  Signed by: the store at http://127.0.0.1:8787"),
            "{text}"
        );
        assert!(
            text.contains(
                "    - Connect to api.example.com over the internet (network:api.example.com)\n"
            ),
            "{text}"
        );
        let skill = osprey_types::ApprovalDetails {
            kind: "skill".into(),
            files: vec!["SKILL.md".into(), "scripts/run.py".into()],
            ..details
        };
        let text = details_text(&skill);
        assert!(
            text.contains("  Author: Acme Apps\n") && !text.contains("Permissions"),
            "{text}"
        );
        assert!(
            text.contains("  Files: SKILL.md, scripts/run.py\n"),
            "{text}"
        );
    }
}
