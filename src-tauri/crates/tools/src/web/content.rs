//! Turning a response body into text a model can read: which bodies are text at all, decoding,
//! HTML to readable text (html5ever through html2text, so scripts, styles and the head are
//! dropped and links become numbered references), and paging long results.

/// What a body is, from its `Content-Type` and, when that says little, its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Html,
    Text,
    Binary,
}

/// Media types that are never text, refused before the body is read.
pub fn is_binary_type(mime: &str) -> bool {
    let mime = essence(mime);
    let top = mime.split('/').next().unwrap_or_default();
    matches!(top, "image" | "audio" | "video" | "font" | "model")
        || matches!(
            mime.as_str(),
            "application/pdf"
                | "application/zip"
                | "application/gzip"
                | "application/x-gzip"
                | "application/x-tar"
                | "application/x-7z-compressed"
                | "application/x-rar-compressed"
                | "application/vnd.rar"
                | "application/x-bzip2"
                | "application/x-xz"
                | "application/zstd"
                | "application/wasm"
                | "application/x-executable"
                | "application/x-msdownload"
                | "application/x-sharedlib"
                | "application/java-archive"
                | "application/x-protobuf"
                | "application/vnd.ms-excel"
                | "application/msword"
        )
        || mime.starts_with("application/vnd.openxmlformats")
        || mime.starts_with("application/vnd.oasis.opendocument")
}

/// The media type without parameters, lower-cased.
pub fn essence(mime: &str) -> String {
    mime.split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// The `charset` parameter, lower-cased.
pub fn charset(mime: &str) -> Option<String> {
    mime.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| v.trim().trim_matches('"').to_ascii_lowercase())
    })
}

/// Classifies a body that was read (in full or up to the cap).
pub fn classify(mime: Option<&str>, body: &[u8]) -> Kind {
    let m = mime.map(essence).unwrap_or_default();
    if is_binary_type(&m) {
        return Kind::Binary;
    }
    if m == "text/html" || m == "application/xhtml+xml" {
        return Kind::Html;
    }
    let declared_text = m.starts_with("text/")
        || m.ends_with("+json")
        || m.ends_with("+xml")
        || matches!(
            m.as_str(),
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/x-javascript"
                | "application/ecmascript"
                | "application/x-ndjson"
                | "application/yaml"
                | "application/x-yaml"
                | "application/toml"
                | "application/sql"
                | "application/graphql"
                | "application/x-www-form-urlencoded"
                | "application/x-sh"
        );
    if declared_text {
        return Kind::Text;
    }
    // No type, or a vague one (application/octet-stream serves many plain files): sniff.
    if !looks_like_text(body) {
        return Kind::Binary;
    }
    let head = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
    let head = head.trim_start_matches('\u{feff}').trim_start();
    if head.starts_with("<!doctype html") || head.starts_with("<html") {
        Kind::Html
    } else {
        Kind::Text
    }
}

/// True when the first 8 KB are UTF-8 (a sequence cut at the end is fine) without NUL bytes or
/// many control characters.
fn looks_like_text(body: &[u8]) -> bool {
    let sample = &body[..body.len().min(8192)];
    if sample.contains(&0) {
        return false;
    }
    let valid = match std::str::from_utf8(sample) {
        Ok(_) => true,
        // Cut mid-character at the sample's end: still text.
        Err(e) => e.error_len().is_none(),
    };
    let controls = sample
        .iter()
        .filter(|b| **b < 0x20 && !matches!(**b, b'\n' | b'\r' | b'\t' | 0x0c))
        .count();
    valid && controls * 100 <= sample.len()
}

/// Decodes a body; returns the text and a note when the charset was not understood.
pub fn decode(body: &[u8], charset: Option<&str>) -> (String, Option<String>) {
    match charset {
        None | Some("utf-8" | "utf8" | "us-ascii" | "ascii") => {
            (String::from_utf8_lossy(body).into_owned(), None)
        }
        // Latin-1 maps bytes to the first 256 code points; windows-1252 differs only in
        // 0x80..0x9f, which are rare in practice.
        Some("iso-8859-1" | "latin1" | "latin-1" | "iso8859-1" | "windows-1252" | "cp1252") => {
            (body.iter().map(|b| char::from(*b)).collect(), None)
        }
        Some(other) => (
            String::from_utf8_lossy(body).into_owned(),
            Some(format!(
                "charset {other} is not supported; decoded as UTF-8, some characters may be wrong"
            )),
        ),
    }
}

/// A page converted to text.
#[derive(Debug)]
pub struct Html {
    pub title: Option<String>,
    pub text: String,
    /// Set when the page was converted by the fallback.
    pub note: Option<String>,
}

/// Line width of the readable text: wide enough that prose is rarely wrapped mid-sentence.
const TEXT_WIDTH: usize = 120;

/// HTML to readable text, with the page title. Runs on its own thread with a large stack:
/// conversion is CPU work that must not stall the async runtime, and parts of it recurse.
pub async fn html_to_text(html: String) -> Result<Html, String> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("web-html2text".into())
        .stack_size(64 * 1024 * 1024)
        .spawn(move || {
            let result = std::panic::catch_unwind(|| render_html(&html));
            let _ = tx.send(result);
        })
        .map_err(|e| format!("could not start the HTML converter: {e}"))?;
    match rx.await {
        Ok(Ok(result)) => result,
        Ok(Err(_)) | Err(_) => Err("the HTML converter failed on this page".into()),
    }
}

