//! Contacts: vCards (3.0 and 4.0) read with `ical`'s lenient parser, written as vCard 3.0 (the
//! version every address book reads), and changed line by line so the properties Osprey does
//! not know (photos, addresses, groups' labels) stay as they were.

use super::lines::{Block, Document, escape, fold, split_structured, unescape};
use crate::error::{Error, Result};

/// One contact, read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Contact {
    pub uid: String,
    pub name: String,
    pub emails: Vec<String>,
    pub phones: Vec<String>,
    pub org: String,
    pub note: String,
}

impl Contact {
    /// Whether `text` (lower case) is in the name, an address, the organisation, or (digits
    /// only, at least three) a phone number.
    pub(crate) fn matches(&self, text: &str) -> bool {
        let digits: String = text.chars().filter(char::is_ascii_digit).collect();
        self.name.to_lowercase().contains(text)
            || self.org.to_lowercase().contains(text)
            || self.emails.iter().any(|e| e.to_lowercase().contains(text))
            || (digits.len() >= 3
                && self.phones.iter().any(|p| {
                    p.chars()
                        .filter(char::is_ascii_digit)
                        .collect::<String>()
                        .contains(&digits)
                }))
    }

    /// `Ada Lovelace <ada@example.org>, +44 20 1234; Analytical Engines`.
    pub(crate) fn describe(&self) -> String {
        let mut text = self.name.clone();
        if !self.emails.is_empty() {
            text.push_str(&format!(" <{}>", self.emails.join(">, <")));
        }
        if !self.phones.is_empty() {
            text.push_str(&format!(", tel {}", self.phones.join(", ")));
        }
        if !self.org.is_empty() {
            text.push_str(&format!("; {}", self.org));
        }
        if !self.note.is_empty() {
            let note: String = self.note.chars().take(120).collect();
            text.push_str(&format!("; note: {}", note.replace('\n', " ")));
        }
        text
    }
}

/// The contacts of a vCard file or object.
pub(crate) fn parse_contacts(text: &str) -> Result<Vec<Contact>> {
    let mut out = Vec::new();
    for card in ical::VcardParser::new(std::io::BufReader::new(text.as_bytes())) {
        let card = card.map_err(|e| Error::invalid(format!("not vCard data: {e}")))?;
        let mut contact = Contact::default();
        let mut structured_name = None;
        for property in &card.properties {
            let name = property.name.rsplit('.').next().unwrap_or_default();
            let value = property.value.clone().unwrap_or_default();
            match name.to_ascii_uppercase().as_str() {
                "UID" => contact.uid = value.trim().to_string(),
                "FN" => contact.name = unescape(&value).trim().to_string(),
                "N" => structured_name = Some(split_structured(&value)),
                "EMAIL" => contact.emails.push(unescape(&value).trim().to_string()),
                "TEL" => contact.phones.push(
                    unescape(&value)
                        .trim()
                        .trim_start_matches("tel:")
                        .to_string(),
                ),
                "ORG" => {
                    contact.org = split_structured(&value)
                        .into_iter()
                        .filter(|p| !p.is_empty())
                        .collect::<Vec<_>>()
                        .join(", ");
                }
                "NOTE" => contact.note = unescape(&value).trim().to_string(),
                _ => {}
            }
        }
        if contact.name.is_empty()
            && let Some(parts) = structured_name
        {
            // N is family;given;additional;prefix;suffix.
            let order = [3, 1, 2, 0, 4];
            contact.name = order
                .iter()
                .filter_map(|i| parts.get(*i))
                .filter(|p| !p.is_empty())
                .cloned()
                .collect::<Vec<_>>()
                .join(" ");
        }
        out.push(contact);
    }
    Ok(out)
}

/// A new contact's or a change's fields; `None` keeps (or leaves out) the value.
#[derive(Clone, Debug, Default)]
pub(crate) struct ContactFields {
    pub name: Option<String>,
    pub emails: Option<Vec<String>>,
    pub phones: Option<Vec<String>>,
    pub org: Option<String>,
    pub note: Option<String>,
}

