//! A linear pre-pass over HTML that guards the real parser. html5ever's tree builder does work
//! proportional to the depth of open elements for many start tags (and to the list of open
//! formatting elements, and to an element's attribute count), so a hostile page of 100,000
//! nested `<div>`s costs minutes of CPU on a thread that cannot be stopped. This module
//! estimates those quantities from the tokens alone, erring high, and offers a plain
//! tag-stripping fallback for pages over the limits.
//!
//! Erring high matters: wherever the lexer may disagree with a browser's tokenizer it ends
//! comments and raw text at the earliest possible point, and end tags only close what the tree
//! builder would close, so markup cannot hide depth from the estimate.

/// One token; only what the estimate and the fallback need.
#[derive(Debug, PartialEq, Eq)]
enum Token<'a> {
    Text(&'a str),
    Start {
        name: String,
        self_closing: bool,
        attrs: usize,
    },
    End {
        name: String,
    },
    /// Comments, doctypes, processing instructions, CDATA, bogus comments.
    Other,
}

struct Lexer<'a> {
    s: &'a str,
    pos: usize,
}

fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
}

fn find_from(s: &str, from: usize, pat: &str) -> Option<usize> {
    s.get(from..)?.find(pat).map(|i| i + from)
}

impl<'a> Lexer<'a> {
    fn new(s: &'a str) -> Self {
        Lexer { s, pos: 0 }
    }

    /// Skips raw text (script, style, ...) up to the earliest `</name`, returning it.
    fn raw_text(&mut self, name: &str) -> &'a str {
        let b = self.s.as_bytes();
        let start = self.pos;
        let mut at = start;
        while let Some(i) = find_from(self.s, at, "</") {
            let end = i + 2 + name.len();
            if end <= b.len() && b[i + 2..end].eq_ignore_ascii_case(name.as_bytes()) {
                self.pos = i;
                return &self.s[start..i];
            }
            at = i + 2;
        }
        self.pos = self.s.len();
        &self.s[start..]
    }

    /// Reads a tag's name and attributes from just after `<` or `</`; returns the name, the
    /// attribute count and whether it ended with `/>`.
    fn tag(&mut self) -> (String, usize, bool) {
        let b = self.s.as_bytes();
        let mut p = self.pos;
        while p < b.len() && !is_space(b[p]) && b[p] != b'/' && b[p] != b'>' {
            p += 1;
        }
        let name = self.s[self.pos..p].to_ascii_lowercase();
        let mut attrs = 0;
        loop {
            while p < b.len() && is_space(b[p]) {
                p += 1;
            }
            if p >= b.len() {
                self.pos = b.len();
                return (name, attrs, false);
            }
            match b[p] {
                b'>' => {
                    self.pos = p + 1;
                    return (name, attrs, false);
                }
                b'/' => {
                    p += 1;
                    if p < b.len() && b[p] == b'>' {
                        self.pos = p + 1;
                        return (name, attrs, true);
                    }
                    continue;
                }
                _ => {}
            }
            // An attribute name: its first character may be anything (even `=` or a quote).
            attrs += 1;
            p += 1;
            while p < b.len() && !is_space(b[p]) && !matches!(b[p], b'/' | b'>' | b'=') {
                p += 1;
            }
            while p < b.len() && is_space(b[p]) {
                p += 1;
            }
            if p < b.len() && b[p] == b'=' {
                p += 1;
                while p < b.len() && is_space(b[p]) {
                    p += 1;
                }
                if p < b.len() && (b[p] == b'"' || b[p] == b'\'') {
                    let quote = b[p];
                    p = b[p + 1..]
                        .iter()
                        .position(|c| *c == quote)
                        .map_or(b.len(), |i| p + 1 + i + 1);
                } else {
                    while p < b.len() && !is_space(b[p]) && b[p] != b'>' {
                        p += 1;
                    }
                }
            }
        }
    }

    fn next_token(&mut self) -> Option<Token<'a>> {
        let s = self.s;
        let b = s.as_bytes();
        if self.pos >= b.len() {
            return None;
        }
        if b[self.pos] != b'<' {
            let end = find_from(s, self.pos, "<").unwrap_or(b.len());
            let text = &s[self.pos..end];
            self.pos = end;
            return Some(Token::Text(text));
        }
        let rest = &s[self.pos..];
        let to_gt = |from: usize| find_from(s, from, ">").map_or(b.len(), |i| i + 1);
        if rest.starts_with("<!--") {
            let k = self.pos + 4;
            self.pos = if s[k..].starts_with('>') {
                k + 1
            } else if s[k..].starts_with("->") {
                k + 2
            } else {
                // The earliest of the two endings a tokenizer accepts.
                let a = find_from(s, k, "-->").map(|i| i + 3);
                let c = find_from(s, k, "--!>").map(|i| i + 4);
                match (a, c) {
                    (Some(a), Some(c)) => a.min(c),
                    (Some(x), None) | (None, Some(x)) => x,
                    (None, None) => b.len(),
                }
            };
            return Some(Token::Other);
        }
        // Doctypes, processing instructions, bogus comments and CDATA: CDATA is treated as
        // ending at its first `>`, the earlier of its two readings (in and out of SVG/MathML).
        if rest.starts_with("<!") || rest.starts_with("<?") {
            self.pos = to_gt(self.pos + 2);
            return Some(Token::Other);
        }
        if rest.starts_with("</") {
            match b.get(self.pos + 2) {
                Some(c) if c.is_ascii_alphabetic() => {
                    self.pos += 2;
                    let (name, _, _) = self.tag();
                    return Some(Token::End { name });
                }
                Some(b'>') => {
                    self.pos += 3;
                    return Some(Token::Other);
                }
                None => {
                    self.pos = b.len();
                    return Some(Token::Text("</"));
                }
                Some(_) => {
                    self.pos = to_gt(self.pos + 2);
                    return Some(Token::Other);
                }
            }
        }
        if b.get(self.pos + 1).is_some_and(u8::is_ascii_alphabetic) {
            self.pos += 1;
            let (name, attrs, self_closing) = self.tag();
            return Some(Token::Start {
                name,
                self_closing,
                attrs,
            });
        }
        self.pos += 1;
        Some(Token::Text("<"))
    }
}