fn render_html(html: &str) -> Result<Html, String> {
    let title = title_of(html);
    if let Some(why) = super::markup::over_limits(html) {
        return Ok(Html {
            title,
            text: super::markup::strip_tags(html),
            note: Some(format!(
                "the page is too complex for the HTML converter ({why}); showing its text \
                 without structure or links"
            )),
        });
    }
    let config = html2text::config::plain()
        .allow_width_overflow()
        .link_footnotes(true);
    let dom = config
        .parse_html(html.as_bytes())
        .map_err(|e| format!("could not parse the HTML: {e}"))?;
    flatten_deep(&dom);
    let tree = config
        .dom_to_render_tree(&dom)
        .map_err(|e| format!("could not convert the HTML: {e}"))?;
    let text = config
        .render_to_string(tree, TEXT_WIDTH)
        .map_err(|e| format!("could not convert the HTML: {e}"))?;
    Ok(Html {
        title,
        text: tidy(&text),
        note: None,
    })
}

/// Element nesting the renderer sees; deeper content is reduced to its text. Rendering work
/// grows with the square of the depth and some of it recurses.
const MAX_DEPTH: usize = 128;

/// Replaces the children of every element at [`MAX_DEPTH`] by the text nodes beneath it, in
/// document order (scripts, styles and templates dropped). Iterative, so depth cannot overflow.
fn flatten_deep(dom: &html2text::RcDom) {
    let mut stack = vec![(dom.document.clone(), 0usize)];
    while let Some((node, depth)) = stack.pop() {
        if depth >= MAX_DEPTH && matches!(node.data, html2text::Element { .. }) {
            let texts = texts_under(&node);
            for text in &texts {
                text.parent.set(Some(std::rc::Rc::downgrade(&node)));
            }
            *node.children.borrow_mut() = texts;
            continue;
        }
        for child in node.children.borrow().iter() {
            stack.push((child.clone(), depth + 1));
        }
    }
}

fn texts_under(node: &html2text::Handle) -> Vec<html2text::Handle> {
    let mut out = Vec::new();
    let mut stack: Vec<html2text::Handle> = node.children.borrow().iter().rev().cloned().collect();
    while let Some(n) = stack.pop() {
        match &n.data {
            html2text::Element { name, .. } => {
                if !matches!(
                    name.local.as_ref(),
                    "script" | "style" | "template" | "head" | "noscript"
                ) {
                    stack.extend(n.children.borrow().iter().rev().cloned());
                }
            }
            html2text::Comment { .. } | html2text::Document => {}
            // Text (the variant is not exported by html2text, hence the wildcard).
            _ => out.push(n.clone()),
        }
    }
    out
}

/// The `<title>`, decoded by the same converter (entities and all). html2text drops the head,
/// so the title is cut out first; a crude search is enough for a label.
fn title_of(html: &str) -> Option<String> {
    let lower = html[..html.len().min(64 * 1024)].to_ascii_lowercase();
    let start = lower.find("<title")?;
    let open_end = start + lower[start..].find('>')? + 1;
    let close = open_end + lower[open_end..].find("</title")?;
    let inner = &html[open_end..close];
    let text = html2text::config::plain()
        .string_from_read(format!("<p>{inner}</p>").as_bytes(), 10_000)
        .ok()?;
    let title = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!title.is_empty()).then_some(title)
}

/// Trims trailing spaces and collapses runs of blank lines.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim_matches('\n').to_string()
}

/// One page of a long text, counted in characters.
#[derive(Debug, PartialEq, Eq)]
pub struct Page<'a> {
    pub text: &'a str,
    pub start: usize,
    pub end: usize,
    pub total: usize,
}

/// The characters `offset..offset + max_chars` of `text`, or `None` when `offset` is past the
/// end (an offset equal to the length of an empty text is still a page).
pub fn page(text: &str, offset: usize, max_chars: usize) -> Option<Page<'_>> {
    let total = text.chars().count();
    if offset > total || (offset == total && total != 0) {
        return None;
    }
    let byte_at = |chars: usize| {
        text.char_indices()
            .nth(chars)
            .map_or(text.len(), |(i, _)| i)
    };
    let end = total.min(offset.saturating_add(max_chars));
    Some(Page {
        text: &text[byte_at(offset)..byte_at(end)],
        start: offset,
        end,
        total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_by_type_then_by_sniffing() {
        assert_eq!(classify(Some("text/html; charset=utf-8"), b""), Kind::Html);
        assert_eq!(classify(Some("application/ld+json"), b"{}"), Kind::Text);
        assert_eq!(classify(Some("image/png"), b"abc"), Kind::Binary);
        assert_eq!(
            classify(Some("application/octet-stream"), b"# readme\n"),
            Kind::Text
        );
        assert_eq!(classify(None, b"\x89PNG\r\n\x1a\n\0\0"), Kind::Binary);
        assert_eq!(classify(None, b"  <!DOCTYPE html><p>x"), Kind::Html);
    }

    #[test]
    fn pages_by_characters() {
        let text = "héllo wörld";
        let p = page(text, 2, 4).unwrap();
        assert_eq!((p.text, p.start, p.end, p.total), ("llo ", 2, 6, 11));
        assert_eq!(page(text, 8, 100).unwrap().text, "rld");
        assert!(page(text, 11, 5).is_none());
        assert_eq!(page("", 0, 5).unwrap().total, 0);
    }

    #[test]
    fn decodes_latin1_and_notes_unknown_charsets() {
        assert_eq!(decode(b"caf\xe9", Some("iso-8859-1")).0, "café");
        assert!(decode(b"x", Some("shift_jis")).1.is_some());
    }
}
