//! Every built-in tool's input schema is valid JSON Schema (checked against the draft 2020-12
//! meta-schema by a real validator) and accepts the calls the tool documents while rejecting
//! malformed ones; and what providers and MCP clients receive instead (`Registry::specs`) keeps
//! to the portable dialect: an object at the top with no combinator, still valid JSON Schema,
//! still accepting every documented call.

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
    let names = core.test_registry().names();
    for expected in ["file", "shell", "web"] {
        assert!(
            names.iter().any(|name| name == expected),
            "{expected} is not registered: {names:?}"
        );
    }
    for name in &names {
        let tool = core.test_registry().get(name).unwrap();
        let schema = tool.schema();
        if let Err(err) = jsonschema::draft202012::meta::validate(schema) {
            panic!("{name} schema is not valid JSON Schema: {err}\n{schema:#}");
        }
        assert!(!tool.description().is_empty());
    }
}

#[test]
fn what_providers_and_mcp_clients_receive_has_no_top_level_combinator() {
    let (core, _dir) = core();
    let specs = core.test_registry().specs();
    assert_eq!(specs.len(), core.test_registry().names().len());
    for spec in &specs {
        let schema = &spec.input_schema;
        assert_eq!(schema["type"], "object", "{}: {schema}", spec.name);
        assert!(schema["properties"].is_object(), "{}: {schema}", spec.name);
        for keyword in osprey_tools::spec::TOP_LEVEL_FORBIDDEN {
            assert!(
                schema.get(*keyword).is_none(),
                "{} sends a top-level {keyword}",
                spec.name
            );
        }
        if let Err(err) = jsonschema::draft202012::meta::validate(schema) {
            panic!("{}: portable schema is not valid: {err}", spec.name);
        }
        // The built-in tools already say in each field which action needs it: no extra note.
        assert_eq!(
            spec.description,
            core.test_registry().get(&spec.name).unwrap().description(),
            "{}",
            spec.name
        );
    }
}

#[test]
fn schemas_accept_documented_calls_and_reject_malformed_ones() {
    let (core, _dir) = core();
    let schema_of =
        |name: &str| -> Value { core.test_registry().get(name).unwrap().schema().clone() };
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
    let specs = core.test_registry().specs();
    for (tool, input, valid) in cases {
        let schema = schema_of(tool);
        let validator = jsonschema::draft202012::new(&schema).unwrap();
        assert_eq!(validator.is_valid(input), *valid, "{tool} {input}");
        // The portable schema is looser (the tool checks the rest), never stricter.
        let portable = &specs.iter().find(|s| s.name == *tool).unwrap().input_schema;
        if *valid {
            assert!(
                jsonschema::draft202012::new(portable)
                    .unwrap()
                    .is_valid(input),
                "{tool}: the portable schema refuses {input}"
            );
        }
    }
}
