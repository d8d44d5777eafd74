//! Word expansion as bash does it before running a command, as far as it can be done
//! statically: brace expansion, quote removal, ANSI-C decoding, known variables, `$IFS`
//! splitting, and command substitutions (walked, and their output used when it is a plain
//! `echo`).

use std::sync::LazyLock;

use brush_parser::ParserOptions;
use brush_parser::word::{
    self, BraceExpressionMember, BraceExpressionOrText, Parameter, ParameterExpr, TildeExpr,
    WordPiece, WordPieceWithSource,
};

use super::Analyzer;

/// Brace expansion stops growing a word's list past this many words.
const MAX_BRACE_WORDS: usize = 256;

static OPTIONS: LazyLock<ParserOptions> = LazyLock::new(ParserOptions::default);

pub(super) fn parser_options() -> &'static ParserOptions {
    &OPTIONS
}

/// One word after expansion.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Field {
    pub text: String,
    /// Some part came from a parameter expansion or a substitution (even a resolved one).
    pub expanded: bool,
    /// Some part is only known at run time (kept as its source text).
    pub unknown: bool,
    /// It holds an unquoted file name pattern.
    pub glob: bool,
    /// It is a process substitution (`<(...)`): a pipe's path.
    pub procsub: bool,
}

impl Field {
    pub fn literal(text: &str) -> Field {
        Field {
            text: text.to_string(),
            ..Default::default()
        }
    }

    pub fn process_substitution() -> Field {
        Field {
            text: "/dev/fd/63".into(),
            procsub: true,
            ..Default::default()
        }
    }
}

/// Builds fields from pieces, splitting where an unquoted expansion holds IFS whitespace.
#[derive(Default)]
struct Builder {
    fields: Vec<Field>,
    current: Field,
    started: bool,
    /// The field separators in force (`IFS`), when the command set its own.
    ifs: Option<String>,
}

impl Builder {
    fn push(&mut self, text: &str, quoted: bool) {
        if !quoted && is_glob(text) {
            self.current.glob = true;
        }
        self.current.text.push_str(text);
        self.started = true;
    }

    fn end_field(&mut self) {
        if self.started {
            self.fields.push(std::mem::take(&mut self.current));
            self.started = false;
        } else {
            self.current = Field::default();
        }
    }

    /// A value from an expansion: split on IFS whitespace unless quoted.
    fn value(&mut self, value: &str, quoted: bool) {
        if quoted {
            self.current.expanded = true;
            self.push(value, true);
            return;
        }
        let ifs = self.ifs.clone().unwrap_or_else(|| " \t\n".to_string());
        for (i, part) in value.split(|c| ifs.contains(c)).enumerate() {
            if i > 0 {
                self.end_field();
            }
            if !part.is_empty() {
                self.current.expanded = true;
                self.push(part, false);
            }
        }
    }

    /// Something only known at run time, kept as its source text.
    fn unknown(&mut self, raw: &str) {
        self.current.expanded = true;
        self.current.unknown = true;
        self.current.text.push_str(raw);
        self.started = true;
    }

    fn finish(mut self, out: &mut Vec<Field>) {
        self.end_field();
        out.append(&mut self.fields);
    }
}

fn is_glob(text: &str) -> bool {
    text.contains(['*', '?']) || text.find('[').is_some_and(|i| text[i..].contains(']'))
}

/// Expands one word into the fields bash would pass.
pub(super) fn expand(an: &mut Analyzer, raw: &str, depth: usize) -> Vec<Field> {
    let mut out = Vec::new();
    for word in brace_expand(raw) {
        match word::parse(&word, parser_options()) {
            Ok(pieces) => {
                let mut builder = Builder {
                    ifs: an.lookup("IFS").flatten().map(str::to_string),
                    ..Default::default()
                };
                walk(an, &pieces, &word, false, &mut builder, depth);
                builder.finish(&mut out);
            }
            Err(_) => out.push(Field {
                text: word,
                unknown: true,
                ..Default::default()
            }),
        }
    }
    out
}

/// Expands a word as one string (assignment values, redirection targets): no splitting, no
/// brace expansion, no file name patterns.
pub(super) fn expand_joined(an: &mut Analyzer, raw: &str, depth: usize) -> Field {
    match word::parse(raw, parser_options()) {
        Ok(pieces) => joined(an, &pieces, raw, depth),
        Err(_) => Field {
            text: raw.to_string(),
            unknown: true,
            ..Default::default()
        },
    }
}

/// Expands a heredoc body (quotes are literal there).
pub(super) fn expand_heredoc(an: &mut Analyzer, raw: &str, depth: usize) -> Field {
    match word::parse_heredoc(raw, parser_options()) {
        Ok(pieces) => joined(an, &pieces, raw, depth),
        Err(_) => Field {
            text: raw.to_string(),
            unknown: true,
            ..Default::default()
        },
    }
}

