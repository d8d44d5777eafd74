//! A tool as a model, a gateway app or an MCP client is told about it ([`ToolSpec`]), in the one
//! schema dialect every provider accepts.
//!
//! A tool's own schema ([`crate::Tool::schema`]) may be as rich as JSON Schema allows: the
//! built-in domain tools carry `allOf` of `if`/`then` rules ("write needs content"), and MCP
//! servers send what their SDK generates (`anyOf` unions, a top-level `$ref`). Providers accept
//! less. Anthropic's Messages API refuses a whole request whose tool has a top-level `oneOf`,
//! `allOf` or `anyOf` ("input_schema does not support oneOf, allOf, or anyOf at the top level"),
//! and OpenAI's function calling wants `type: object` at the top. [`portable_schema`] therefore
//! gives every tool a top level of `type: object` with `properties` and nothing from
//! [`TOP_LEVEL_FORBIDDEN`]; nested schemas are left as they are (providers accept them there).
//! What the top-level rules said moves into words: the properties of every branch are merged, a
//! field every branch requires stays required, and the alternatives and conditions that cannot
//! be expressed become a note on the tool's description. The rules themselves are still
//! enforced where they always were, by the tool when it parses its input (`invalid_input` with
//! the choices).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// Keywords no tool schema sent to a provider or an MCP client has at its top level.
pub const TOP_LEVEL_FORBIDDEN: &[&str] = &[
    "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "enum", "const",
];

/// A tool as the model is told about it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

impl ToolSpec {
    /// The spec of a tool whose own schema is `schema`, in the portable dialect: the schema
    /// through [`portable_schema`], its note appended to the description.
    pub fn portable(name: &str, description: &str, schema: &Value) -> ToolSpec {
        let (input_schema, note) = portable_schema(schema);
        let description = match note {
            Some(note) if description.trim().is_empty() => note,
            Some(note) => format!("{}\n\n{note}", description.trim_end()),
            None => description.to_string(),
        };
        ToolSpec {
            name: name.to_string(),
            description,
            input_schema,
        }
    }
}

/// `schema` with a top level every provider accepts, and a sentence for what that dropped (see
/// the module docs). A schema that already conforms comes back unchanged, with no note.
pub fn portable_schema(schema: &Value) -> (Value, Option<String>) {
    let Some(top) = schema.as_object() else {
        // Not a schema object (a missing or boolean schema): an object of anything.
        return (json!({"type": "object", "properties": {}}), None);
    };
    let mut top = inline_top_level_ref(top);
    let mut notes = Vec::new();
    let mut properties = match top.remove("properties") {
        Some(Value::Object(properties)) => properties,
        _ => Map::new(),
    };
    let mut required = names(top.get("required"));

    if let Some(Value::Array(rules)) = top.remove("allOf") {
        for rule in &rules {
            let Some(rule) = rule.as_object() else {
                continue;
            };
            if rule.contains_key("if") {
                if let Some(note) = condition_note(rule, &properties) {
                    notes.push(note);
                }
                continue;
            }
            merge_properties(&mut properties, rule);
            for name in names(rule.get("required")) {
                if !required.contains(&name) {
                    required.push(name);
                }
            }
        }
    }
    for keyword in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = top.remove(keyword) else {
            continue;
        };
        let branches: Vec<&Map<String, Value>> =
            branches.iter().filter_map(Value::as_object).collect();
        for branch in &branches {
            merge_properties(&mut properties, branch);
        }
        let alternatives: Vec<Vec<String>> = branches
            .iter()
            .map(|branch| names(branch.get("required")))
            .collect();
        // What every branch requires is required whichever branch the input takes.
        if let Some((first, rest)) = alternatives.split_first() {
            for name in first {
                if rest.iter().all(|other| other.contains(name)) && !required.contains(name) {
                    required.push(name.clone());
                }
            }
        }
        let distinct: Vec<String> = alternatives
            .iter()
            .filter(|names| !names.is_empty())
            .map(|names| names.join(" + "))
            .collect();
        if distinct.len() > 1 {
            let how = if keyword == "oneOf" {
                "exactly one"
            } else {
                "at least one"
            };
            notes.push(format!(
                "Give {how} of these sets of fields: {}.",
                distinct.join("; ")
            ));
        }
    }
    if let Some(Value::Object(rule)) = top.remove("if") {
        let mut conditional = Map::from_iter([("if".to_string(), Value::Object(rule))]);
        if let Some(then) = top.remove("then") {
            conditional.insert("then".into(), then);
        }
        if let Some(note) = condition_note(&conditional, &properties) {
            notes.push(note);
        }
    }
    // `not`, `else`, a top-level `enum` or `const` say nothing a property list can carry: the
    // tool still checks its input against them.
    for keyword in TOP_LEVEL_FORBIDDEN {
        top.remove(*keyword);
    }

    top.insert("type".into(), "object".into());
    top.insert("properties".into(), Value::Object(properties));
    required.retain(|name| top["properties"].get(name).is_some());
    if required.is_empty() {
        top.remove("required");
    } else {
        top.insert(
            "required".into(),
            Value::Array(required.into_iter().map(Value::String).collect()),
        );
    }
    let note = (!notes.is_empty()).then(|| notes.join(" "));
    (Value::Object(top), note)
}

