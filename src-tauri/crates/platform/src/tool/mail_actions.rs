//! The `mail` resource of the `os` tool: the table rows, the facts a person judges (sending is
//! asked every time, whatever the policy), and the calls routed to [`crate::mail::Mail`].

use std::path::Path;

use osprey_tools::{ApprovalNeed, Call, CallFacts, Domain, FieldType};
use osprey_types::ToolResult;
use serde_json::Value;

use super::{OsTool, int, strings, text};
use crate::error::{Error, Result};
use crate::mail::{Attachment, Outgoing, Page, Search};

/// The most bytes of files one message carries.
const MAX_ATTACHMENT_BYTES: u64 = 25 << 20;

/// The resource's actions. Reading mail is private data and sending speaks for the person:
/// every action needs approval, and send and reply are asked every time (see [`facts`]).
pub(super) fn resource(domain: Domain) -> Domain {
    use ApprovalNeed::Required;
    domain.resource(
        "mail",
        &["email", "inbox", "imap", "smtp"],
        &[
            (
                "folders",
                "Folders with message and unseen counts",
                Required,
            ),
            (
                "list",
                "Newest messages of folder: message uid, date, from, subject, flags",
                Required,
            ),
            (
                "search",
                "Messages whose sender, subject or body has query words; since, before",
                Required,
            ),
            (
                "read",
                "One message by uid: headers, text, attachments; offset pages a long body",
                Required,
            ),
            (
                "send",
                "Send text to to/cc with subject, files attached",
                Required,
            ),
            (
                "reply",
                "Reply to message with text (reply_all: everyone)",
                Required,
            ),
        ],
    )
}

/// The resource's own fields (shared ones, `text`, `query`, `limit`, `files`, are in the table
/// already and marked required here).
pub(super) fn fields(domain: Domain) -> Domain {
    domain
        .also_required_for("text", &["mail.send", "mail.reply"])
        .field("folder", FieldType::String, "mail: folder (default INBOX)")
        .field(
            "message",
            FieldType::Integer,
            "mail read, reply: the message's uid, from list or search",
        )
        .required_for(&["mail.read", "mail.reply"])
        .field(
            "page",
            FieldType::Integer,
            "mail list/search: page, 1 is newest",
        )
        .field(
            "since",
            FieldType::String,
            "mail search: received on or after YYYY-MM-DD",
        )
        .field(
            "before",
            FieldType::String,
            "mail search: received before YYYY-MM-DD",
        )
        .field(
            "offset",
            FieldType::Integer,
            "mail read: body character to start at",
        )
        .field(
            "mark_seen",
            FieldType::Boolean,
            "mail read: mark it seen (default: left as it was)",
        )
        .field(
            "to",
            FieldType::Array(Box::new(FieldType::String)),
            "mail send: addresses",
        )
        .required_for(&["mail.send"])
        .field(
            "cc",
            FieldType::Array(Box::new(FieldType::String)),
            "mail send: copy to",
        )
        .field("subject", FieldType::String, "mail send: subject")
        .required_for(&["mail.send"])
        .field("reply_all", FieldType::Boolean, "mail reply: to everyone")
}

/// What a person is shown and what the safeguard checks; sending is asked every time.
pub(super) fn facts(call: &Call, facts: &mut CallFacts) {
    for key in [
        "account", "folder", "message", "to", "cc", "subject", "since", "before",
    ] {
        if let Some(value) = call.input.get(key).filter(|v| !v.is_null()) {
            let shown = match value {
                Value::String(s) => format!("{:?}", s.chars().take(80).collect::<String>()),
                Value::Array(items) => items
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", "),
                other => other.to_string(),
            };
            facts.summary.push_str(&format!(" {key} {shown}"));
        }
    }
    if call.bool("reply_all") == Some(true) {
        facts.summary.push_str(" (to everyone)");
    }
    if matches!(call.action(), "send" | "reply") {
        if let Some(body) = call.str("text") {
            let short: String = body.chars().take(120).collect();
            facts.summary.push_str(&format!(" text {short:?}"));
        }
        facts.ask_every_time =
            Some("mail goes out in the person's name, so sending is asked every time".into());
        facts
            .read_paths
            .extend(strings(call, "files").into_iter().map(Into::into));
    }
}

