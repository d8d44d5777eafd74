//! A domain tool's table (resources, their actions, the input fields) and the two things built
//! from it: the JSON Schema a model sees, and the validation that turns raw input into a [`Call`]
//! with `resource` and `action` resolved (aliases followed, a missing resource inferred).

use serde_json::{Map, Value, json};

use crate::call::{ApprovalNeed, Call};

/// The table of one domain tool.
#[derive(Clone, Debug)]
pub struct Domain {
    pub name: String,
    pub description: String,
    pub resources: Vec<Resource>,
    pub fields: Vec<Field>,
    /// The tool may reach things outside the person's machine or beyond what its arguments name
    /// (the web, other programs); `false` for tools confined to local files or the screen. MCP
    /// clients get it as `openWorldHint`.
    pub open_world: bool,
    /// Other names models use for actions (`read_page` for `text`), as (alias, action). An alias
    /// applies only when no resource has an action by that name.
    pub action_aliases: Vec<(String, String)>,
    /// Models see only a short form of the tool (its description, resources and actions, no
    /// fields) until the conversation first calls it; see [`Domain::stub_schema`].
    pub deferred: bool,
}

#[derive(Clone, Debug)]
pub struct Resource {
    pub name: String,
    /// Other names models use for it (`cron`, `job` for `reminder`).
    pub aliases: Vec<String>,
    pub actions: Vec<Action>,
}

#[derive(Clone, Debug)]
pub struct Action {
    pub name: String,
    pub description: String,
    pub approval: ApprovalNeed,
}

#[derive(Clone, Debug, PartialEq)]
pub enum FieldType {
    String,
    Integer,
    Number,
    Boolean,
    /// An array of the inner type.
    Array(Box<FieldType>),
    Object,
}

impl FieldType {
    fn schema(&self) -> Value {
        match self {
            FieldType::String => json!({"type": "string"}),
            FieldType::Integer => json!({"type": "integer"}),
            FieldType::Number => json!({"type": "number"}),
            FieldType::Boolean => json!({"type": "boolean"}),
            FieldType::Array(item) => json!({"type": "array", "items": item.schema()}),
            FieldType::Object => json!({"type": "object"}),
        }
    }

    fn accepts(&self, value: &Value) -> bool {
        match self {
            FieldType::String => value.is_string(),
            FieldType::Integer => value.is_i64() || value.is_u64(),
            FieldType::Number => value.is_number(),
            FieldType::Boolean => value.is_boolean(),
            FieldType::Array(item) => value
                .as_array()
                .is_some_and(|items| items.iter().all(|v| item.accepts(v))),
            FieldType::Object => value.is_object(),
        }
    }

