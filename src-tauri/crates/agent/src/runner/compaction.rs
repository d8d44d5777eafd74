//! Context management: the conversation as the runner holds it (each message with the highest
//! stored `seq` it covers), dropping old screenshots, choosing where to cut for a summary, and
//! the summarization request.
//!
//! A compaction is persisted as one message row with role [`SUMMARY_ROLE`] whose content is one
//! text part with an extra field, `[{"type": "text", "text": "[Summary of ...]\n...",
//! "through_seq": n}]` (so readers that know nothing of summaries still parse it and show the
//! text): the summary replaces every stored message up to `n`.
//! Loading a session starts from its latest summary row, so a reloaded session sees what the
//! model saw; the older rows stay in the database (history and audit are never rewritten).
//! Dropped screenshots are not persisted: the same rule runs again on the reloaded history.

use osprey_types::ContentBlock;

use crate::message::{Message, Part, Role};

/// The role of a stored summary row.
pub const SUMMARY_ROLE: &str = "summary";
/// How the summary starts in the conversation the model sees.
pub const SUMMARY_HEADING: &str = "[Summary of the earlier conversation]";
/// What a dropped screenshot becomes.
pub const IMAGE_DROPPED: &str =
    "[image removed to save context: only the newest screenshot is kept; take a new one if needed]";
/// The instructions of the summarization request.
pub const SUMMARY_INSTRUCTIONS: &str = "You summarize the earlier part of a conversation between a \
    person and Osprey, an AI agent on their desktop, so the agent can continue without it. Keep: \
    what the person asked for and still wants, decisions and preferences they stated, facts \
    learned (names, paths, ids, numbers, URLs), what was done with which tools and what came of \
    it, and what is still open. Leave out pleasantries and anything superseded. Write compact \
    notes in the person's language, at most about 400 words. Answer with the summary only.";
/// Each part of the transcript handed to the summarizer is cut to this many characters.
const PART_CHARS: usize = 2_000;

/// The conversation as the runner holds it.
#[derive(Clone, Debug, Default)]
pub struct Transcript {
    pub messages: Vec<Message>,
    /// For each message, the highest stored `seq` it holds (a merged message holds several).
    pub seqs: Vec<i64>,
}

impl Transcript {
    /// Appends `message`, merging it into the last one when both have the same role (after a
    /// failed or cut-off turn two user messages can follow each other; not every provider
    /// accepts that).
    pub fn push(&mut self, message: Message, seq: i64) {
        match self.messages.last_mut() {
            Some(last) if last.role == message.role => {
                last.content.extend(message.content);
                if let Some(last_seq) = self.seqs.last_mut() {
                    *last_seq = (*last_seq).max(seq);
                }
            }
            _ => {
                self.messages.push(message);
                self.seqs.push(seq);
            }
        }
    }

    /// Replaces everything before `cut` with the summary message.
    pub fn replace_head(&mut self, cut: usize, summary: &str) {
        let through = self.seqs[cut - 1];
        let rest_messages = self.messages.split_off(cut);
        let rest_seqs = self.seqs.split_off(cut);
        self.messages.clear();
        self.seqs.clear();
        self.push(summary_message(summary), through);
        for (message, seq) in rest_messages.into_iter().zip(rest_seqs) {
            self.push(message, seq);
        }
    }
}

/// The user message a summary becomes.
pub fn summary_message(summary: &str) -> Message {
    Message::user_text(format!("{SUMMARY_HEADING}\n{}", summary.trim()))
}

/// Replaces the images of every tool result but the newest with a note; returns how many went.
/// The person's own pictures stay.
pub fn drop_old_images(messages: &mut [Message]) -> usize {
    let mut kept_newest = false;
    crate::images::leave_out_images(messages, IMAGE_DROPPED, |_, from_tool| {
        !from_tool || !std::mem::replace(&mut kept_newest, true)
    })
}

/// Where a turn starts: a user message that answers no tool call.
fn is_turn_start(message: &Message) -> bool {
    message.role == Role::User
        && !message
            .content
            .iter()
            .any(|p| matches!(p, Part::ToolResult { .. }))
}

/// Indexes where the history may be cut without parting a tool call from its result: a turn's
/// start, or an assistant message (its calls' results follow it; the previous call/result pair
/// lies wholly before it). Never 0.
pub fn safe_cuts(messages: &[Message]) -> Vec<usize> {
    (1..messages.len())
        .filter(|&i| messages[i].role == Role::Assistant || is_turn_start(&messages[i]))
        .collect()
}

/// Where to cut: keep the last `keep_turns` turns verbatim; if what is kept still does not fit
/// (`fits(cut)` false), cut later at a safe point, at the latest keeping the last two messages.
/// `None` when nothing can be summarized.
pub fn choose_cut(
    messages: &[Message],
    keep_turns: usize,
    fits: impl Fn(usize) -> bool,
) -> Option<usize> {
    let cuts = safe_cuts(messages);
    let turn_starts: Vec<usize> = cuts
        .iter()
        .copied()
        .filter(|&i| is_turn_start(&messages[i]))
        .collect();
    let by_turns = if turn_starts.len() >= keep_turns.max(1) {
        turn_starts[turn_starts.len() - keep_turns.max(1)]
    } else {
        0
    };
    let latest = messages.len().saturating_sub(2);
    let candidates: Vec<usize> = cuts
        .into_iter()
        .filter(|&i| i >= by_turns && i <= latest.max(by_turns))
        .collect();
    candidates
        .iter()
        .copied()
        .find(|&cut| fits(cut))
        .or_else(|| candidates.last().copied())
        .filter(|&cut| cut > 0)
}