/// A file's MIME type from its extension.
fn content_type(path: &Path) -> &'static str {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    match extension.as_str() {
        "txt" | "log" | "md" => "text/plain",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "zip" => "application/zip",
        "gz" => "application/gzip",
        "json" => "application/json",
        "xml" => "application/xml",
        "ics" => "text/calendar",
        "vcf" => "text/vcard",
        "doc" => "application/msword",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xls" => "application/vnd.ms-excel",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "ppt" => "application/vnd.ms-powerpoint",
        "pptx" => "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "odt" => "application/vnd.oasis.opendocument.text",
        "ods" => "application/vnd.oasis.opendocument.spreadsheet",
        "mp3" => "audio/mpeg",
        "wav" => "audio/wav",
        "ogg" => "audio/ogg",
        "mp4" => "video/mp4",
        _ => "application/octet-stream",
    }
}

impl OsTool {
    /// The files to attach, read through the same path guard as the `file` tool's reads.
    async fn attachments(&self, call: &Call) -> Result<Vec<Attachment>> {
        let mut total = 0u64;
        let mut out = Vec::new();
        for given in strings(call, "files") {
            let path = self.check_path(&given, false)?;
            let meta = tokio::fs::metadata(&path)
                .await
                .map_err(|e| Error::invalid(format!("attachment {}: {e}", path.display())))?;
            if !meta.is_file() {
                return Err(Error::invalid(format!(
                    "attachment {} is not a file",
                    path.display()
                )));
            }
            total += meta.len();
            if total > MAX_ATTACHMENT_BYTES {
                return Err(Error::invalid(format!(
                    "the attachments come to more than {} MB, more than most servers take; \
                     share large files another way",
                    MAX_ATTACHMENT_BYTES >> 20
                )));
            }
            let bytes = tokio::fs::read(&path)
                .await
                .map_err(|e| Error::invalid(format!("reading {}: {e}", path.display())))?;
            out.push(Attachment {
                name: path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "attachment".into()),
                content_type: content_type(&path).into(),
                bytes,
            });
        }
        Ok(out)
    }

    pub(super) async fn mail(&self, call: &Call) -> Result<ToolResult> {
        let account = &self.mail.resolve(call.str("account")).await?;
        let folder = call
            .str("folder")
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .unwrap_or("INBOX");
        if folder.len() > 500 || folder.chars().any(char::is_control) {
            return Err(Error::invalid("`folder` must be a folder name on one line"));
        }
        let page = Page {
            limit: int(call, "limit").unwrap_or(20).clamp(1, 100) as usize,
            page: int(call, "page").unwrap_or(1).clamp(1, 1_000_000) as usize,
        };
        let uid = || {
            int(call, "message")
                .and_then(|u| u32::try_from(u).ok())
                .filter(|u| *u > 0)
                .ok_or_else(|| {
                    Error::invalid("`message` must be a message uid from mail list or search")
                })
        };
        let body = || {
            call.input
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        match call.action() {
            "folders" => text(self.mail.folders(account).await?),
            "list" => text(self.mail.list(account, folder, page).await?),
            "search" => {
                let search = Search {
                    query: call.str("query").map(str::to_string),
                    since: call.str("since").map(str::to_string),
                    before: call.str("before").map(str::to_string),
                };
                text(self.mail.search(account, folder, &search, page).await?)
            }
            "read" => {
                let offset = int(call, "offset").unwrap_or(0).max(0) as usize;
                let mark_seen = call.bool("mark_seen").unwrap_or(false);
                text(
                    self.mail
                        .read(account, folder, uid()?, offset, mark_seen)
                        .await?,
                )
            }
            "send" => {
                let outgoing = Outgoing {
                    to: strings(call, "to"),
                    cc: strings(call, "cc"),
                    subject: call.str("subject").unwrap_or_default().trim().to_string(),
                    text: body(),
                    attachments: self.attachments(call).await?,
                };
                text(self.mail.send(account, outgoing).await?)
            }
            "reply" => {
                let uid = uid()?;
                let attachments = self.attachments(call).await?;
                let reply_all = call.bool("reply_all").unwrap_or(false);
                text(
                    self.mail
                        .reply(account, folder, uid, reply_all, body(), attachments)
                        .await?,
                )
            }
            other => Err(Error::invalid(format!("unknown mail action {other}"))),
        }
    }
}
