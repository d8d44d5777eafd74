//! The SKILL.md front matter, as the agent's skill loader and the skill store both read it (the
//! Agent Skills format: `name` and `description` required; `license`, `compatibility`,
//! `metadata` (a map of strings: `author`, `version`, ...) and `allowed-tools` optional; Osprey
//! adds `triggers`). Pure text in, data out: no I/O.
//!
//! The front matter is parsed by hand rather than with a YAML crate: Osprey reads a few keys
//! (strings, a list of strings, a map of strings), `serde_yaml` is deprecated and its forks are
//! young, and a full YAML parser is more attack surface and start-up cost than this needs. The
//! subset understood: `key: value` with plain, single- or double-quoted values; `>` / `|` block
//! scalars; lists in flow (`[a, "b, c"]`) or block (`- a`) style; a map of strings in block
//! (indented `key: value` lines) or flow (`{a: b}`) style; `#` comments. Other keys are ignored.

use std::collections::BTreeMap;

/// The file every skill folder holds.
pub const SKILL_FILE: &str = "SKILL.md";
/// The Agent Skills limits on `name` and `description`, in characters.
pub const MAX_NAME_CHARS: usize = 64;
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// What a SKILL.md's front matter says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SkillFrontmatter {
    pub name: Option<String>,
    pub description: Option<String>,
    /// Osprey's: phrases that put the skill in the prompt.
    pub triggers: Vec<String>,
    pub license: Option<String>,
    pub compatibility: Option<String>,
    /// `metadata`: string keys to string values (`author`, `version`, ...).
    pub metadata: BTreeMap<String, String>,
}

/// Splits a SKILL.md into its frontmatter and body. A file without frontmatter has an empty one.
pub fn parse(text: &str) -> Result<(SkillFrontmatter, &str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return Ok((SkillFrontmatter::default(), text));
    };
    let mut offset = 0;
    let mut end = None;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" || line.trim_end() == "..." {
            end = Some((offset, offset + line.len()));
            break;
        }
        offset += line.len();
    }
    let (yaml_end, body_start) = end.ok_or("the frontmatter has no closing `---`")?;
    let front = parse_frontmatter(&rest[..yaml_end])?;
    Ok((front, rest[body_start..].trim_start_matches(['\r', '\n'])))
}

fn parse_frontmatter(yaml: &str) -> Result<SkillFrontmatter, String> {
    let lines: Vec<&str> = yaml.lines().collect();
    let mut front = SkillFrontmatter::default();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if line.trim().is_empty()
            || line.trim_start().starts_with('#')
            || line.starts_with([' ', '\t'])
        {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(format!("frontmatter line {i} is not `key: value`"));
        };
        let key = key.trim();
        let value = strip_comment(value).trim();
        // The indented lines that belong to this key.
        let start = i;
        while i < lines.len()
            && (lines[i].starts_with([' ', '\t'])
                || lines[i].trim_start().starts_with("- ")
                || lines[i].trim().is_empty())
        {
            i += 1;
        }
        let nested = &lines[start..i];
        match key {
            "name" => front.name = Some(scalar(value, nested)?).filter(|s| !s.is_empty()),
            "description" => {
                front.description = Some(scalar(value, nested)?).filter(|s| !s.is_empty())
            }
            "triggers" => front.triggers = list(value, nested)?,
            "license" => front.license = Some(scalar(value, nested)?).filter(|s| !s.is_empty()),
            "compatibility" => {
                front.compatibility = Some(scalar(value, nested)?).filter(|s| !s.is_empty())
            }
            "metadata" => front.metadata = map(value, nested)?,
            _ => {}
        }
    }
    Ok(front)
}

fn strip_comment(value: &str) -> &str {
    // A ` #` outside quotes starts a comment.
    let mut quote = None;
    for (idx, c) in value.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if idx == 0 || value[..idx].ends_with([' ', '\t']) => return &value[..idx],
            _ => {}
        }
    }
    value
}