/// Elements whose content the tokenizer reads as text (outside SVG and MathML).
const RAW_TEXT: &[&str] = &[
    "script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes",
];

const VOID: &[&str] = &[
    "area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "image", "img",
    "input", "keygen", "link", "meta", "param", "source", "track", "wbr",
];

/// Formatting elements: the parser remembers them and reopens them after they are closed.
const FORMATTING: &[&str] = &[
    "a", "b", "big", "code", "em", "font", "i", "nobr", "s", "small", "strike", "strong", "tt", "u",
];

/// The "special" elements of the HTML parsing rules: an end tag of another element does not
/// close anything past one of these.
const SPECIAL: &[&str] = &[
    "address",
    "applet",
    "area",
    "article",
    "aside",
    "base",
    "basefont",
    "bgsound",
    "blockquote",
    "body",
    "br",
    "button",
    "caption",
    "center",
    "col",
    "colgroup",
    "dd",
    "details",
    "dir",
    "div",
    "dl",
    "dt",
    "embed",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "frame",
    "frameset",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "head",
    "header",
    "hgroup",
    "hr",
    "html",
    "iframe",
    "img",
    "input",
    "keygen",
    "li",
    "link",
    "listing",
    "main",
    "marquee",
    "menu",
    "meta",
    "nav",
    "noembed",
    "noframes",
    "noscript",
    "object",
    "ol",
    "p",
    "param",
    "plaintext",
    "pre",
    "script",
    "search",
    "section",
    "select",
    "source",
    "style",
    "summary",
    "table",
    "tbody",
    "td",
    "template",
    "textarea",
    "tfoot",
    "th",
    "thead",
    "title",
    "tr",
    "track",
    "ul",
    "wbr",
    "xmp",
    "mi",
    "mo",
    "mn",
    "ms",
    "mtext",
    "annotation-xml",
    "foreignobject",
    "desc",
];

/// Elements an end tag of a special element does not close past (every scope's boundaries,
/// merged: more boundaries only make the estimate higher).
const SCOPE: &[&str] = &[
    "applet",
    "caption",
    "html",
    "table",
    "td",
    "th",
    "marquee",
    "object",
    "template",
    "mi",
    "mo",
    "mn",
    "ms",
    "mtext",
    "annotation-xml",
    "foreignobject",
    "desc",
    "title",
    "button",
    "ol",
    "ul",
];

/// Start tags that close an open element of the same family on top of the stack.
fn closes_same(name: &str, top: &str) -> bool {
    let family = |n: &str| match n {
        "li" => 1,
        "dt" | "dd" => 2,
        "td" | "th" => 3,
        "p" => 4,
        "tr" => 5,
        "option" => 6,
        _ => 0,
    };
    family(name) != 0 && family(name) == family(top)
}

/// Limits of the pre-pass: past them the page is converted by [`strip_tags`] instead.
pub const MAX_DEPTH: usize = 256;
pub const MAX_ATTRS: usize = 1024;

