//! Skills from real SKILL.md files in temp dirs: frontmatter, precedence, lazy index, triggers,
//! the active set's count, character budget and turns.

use std::time::Instant;

use osprey_agent::Skills;
use osprey_agent::skills::{
    AUTO_TTL, ActiveSkills, BUDGET_CHARS, Frontmatter, INDEX_BUDGET_CHARS, MANUAL_TTL, MAX_ACTIVE,
    PAGE_CHARS, SkillCatalog, SkillDir, SkillError, SkillSource, parse_skill, write_skill,
};

fn front(name: &str, description: &str, triggers: &[&str]) -> Frontmatter {
    Frontmatter {
        name: Some(name.into()),
        description: Some(description.into()),
        triggers: triggers.iter().map(|t| t.to_string()).collect(),
    }
}

#[test]
fn parses_the_frontmatter_subset() {
    let text = "---\n# a comment\nname: pdf-forms   # trailing comment\ndescription: >\n  Fill in\n  PDF forms\ntriggers:\n  - pdf form\n  - \"fill, in\"\n  - 'it''s a form'\nversion: 3\nmetadata:\n  nested: ignored\n---\n\n# Body\nDo it.\n";
    let (f, body) = parse_skill(text).unwrap();
    assert_eq!(f.name.as_deref(), Some("pdf-forms"));
    assert_eq!(f.description.as_deref(), Some("Fill in PDF forms"));
    assert_eq!(f.triggers, ["pdf form", "fill, in", "it's a form"]);
    assert_eq!(body, "# Body\nDo it.\n");

    let (f, _) =
        parse_skill("---\r\nname: \"a \\\"b\\\"\"\r\ntriggers: [x, \"y, z\", 'w']\r\n---\r\nbody")
            .unwrap();
    assert_eq!(f.name.as_deref(), Some("a \"b\""));
    assert_eq!(f.triggers, ["x", "y, z", "w"]);

    let (f, body) = parse_skill("no frontmatter here").unwrap();
    assert_eq!(f, Frontmatter::default());
    assert_eq!(body, "no frontmatter here");

    let (f, _) =
        parse_skill("---\ndescription: |\n  line one\n  line two\ntriggers: one, two\n---\n")
            .unwrap();
    assert_eq!(f.description.as_deref(), Some("line one\nline two"));
    assert_eq!(f.triggers, ["one", "two"]);

    assert!(parse_skill("---\nname: x\n").is_err());
    assert!(parse_skill("---\nname: \"open\n---\n").is_err());
    assert!(parse_skill("---\ntriggers: [a, b\n---\n").is_err());
    assert!(parse_skill("---\njust text\n---\n").is_err());
}

#[test]
fn user_skills_override_app_and_bundled_ones_and_bad_files_are_reported() {
    let root = tempfile::tempdir().unwrap();
    let bundled = root.path().join("bundled");
    let app = root.path().join("app");
    let user = root.path().join("user");
    write_skill(
        &bundled,
        "git",
        &front("git", "bundled git", &["commit"]),
        "bundled body",
    )
    .unwrap();
    write_skill(
        &bundled,
        "only-bundled",
        &front("only-bundled", "b", &[]),
        "b",
    )
    .unwrap();
    write_skill(
        &app,
        "git",
        &front("git", "app git", &["commit"]),
        "app body",
    )
    .unwrap();
    write_skill(
        &user,
        "my-git",
        &front("git", "user git", &["commit"]),
        "user body",
    )
    .unwrap();
    // No name: the folder names it; no description: the body's first line does.
    std::fs::create_dir_all(user.join("bare")).unwrap();
    std::fs::write(user.join("bare/SKILL.md"), "# Bare skill\nsteps").unwrap();
    std::fs::create_dir_all(user.join("broken")).unwrap();
    std::fs::write(user.join("broken/SKILL.md"), "---\nname: broken\n").unwrap();
    std::fs::create_dir_all(user.join("empty-folder")).unwrap();
    std::fs::write(user.join("stray.txt"), "not a skill").unwrap();

    let catalog = SkillCatalog::new(vec![
        SkillDir::new(&bundled, SkillSource::Bundled),
        SkillDir::new(&app, SkillSource::App("gitapp".into())),
        SkillDir::new(&user, SkillSource::User),
        SkillDir::new(root.path().join("missing"), SkillSource::User),
    ]);
    let names: Vec<String> = catalog.list().into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["bare", "git", "only-bundled"]);
    let git = catalog.get("git").unwrap();
    assert_eq!(git.source, SkillSource::User);
    assert_eq!(catalog.load("git").unwrap().body, "user body");
    assert_eq!(catalog.get("bare").unwrap().description, "Bare skill");
    let problems = catalog.problems();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("broken"), "{problems:?}");
    assert!(matches!(catalog.load("nope"), Err(SkillError::NotFound(_))));
}