/// `N` from a full name: the last word is the family name.
fn structured_name(full: &str) -> String {
    let words: Vec<&str> = full.split_whitespace().collect();
    match words.split_last() {
        Some((family, given)) if !given.is_empty() => {
            format!("{};{};;;", escape(family), escape(&given.join(" ")))
        }
        _ => format!("{};;;;", escape(full.trim())),
    }
}

fn lines_for(fields: &ContactFields) -> Vec<(&'static [&'static str], Vec<String>)> {
    let mut out: Vec<(&'static [&'static str], Vec<String>)> = Vec::new();
    if let Some(name) = &fields.name {
        out.push((
            &["FN", "N"],
            vec![
                fold(&format!("FN:{}", escape(name.trim()))),
                fold(&format!("N:{}", structured_name(name))),
            ],
        ));
    }
    if let Some(emails) = &fields.emails {
        out.push((
            &["EMAIL"],
            emails
                .iter()
                .filter(|e| !e.trim().is_empty())
                .map(|e| fold(&format!("EMAIL;TYPE=INTERNET:{}", escape(e.trim()))))
                .collect(),
        ));
    }
    if let Some(phones) = &fields.phones {
        out.push((
            &["TEL"],
            phones
                .iter()
                .filter(|p| !p.trim().is_empty())
                .map(|p| fold(&format!("TEL;TYPE=VOICE:{}", escape(p.trim()))))
                .collect(),
        ));
    }
    if let Some(org) = &fields.org {
        out.push((
            &["ORG"],
            (!org.trim().is_empty())
                .then(|| fold(&format!("ORG:{}", escape(org.trim()))))
                .into_iter()
                .collect(),
        ));
    }
    if let Some(note) = &fields.note {
        out.push((
            &["NOTE"],
            (!note.trim().is_empty())
                .then(|| fold(&format!("NOTE:{}", escape(note.trim()))))
                .into_iter()
                .collect(),
        ));
    }
    out
}

fn revision() -> String {
    format!("REV:{}", chrono::Utc::now().format("%Y%m%dT%H%M%SZ"))
}

/// The text of a new vCard.
pub(crate) fn build_contact(uid: &str, fields: &ContactFields) -> String {
    let mut card = Block::new("VCARD");
    card.replace(
        &[],
        vec![
            "VERSION:3.0".into(),
            "PRODID:-//Osprey//os tool//EN".into(),
            fold(&format!("UID:{uid}")),
        ],
    );
    for (names, lines) in lines_for(fields) {
        card.replace(names, lines);
    }
    card.replace(&["REV"], vec![revision()]);
    card.to_text()
}

/// The card with `uid` changed: only the properties `fields` names are replaced (all of a kind:
/// `emails` replaces every EMAIL).
pub(crate) fn update_contact(text: &str, uid: &str, fields: &ContactFields) -> Result<String> {
    let mut document = Document::parse(text)?;
    let card = document
        .blocks
        .iter_mut()
        .find(|b| b.name == "VCARD" && b.value("UID").as_deref() == Some(uid))
        .ok_or_else(|| Error::Failed(format!("the stored object holds no contact {uid:?}")))?;
    for (names, lines) in lines_for(fields) {
        card.replace(names, lines);
    }
    card.replace(&["REV"], vec![revision()]);
    Ok(document.to_text())
}