/// Whether the page goes past the parser's safe limits, and which one.
pub fn over_limits(html: &str) -> Option<String> {
    let mut lexer = Lexer::new(html);
    let mut stack: Vec<String> = Vec::new();
    let mut foreign = 0usize;
    let mut formatting: std::collections::HashMap<String, usize> = Default::default();
    let mut open_formatting = 0usize;
    let count_foreign =
        |stack: &[String]| stack.iter().filter(|n| *n == "svg" || *n == "math").count();
    while let Some(token) = lexer.next_token() {
        match token {
            Token::Start {
                name,
                self_closing,
                attrs,
            } => {
                if attrs > MAX_ATTRS {
                    return Some(format!("an element has {attrs} attributes"));
                }
                if foreign == 0 {
                    if RAW_TEXT.contains(&name.as_str()) {
                        lexer.raw_text(&name);
                        continue;
                    }
                    if name == "plaintext" {
                        break;
                    }
                    if VOID.contains(&name.as_str()) {
                        continue;
                    }
                    if stack.last().is_some_and(|top| closes_same(&name, top)) {
                        stack.pop();
                    }
                } else if self_closing {
                    continue;
                }
                if FORMATTING.contains(&name.as_str()) {
                    *formatting.entry(name.clone()).or_default() += 1;
                    open_formatting += 1;
                }
                if name == "svg" || name == "math" {
                    foreign += 1;
                }
                stack.push(name);
                if stack.len() + open_formatting > MAX_DEPTH {
                    return Some(format!("elements nest more than {MAX_DEPTH} deep"));
                }
            }
            Token::End { name } => {
                if let Some(n) = formatting.get_mut(&name).filter(|n| **n > 0) {
                    *n -= 1;
                    open_formatting -= 1;
                }
                let special = SPECIAL.contains(&name.as_str());
                for i in (0..stack.len()).rev() {
                    if stack[i] == name {
                        stack.truncate(i);
                        foreign = count_foreign(&stack);
                        break;
                    }
                    let stop = if special {
                        SCOPE.contains(&stack[i].as_str())
                    } else {
                        SPECIAL.contains(&stack[i].as_str())
                    };
                    if stop {
                        break;
                    }
                }
            }
            Token::Text(_) | Token::Other => {}
        }
    }
    None
}

/// Elements after which the fallback starts a new line.
const BLOCK: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "dd",
    "details",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "tr",
    "ul",
];

/// Text of a page without a parser: tags removed, scripts and styles dropped, entities for the
/// common characters decoded, a line per block element. Linear in the input.
pub fn strip_tags(html: &str) -> String {
    let mut lexer = Lexer::new(html);
    let mut out = String::new();
    while let Some(token) = lexer.next_token() {
        match token {
            Token::Text(t) => out.push_str(&decode_entities(t)),
            Token::Start { name, .. } => {
                if RAW_TEXT.contains(&name.as_str()) {
                    let raw = lexer.raw_text(&name);
                    if name == "textarea" {
                        out.push_str(&decode_entities(raw));
                    }
                } else if name == "plaintext" {
                    out.push_str(&html[lexer.pos..]);
                    break;
                } else if BLOCK.contains(&name.as_str()) {
                    out.push('\n');
                }
            }
            Token::End { name } if BLOCK.contains(&name.as_str()) => out.push('\n'),
            Token::End { .. } | Token::Other => {}
        }
    }
    let mut text = String::with_capacity(out.len());
    for line in out.lines() {
        let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
        if !line.is_empty() {
            text.push_str(&line);
            text.push('\n');
        }
    }
    text.trim_end().to_string()
}

fn decode_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let Some(end) = rest[..rest.len().min(12)].find(';') else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let entity = &rest[1..end];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            "nbsp" => Some(' '),
            _ => entity
                .strip_prefix("#x")
                .or_else(|| entity.strip_prefix("#X"))
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| entity.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_pages_are_within_limits() {
        let page = "<!doctype html><html><head><title>x</title><script>if (a<b) {}</script></head>\
            <body><div><p>One<p>Two<ul><li>a<li>b</ul><br><img src=x></div><svg><path/></svg>\
            <b>bold</b> <i>it</i></body></html>";
        assert_eq!(over_limits(&page.repeat(500)), None);
    }

    #[test]
    fn deep_nesting_and_tricks_that_hide_it_are_caught() {
        let n = 1000;
        for unit in [
            "<div>",
            "<span>",
            "<div/>",
            "<p><b x=1></p>",
            "<x><div></x>",
            "<div><script></div></script>",
            "<!--><div>-->",
            "<!--x--!><div>-->",
            "<div><a title='</div>'>",
            "<svg><input>",
            "<svg><![CDATA[</svg>]]><div>",
            "<div><p></i>",
        ] {
            assert!(over_limits(&unit.repeat(n)).is_some(), "{unit}");
        }
        let attrs: String = (0..2000).map(|i| format!(" a{i}")).collect();
        assert!(over_limits(&format!("<div{attrs}>")).is_some());
    }

    #[test]
    fn strips_tags_to_text() {
        let html = "<h1>Title &amp; more</h1><script>var x = '<p>';</script><p>a&#233;b&#x41; \
                    <a href=x>link</a></p><style>p{}</style>";
        assert_eq!(strip_tags(html), "Title & more\naébA link");
    }
}