fn unquote(value: &str) -> Result<String, String> {
    let v = value.trim();
    if let Some(inner) = v.strip_prefix('"') {
        let inner = inner.strip_suffix('"').ok_or("unterminated double quote")?;
        let mut out = String::new();
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some(other) => out.push(other),
                    None => return Err("dangling backslash".into()),
                }
            } else {
                out.push(c);
            }
        }
        Ok(out)
    } else if let Some(inner) = v.strip_prefix('\'') {
        let inner = inner
            .strip_suffix('\'')
            .ok_or("unterminated single quote")?;
        Ok(inner.replace("''", "'"))
    } else {
        Ok(v.to_string())
    }
}

fn scalar(value: &str, nested: &[&str]) -> Result<String, String> {
    let indented = || nested.iter().map(|l| l.trim()).filter(|l| !l.is_empty());
    match value {
        v if v.starts_with('>') => Ok(indented().collect::<Vec<_>>().join(" ")),
        v if v.starts_with('|') => Ok(indented().collect::<Vec<_>>().join("\n")),
        "" => Ok(indented().collect::<Vec<_>>().join(" ")),
        v => {
            // A plain scalar may continue on indented lines.
            let mut out = unquote(v)?;
            for more in indented() {
                out.push(' ');
                out.push_str(more);
            }
            Ok(out)
        }
    }
}

fn list(value: &str, nested: &[&str]) -> Result<Vec<String>, String> {
    let items = if let Some(flow) = value.strip_prefix('[') {
        let flow = flow.strip_suffix(']').ok_or("unterminated `[` list")?;
        split_flow(flow)?
    } else if value.is_empty() {
        nested
            .iter()
            .filter_map(|l| l.trim().strip_prefix('-'))
            .map(|item| unquote(strip_comment(item)))
            .collect::<Result<Vec<_>, _>>()?
    } else {
        // A single string, or a comma-separated one.
        split_flow(value)?
    };
    Ok(items.into_iter().filter(|t| !t.trim().is_empty()).collect())
}

fn split_flow(flow: &str) -> Result<Vec<String>, String> {
    let mut items = Vec::new();
    let mut current = String::new();
    let mut quote = None;
    for c in flow.chars() {
        match (quote, c) {
            (None, '"' | '\'') => {
                quote = Some(c);
                current.push(c);
            }
            (Some(q), c) if c == q => {
                quote = None;
                current.push(c);
            }
            (None, ',') => items.push(unquote(&std::mem::take(&mut current))?),
            _ => current.push(c),
        }
    }
    if quote.is_some() {
        return Err("unterminated quote in a list".into());
    }
    items.push(unquote(&current)?);
    Ok(items)
}

/// A map of strings: `{a: b, c: "d"}`, or indented `key: value` lines under the key.
fn map(value: &str, nested: &[&str]) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    let mut put = |entry: &str| -> Result<(), String> {
        let entry = entry.trim();
        if entry.is_empty() {
            return Ok(());
        }
        let (key, value) = entry
            .split_once(':')
            .ok_or_else(|| format!("metadata entry `{entry}` is not `key: value`"))?;
        out.insert(unquote(key)?, unquote(strip_comment(value))?);
        Ok(())
    };
    if let Some(flow) = value.strip_prefix('{') {
        let flow = flow.strip_suffix('}').ok_or("unterminated `{` map")?;
        // Split on commas outside quotes, keeping the quotes for `unquote`.
        let mut current = String::new();
        let mut quote = None;
        for c in flow.chars() {
            match (quote, c) {
                (None, '"' | '\'') => {
                    quote = Some(c);
                    current.push(c);
                }
                (Some(q), c) if c == q => {
                    quote = None;
                    current.push(c);
                }
                (None, ',') => put(&std::mem::take(&mut current))?,
                _ => current.push(c),
            }
        }
        put(&current)?;
    } else if value.is_empty() {
        for line in nested {
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            put(line)?;
        }
    } else {
        return Err("metadata must be a map of `key: value` lines".into());
    }
    Ok(out)
}

