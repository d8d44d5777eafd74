//! iCalendar and vCard text as its components (`BEGIN:`/`END:` blocks) of content lines, each
//! line kept exactly as it came (folds, escapes, quoted parameters, properties nobody here
//! knows). Values are read with the `icalendar` and `ical` crates; this only splits and
//! rejoins, so that an update changes the lines it means to and leaves every other byte alone
//! (the crates' own writers drop parameter quotes or add UIDs to alarms and time zones), and an
//! import or export moves components between files untouched.

use crate::error::{Error, Result};

/// One content line: the physical lines it was folded into, without their line ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Line {
    pub physical: Vec<String>,
}

impl Line {
    /// A line from already folded text (`NAME;PARAM=x:value`, continuation lines after CRLF).
    pub(crate) fn from_text(text: &str) -> Line {
        Line {
            physical: text
                .trim_end_matches(['\r', '\n'])
                .split('\n')
                .map(|l| l.trim_end_matches('\r').to_string())
                .collect(),
        }
    }

    /// The line unfolded.
    pub(crate) fn unfolded(&self) -> String {
        let mut out = self.physical[0].clone();
        for next in &self.physical[1..] {
            out.push_str(next.get(1..).unwrap_or_default());
        }
        out
    }

    /// The property name, upper case, without a vCard group (`item1.EMAIL` -> `EMAIL`).
    pub(crate) fn name(&self) -> String {
        let unfolded = self.unfolded();
        let end = unfolded.find([';', ':']).unwrap_or(unfolded.len());
        let name = &unfolded[..end];
        name.rsplit('.').next().unwrap_or(name).to_ascii_uppercase()
    }

    /// The raw value (escapes kept): what follows the first colon outside quotes.
    pub(crate) fn raw_value(&self) -> String {
        let unfolded = self.unfolded();
        match value_start(&unfolded) {
            Some(colon) => unfolded[colon + 1..].to_string(),
            None => String::new(),
        }
    }

    /// The value of the parameter `name` (`TZID` in `DTSTART;VALUE=DATE-TIME;TZID="x":...`),
    /// without its quotes, wherever it stands among the others.
    pub(crate) fn param(&self, name: &str) -> Option<String> {
        let unfolded = self.unfolded();
        let head = &unfolded[..value_start(&unfolded)?];
        let mut quoted = false;
        head.split(|c| {
            if c == '"' {
                quoted = !quoted;
            }
            c == ';' && !quoted
        })
        .skip(1)
        .find_map(|param| {
            let (key, value) = param.split_once('=')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then(|| value.trim_matches('"').to_string())
        })
    }
}

/// Where the value of an unfolded line starts: its first colon outside quotes.
fn value_start(unfolded: &str) -> Option<usize> {
    let mut quoted = false;
    for (i, c) in unfolded.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ':' if !quoted => return Some(i),
            _ => {}
        }
    }
    None
}

/// One component: its properties, then its sub-components.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Block {
    /// `VEVENT`, `VCARD`, ... (upper case).
    pub name: String,
    pub begin: String,
    pub end: String,
    pub props: Vec<Line>,
    pub children: Vec<Block>,
}

impl Block {
    /// An empty component.
    pub(crate) fn new(name: &str) -> Block {
        Block {
            name: name.to_ascii_uppercase(),
            begin: format!("BEGIN:{name}"),
            end: format!("END:{name}"),
            props: Vec::new(),
            children: Vec::new(),
        }
    }

    /// The first `name` property's raw value (escapes kept).
    pub(crate) fn value(&self, name: &str) -> Option<String> {
        self.props
            .iter()
            .find(|l| l.name() == name)
            .map(|l| l.raw_value().trim().to_string())
    }

    pub(crate) fn has(&self, name: &str) -> bool {
        self.props.iter().any(|l| l.name() == name)
    }