#[test]
fn triggers_match_whole_words_in_any_case() {
    let root = tempfile::tempdir().unwrap();
    write_skill(
        root.path(),
        "pdf",
        &front("pdf", "PDFs", &["PDF form", "fill in"]),
        "pdf body",
    )
    .unwrap();
    write_skill(
        root.path(),
        "cal",
        &front("cal", "Calendar", &["meeting"]),
        "cal body",
    )
    .unwrap();
    let catalog = SkillCatalog::new(vec![SkillDir::new(root.path(), SkillSource::User)]);
    let names = |m: &str| {
        catalog
            .matching(m)
            .into_iter()
            .map(|s| s.name)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names("Please FILL IN this pdf-form, then set a meeting."),
        ["cal", "pdf"]
    );
    assert_eq!(names("the pdf formula"), Vec::<String>::new());
    assert_eq!(names("meetings"), Vec::<String>::new());
    assert_eq!(names(""), Vec::<String>::new());
}

#[test]
fn active_skills_keep_four_within_the_budget_for_their_turns() {
    let root = tempfile::tempdir().unwrap();
    for i in 0..6 {
        write_skill(
            root.path(),
            &format!("s{i}"),
            &front(&format!("s{i}"), "d", &[&format!("word{i}")]),
            &"x".repeat(3000),
        )
        .unwrap();
    }
    write_skill(
        root.path(),
        "huge",
        &front("huge", "d", &[]),
        &"y".repeat(BUDGET_CHARS + 1),
    )
    .unwrap();
    write_skill(
        root.path(),
        "big",
        &front("big", "d", &[]),
        &"z".repeat(9000),
    )
    .unwrap();
    let catalog = SkillCatalog::new(vec![SkillDir::new(root.path(), SkillSource::Bundled)]);
    let mut active = ActiveSkills::default();

    // Triggered: four turns.
    assert!(active.match_message(&catalog, "word0 please").is_empty());
    assert_eq!(active.active()[0].turns_left, AUTO_TTL);
    for _ in 0..AUTO_TTL - 1 {
        active.end_turn();
        assert_eq!(active.active().len(), 1);
    }
    active.end_turn();
    assert!(active.active().is_empty());

    // Loaded by hand: six turns; a trigger matching again does not shorten it.
    active.activate(&catalog.load("s1").unwrap(), true).unwrap();
    active.match_message(&catalog, "word1");
    assert_eq!(active.active()[0].turns_left, MANUAL_TTL);
    for _ in 0..MANUAL_TTL - 1 {
        active.end_turn();
    }
    assert_eq!(active.active().len(), 1);
    active.end_turn();
    assert!(active.active().is_empty());

    // At most four: the fifth evicts the one with the fewest turns left.
    active.match_message(&catalog, "word0");
    active.end_turn();
    active.match_message(&catalog, "word1 word2 word3");
    assert_eq!(active.active().len(), MAX_ACTIVE);
    active.match_message(&catalog, "word4");
    let names: Vec<&str> = active.active().iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["s1", "s2", "s3", "s4"]);

    // The character budget: 4 x 3000 + 9000 > 16,000, so skills leave until it fits.
    let evicted = active
        .activate(&catalog.load("big").unwrap(), true)
        .unwrap();
    assert_eq!(evicted.len(), 2, "{evicted:?}");
    assert!(active.chars() <= BUDGET_CHARS);
    assert!(active.active().iter().any(|a| a.name == "big"));
    assert!(active.render().contains("## Skill: big"));

    // One skill bigger than the whole budget is not refused: its first page goes in, with
    // where the rest is.
    active
        .activate(&catalog.load("huge").unwrap(), false)
        .unwrap();
    let huge = active.active().iter().find(|a| a.name == "huge").unwrap();
    assert!(
        huge.body.chars().count() < PAGE_CHARS + 400,
        "{}",
        huge.body.len()
    );
    assert!(
        huge.body.contains("skill load name=\"huge\" offset="),
        "{}",
        &huge.body[huge.body.len() - 300..]
    );
    assert!(active.chars() <= BUDGET_CHARS + 400);
    // It made room: `big` (the only other one left) went.
    assert!(!active.active().iter().any(|a| a.name == "big"));
    assert!(active.deactivate("huge"));
    assert!(!active.deactivate("huge"));
}

