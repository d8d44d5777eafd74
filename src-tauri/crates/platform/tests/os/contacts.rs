//! Contacts against a real CardDAV server: Radicale on loopback, as in `calendar.rs`.

use osprey_platform::OsTool;
use serde_json::{Value, json};

use crate::harness::{call, code, input, ok_text, radicale, uid_in};

fn contacts(action: &str, rest: Value) -> Value {
    input("contacts", action, rest)
}

#[tokio::test(flavor = "multi_thread")]
async fn contacts_are_created_found_changed_deleted_and_moved_through_files() {
    let Some(server) =
        radicale("contacts_are_created_found_changed_deleted_and_moved_through_files")
    else {
        return;
    };
    server
        .collection("alice/contacts/", "addressbook", "Contacts")
        .await;
    let tool = OsTool::new(server.config(Some("secret"), "UTC"));

    let books = ok_text(&call(&tool, contacts("books", json!({}))).await);
    assert!(
        books.starts_with("Contacts (account home): http://127.0.0.1:"),
        "{books}"
    );
    let status = ok_text(&call(&tool, json!({"resource": "capability", "action": "list"})).await);
    assert!(
        status.contains(
            "contacts (productivity): available - account `home`: 1 address book (Contacts)"
        ),
        "{status}"
    );

    let ada = contacts(
        "create",
        json!({
            "name": "Ada Lovelace",
            "emails": ["ada@example.org"],
            "phones": ["+44 20 7946 0018"],
            "org": "Analytical Engines",
            "note": "met at the Babbage talk, 1833",
        }),
    );
    let created = ok_text(&call(&tool, ada.clone()).await);
    assert!(
        created.starts_with("Created the contact \"Ada Lovelace\""),
        "{created}"
    );
    let uid = uid_in(&created);
    // The same create twice: one contact.
    let again = ok_text(&call(&tool, ada).await);
    assert!(again.starts_with("Not created again"), "{again}");
    ok_text(
        &call(
            &tool,
            contacts(
                "create",
                json!({"name": "Grace Hopper", "emails": ["grace@navy.example"]}),
            ),
        )
        .await,
    );
    let list = ok_text(&call(&tool, contacts("list", json!({}))).await);
    assert_eq!(list.lines().count(), 2, "{list}");
    assert!(
        list.starts_with(
            "Ada Lovelace <ada@example.org>, tel +44 20 7946 0018; Analytical Engines; note: met at the Babbage talk, 1833  [uid "
        ),
        "{list}"
    );

    // Stored as vCard 3.0 with the structured name.
    let (status, _, stored) = server
        .request("GET", &format!("alice/contacts/{uid}.vcf"), &[], None)
        .await;
    assert_eq!(status, 200);
    assert!(stored.contains("VERSION:3.0"), "{stored}");
    assert!(stored.contains("N:Lovelace;Ada;;;"), "{stored}");
    assert!(
        stored.contains("NOTE:met at the Babbage talk\\, 1833"),
        "{stored}"
    );

    // Search by name, email and phone digits.
    for query in ["lovelace", "ADA@", "7946 0018", "engines"] {
        let found = ok_text(&call(&tool, contacts("search", json!({"query": query}))).await);
        assert!(
            found.contains("Ada Lovelace") && !found.contains("Grace"),
            "{query}: {found}"
        );
    }
    let none = ok_text(&call(&tool, contacts("search", json!({"query": "babbage@"}))).await);
    assert_eq!(none, "No contact matches.");

    // Update replaces what it names and keeps the rest (a property another app added).
    let (_, etag, stored) = server
        .request("GET", &format!("alice/contacts/{uid}.vcf"), &[], None)
        .await;
    let with_photo = stored.replace(
        "END:VCARD",
        "PHOTO;ENCODING=b;TYPE=PNG:iVBORw0KGgo=\r\nEND:VCARD",
    );
    server
        .request(
            "PUT",
            &format!("alice/contacts/{uid}.vcf"),
            &[
                ("If-Match", etag.as_deref().unwrap()),
                ("Content-Type", "text/vcard"),
            ],
            Some(&with_photo),
        )
        .await;
    // That was a change the model has not seen: refused until it lists again.
    let change = contacts(
        "update",
        json!({"uid": uid, "emails": ["ada@lovelace.example", "countess@example.org"]}),
    );
    let result = call(&tool, change.clone()).await;
    assert_eq!(code(&result), "invalid_input");
    assert!(
        result.text_content().contains("List it again"),
        "{result:?}"
    );
    ok_text(&call(&tool, contacts("search", json!({"query": "ada"}))).await);
    let updated = ok_text(&call(&tool, change).await);
    assert!(
        updated.contains("<ada@lovelace.example>, <countess@example.org>"),
        "{updated}"
    );
    let (_, _, stored) = server
        .request("GET", &format!("alice/contacts/{uid}.vcf"), &[], None)
        .await;
    assert!(
        stored.contains("PHOTO;ENCODING=b;TYPE=PNG:iVBORw0KGgo="),
        "{stored}"
    );
    assert!(!stored.contains("ada@example.org"), "{stored}");
    assert!(
        stored.contains("TEL;TYPE=VOICE:+44 20 7946 0018"),
        "{stored}"
    );

    // Export, delete, import back: the same contacts; a second import adds nothing.
    let file = server.dir.path().join("contacts.vcf");
    let exported = ok_text(
        &call(
            &tool,
            contacts("export", json!({"path": file.to_str().unwrap()})),
        )
        .await,
    );
    assert_eq!(exported, format!("Wrote 2 contacts to {}.", file.display()));
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text.matches("BEGIN:VCARD").count(), 2, "{text}");
    let deleted = ok_text(&call(&tool, contacts("delete", json!({"uid": uid}))).await);
    assert!(
        deleted.starts_with("Deleted the contact \"Ada Lovelace\""),
        "{deleted}"
    );
    let list = ok_text(&call(&tool, contacts("list", json!({}))).await);
    assert!(!list.contains("Ada"), "{list}");
    let imported = ok_text(
        &call(
            &tool,
            contacts("import", json!({"path": file.to_str().unwrap()})),
        )
        .await,
    );
    assert!(
        imported.starts_with("Imported 1 contact from") && imported.contains("1 was already there"),
        "{imported}"
    );
    let list = ok_text(&call(&tool, contacts("list", json!({}))).await);
    assert!(
        list.contains("Ada Lovelace <ada@lovelace.example>"),
        "{list}"
    );
    let (_, _, stored) = server
        .request("GET", &format!("alice/contacts/{uid}.vcf"), &[], None)
        .await;
    assert!(
        stored.contains("PHOTO;ENCODING=b;TYPE=PNG:iVBORw0KGgo="),
        "{stored}"
    );

    // Another program's file: vCard 4.0 and 3.0, one card without a UID (one is derived, so a
    // second import is still no duplicate).
    let other = server.dir.path().join("other.vcf");
    std::fs::write(
        &other,
        "BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Alan Turing\r\nEMAIL:alan@example.org\r\nEND:VCARD\r\n\
         BEGIN:VCARD\r\nVERSION:3.0\r\nUID:katherine-1\r\nN:Johnson;Katherine;;;\r\n\
         TEL;TYPE=CELL:+1 757 555 0100\r\nEND:VCARD\r\n",
    )
    .unwrap();
    for expected in ["Imported 2 contacts", "Imported 0 contacts"] {
        let imported = ok_text(
            &call(
                &tool,
                contacts("import", json!({"path": other.to_str().unwrap()})),
            )
            .await,
        );
        assert!(imported.starts_with(expected), "{imported}");
    }
    let found = ok_text(&call(&tool, contacts("search", json!({"query": "555 0100"}))).await);
    assert!(
        found.starts_with("Katherine Johnson, tel +1 757 555 0100  [uid katherine-1;"),
        "{found}"
    );
    let list = ok_text(&call(&tool, contacts("list", json!({}))).await);
    assert_eq!(list.lines().count(), 4, "{list}");

    let result = call(&tool, contacts("create", json!({"emails": ["x@y"]}))).await;
    assert!(result.text_content().contains("needs `name`"), "{result:?}");
    let result = call(
        &tool,
        contacts("update", json!({"uid": "nobody", "org": "x"})),
    )
    .await;
    assert!(
        result.text_content().contains("no contact with uid"),
        "{result:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn contacts_without_an_account_say_how_to_add_one() {
    let tool = OsTool::new(osprey_platform::OsConfig {
        dav: osprey_platform::DavConfig {
            desktop: false,
            ..Default::default()
        },
        ..Default::default()
    });
    let result = call(&tool, contacts("search", json!({"query": "ada"}))).await;
    assert_eq!(code(&result), "not_configured");
    assert!(
        result
            .text_content()
            .contains("No CardDAV account is set up")
            && result.text_content().contains("dav.accounts"),
        "{result:?}"
    );
}