/// A top-level `{"$ref": "#/$defs/X"}` (what pydantic and zod generate for a named model) with the
/// definition's keywords in place of the reference; the definitions stay for nested references.
fn inline_top_level_ref(top: &Map<String, Value>) -> Map<String, Value> {
    let mut top = top.clone();
    let Some(Value::String(reference)) = top.get("$ref").cloned() else {
        return top;
    };
    let target = ["#/$defs/", "#/definitions/"].iter().find_map(|prefix| {
        let name = reference.strip_prefix(prefix)?;
        let defs = top.get(&prefix[2..prefix.len() - 1])?;
        defs.get(name)?.as_object().cloned()
    });
    if let Some(target) = target {
        top.remove("$ref");
        for (key, value) in target {
            top.entry(key).or_insert(value);
        }
    }
    top
}

fn names(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(|name| name.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn merge_properties(properties: &mut Map<String, Value>, branch: &Map<String, Value>) {
    if let Some(Value::Object(more)) = branch.get("properties") {
        for (name, schema) in more {
            properties
                .entry(name.clone())
                .or_insert_with(|| schema.clone());
        }
    }
}

/// "When action is write: content is required." for an `if`/`then` rule, unless every field it
/// requires already says so in its own description (the built-in tools write "(required for
/// write)" there).
fn condition_note(rule: &Map<String, Value>, properties: &Map<String, Value>) -> Option<String> {
    let needed = names(rule.get("then").and_then(|then| then.get("required")));
    let said = needed.iter().all(|name| {
        properties
            .get(name)
            .and_then(|p| p.get("description"))
            .and_then(Value::as_str)
            .is_some_and(|d| d.contains("required for"))
    });
    if needed.is_empty() || said {
        return None;
    }
    let when: Vec<String> = rule
        .get("if")
        .and_then(|when| when.get("properties"))
        .and_then(Value::as_object)
        .map(|fields| {
            fields
                .iter()
                .filter_map(|(name, test)| {
                    let value = test.get("const").or_else(|| {
                        test.get("enum")
                            .and_then(Value::as_array)
                            .filter(|values| values.len() == 1)
                            .map(|values| &values[0])
                    })?;
                    Some(format!("{name} is {}", plain(value)))
                })
                .collect()
        })
        .unwrap_or_default();
    if when.is_empty() {
        return Some(format!(
            "Depending on the other fields, {} may be required.",
            needed.join(", ")
        ));
    }
    Some(format!(
        "When {}: {} {} required.",
        when.join(" and "),
        needed.join(", "),
        if needed.len() == 1 { "is" } else { "are" }
    ))
}

fn plain(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conforms(schema: &Value) {
        assert_eq!(schema["type"], "object", "{schema}");
        assert!(schema["properties"].is_object(), "{schema}");
        for keyword in TOP_LEVEL_FORBIDDEN {
            assert!(schema.get(*keyword).is_none(), "{keyword} left in {schema}");
        }
    }

    #[test]
    fn a_conforming_schema_is_unchanged() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}},
                            "required": ["a"], "additionalProperties": false});
        assert_eq!(portable_schema(&schema), (schema, None));
    }

    #[test]
    fn conditions_already_in_descriptions_add_no_note() {
        let schema = json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["read", "write"]},
                "content": {"type": "string", "description": "text (required for write)"},
            },
            "required": ["action"],
            "allOf": [{"if": {"properties": {"action": {"const": "write"}}, "required": ["action"]},
                       "then": {"required": ["content"]}}],
        });
        let (portable, note) = portable_schema(&schema);
        conforms(&portable);
        assert_eq!(note, None);
        assert_eq!(portable["required"], json!(["action"]));
        assert_eq!(portable["properties"], schema["properties"]);
    }

    #[test]
    fn unexplained_conditions_become_a_sentence() {
        let schema = json!({
            "type": "object",
            "properties": {"mode": {"type": "string"}, "url": {"type": "string"}},
            "if": {"properties": {"mode": {"const": "fetch"}}},
            "then": {"required": ["url"]},
            "allOf": [{"if": {"properties": {"mode": {"enum": ["post"]}}},
                       "then": {"required": ["url", "body"]}}],
        });
        let (portable, note) = portable_schema(&schema);
        conforms(&portable);
        let note = note.unwrap();
        assert!(
            note.contains("When mode is post: url, body are required."),
            "{note}"
        );
        assert!(
            note.contains("When mode is fetch: url is required."),
            "{note}"
        );
    }

    #[test]
    fn unions_merge_their_fields_and_keep_what_every_branch_requires() {
        let schema = json!({
            "anyOf": [
                {"type": "object", "properties": {"id": {"type": "integer"}, "force": {"type": "boolean"}},
                 "required": ["id", "force"]},
                {"type": "object", "properties": {"name": {"type": "string"}, "force": {"type": "boolean"}},
                 "required": ["name", "force"]},
            ],
        });
        let (portable, note) = portable_schema(&schema);
        conforms(&portable);
        let fields: Vec<&String> = portable["properties"].as_object().unwrap().keys().collect();
        assert_eq!(fields, ["force", "id", "name"]);
        assert_eq!(portable["required"], json!(["force"]));
        assert_eq!(
            note.as_deref(),
            Some("Give at least one of these sets of fields: id + force; name + force.")
        );
    }

    #[test]
    fn a_top_level_reference_is_inlined() {
        let schema = json!({
            "$ref": "#/$defs/Args",
            "$defs": {"Args": {"type": "object", "properties": {"q": {"$ref": "#/$defs/Q"}},
                               "required": ["q"]},
                      "Q": {"type": "string"}},
        });
        let (portable, note) = portable_schema(&schema);
        conforms(&portable);
        assert_eq!(note, None);
        assert!(portable.get("$ref").is_none());
        assert_eq!(portable["required"], json!(["q"]));
        assert_eq!(portable["$defs"]["Q"], json!({"type": "string"}));
    }

    #[test]
    fn anything_else_becomes_an_object_schema() {
        for schema in [
            json!(true),
            json!(null),
            json!({}),
            json!({"type": "string", "enum": ["a"]}),
            json!({"not": {"required": ["x"]}, "properties": []}),
        ] {
            let (portable, _) = portable_schema(&schema);
            conforms(&portable);
        }
    }

    #[test]
    fn the_note_follows_the_description() {
        let schema = json!({"oneOf": [{"required": ["a"], "properties": {"a": {}}},
                                      {"required": ["b"], "properties": {"b": {}}}]});
        let spec = ToolSpec::portable("t", "Does a thing.", &schema);
        assert_eq!(
            spec.description,
            "Does a thing.\n\nGive exactly one of these sets of fields: a; b."
        );
        conforms(&spec.input_schema);
    }
}