fn joined(an: &mut Analyzer, pieces: &[WordPieceWithSource], src: &str, depth: usize) -> Field {
    let mut builder = Builder::default();
    walk(an, pieces, src, true, &mut builder, depth);
    let mut fields = Vec::new();
    builder.finish(&mut fields);
    let mut out = Field::default();
    for (i, f) in fields.into_iter().enumerate() {
        if i > 0 {
            out.text.push(' ');
        }
        out.text.push_str(&f.text);
        out.expanded |= f.expanded;
        out.unknown |= f.unknown;
        out.glob |= f.glob;
    }
    out
}

fn walk(
    an: &mut Analyzer,
    pieces: &[WordPieceWithSource],
    src: &str,
    quoted: bool,
    b: &mut Builder,
    depth: usize,
) {
    for piece in pieces {
        let raw = src.get(piece.start_index..piece.end_index).unwrap_or("");
        match &piece.piece {
            WordPiece::Text(text) => b.push(text, quoted),
            WordPiece::SingleQuotedText(text) => b.push(text, true),
            WordPiece::AnsiCQuotedText(text) => b.push(&decode_ansi_c(text), true),
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => {
                b.started = true;
                walk(an, inner, src, true, b, depth);
            }
            WordPiece::EscapeSequence(text) => {
                let c = text.strip_prefix('\\').unwrap_or(text);
                if c != "\n" {
                    b.push(c, true);
                }
            }
            WordPiece::TildeExpansion(tilde) => match tilde {
                TildeExpr::Home => b.push("~", true),
                TildeExpr::UserHome(user) => b.push(&format!("~{user}"), true),
                TildeExpr::WorkingDir => b.push(".", true),
                _ => b.unknown(raw),
            },
            WordPiece::ParameterExpansion(expr) => parameter(an, expr, raw, quoted, b, depth),
            WordPiece::CommandSubstitution(code)
            | WordPiece::BackquotedCommandSubstitution(code) => {
                match an.substitution(code, depth) {
                    Some(value) => b.value(&value, quoted),
                    None => b.unknown(raw),
                }
            }
            WordPiece::ArithmeticExpression(expr) => {
                an.scan_text(&expr.value, depth);
                // A number: harmless, but computed.
                b.current.expanded = true;
                b.push(raw, true);
            }
        }
    }
}

fn parameter(
    an: &mut Analyzer,
    expr: &ParameterExpr,
    raw: &str,
    quoted: bool,
    b: &mut Builder,
    depth: usize,
) {
    for operand in operands(expr) {
        an.scan_text(operand, depth);
    }
    // `${a[$(cmd)]}`: an index is arithmetic, and its substitutions run.
    if let Some(Parameter::NamedWithIndex { index, .. }) = parameter_of(expr) {
        an.scan_text(index, depth);
    }
    match expr {
        ParameterExpr::Parameter {
            parameter: Parameter::Named(name),
            indirect: false,
        } => variable(an, name, raw, quoted, b),
        ParameterExpr::Parameter {
            indirect: false, ..
        }
        | ParameterExpr::ParameterLength { .. } => b.unknown(raw),
        _ => {
            // `${HOME%/}`, `${X:-~/.ssh}`, `${!name}`: what an operator or indirection yields
            // is only known when it runs, and it can turn a harmless-looking word into a
            // protected path. Judged by a person, at every level.
            an.set_dynamic(format!(
                "`{raw}` is a parameter expansion with an operator or indirection, whose value is \
                 only known when the command runs"
            ));
            b.unknown(raw)
        }
    }
}

fn parameter_of(expr: &ParameterExpr) -> Option<&Parameter> {
    match expr {
        ParameterExpr::Parameter { parameter, .. }
        | ParameterExpr::UseDefaultValues { parameter, .. }
        | ParameterExpr::AssignDefaultValues { parameter, .. }
        | ParameterExpr::IndicateErrorIfNullOrUnset { parameter, .. }
        | ParameterExpr::UseAlternativeValue { parameter, .. }
        | ParameterExpr::ParameterLength { parameter, .. }
        | ParameterExpr::RemoveSmallestSuffixPattern { parameter, .. }
        | ParameterExpr::RemoveLargestSuffixPattern { parameter, .. }
        | ParameterExpr::RemoveSmallestPrefixPattern { parameter, .. }
        | ParameterExpr::RemoveLargestPrefixPattern { parameter, .. }
        | ParameterExpr::Substring { parameter, .. }
        | ParameterExpr::Transform { parameter, .. }
        | ParameterExpr::UppercaseFirstChar { parameter, .. }
        | ParameterExpr::UppercasePattern { parameter, .. }
        | ParameterExpr::LowercaseFirstChar { parameter, .. }
        | ParameterExpr::LowercasePattern { parameter, .. }
        | ParameterExpr::ReplaceSubstring { parameter, .. } => Some(parameter),
        _ => None,
    }
}