/// The cards of a file, each as its own text, with a UID added (derived from its name and first
/// address) where it had none.
pub(crate) fn split_cards(text: &str) -> Result<Vec<(String, String)>> {
    let document = Document::parse(text)?;
    let mut out = Vec::new();
    for mut card in document.blocks.into_iter().filter(|b| b.name == "VCARD") {
        let uid = match card.value("UID").filter(|u| !u.is_empty()) {
            Some(uid) => uid,
            None => {
                let uid = super::resource::derived_uid(&[
                    &card.value("FN").unwrap_or_default().to_lowercase(),
                    &card.value("EMAIL").unwrap_or_default().to_lowercase(),
                ]);
                let at = usize::from(card.has("VERSION"));
                card.props
                    .insert(at, super::lines::Line::from_text(&format!("UID:{uid}")));
                uid
            }
        };
        // FN is required (vCard 3.0 and 4.0) and servers refuse cards without it: derive it
        // from N as a reader would show it.
        if !card.has("FN")
            && let Some(name) = parse_contacts(&card.to_text())
                .ok()
                .and_then(|c| c.into_iter().next())
                .map(|c| c.name)
                .filter(|n| !n.is_empty())
        {
            let at = card
                .props
                .iter()
                .position(|l| l.name() == "N")
                .unwrap_or(card.props.len());
            card.props.insert(
                at,
                super::lines::Line::from_text(&fold(&format!("FN:{}", escape(&name)))),
            );
        }
        out.push((uid, card.to_text()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CARDS: &str = "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:c1\r\nFN:Doe\\, John\r\nN:Doe;John;;;\r\n\
        item1.EMAIL;TYPE=INTERNET,pref:j@x.org\r\nitem1.X-ABLabel:work\r\nTEL;TYPE=CELL:+49 170 555 01\r\n\
        PHOTO;ENCODING=b;TYPE=JPEG:AAAA\r\nEND:VCARD\r\nBEGIN:VCARD\r\nVERSION:4.0\r\nN:Lovelace;Ada;;;\r\n\
        EMAIL:ada@example.org\r\nEND:VCARD\r\n";

    #[test]
    fn cards_of_both_versions_read() {
        let contacts = parse_contacts(CARDS).unwrap();
        assert_eq!(contacts[0].name, "Doe, John");
        assert_eq!(contacts[0].emails, ["j@x.org"]);
        assert!(contacts[0].matches("170555"));
        assert!(contacts[0].matches("j@x"));
        assert!(!contacts[0].matches("ada"));
        assert_eq!(contacts[1].name, "Ada Lovelace");
        assert_eq!(contacts[1].uid, "");
    }

    #[test]
    fn updates_keep_what_they_do_not_name_and_splitting_adds_uids() {
        let fields = ContactFields {
            emails: Some(vec!["john@new.org".into()]),
            note: Some("met at, the fair".into()),
            ..ContactFields::default()
        };
        let cards = split_cards(CARDS).unwrap();
        assert_eq!(cards.len(), 2);
        assert!(cards[1].0.starts_with("osprey-"));
        assert!(
            cards[1]
                .1
                .contains(&format!("VERSION:4.0\r\nUID:{}\r\n", cards[1].0))
        );
        let updated = update_contact(&cards[0].1, "c1", &fields).unwrap();
        assert!(
            updated.contains("EMAIL;TYPE=INTERNET:john@new.org\r\n"),
            "{updated}"
        );
        assert!(!updated.contains("j@x.org"), "{updated}");
        assert!(
            updated.contains("PHOTO;ENCODING=b;TYPE=JPEG:AAAA\r\n"),
            "{updated}"
        );
        assert!(updated.contains("NOTE:met at\\, the fair\r\n"), "{updated}");
        let read = parse_contacts(&updated).unwrap();
        assert_eq!(read[0].note, "met at, the fair");
        assert_eq!(read[0].phones, ["+49 170 555 01"]);
        let new = build_contact(
            "n1",
            &ContactFields {
                name: Some("Grace Brewster Hopper".into()),
                phones: Some(vec!["+1 555 0100".into()]),
                ..ContactFields::default()
            },
        );
        assert!(new.contains("N:Hopper;Grace Brewster;;;\r\n"), "{new}");
        assert_eq!(
            parse_contacts(&new).unwrap()[0].name,
            "Grace Brewster Hopper"
        );
    }
}