#[test]
fn twenty_five_hundred_skills_start_without_touching_disk_and_index_once() {
    let root = tempfile::tempdir().unwrap();
    for i in 0..2500 {
        write_skill(
            root.path(),
            &format!("skill-{i:04}"),
            &front(
                &format!("skill-{i:04}"),
                &format!("Does thing number {i}"),
                &[&format!("trigger{i}"), "common phrase"],
            ),
            &format!("# Skill {i}\n{}", "Step by step instructions.\n".repeat(20)),
        )
        .unwrap();
    }
    let started = Instant::now();
    let catalog = SkillCatalog::new(vec![SkillDir::new(root.path(), SkillSource::User)]);
    let startup = started.elapsed();
    assert!(!catalog.is_indexed());

    let started = Instant::now();
    catalog.warm_in_background().join().unwrap();
    let index = started.elapsed();
    assert!(catalog.is_indexed());
    assert_eq!(catalog.len(), 2500);

    let started = Instant::now();
    let hits = catalog.matching("please run trigger1234 now");
    let matching = started.elapsed();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].name, "skill-1234");
    assert_eq!(catalog.matching("a common phrase").len(), 2500);
    eprintln!(
        "2,500 skills: catalog start-up {startup:?}, background index {index:?}, trigger match {matching:?}"
    );
    // Start-up does no I/O, so it is far below the 300 ms goal on any machine.
    assert!(startup.as_millis() < 50, "{startup:?}");
}

/// A SKILL.md as published skills write them: only `name` and `description` (folded over
/// lines), plus keys Osprey does not use (`license`, `allowed-tools`, a `metadata` map).
const PUBLISHED: &str = "---
name: report-builder
description: >-
  Builds quarterly reports from spreadsheets. Use when the person asks for a
  report, a summary table or charts from .xlsx files.
license: Complete terms in LICENSE.txt
allowed-tools: [Read, Write]
metadata:
  version: 1.2.0
  author: someone
---
# Report builder

Run `scripts/build.py` from this skill's folder.
";

#[test]
fn published_skills_without_triggers_are_indexed_in_the_prompt() {
    let root = tempfile::tempdir().unwrap();
    let folder = root.path().join("report-builder");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("SKILL.md"), PUBLISHED).unwrap();
    write_skill(
        root.path(),
        "notes",
        &front("notes", "Keep notes", &[]),
        "Body",
    )
    .unwrap();
    let skills = Skills::new(
        SkillCatalog::new(vec![SkillDir::new(root.path(), SkillSource::User)]),
        None,
    );
    let meta = skills.catalog().get("report-builder").unwrap();
    assert!(meta.triggers.is_empty());
    assert_eq!(
        meta.description,
        "Builds quarterly reports from spreadsheets. Use when the person asks for a report, a \
         summary table or charts from .xlsx files."
    );
    let section = skills.begin_turn("s1", "hello");
    assert!(
        section.contains("- report-builder: Builds quarterly reports from spreadsheets."),
        "{section}"
    );
    assert!(section.contains("- notes: Keep notes"), "{section}");
    // Loaded, the instructions come with the folder their scripts sit in.
    skills.load("s1", "report-builder").unwrap();
    let section = skills.begin_turn("s1", "next");
    assert!(section.contains("## Skill: report-builder"), "{section}");
    assert!(section.contains(&folder.display().to_string()), "{section}");
}

