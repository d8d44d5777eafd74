//! The `contacts` resource: the cards of the configured CardDAV accounts and of the desktop's own
//! address books (Evolution Data Server; see `dav`), with the
//! same rules as the calendar: creation at `<uid>.vcf` with `If-None-Match: *` (a uid derived
//! from name and first email when none is given, so the same create twice makes no duplicate),
//! changes with `If-Match` on the version the model was shown.

use osprey_tools::Call;
use osprey_types::ToolResult;

use crate::dav::resource::{PathCheck, derived_uid, file_path, read_file, write_file};
use crate::dav::vcf::{self, ContactFields};
use crate::dav::{Collection, Dav, Kind, Located, StoredObject, check_uid};
use crate::error::{Error, Result};
use crate::tool::{count, text};

/// Contacts a listing shows at most.
const MAX_LINES: usize = 300;

pub(crate) async fn run(dav: &Dav, call: &Call, paths: PathCheck<'_>) -> Result<ToolResult> {
    match call.action() {
        "books" => text(
            dav.describe_collections(Kind::Contacts, call.str("account"))
                .await?,
        ),
        "list" | "search" => list(dav, call).await,
        "create" => create(dav, call).await,
        "update" => update(dav, call).await,
        "delete" => delete(dav, call).await,
        "import" => import(dav, call, paths).await,
        "export" => export(dav, call, paths).await,
        other => Err(Error::invalid(format!("unknown contacts action {other}"))),
    }
}

fn strings(call: &Call, key: &str) -> Option<Vec<String>> {
    match call.input.get(key)? {
        serde_json::Value::Array(items) => Some(
            items
                .iter()
                .filter_map(serde_json::Value::as_str)
                .map(str::to_string)
                .collect(),
        ),
        serde_json::Value::String(one) => Some(vec![one.clone()]),
        _ => None,
    }
}

fn fields(call: &Call) -> ContactFields {
    ContactFields {
        name: call.str("name").map(|n| n.trim().to_string()),
        emails: strings(call, "emails"),
        phones: strings(call, "phones"),
        org: call.str("org").map(str::to_string),
        // `description` is the schema's name for free text; `note`, vCard's, is its alias.
        note: call.str("description").map(str::to_string),
    }
}

async fn book_for(dav: &Dav, call: &Call) -> Result<(Vec<Collection>, usize)> {
    dav.select(Kind::Contacts, call.str("account"), call.str("book"))
        .await
}

/// The cards of `books`, and the desktop address books that could not be read, with why.
async fn fetch(
    dav: &Dav,
    books: &[Collection],
) -> Result<(Vec<(Collection, StoredObject)>, Vec<String>)> {
    dav.objects_of(books, Kind::Contacts, None).await
}

async fn list(dav: &Dav, call: &Call) -> Result<ToolResult> {
    let search = call.action() == "search";
    let needle = call.str("query").map(|q| q.trim().to_lowercase());
    if search && needle.as_deref().is_none_or(str::is_empty) {
        return Err(Error::invalid(
            "contacts search needs `query`: a name, email or phone number (part)",
        ));
    }
    let (books, accounts) = book_for(dav, call).await?;
    let mut rows: Vec<(String, String)> = Vec::new();
    let (objects, unread) = fetch(dav, &books).await?;
    for (book, object) in objects {
        dav.remember(&object.url, object.etag.as_deref());
        let Ok(contacts) = vcf::parse_contacts(&object.text) else {
            tracing::debug!(url = %object.url, "skipping an unreadable card");
            continue;
        };
        for contact in contacts {
            if let Some(needle) = &needle
                && !contact.matches(needle)
            {
                continue;
            }
            rows.push((
                contact.name.to_lowercase(),
                format!(
                    "{}  [uid {}; {}]",
                    contact.describe(),
                    contact.uid,
                    book.label(accounts)
                ),
            ));
        }
    }
    rows.sort();
    let total = rows.len();
    let mut lines: Vec<String> = rows.into_iter().take(MAX_LINES).map(|(_, l)| l).collect();
    if total == 0 {
        lines.push(
            if search {
                "No contact matches."
            } else {
                "No contacts."
            }
            .into(),
        );
    }
    if total > MAX_LINES {
        lines.push(format!("({} more; use search)", total - MAX_LINES));
    }
    lines.extend(crate::calendar::unread_line(&unread));
    text(lines.join("\n"))
}