fn variable(an: &mut Analyzer, name: &str, raw: &str, quoted: bool, b: &mut Builder) {
    match an.lookup(name) {
        Some(Some(value)) => {
            let value = value.to_string();
            b.value(&value, quoted);
        }
        Some(None) => b.unknown(raw),
        None if name == "IFS" => {
            // The default IFS: a separator where unquoted, a space where quoted.
            b.value(" ", quoted);
        }
        None if name == "PWD" => {
            // The working directory: `.` is judged against the directory the command's own
            // `cd`s (or the call's `cwd`) set, as `$PWD` would be.
            b.current.expanded = true;
            b.push(".", true);
        }
        None if name == "HOME" => {
            // Static, expanded later by the safeguard, which knows the home.
            b.current.expanded = true;
            b.push(raw, true);
        }
        None => b.unknown(raw),
    }
}

/// Strings inside a parameter expression that may hold substitutions.
fn operands(expr: &ParameterExpr) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    match expr {
        ParameterExpr::UseDefaultValues { default_value, .. }
        | ParameterExpr::AssignDefaultValues { default_value, .. } => {
            out.extend(default_value.as_deref())
        }
        ParameterExpr::IndicateErrorIfNullOrUnset { error_message, .. } => {
            out.extend(error_message.as_deref())
        }
        ParameterExpr::UseAlternativeValue {
            alternative_value, ..
        } => out.extend(alternative_value.as_deref()),
        ParameterExpr::RemoveSmallestSuffixPattern { pattern, .. }
        | ParameterExpr::RemoveLargestSuffixPattern { pattern, .. }
        | ParameterExpr::RemoveSmallestPrefixPattern { pattern, .. }
        | ParameterExpr::RemoveLargestPrefixPattern { pattern, .. }
        | ParameterExpr::UppercaseFirstChar { pattern, .. }
        | ParameterExpr::UppercasePattern { pattern, .. }
        | ParameterExpr::LowercaseFirstChar { pattern, .. }
        | ParameterExpr::LowercasePattern { pattern, .. } => out.extend(pattern.as_deref()),
        ParameterExpr::ReplaceSubstring {
            pattern,
            replacement,
            ..
        } => {
            out.push(pattern);
            out.extend(replacement.as_deref());
        }
        ParameterExpr::Substring { offset, length, .. } => {
            out.push(&offset.value);
            out.extend(length.as_ref().map(|l| l.value.as_str()));
        }
        _ => {}
    }
    out
}

/// Bash's brace expansion of an unquoted word (`{rm,-rf,/}` -> three words).
fn brace_expand(raw: &str) -> Vec<String> {
    if !raw.contains('{') {
        return vec![raw.to_string()];
    }
    match word::parse_brace_expansions(raw, parser_options()) {
        Ok(Some(items))
            if items
                .iter()
                .any(|i| matches!(i, BraceExpressionOrText::Expr(_))) =>
        {
            let words = expand_sequence(&items);
            if words.is_empty() {
                vec![raw.to_string()]
            } else {
                words
            }
        }
        _ => vec![raw.to_string()],
    }
}

fn expand_sequence(items: &[BraceExpressionOrText]) -> Vec<String> {
    let mut acc = vec![String::new()];
    for item in items {
        let alternatives: Vec<String> = match item {
            BraceExpressionOrText::Text(text) => vec![text.clone()],
            BraceExpressionOrText::Expr(members) => {
                let mut alts = Vec::new();
                for member in members {
                    alts.extend(expand_member(member));
                    if alts.len() >= MAX_BRACE_WORDS {
                        break;
                    }
                }
                alts
            }
        };
        let mut next = Vec::with_capacity(acc.len() * alternatives.len().max(1));
        'outer: for prefix in &acc {
            for alt in &alternatives {
                if next.len() >= MAX_BRACE_WORDS {
                    break 'outer;
                }
                next.push(format!("{prefix}{alt}"));
            }
        }
        acc = next;
    }
    acc
}