    /// Drops every `names` property and puts `lines` (folded text) where the first of them was,
    /// or after the other properties.
    pub(crate) fn replace(&mut self, names: &[&str], lines: Vec<String>) {
        let at = self
            .props
            .iter()
            .position(|l| names.contains(&l.name().as_str()))
            .unwrap_or(self.props.len());
        let before = self.props[..at]
            .iter()
            .filter(|l| !names.contains(&l.name().as_str()))
            .count();
        self.props.retain(|l| !names.contains(&l.name().as_str()));
        let new: Vec<Line> = lines.iter().map(|l| Line::from_text(l)).collect();
        self.props.splice(before..before, new);
    }

    pub(crate) fn write(&self, out: &mut String) {
        out.push_str(&self.begin);
        out.push_str("\r\n");
        for line in &self.props {
            for physical in &line.physical {
                out.push_str(physical);
                out.push_str("\r\n");
            }
        }
        for child in &self.children {
            child.write(out);
        }
        out.push_str(&self.end);
        out.push_str("\r\n");
    }

    pub(crate) fn to_text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }
}

/// A whole file or object: its top-level components (one VCALENDAR, or many VCARDs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Document {
    pub blocks: Vec<Block>,
}

impl Document {
    pub(crate) fn parse(text: &str) -> Result<Document> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut logical: Vec<Line> = Vec::new();
        for raw in text.split('\n') {
            let raw = raw.trim_end_matches('\r');
            if raw.starts_with([' ', '\t'])
                && let Some(last) = logical.last_mut()
            {
                last.physical.push(raw.to_string());
                continue;
            }
            if raw.trim().is_empty() {
                continue;
            }
            logical.push(Line {
                physical: vec![raw.to_string()],
            });
        }
        let mut stack: Vec<Block> = Vec::new();
        let mut document = Document::default();
        for line in logical {
            let unfolded = line.unfolded();
            let upper = unfolded.to_ascii_uppercase();
            if let Some(name) = upper.strip_prefix("BEGIN:") {
                let mut block = Block::new(name.trim());
                block.begin = unfolded.trim_end().to_string();
                stack.push(block);
            } else if let Some(name) = upper.strip_prefix("END:") {
                let block = stack.pop().ok_or_else(|| {
                    Error::invalid(format!("`{}` without its BEGIN", unfolded.trim()))
                })?;
                if block.name != name.trim() {
                    return Err(Error::invalid(format!(
                        "`{}` closes BEGIN:{}",
                        unfolded.trim(),
                        block.name
                    )));
                }
                let mut block = block;
                block.end = unfolded.trim_end().to_string();
                match stack.last_mut() {
                    Some(parent) => parent.children.push(block),
                    None => document.blocks.push(block),
                }
            } else {
                match stack.last_mut() {
                    Some(block) => block.props.push(line),
                    None => {
                        return Err(Error::invalid(format!(
                            "a line outside any BEGIN/END: {:?}",
                            unfolded.chars().take(80).collect::<String>()
                        )));
                    }
                }
            }
        }
        if let Some(open) = stack.last() {
            return Err(Error::invalid(format!(
                "BEGIN:{} is never closed",
                open.name
            )));
        }
        Ok(document)
    }

    pub(crate) fn to_text(&self) -> String {
        let mut out = String::new();
        for block in &self.blocks {
            block.write(&mut out);
        }
        out
    }
}

/// Escapes a TEXT value (RFC 5545 3.3.11, RFC 6350 3.4).
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            ';' => out.push_str("\\;"),
            ',' => out.push_str("\\,"),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

