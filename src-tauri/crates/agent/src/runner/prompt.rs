//! The system prompt, built from named sections in this order: `identity`, `tools`, `apps` (the
//! installed apps, one line each, supplied by core), `skills` (the session's active skills),
//! `memory` (what is remembered that bears on the message). The `prompt.system_sections` hook
//! sees them all and may add, drop or rewrite any.

use osprey_db::{Memory, MemoryLayer, MemoryQuery, MemoryRow};
use serde::{Deserialize, Serialize};

use crate::message::ToolSpec;

/// One named section of the system prompt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Section {
    pub name: String,
    pub text: String,
}

impl Section {
    pub fn new(name: &str, text: impl Into<String>) -> Self {
        Section {
            name: name.to_string(),
            text: text.into(),
        }
    }
}

/// The built-in sections with nothing in apps, skills and memory.
pub fn default_sections(identity: &str, tools: &[ToolSpec]) -> Vec<Section> {
    sections(identity, tools, "", "", "")
}

/// The built-in sections in order (empty sections are left out of the rendered prompt).
pub fn sections(
    identity: &str,
    tools: &[ToolSpec],
    apps: &str,
    skills: &str,
    memory: &str,
) -> Vec<Section> {
    let mut tool_text = String::new();
    if !tools.is_empty() {
        tool_text.push_str(
            "You can call these tools. Each domain tool takes `resource` and `action`; errors come \
             back as results you can act on, and some calls need the person's approval.\n",
        );
        for tool in tools {
            let first_line = tool.description.lines().next().unwrap_or_default();
            tool_text.push_str(&format!("- {}: {first_line}\n", tool.name));
        }
    }
    let skills = if skills.trim().is_empty() {
        String::new()
    } else {
        format!(
            "# Active skills\nFollow these instructions where they apply to the task.\n\n{skills}"
        )
    };
    vec![
        Section::new("identity", identity),
        Section::new("tools", tool_text.trim_end()),
        Section::new("apps", apps.trim_end()),
        Section::new("skills", skills),
        Section::new("memory", memory.trim_end()),
    ]
}

/// How much memory the prompt carries.
#[derive(Clone, Copy, Debug)]
pub struct MemoryBudget {
    /// Tacit memories (lasting facts and preferences), most recently updated first.
    pub tacit: u32,
    /// Memories recalled by full-text search on the person's message.
    pub recalled: u32,
    /// Characters of memory in all (each memory is cut to a quarter of it at most).
    pub chars: usize,
}

/// The tacit memories (lasting facts and preferences) to keep in mind: most important, then
/// most used, then newest. Storage errors give none (logged): a prompt without memory beats no
/// turn.
pub fn tacit_memories(memory: &Memory, limit: u32) -> Vec<String> {
    memory
        .top(&MemoryQuery {
            layer: Some(MemoryLayer::Tacit),
            limit: Some(limit),
            ..MemoryQuery::default()
        })
        .map(|rows| rows.into_iter().map(|m| m.content).collect())
        .unwrap_or_else(|error| {
            tracing::warn!(%error, "cannot list tacit memories for the prompt");
            Vec::new()
        })
}

/// Linked memories a recall brings along, at most.
const RECALLED_ASSOCIATIONS: u32 = 3;

/// Memories matching `message` by full-text search (common words left out), best first, other
/// than those in `shown`; then up to three memories linked to them (one hop), marked as such.
pub fn recalled_memories(
    memory: &Memory,
    message: &str,
    limit: u32,
    shown: &[String],
) -> Vec<String> {
    let query = recall_query(message);
    if limit == 0 || query.is_empty() {
        return Vec::new();
    }
    let hits: Vec<MemoryRow> = memory
        .search(
            &query,
            &MemoryQuery {
                limit: Some(limit + shown.len() as u32),
                ..MemoryQuery::default()
            },
        )
        .unwrap_or_else(|error| {
            tracing::warn!(%error, "cannot search memories for the prompt");
            Vec::new()
        })
        .into_iter()
        .map(|hit| hit.memory)
        .filter(|row| !shown.contains(&row.content))
        .take(limit as usize)
        .collect();
    let ids: Vec<i64> = hits.iter().map(|row| row.id).collect();
    let linked = memory
        .associations(&ids, RECALLED_ASSOCIATIONS)
        .unwrap_or_else(|error| {
            tracing::warn!(%error, "cannot follow memory links for the prompt");
            Vec::new()
        });
    let mut recalled: Vec<String> = hits.into_iter().map(|row| row.content).collect();
    recalled.extend(
        linked
            .into_iter()
            .filter(|a| !shown.contains(&a.memory.content))
            .map(|a| format!("(linked, {}) {}", a.relation, a.memory.content)),
    );
    recalled
}