/// Whether `name` is a skill name as the Agent Skills format has it: 1 to 64 of lowercase ASCII
/// letters, digits and `-`, not starting or ending with `-`, no `--`. Such a name is also a safe
/// folder name (no `/`, `.`, `..` or hidden names).
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
        return Err(format!(
            "the name `{name}` must be 1 to {MAX_NAME_CHARS} characters"
        ));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err(format!(
            "the name `{name}` may hold only lowercase letters, digits and `-`"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return Err(format!(
            "the name `{name}` may not start or end with `-` or hold `--`"
        ));
    }
    Ok(())
}

/// Checks a published skill's SKILL.md as the Agent Skills format requires: a front matter with
/// a valid `name` equal to `folder` (the skill's folder name) when given, and a non-empty
/// `description` of at most 1024 characters. Returns the front matter and the body.
pub fn check_published<'a>(
    text: &'a str,
    folder: Option<&str>,
) -> Result<(SkillFrontmatter, &'a str), String> {
    let (front, body) = parse(text)?;
    let name = front
        .name
        .as_deref()
        .ok_or("SKILL.md has no `name` in its front matter")?;
    check_name(name)?;
    if let Some(folder) = folder
        && folder != name
    {
        return Err(format!(
            "SKILL.md names `{name}`, but its folder is `{folder}`: they must be the same"
        ));
    }
    let description = front
        .description
        .as_deref()
        .ok_or("SKILL.md has no `description` in its front matter")?;
    if description.trim().is_empty() || description.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(format!(
            "the description must be 1 to {MAX_DESCRIPTION_CHARS} characters"
        ));
    }
    if front
        .compatibility
        .as_deref()
        .is_some_and(|c| c.chars().count() > 500)
    {
        return Err("`compatibility` is longer than 500 characters".into());
    }
    Ok((front, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_published_fields_are_read() {
        let text = "---\nname: pdf-tools\ndescription: >\n  Fill in PDF forms\n  and merge files\nlicense: Apache-2.0\nmetadata:\n  author: Ana Lopez\n  version: \"1.2.0\"  # semver\nallowed-tools: Bash Read\n---\n# Body\n";
        let (front, body) = check_published(text, Some("pdf-tools")).unwrap();
        assert_eq!(front.name.as_deref(), Some("pdf-tools"));
        assert_eq!(
            front.description.as_deref(),
            Some("Fill in PDF forms and merge files")
        );
        assert_eq!(front.license.as_deref(), Some("Apache-2.0"));
        assert_eq!(front.metadata["author"], "Ana Lopez");
        assert_eq!(front.metadata["version"], "1.2.0");
        assert_eq!(body, "# Body\n");
        let (flow, _) =
            parse("---\nname: a\nmetadata: {author: \"B, C\", version: 2}\n---\n").unwrap();
        assert_eq!(flow.metadata["author"], "B, C");
        assert_eq!(flow.metadata["version"], "2");
    }

    #[test]
    fn names_and_descriptions_are_checked() {
        for bad in [
            "",
            "Pdf",
            "-a",
            "a-",
            "a--b",
            "a_b",
            "../x",
            "a.b",
            &"x".repeat(65),
        ] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
        assert!(check_name("pdf-2").is_ok());
        let no_description = "---\nname: a\n---\nbody";
        assert!(
            check_published(no_description, None)
                .unwrap_err()
                .contains("description")
        );
        let other_folder = "---\nname: a\ndescription: d\n---\n";
        assert!(
            check_published(other_folder, Some("b"))
                .unwrap_err()
                .contains("folder")
        );
        assert!(
            check_published("no front matter", None)
                .unwrap_err()
                .contains("name")
        );
    }
}