/// The older messages as a plain transcript for the summarizer (tool calls and results as short
/// lines, images left out), within `max_chars` (the oldest part goes first when it is too long).
pub fn transcript_text(messages: &[Message], max_chars: usize) -> String {
    let cut = |text: &str| -> String {
        let mut out: String = text.chars().take(PART_CHARS).collect();
        if out.len() < text.len() {
            out.push_str(" […]");
        }
        out
    };
    let mut lines = Vec::new();
    for message in messages {
        let speaker = match message.role {
            Role::User => "Person",
            Role::Assistant => "Osprey",
        };
        for part in &message.content {
            let line = match part {
                Part::Text { text } if text.starts_with(SUMMARY_HEADING) => {
                    format!("Earlier summary: {}", cut(&text[SUMMARY_HEADING.len()..]))
                }
                Part::Text { text } => format!("{speaker}: {}", cut(text)),
                Part::Image { .. } => format!("{speaker}: [an image]"),
                Part::Thinking { .. } => continue,
                Part::ToolCall { name, input, .. } => {
                    format!("Osprey called {name} {}", cut(&input.to_string()))
                }
                Part::ToolResult {
                    content, is_error, ..
                } => {
                    let text: Vec<String> = content
                        .iter()
                        .map(|b| match b {
                            ContentBlock::Text { text } => cut(text),
                            ContentBlock::Image { .. } => "[an image]".into(),
                        })
                        .collect();
                    let kind = if *is_error { "error" } else { "result" };
                    format!("Tool {kind}: {}", text.join(" "))
                }
            };
            lines.push(line);
        }
    }
    let mut text = lines.join("\n");
    let chars = text.chars().count();
    if chars > max_chars {
        let skip = chars - max_chars;
        let start = text.char_indices().nth(skip).map_or(0, |(i, _)| i);
        text = format!("[the oldest part is left out]\n{}", &text[start..]);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn image() -> ContentBlock {
        ContentBlock::Image {
            mime_type: "image/png".into(),
            data: "AAAA".into(),
        }
    }

    fn call(id: &str) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![Part::ToolCall {
                id: id.into(),
                name: "shot".into(),
                input: json!({}),
            }],
        }
    }

    fn result(id: &str, blocks: Vec<ContentBlock>) -> Message {
        Message {
            role: Role::User,
            content: vec![Part::ToolResult {
                call_id: id.into(),
                content: blocks,
                is_error: false,
            }],
        }
    }

    #[test]
    fn only_the_newest_tool_image_survives() {
        // The person's own picture is theirs to keep, however old.
        let ContentBlock::Image { mime_type, data } = image() else {
            panic!()
        };
        let mut messages = vec![
            Message {
                role: Role::User,
                content: vec![
                    Part::Image { mime_type, data },
                    Part::Text {
                        text: "look".into(),
                    },
                ],
            },
            call("a"),
            result("a", vec![image()]),
            call("b"),
            result("b", vec![image(), image()]),
            Message::assistant_text("done"),
        ];
        assert_eq!(drop_old_images(&mut messages), 2);
        assert!(matches!(messages[0].content[0], Part::Image { .. }));
        let Part::ToolResult { content, .. } = &messages[4].content[0] else {
            panic!()
        };
        assert!(matches!(content[1], ContentBlock::Image { .. }));
        assert!(matches!(&content[0], ContentBlock::Text { text } if text == IMAGE_DROPPED));
        assert_eq!(drop_old_images(&mut messages), 0);
    }

    #[test]
    fn cuts_never_part_a_call_from_its_result() {
        let messages = vec![
            Message::user_text("one"),
            call("a"),
            result("a", vec![]),
            Message::assistant_text("done one"),
            Message::user_text("two"),
            call("b"),
            result("b", vec![]),
            Message::assistant_text("done two"),
        ];
        assert_eq!(safe_cuts(&messages), [1, 3, 4, 5, 7]);
        // Keep one turn: cut where turn two starts.
        assert_eq!(choose_cut(&messages, 1, |_| true), Some(4));
        // Keep two turns when there are only two: cut as little as fits.
        assert_eq!(choose_cut(&messages, 2, |_| true), Some(1));
        // Too big even with one turn: cut later, never past the last two messages.
        assert_eq!(choose_cut(&messages, 1, |cut| cut >= 5), Some(5));
        assert_eq!(choose_cut(&messages, 1, |_| false), Some(5));
        assert_eq!(choose_cut(&messages[..1], 1, |_| true), None);
    }

    #[test]
    fn the_transcript_is_plain_and_capped() {
        let messages = vec![
            summary_message("they like tea"),
            Message::user_text("hello"),
            call("a"),
            result("a", vec![image()]),
        ];
        let text = transcript_text(&messages, 10_000);
        assert!(text.starts_with("Earlier summary:"), "{text}");
        assert!(text.contains("they like tea"));
        assert!(text.contains("Person: hello"));
        assert!(text.contains("Osprey called shot {}"));
        assert!(text.contains("Tool result: [an image]"));
        let capped = transcript_text(&messages, 20);
        assert!(capped.starts_with("[the oldest part is left out]"));
    }

    #[test]
    fn replacing_the_head_keeps_seqs() {
        let mut transcript = Transcript::default();
        for (i, m) in [
            Message::user_text("one"),
            Message::assistant_text("a"),
            Message::user_text("two"),
            Message::assistant_text("b"),
        ]
        .into_iter()
        .enumerate()
        {
            transcript.push(m, i as i64 + 1);
        }
        transcript.replace_head(2, "summary");
        // The summary (through seq 2) merges with the next user message (seq 3).
        assert_eq!(transcript.messages.len(), 2);
        assert_eq!(transcript.seqs, [3, 4]);
        assert!(transcript.messages[0].text().starts_with(SUMMARY_HEADING));
    }
}