    fn label(&self) -> String {
        match self {
            FieldType::String => "a string".into(),
            FieldType::Integer => "an integer".into(),
            FieldType::Number => "a number".into(),
            FieldType::Boolean => "true or false".into(),
            FieldType::Array(item) => format!("an array of {}", item.label()),
            FieldType::Object => "an object".into(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Field {
    pub name: String,
    pub kind: FieldType,
    pub description: String,
    /// Allowed values, when the field is an enumeration of strings.
    pub enum_values: Vec<String>,
    pub default: Option<Value>,
    /// The actions that need this field: `exec` (that action on any resource) or
    /// `process.kill` (that action on that resource only).
    pub required_for: Vec<String>,
    /// Other names accepted for it (`old_string` for `old_text`): the input is rewritten to the
    /// field's name before anything else looks at it.
    pub aliases: Vec<String>,
}

impl Field {
    fn required_by(&self, resource: &str, action: &str) -> bool {
        self.required_for
            .iter()
            .any(|entry| match entry.split_once('.') {
                Some((r, a)) => r == resource && a == action,
                None => entry == action,
            })
    }
}

impl Resource {
    /// `read, write, edit`: for messages that name the valid choices.
    fn action_list(&self) -> String {
        self.actions
            .iter()
            .map(|a| a.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl Domain {
    /// `bash, process, session`: for messages that name the valid choices.
    fn resource_list(&self) -> String {
        self.resources
            .iter()
            .map(|r| r.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Domain {
            name: name.into(),
            description: description.into(),
            resources: Vec::new(),
            fields: Vec::new(),
            open_world: true,
            action_aliases: Vec::new(),
            deferred: false,
        }
    }

    /// Sends models the short form of the tool until the conversation first calls it: for a
    /// large table that many conversations never need, the full schema costs every request
    /// tokens for nothing.
    pub fn deferred(mut self) -> Self {
        self.deferred = true;
        self
    }

    /// The short form of the input schema: `resource` and `action` only, with the same choices
    /// and each resource's actions as the full schema, and no other fields. A call made from it
    /// is validated against the full table like any other, so a missing field comes back as
    /// `invalid_input` naming it, and by then the model has the full schema.
    pub fn stub_schema(&self) -> Value {
        let resource_names: Vec<&str> = self.resources.iter().map(|r| r.name.as_str()).collect();
        json!({
            "type": "object",
            "properties": {
                "resource": {
                    "type": "string",
                    "enum": resource_names,
                    "description": self.resources.iter().map(|r| {
                        format!("{}: {}", r.name, r.action_list())
                    }).collect::<Vec<_>>().join("; "),
                },
                "action": {"type": "string", "enum": self.action_names()},
            },
            "required": ["resource", "action"],
        })
    }

    /// The description that goes with [`Domain::stub_schema`]: the tool's own, then how its
    /// fields arrive.
    pub fn stub_description(&self) -> String {
        format!(
            "{}\n\nThis tool's fields are listed after your first call to it: call it with the \
             `resource` and `action` you need (and any fields you already know); if the call \
             lacks a field, the answer names it.",
            self.description.trim_end()
        )
    }

    /// Accepts `alias` as another name of `action` (published skills call `read_page`, `open`).
    pub fn action_alias(mut self, alias: &str, action: &str) -> Self {
        self.action_aliases.push((alias.into(), action.into()));
        self
    }

    /// Marks an already added field as required for more actions too (a field shared by
    /// resources that come from different places, like the web tool's `url`).
    pub fn also_required_for(mut self, field: &str, actions: &[&str]) -> Self {
        if let Some(f) = self.fields.iter_mut().find(|f| f.name == field) {
            f.required_for.extend(actions.iter().map(|a| a.to_string()));
        }
        self
    }

    /// The action `name` stands for: itself when some resource has it, else the action it is an
    /// alias of.
    fn unalias<'n>(&'n self, name: &'n str) -> &'n str {
        let known = self
            .resources
            .iter()
            .flat_map(|r| &r.actions)
            .any(|a| a.name.eq_ignore_ascii_case(name));
        if known {
            return name;
        }
        self.action_aliases
            .iter()
            .find(|(alias, _)| alias.eq_ignore_ascii_case(name))
            .map_or(name, |(_, action)| action.as_str())
    }

    /// Marks the tool as working only on what its arguments name on this machine.
    pub fn closed_world(mut self) -> Self {
        self.open_world = false;
        self
    }

    /// True when every action only reads (needs no approval).
    pub fn read_only(&self) -> bool {
        self.resources
            .iter()
            .flat_map(|r| &r.actions)
            .all(|a| a.approval == ApprovalNeed::None)
    }

    /// Adds a resource with `(action, description, approval)` triples.
    pub fn resource(
        mut self,
        name: &str,
        aliases: &[&str],
        actions: &[(&str, &str, ApprovalNeed)],
    ) -> Self {
        self.resources.push(Resource {
            name: name.into(),
            aliases: aliases.iter().map(|a| a.to_string()).collect(),
            actions: actions
                .iter()
                .map(|(n, d, a)| Action {
                    name: n.to_string(),
                    description: d.to_string(),
                    approval: *a,
                })
                .collect(),
        });
        self
    }

    /// Adds an input field.
    pub fn field(mut self, name: &str, kind: FieldType, description: &str) -> Self {
        self.fields.push(Field {
            name: name.into(),
            kind,
            description: description.into(),
            enum_values: Vec::new(),
            default: None,
            required_for: Vec::new(),
            aliases: Vec::new(),
        });
        self
    }

    /// Accepts `aliases` as other names of the last added field (the names other agents' tools
    /// and the design use, so a model that learned them is understood).
    pub fn field_alias(mut self, aliases: &[&str]) -> Self {
        if let Some(f) = self.fields.last_mut() {
            f.aliases.extend(aliases.iter().map(|a| a.to_string()));
        }
        self
    }

    /// Renames aliased fields to their names and refuses fields the table does not know, with
    /// the accepted names (and the closest one, when a name looks like a typo).
    fn known_fields(&self, input: &mut Map<String, Value>) -> Result<(), String> {
        let mut unknown = Vec::new();
        let given: Vec<String> = input.keys().cloned().collect();
        for key in given {
            if key == "resource" || key == "action" || self.fields.iter().any(|f| f.name == key) {
                continue;
            }
            match self.fields.iter().find(|f| f.aliases.contains(&key)) {
                Some(field) if input.contains_key(&field.name) => {
                    return Err(format!(
                        "{} got both `{}` and `{key}`, which is another name for it; give it once",
                        self.name, field.name
                    ));
                }
                Some(field) => {
                    let value = input.remove(&key).unwrap_or(Value::Null);
                    input.insert(field.name.clone(), value);
                }
                None => unknown.push(key),
            }
        }
        if unknown.is_empty() {
            return Ok(());
        }
        let mut accepted: Vec<&str> = vec!["resource", "action"];
        accepted.extend(self.fields.iter().map(|f| f.name.as_str()));
        let hints: Vec<String> = unknown
            .iter()
            .filter_map(|key| {
                crate::correction::closest(key, accepted.iter().copied())
                    .map(|near| format!("`{key}`: did you mean `{near}`?"))
            })
            .collect();
        let listed: Vec<String> = unknown.iter().map(|k| format!("`{k}`")).collect();
        Err(format!(
            "{} does not take {} {}{}; its fields are: {}",
            self.name,
            if unknown.len() == 1 {
                "the field"
            } else {
                "the fields"
            },
            listed.join(", "),
            if hints.is_empty() {
                String::new()
            } else {
                format!(" ({})", hints.join("; "))
            },
            accepted.join(", ")
        ))
    }

    /// Sets the allowed values of the last added field.
    pub fn one_of(mut self, values: &[&str]) -> Self {
        if let Some(f) = self.fields.last_mut() {
            f.enum_values = values.iter().map(|v| v.to_string()).collect();
        }
        self
    }

    /// Sets the default of the last added field.
    pub fn default_value(mut self, value: Value) -> Self {
        if let Some(f) = self.fields.last_mut() {
            f.default = Some(value);
        }
        self
    }

    /// Marks the last added field as required for these actions.
    pub fn required_for(mut self, actions: &[&str]) -> Self {
        if let Some(f) = self.fields.last_mut() {
            f.required_for = actions.iter().map(|a| a.to_string()).collect();
        }
        self
    }

    pub fn find_resource(&self, name: &str) -> Option<&Resource> {
        self.resources.iter().find(|r| {
            r.name.eq_ignore_ascii_case(name)
                || r.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
        })
    }

    /// Every action name, once, in table order.
    pub fn action_names(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for r in &self.resources {
            for a in &r.actions {
                if !out.contains(&a.name.as_str()) {
                    out.push(&a.name);
                }
            }
        }
        out
    }

    /// The JSON Schema (draft 2020-12) of the input object: `resource` and `action` enums, every
    /// field with its type, enum and default, and per-action requirements as `if`/`then` rules.
    pub fn json_schema(&self) -> Value {
        let mut properties = Map::new();
        let resource_names: Vec<&str> = self.resources.iter().map(|r| r.name.as_str()).collect();
        properties.insert(
            "resource".into(),
            json!({
                "type": "string",
                "enum": resource_names,
                "description": self.resources.iter().map(|r| {
                    format!("{}: {}", r.name, r.action_list())
                }).collect::<Vec<_>>().join("; "),
            }),
        );
        let mut action_doc = Vec::new();
        for r in &self.resources {
            for a in &r.actions {
                action_doc.push(format!("{} ({}): {}", a.name, r.name, a.description));
            }
        }
        properties.insert(
            "action".into(),
            json!({"type": "string", "enum": self.action_names(), "description": action_doc.join("; ")}),
        );
        let mut rules = Vec::new();
        for field in &self.fields {
            let mut schema = field.kind.schema();
            let obj = schema.as_object_mut().expect("field schemas are objects");
            let mut description = field.description.clone();
            if !field.required_for.is_empty() {
                description.push_str(&format!(
                    " (required for {})",
                    field.required_for.join(", ")
                ));
            }
            obj.insert("description".into(), Value::String(description));
            if !field.enum_values.is_empty() {
                obj.insert("enum".into(), json!(field.enum_values));
            }
            if let Some(d) = &field.default {
                obj.insert("default".into(), d.clone());
            }
            properties.insert(field.name.clone(), schema);
        }
        let mut conditions: Vec<String> = Vec::new();
        for field in &self.fields {
            for entry in &field.required_for {
                if !conditions.contains(entry) {
                    conditions.push(entry.clone());
                }
            }
        }
        for condition in conditions {
            let required: Vec<&str> = self
                .fields
                .iter()
                .filter(|f| f.required_for.contains(&condition))
                .map(|f| f.name.as_str())
                .collect();
            let when = match condition.split_once('.') {
                Some((r, a)) => json!({
                    "properties": {"resource": {"const": r}, "action": {"const": a}},
                    "required": ["resource", "action"],
                }),
                None => {
                    json!({"properties": {"action": {"const": condition}}, "required": ["action"]})
                }
            };
            rules.push(json!({"if": when, "then": {"required": required}}));
        }
        let mut schema = json!({
            "type": "object",
            "properties": properties,
            "required": ["action"],
        });
        if !rules.is_empty() {
            schema["allOf"] = Value::Array(rules);
        }
        schema
    }

    /// Checks raw input against the table and returns the resolved call, or a message a model
    /// can act on (it names the valid choices).
    pub fn resolve(&self, input: Value) -> Result<Call, String> {
        let mut input = match input {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                return Err(format!(
                    "{} takes a JSON object with `resource` and `action`, got {}",
                    self.name,
                    type_name(&other)
                ));
            }
        };
        let text = |key: &str, input: &Map<String, Value>| -> Result<Option<String>, String> {
            match input.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
                Some(other) => Err(format!(
                    "`{key}` must be a string, got {}",
                    type_name(other)
                )),
            }
        };
        self.known_fields(&mut input)?;
        let given_resource = text("resource", &input)?;
        let given_action = text("action", &input)?.map(|a| self.unalias(&a).to_string());

        let resource = match &given_resource {
            Some(name) => Some(self.find_resource(name).ok_or_else(|| {
                format!(
                    "{} has no resource `{name}`; use one of: {}",
                    self.name,
                    self.resource_list()
                )
            })?),
            None => None,
        };

        let (resource, action) = match (resource, given_action) {
            (Some(r), Some(a)) => {
                let action = r
                    .actions
                    .iter()
                    .find(|x| x.name.eq_ignore_ascii_case(&a))
                    .ok_or_else(|| {
                        format!(
                            "{} resource `{}` has no action `{a}`; its actions are: {}",
                            self.name,
                            r.name,
                            r.action_list()
                        )
                    })?;
                (r, action)
            }
            (Some(r), None) if r.actions.len() == 1 => (r, &r.actions[0]),
            (Some(r), None) if self.infer_action(Some(r), &input).is_some() => self
                .infer_action(Some(r), &input)
                .expect("checked by the guard"),
            (Some(r), None) => {
                return Err(format!(
                    "{} resource `{}` needs an `action`: one of {}",
                    self.name,
                    r.name,
                    r.action_list()
                ));
            }
            (None, Some(a)) => self.infer_resource(&a, &input)?,
            (None, None) if self.infer_action(None, &input).is_some() => self
                .infer_action(None, &input)
                .expect("checked by the guard"),
            (None, None) => {
                return Err(format!(
                    "{} needs an `action`; the actions are: {}",
                    self.name,
                    self.describe_actions()
                ));
            }
        };

        for field in &self.fields {
            match input.get(&field.name) {
                Some(Value::Null) | None => {
                    if field.required_by(&resource.name, &action.name) {
                        return Err(format!(
                            "{} {} needs `{}`: {}",
                            self.name, action.name, field.name, field.description
                        ));
                    }
                    if let Some(d) = &field.default {
                        input.insert(field.name.clone(), d.clone());
                    }
                }
                Some(value) => {
                    if !field.kind.accepts(value) {
                        // Models often send numbers as strings; take them when they parse.
                        if let (FieldType::Integer | FieldType::Number, Some(s)) =
                            (&field.kind, value.as_str())
                        {
                            if let Ok(n) = s.trim().parse::<i64>() {
                                input.insert(field.name.clone(), json!(n));
                                continue;
                            }
                            if field.kind == FieldType::Number
                                && let Ok(n) = s.trim().parse::<f64>()
                            {
                                input.insert(field.name.clone(), json!(n));
                                continue;
                            }
                        }
                        if let (FieldType::Boolean, Some(s)) = (&field.kind, value.as_str())
                            && let Ok(b) = s.trim().parse::<bool>()
                        {
                            input.insert(field.name.clone(), json!(b));
                            continue;
                        }
                        return Err(format!(
                            "`{}` must be {}, got {}",
                            field.name,
                            field.kind.label(),
                            type_name(value)
                        ));
                    }
                    if !field.enum_values.is_empty() {
                        let s = value.as_str().unwrap_or_default();
                        if !field.enum_values.iter().any(|v| v == s) {
                            return Err(format!(
                                "`{}` must be one of {}, got `{s}`",
                                field.name,
                                field.enum_values.join(", ")
                            ));
                        }
                    }
                }
            }
        }

        input.insert("resource".into(), Value::String(resource.name.clone()));
        input.insert("action".into(), Value::String(action.name.clone()));
        Ok(Call {
            resource: Some(resource.name.clone()),
            action: Some(action.name.clone()),
            input,
        })
    }

    /// The approval need the table declares for a resolved call.
    pub fn approval_of(&self, call: &Call) -> ApprovalNeed {
        call.resource
            .as_deref()
            .and_then(|r| self.find_resource(r))
            .and_then(|r| {
                r.actions
                    .iter()
                    .find(|a| Some(a.name.as_str()) == call.action.as_deref())
            })
            .map(|a| a.approval)
            .unwrap_or_default()
    }

    fn infer_resource(
        &self,
        action: &str,
        input: &Map<String, Value>,
    ) -> Result<(&Resource, &Action), String> {
        let candidates: Vec<(&Resource, &Action)> = self
            .resources
            .iter()
            .filter_map(|r| {
                r.actions
                    .iter()
                    .find(|a| a.name.eq_ignore_ascii_case(action))
                    .map(|a| (r, a))
            })
            .collect();
        match candidates.len() {
            0 => {
                // The model may have put a resource name in `action` (`{"action": "bash"}`).
                if let Some(r) = self.find_resource(action)
                    && r.actions.len() == 1
                {
                    return Ok((r, &r.actions[0]));
                }
                Err(format!(
                    "{} has no action `{action}`; the actions are: {}",
                    self.name,
                    self.describe_actions()
                ))
            }
            1 => Ok(candidates[0]),
            _ => {
                // Several resources share the action: pick the one whose required fields are
                // present, when exactly one fits.
                let fitting: Vec<_> = candidates
                    .iter()
                    .filter(|(r, a)| {
                        let required: Vec<&Field> = self
                            .fields
                            .iter()
                            .filter(|f| f.required_by(&r.name, &a.name))
                            .collect();
                        !required.is_empty() && required.iter().all(|f| input.contains_key(&f.name))
                    })
                    .collect();
                if fitting.len() == 1 {
                    return Ok(*fitting[0]);
                }
                Err(format!(
                    "{} action `{action}` exists on several resources ({}); say which with `resource`",
                    self.name,
                    candidates
                        .iter()
                        .map(|(r, _)| r.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }
        }
    }

    /// With no `action` given, the one action (within `resource`, if given) whose required fields
    /// are all present: `{"command": "ls"}` is clearly `exec`. `None` when no action or several fit.
    fn infer_action(
        &self,
        resource: Option<&Resource>,
        input: &Map<String, Value>,
    ) -> Option<(&Resource, &Action)> {
        let mut fitting = self
            .resources
            .iter()
            .filter(|r| resource.is_none_or(|only| std::ptr::eq(*r, only)))
            .flat_map(|r| r.actions.iter().map(move |a| (r, a)))
            .filter(|(r, a)| {
                let mut required = self
                    .fields
                    .iter()
                    .filter(|f| f.required_by(&r.name, &a.name))
                    .peekable();
                required.peek().is_some() && required.all(|f| input.contains_key(&f.name))
            });
        let first = fitting.next()?;
        fitting.next().is_none().then_some(first)
    }

    fn describe_actions(&self) -> String {
        self.resources
            .iter()
            .map(|r| format!("{} ({})", r.name, r.action_list()))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ApprovalNeed::{None as Free, Required};

    fn domain() -> Domain {
        Domain::new("shell", "Run commands")
            .resource("bash", &["sh"], &[("exec", "Run a command", Required)])
            .resource(
                "process",
                &[],
                &[
                    ("list", "List processes", Free),
                    ("kill", "Kill one", Required),
                    ("info", "Details", Free),
                ],
            )
            .resource(
                "session",
                &[],
                &[
                    ("list", "List sessions", Free),
                    ("kill", "Kill a session", Required),
                ],
            )
            .field("command", FieldType::String, "The command")
            .required_for(&["exec"])
            .field("pid", FieldType::Integer, "Process id")
            .required_for(&["process.kill", "info"])
            .field("session_id", FieldType::String, "Session id")
            .field("timeout", FieldType::Integer, "Seconds")
            .default_value(json!(120))
            .field("mode", FieldType::String, "How")
            .one_of(&["foreground", "background"])
    }

    #[test]
    fn resolves_aliases_and_fills_defaults() {
        let call = domain()
            .resolve(json!({"resource": "SH", "action": "exec", "command": "ls"}))
            .unwrap();
        assert_eq!(call.resource.as_deref(), Some("bash"));
        assert_eq!(call.action.as_deref(), Some("exec"));
        assert_eq!(call.input["timeout"], 120);
        assert_eq!(call.input["resource"], "bash");
    }

    #[test]
    fn infers_the_resource_from_a_unique_action_or_from_fields() {
        let d = domain();
        assert_eq!(
            d.resolve(json!({"action": "exec", "command": "ls"}))
                .unwrap()
                .resource(),
            "bash"
        );
        assert_eq!(
            d.resolve(json!({"action": "info", "pid": 1}))
                .unwrap()
                .resource(),
            "process"
        );
        // `kill` is on process and session; `pid` is required only by process kill.
        assert_eq!(
            d.resolve(json!({"action": "kill", "pid": 4}))
                .unwrap()
                .resource(),
            "process"
        );
        let err = d.resolve(json!({"action": "list"})).unwrap_err();
        assert!(
            err.contains("several resources") && err.contains("process, session"),
            "{err}"
        );
        // A resource name given as the action, for a one-action resource.
        assert_eq!(
            d.resolve(json!({"action": "bash", "command": "ls"}))
                .unwrap()
                .action(),
            "exec"
        );
    }

    #[test]
    fn infers_a_missing_action_from_the_fields_only_one_action_needs() {
        let d = domain();
        let call = d.resolve(json!({"command": "ls"})).unwrap();
        assert_eq!((call.resource(), call.action()), ("bash", "exec"));
        let call = d
            .resolve(json!({"resource": "sh", "command": "ls"}))
            .unwrap();
        assert_eq!(call.action(), "exec");
        // `pid` is required by process kill and by info: ambiguous, so the model must say.
        let err = d.resolve(json!({"pid": 3})).unwrap_err();
        assert!(err.contains("needs an `action`"), "{err}");
    }

    #[test]
    fn rejects_bad_input_with_the_valid_choices() {
        let d = domain();
        let err = d
            .resolve(json!({"resource": "bash", "action": "run"}))
            .unwrap_err();
        assert!(err.contains("exec"), "{err}");
        let err = d
            .resolve(json!({"resource": "disk", "action": "exec"}))
            .unwrap_err();
        assert!(err.contains("bash, process, session"), "{err}");
        let err = d.resolve(json!({"action": "exec"})).unwrap_err();
        assert!(err.contains("needs `command`"), "{err}");
        let err = d
            .resolve(json!({"action": "exec", "command": "ls", "mode": "sideways"}))
            .unwrap_err();
        assert!(err.contains("foreground, background"), "{err}");
        let err = d
            .resolve(json!({"action": "exec", "command": 5}))
            .unwrap_err();
        assert!(err.contains("must be a string"), "{err}");
        assert!(d.resolve(json!("ls")).unwrap_err().contains("JSON object"));
        let err = d.resolve(json!({})).unwrap_err();
        assert!(err.contains("process (list, kill, info)"), "{err}");
    }

    #[test]
    fn action_aliases_apply_only_where_no_action_has_the_name() {
        let d = domain()
            .action_alias("run", "exec")
            .action_alias("list", "kill")
            .also_required_for("pid", &["session.kill"]);
        let call = d
            .resolve(json!({"action": "run", "command": "ls"}))
            .unwrap();
        assert_eq!((call.resource(), call.action()), ("bash", "exec"));
        // `list` is a real action, so its alias is ignored.
        let call = d
            .resolve(json!({"resource": "session", "action": "list"}))
            .unwrap();
        assert_eq!(call.action(), "list");
        let err = d
            .resolve(json!({"resource": "session", "action": "kill"}))
            .unwrap_err();
        assert!(err.contains("needs `pid`"), "{err}");
    }

    #[test]
    fn coerces_numbers_and_booleans_sent_as_strings() {
        let call = domain()
            .resolve(json!({"action": "info", "pid": "42", "timeout": "5"}))
            .unwrap();
        assert_eq!(call.input["pid"], 42);
        assert_eq!(call.input["timeout"], 5);
    }

    #[test]
    fn approval_need_comes_from_the_table() {
        let d = domain();
        assert_eq!(
            d.approval_of(&d.resolve(json!({"action": "info", "pid": 1})).unwrap()),
            Free
        );
        assert_eq!(
            d.approval_of(
                &d.resolve(json!({"action": "exec", "command": "x"}))
                    .unwrap()
            ),
            Required
        );
    }

    #[test]
    fn schema_lists_resources_actions_and_per_action_requirements() {
        let s = domain().json_schema();
        assert_eq!(
            s["properties"]["resource"]["enum"],
            json!(["bash", "process", "session"])
        );
        assert_eq!(
            s["properties"]["action"]["enum"],
            json!(["exec", "list", "kill", "info"])
        );
        assert_eq!(s["properties"]["timeout"]["default"], 120);
        let rules = s["allOf"].as_array().unwrap();
        assert!(
            rules
                .iter()
                .any(|r| r["then"]["required"] == json!(["pid"]))
        );
    }
}