async fn create(dav: &Dav, call: &Call) -> Result<ToolResult> {
    let fields = fields(call);
    let name = fields.name.clone().unwrap_or_default();
    if name.is_empty() {
        return Err(Error::invalid("contacts create needs `name`"));
    }
    let (book, accounts) = dav
        .pick(Kind::Contacts, call.str("account"), call.str("book"))
        .await?;
    let uid = match call.str("uid") {
        Some(uid) => check_uid(uid)?.to_string(),
        None => {
            let first = fields
                .emails
                .iter()
                .flatten()
                .chain(fields.phones.iter().flatten())
                .next()
                .cloned()
                .unwrap_or_default();
            derived_uid(&[
                &name.to_lowercase(),
                &first.trim().to_lowercase(),
                book.url.as_str(),
            ])
        }
    };
    let card = vcf::build_contact(&uid, &fields);
    text(
        dav.create_once(&book, accounts, Kind::Contacts, &uid, card, |label| {
            format!("Created the contact {name:?} in {label} (uid {uid}).")
        })
        .await?,
    )
}

async fn update(dav: &Dav, call: &Call) -> Result<ToolResult> {
    let fields = fields(call);
    if fields.name.is_none()
        && fields.emails.is_none()
        && fields.phones.is_none()
        && fields.org.is_none()
        && fields.note.is_none()
    {
        return Err(Error::invalid(
            "nothing to change: give name, emails, phones, org or note",
        ));
    }
    if fields.name.as_deref() == Some("") {
        return Err(Error::invalid("`name` cannot be empty"));
    }
    let Located {
        collection: book,
        object,
        uid,
        ..
    } = dav.locate(Kind::Contacts, call).await?;
    let updated = vcf::update_contact(&object.text, &uid, &fields)?;
    dav.replace(&book, Kind::Contacts, &object, updated.clone())
        .await?;
    let contact = vcf::parse_contacts(&updated)?
        .into_iter()
        .find(|c| c.uid == uid)
        .ok_or_else(|| Error::Failed("the updated contact did not read back".into()))?;
    text(format!("Updated (uid {uid}): {}.", contact.describe()))
}

async fn delete(dav: &Dav, call: &Call) -> Result<ToolResult> {
    text(
        dav.delete_by_uid(Kind::Contacts, call, |body, uid| {
            vcf::parse_contacts(body)
                .ok()?
                .into_iter()
                .find(|c| c.uid == uid)
                .map(|c| c.name)
        })
        .await?,
    )
}

async fn import(dav: &Dav, call: &Call, paths: PathCheck<'_>) -> Result<ToolResult> {
    let path = file_path(call, Kind::Contacts, paths, false)?;
    let content = read_file(&path).await?;
    let cards = vcf::split_cards(&content)
        .map_err(|e| Error::invalid(format!("{} is not a .vcf file: {e}", path.display())))?;
    if cards.is_empty() {
        return Err(Error::invalid(format!(
            "{} holds no vCards",
            path.display()
        )));
    }
    // Each card must read, or the file is refused before anything is stored.
    for (uid, card) in &cards {
        vcf::parse_contacts(card)
            .map_err(|e| Error::invalid(format!("the card {uid} in {}: {e}", path.display())))?;
    }
    let (book, accounts) = dav
        .pick(Kind::Contacts, call.str("account"), call.str("book"))
        .await?;
    text(
        dav.import_objects(&book, accounts, Kind::Contacts, cards, &path)
            .await?,
    )
}

async fn export(dav: &Dav, call: &Call, paths: PathCheck<'_>) -> Result<ToolResult> {
    let path = file_path(call, Kind::Contacts, paths, true)?;
    let (books, _) = book_for(dav, call).await?;
    let mut out = String::new();
    let mut written = 0;
    let (objects, unread) = fetch(dav, &books).await?;
    for (_, object) in objects {
        let text = object.text.trim_end();
        if text.is_empty() {
            continue;
        }
        out.push_str(&text.replace("\r\n", "\n").replace('\n', "\r\n"));
        out.push_str("\r\n");
        written += 1;
    }
    write_file(&path, &out).await?;
    text(format!(
        "Wrote {} to {}.{}",
        count(written, "contact"),
        path.display(),
        crate::calendar::unread_line(&unread)
            .map(|l| format!(" {l}"))
            .unwrap_or_default()
    ))
}
