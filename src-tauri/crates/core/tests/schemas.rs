//! Every built-in tool's input schema is valid JSON Schema (checked against the draft 2020-12
//! meta-schema by a real validator) and accepts the calls the tool documents while rejecting
//! malformed ones.

use osprey_core::{Core, CoreOptions};
use serde_json::{Value, json};

fn core() -> (Core, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let core = Core::open(CoreOptions {
        data_dir: Some(dir.path().to_path_buf()),
        ..Default::default()
    })
    .unwrap();
    (core, dir)
}

#[test]
fn every_builtin_schema_is_valid_json_schema() {
    let (core, _dir) = core();
    let schemas = core.registry().schemas();
    let names: Vec<&str> = schemas
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    for expected in ["file", "shell", "web"] {
        assert!(
            names.contains(&expected),
            "{expected} is not registered: {names:?}"
        );
    }
    for tool in &schemas {
        let schema = &tool["input_schema"];
        if let Err(err) = jsonschema::draft202012::meta::validate(schema) {
            panic!(
                "{} schema is not valid JSON Schema: {err}\n{schema:#}",
                tool["name"]
            );
        }
        assert!(!tool["description"].as_str().unwrap().is_empty());
    }
}

#[test]
fn schemas_accept_documented_calls_and_reject_malformed_ones() {
    let (core, _dir) = core();
    let schema_of = |name: &str| -> Value { core.registry().get(name).unwrap().schema().clone() };
    let cases: &[(&str, Value, bool)] = &[
        ("file", json!({"action": "read", "path": "README.md"}), true),
        (
            "file",
            json!({"resource": "file", "action": "write", "path": "a", "content": "x"}),
            true,
        ),
        (
            "file",
            json!({"action": "grep", "pattern": "fn main"}),
            true,
        ),
        ("file", json!({"action": "read"}), false),
        ("file", json!({"action": "shred", "path": "a"}), false),
        ("file", json!({"path": "a"}), false),
        ("shell", json!({"action": "exec", "command": "ls"}), true),
        (
            "shell",
            json!({"resource": "bash", "action": "exec"}),
            false,
        ),
        (
            "web",
            json!({"action": "fetch", "url": "https://example.com/"}),
            true,
        ),
        ("web", json!({"action": "fetch"}), false),
        ("web", json!({"action": "fetch", "url": 5}), false),
    ];
    for (tool, input, valid) in cases {
        let schema = schema_of(tool);
        let validator = jsonschema::draft202012::new(&schema).unwrap();
        assert_eq!(validator.is_valid(input), *valid, "{tool} {input}");
    }
}