#[test]
fn with_thousands_of_skills_the_index_keeps_to_its_budget_and_ranks_by_the_message() {
    let root = tempfile::tempdir().unwrap();
    for i in 0..2500 {
        write_skill(
            root.path(),
            &format!("skill-{i:04}"),
            &front(
                &format!("skill-{i:04}"),
                "Generic helper for routine chores",
                &[],
            ),
            "Body",
        )
        .unwrap();
    }
    write_skill(
        root.path(),
        "zz-invoices",
        &front(
            "zz-invoices",
            "Reconcile supplier invoices against payments",
            &[],
        ),
        "Body",
    )
    .unwrap();
    let catalog = SkillCatalog::new(vec![SkillDir::new(root.path(), SkillSource::User)]);
    let index = catalog.index_text("Please reconcile these invoices", INDEX_BUDGET_CHARS);
    assert!(index.len() <= INDEX_BUDGET_CHARS, "{}", index.len());
    let first = index.lines().nth(1).unwrap();
    assert!(first.starts_with("- zz-invoices:"), "{first}");
    assert!(
        index.contains("more skills are not listed here: find them with `skill catalog"),
        "{}",
        index.lines().last().unwrap()
    );
    // The catalog search ranks the same way: any matching word, best first.
    let found = catalog.search("reconcile my supplier invoices please");
    assert_eq!(found[0].name, "zz-invoices");
    assert_eq!(found.len(), 1);
}

#[test]
fn a_long_skill_is_read_in_pages_that_add_up_to_it() {
    let root = tempfile::tempdir().unwrap();
    let mut body = String::new();
    for section in 0..80 {
        body.push_str(&format!("## Section {section}\n\n"));
        for line in 0..20 {
            body.push_str(&format!(
                "Step {section}.{line}: do the careful thing here.\n"
            ));
        }
        body.push('\n');
    }
    assert!(body.chars().count() > 3 * PAGE_CHARS);
    write_skill(
        root.path(),
        "long",
        &front("long", "A long one", &[]),
        &body,
    )
    .unwrap();
    let skills = Skills::new(
        SkillCatalog::new(vec![SkillDir::new(root.path(), SkillSource::User)]),
        None,
    );
    // Loading is never refused; the prompt carries the first page and where the rest is.
    skills.load("s1", "long").unwrap();
    let active = skills.active("s1");
    assert!(active[0].body.contains("skill load name=\"long\" offset="));
    assert!(active[0].body.chars().count() <= PAGE_CHARS + 400);

    let mut read = String::new();
    let mut offset = 0;
    let mut pages = 0;
    loop {
        let (_, page) = skills.page("long", offset).unwrap();
        assert!(page.text.chars().count() <= PAGE_CHARS);
        read.push_str(&page.text);
        pages += 1;
        match page.next {
            Some(next) => {
                // Pages break before a heading, so sections stay whole.
                assert!(
                    page.text.ends_with("\n"),
                    "{:?}",
                    &page.text[page.text.len() - 40..]
                );
                offset = next;
            }
            None => break,
        }
    }
    assert_eq!(read, body);
    assert!(pages >= 4, "{pages}");
}

#[test]
fn a_triggered_skill_that_does_not_fit_is_named_in_the_prompt() {
    let root = tempfile::tempdir().unwrap();
    for i in 0..(MAX_ACTIVE + 1) {
        write_skill(
            root.path(),
            &format!("t{i}"),
            &front(&format!("t{i}"), "d", &["quarterly close"]),
            &"x".repeat(1000),
        )
        .unwrap();
    }
    let skills = Skills::new(
        SkillCatalog::new(vec![SkillDir::new(root.path(), SkillSource::User)]),
        None,
    );
    let section = skills.begin_turn("s1", "time for the quarterly close");
    assert_eq!(skills.active("s1").len(), MAX_ACTIVE);
    assert!(
        section.contains("Skills this message triggered that are not in the prompt: `t"),
        "{section}"
    );
    assert!(
        section.contains("left the prompt to make room"),
        "{section}"
    );
}