/// The `memory` section: tacit facts, then memories matching `message`, within `budget`.
pub fn memory_section(memory: &Memory, message: &str, budget: MemoryBudget) -> String {
    let tacit = tacit_memories(memory, budget.tacit);
    let recalled = recalled_memories(memory, message, budget.recalled, &tacit);
    memory_text(&tacit, &recalled, budget.chars)
}

/// Words too common to say what a message is about.
const STOP_WORDS: &[&str] = &[
    "a", "about", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but",
    "by", "can", "could", "did", "do", "does", "for", "from", "get", "had", "has", "have", "he",
    "her", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just", "me", "my", "no",
    "not", "now", "of", "on", "or", "our", "please", "she", "so", "some", "that", "the", "their",
    "them", "then", "there", "these", "they", "this", "to", "up", "us", "was", "we", "were",
    "what", "when", "where", "which", "who", "why", "will", "with", "would", "you", "your",
];

/// The message's words minus the common ones: the memory search ORs its terms, so a `the` would
/// match nearly every memory.
pub fn recall_query(message: &str) -> String {
    message
        .split(|c: char| !c.is_alphanumeric() && c != '.' && c != '-' && c != '_')
        .map(|w| w.trim_matches(['.', '-', '_']))
        .filter(|w| w.chars().count() > 1)
        .filter(|w| !STOP_WORDS.contains(&w.to_lowercase().as_str()))
        .take(32)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The section's text from tacit and recalled contents, within `chars`.
pub fn memory_text(tacit: &[String], recalled: &[String], chars: usize) -> String {
    let per_item = (chars / 4).max(80);
    let mut left = chars;
    let mut take = |items: &[String]| -> Vec<String> {
        let mut lines = Vec::new();
        for item in items {
            let one_line: String = item.split_whitespace().collect::<Vec<_>>().join(" ");
            let mut line: String = one_line.chars().take(per_item).collect();
            if line.len() < one_line.len() {
                line.push('…');
            }
            let cost = line.chars().count() + 3;
            if cost > left {
                break;
            }
            left -= cost;
            lines.push(format!("- {line}"));
        }
        lines
    };
    let tacit = take(tacit);
    let recalled = take(recalled);
    if tacit.is_empty() && recalled.is_empty() {
        return String::new();
    }
    let mut text = String::from("# Memory\n");
    if !tacit.is_empty() {
        text.push_str("Lasting facts and preferences:\n");
        text.push_str(&tacit.join("\n"));
        text.push('\n');
    }
    if !recalled.is_empty() {
        text.push_str("Remembered, and possibly relevant to this message:\n");
        text.push_str(&recalled.join("\n"));
        text.push('\n');
    }
    text
}

/// The prompt text: non-empty sections separated by blank lines.
pub fn render(sections: &[Section]) -> String {
    sections
        .iter()
        .map(|s| s.text.trim())
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn empty_sections_are_left_out_and_tools_are_listed() {
        let tools = vec![ToolSpec {
            name: "file".into(),
            description: "Read and write files\nmore detail".into(),
            input_schema: json!({}),
        }];
        let text = render(&default_sections("You are Osprey.", &tools));
        assert!(text.starts_with("You are Osprey.\n\n"), "{text}");
        assert!(
            text.contains("- file: Read and write files\n")
                || text.ends_with("- file: Read and write files")
        );
        assert!(!text.contains("more detail"));
        assert_eq!(render(&default_sections("Me.", &[])), "Me.");
        let names: Vec<String> = sections("Me.", &tools, "apps", "skill", "memory")
            .into_iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(names, ["identity", "tools", "apps", "skills", "memory"]);
    }

    #[test]
    fn recall_queries_leave_out_common_words() {
        assert_eq!(
            recall_query("Where is the staging server? It's at 10.1.2.3."),
            "staging server 10.1.2.3"
        );
        assert_eq!(recall_query("what is it?"), "");
    }

    #[test]
    fn memory_text_stays_within_its_budget() {
        let tacit = vec!["The person is called Ada".to_string()];
        let recalled = vec!["x".repeat(1000), "short one".to_string()];
        let text = memory_text(&tacit, &recalled, 400);
        assert!(text.contains("- The person is called Ada"), "{text}");
        assert!(text.contains("- short one"), "{text}");
        assert!(text.contains('…'));
        assert!(text.chars().count() < 400 + 120, "{}", text.len());
        assert_eq!(memory_text(&[], &[], 400), "");
    }
}