/// Undoes [`escape`].
pub(crate) fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n' | 'N') => out.push('\n'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Splits a structured value (`N`, `ADR`, `ORG`) at unescaped `;`, each part unescaped.
pub(crate) fn split_structured(raw: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut escaped = false;
    for c in raw.chars() {
        if escaped {
            parts.last_mut().expect("never empty").push('\\');
            parts.last_mut().expect("never empty").push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ';' {
            parts.push(String::new());
        } else {
            parts.last_mut().expect("never empty").push(c);
        }
    }
    parts.iter().map(|p| unescape(p)).collect()
}

/// A content line folded at 75 octets (on character boundaries), CRLF between the parts.
pub(crate) fn fold(line: &str) -> String {
    let mut out = String::with_capacity(line.len() + line.len() / 70 * 3);
    let mut width = 0;
    for c in line.chars() {
        let len = c.len_utf8();
        if width + len > 75 {
            out.push_str("\r\n ");
            width = 1;
        }
        out.push(c);
        width += len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVENT: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:e1\r\n\
        SUMMARY:a very long summary that goes on and on and on and on and on and o\r\n n and on\r\n\
        X-FOO;X-P=\"1:2\":bar\r\nBEGIN:VALARM\r\nTRIGGER:-PT15M\r\nEND:VALARM\r\nEND:VEVENT\r\n\
        END:VCALENDAR\r\n";

    #[test]
    fn documents_round_trip_byte_for_byte() {
        let doc = Document::parse(EVENT).unwrap();
        assert_eq!(doc.to_text(), EVENT);
        let event = &doc.blocks[0].children[0];
        assert_eq!(event.name, "VEVENT");
        assert_eq!(event.value("UID").as_deref(), Some("e1"));
        assert_eq!(event.props[2].raw_value(), "bar");
        assert!(event.value("SUMMARY").unwrap().ends_with("on and on"));
        assert_eq!(event.children[0].name, "VALARM");
    }

    #[test]
    fn replace_keeps_the_other_lines_in_place() {
        let mut doc = Document::parse(EVENT).unwrap();
        let event = &mut doc.blocks[0].children[0];
        event.replace(
            &["SUMMARY"],
            vec![fold(&format!("SUMMARY:{}", escape("x, y; z")))],
        );
        let text = doc.to_text();
        assert!(
            text.contains("UID:e1\r\nSUMMARY:x\\, y\\; z\r\nX-FOO;X-P=\"1:2\":bar\r\n"),
            "{text}"
        );
        Document::parse("BEGIN:VEVENT\r\nEND:VTODO\r\n").unwrap_err();
        Document::parse("BEGIN:VEVENT\r\n").unwrap_err();
    }

    #[test]
    fn parameters_are_read_wherever_they_stand() {
        let line = |text: &str| Line::from_text(text);
        let berlin = Some("Europe/Berlin".to_string());
        assert_eq!(
            line("DTSTART;TZID=Europe/Berlin:20260510T100000").param("TZID"),
            berlin
        );
        assert_eq!(
            line("DTSTART;TZID=Europe/Berlin;VALUE=DATE-TIME:20260510T100000").param("tzid"),
            berlin
        );
        assert_eq!(
            line("DTSTART;VALUE=DATE-TIME;TZID=\"Europe/Berlin\":20260510T100000").param("TZID"),
            berlin
        );
        assert_eq!(
            line("X-FOO;X-P=\"a;TZID=b:c\";TZID=d:e")
                .param("TZID")
                .as_deref(),
            Some("d")
        );
        assert_eq!(line("DESCRIPTION:TZID=Europe/Berlin").param("TZID"), None);
        assert_eq!(line("DTSTART:20260510T100000Z").param("TZID"), None);
    }

    #[test]
    fn escapes_folds_and_structured_values() {
        assert_eq!(unescape(&escape("a,b;c\\d\ne")), "a,b;c\\d\ne");
        assert_eq!(
            split_structured("Doe;John\\;Jr;;"),
            ["Doe", "John;Jr", "", ""]
        );
        let long = format!("NOTE:{}", "ü".repeat(60));
        let folded = fold(&long);
        assert!(folded.split("\r\n").all(|l| l.len() <= 75));
        assert_eq!(Line::from_text(&folded).unfolded(), long);
    }
}
