//! The system prompt, built from named sections so hooks (and later skills and memory) can add,
//! drop or rewrite them.

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

/// The built-in sections in order: identity, tools, then the places skills and memory will fill
/// (empty until those exist, and empty sections are left out of the prompt).
pub fn default_sections(identity: &str, tools: &[ToolSpec]) -> Vec<Section> {
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
    vec![
        Section::new("identity", identity),
        Section::new("tools", tool_text.trim_end()),
        Section::new("skills", ""),
        Section::new("memory", ""),
    ]
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
    }
}