fn expand_member(member: &BraceExpressionMember) -> Vec<String> {
    match member {
        BraceExpressionMember::Child(items) => expand_sequence(items),
        BraceExpressionMember::NumberSequence {
            start,
            end,
            increment,
        } => {
            let step = increment.unsigned_abs().max(1);
            let (lo, hi) = (*start.min(end), *start.max(end));
            let mut out: Vec<String> = (lo..=hi)
                .step_by(usize::try_from(step).unwrap_or(1))
                .take(MAX_BRACE_WORDS)
                .map(|n| n.to_string())
                .collect();
            if start > end {
                out.reverse();
            }
            out
        }
        BraceExpressionMember::CharSequence {
            start,
            end,
            increment,
        } => {
            let step = usize::try_from(increment.unsigned_abs().max(1)).unwrap_or(1);
            let (lo, hi) = (*start.min(end), *start.max(end));
            let mut out: Vec<String> = (lo..=hi)
                .step_by(step)
                .take(MAX_BRACE_WORDS)
                .map(String::from)
                .collect();
            if start > end {
                out.reverse();
            }
            out
        }
    }
}

/// Decodes the body of `$'...'`.
pub(super) fn decode_ansi_c(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        let mut number = |radix: u32, max: usize, first: Option<char>| -> Option<u32> {
            let mut digits = String::new();
            if let Some(f) = first {
                digits.push(f);
            }
            while digits.len() < max {
                match chars.peek() {
                    Some(d) if d.is_digit(radix) => {
                        digits.push(*d);
                        chars.next();
                    }
                    _ => break,
                }
            }
            u32::from_str_radix(&digits, radix).ok()
        };
        match e {
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'e' | 'E' => out.push('\x1b'),
            'f' => out.push('\x0c'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\x0b'),
            '\\' | '\'' | '"' | '?' => out.push(e),
            '0'..='7' => {
                if let Some(ch) = number(8, 3, Some(e)).and_then(char::from_u32) {
                    out.push(ch);
                }
            }
            'x' => match number(16, 2, None).and_then(char::from_u32) {
                Some(ch) => out.push(ch),
                None => out.push_str("\\x"),
            },
            'u' => match number(16, 4, None).and_then(char::from_u32) {
                Some(ch) => out.push(ch),
                None => out.push_str("\\u"),
            },
            'U' => match number(16, 8, None).and_then(char::from_u32) {
                Some(ch) => out.push(ch),
                None => out.push_str("\\U"),
            },
            'c' => {
                if let Some(ch) = chars.next() {
                    out.push(char::from((ch as u8) & 0x1f));
                }
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    out
}

/// The quote-removed text of a word that is not expanded (a function name).
pub(super) fn literal_text(raw: &str) -> String {
    match word::parse(raw, parser_options()) {
        Ok(pieces) => {
            let mut out = String::new();
            literal_pieces(&pieces, &mut out);
            out
        }
        Err(_) => raw.to_string(),
    }
}

fn literal_pieces(pieces: &[WordPieceWithSource], out: &mut String) {
    for piece in pieces {
        match &piece.piece {
            WordPiece::Text(t) | WordPiece::SingleQuotedText(t) => out.push_str(t),
            WordPiece::AnsiCQuotedText(t) => out.push_str(&decode_ansi_c(t)),
            WordPiece::EscapeSequence(t) => out.push_str(t.strip_prefix('\\').unwrap_or(t)),
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => literal_pieces(inner, out),
            _ => {}
        }
    }
}

/// A crude split of text the parser rejected, so the safeguard still sees the words: split on
/// command separators, then on blanks, with quote characters dropped.
pub(super) fn fallback_commands(text: &str) -> Vec<Vec<Field>> {
    let mut commands = Vec::new();
    let separators = [';', '&', '|', '\n', '(', ')', '`', '{', '}', '<', '>'];
    for part in text.split(separators) {
        let part = part.trim_start_matches('$');
        let fields: Vec<Field> = part
            .split_whitespace()
            .map(|w| {
                let cleaned: String = w
                    .chars()
                    .filter(|c| !matches!(c, '\'' | '"' | '\\'))
                    .collect();
                Field::literal(&cleaned)
            })
            .filter(|f| !f.text.is_empty())
            .collect();
        if !fields.is_empty() {
            commands.push(fields);
        }
    }
    commands
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_c_strings_decode() {
        assert_eq!(decode_ansi_c(r"\x73udo"), "sudo");
        assert_eq!(decode_ansi_c(r"\163\165do"), "sudo");
        assert_eq!(decode_ansi_c(r"\u0073udo"), "sudo");
        assert_eq!(decode_ansi_c(r"a\tb\\"), "a\tb\\");
    }

    #[test]
    fn braces_expand_to_several_words() {
        assert_eq!(brace_expand("{rm,-rf,/}"), vec!["rm", "-rf", "/"]);
        assert_eq!(brace_expand("a{1..3}"), vec!["a1", "a2", "a3"]);
        assert_eq!(brace_expand("${HOME}"), vec!["${HOME}"]);
        assert_eq!(brace_expand("x{a,b}{c,d}").len(), 4);
    }
}
