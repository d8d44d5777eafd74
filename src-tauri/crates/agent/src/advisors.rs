//! Advisors: before a decision, the agent asks up to [`MAX_ADVISORS`] personas for their view
//! of one question, in parallel, and gets each view with a confidence score and a synthesis.
//!
//! A persona is defined like an agent type (see `crate::roles`): a JSON manifest with a name, a
//! description, a prompt and an optional model, built in (compiled from
//! `src-tauri/crates/agent/roles/advisors/*.json`) or the person's (`<data>/advisors/*.json`,
//! which may replace a built-in one of the same name). The `agents.models` setting gives a
//! persona a model as it does an agent type.
//!
//! Each persona is one model call with no tools and no session (`Runner::complete`) on the
//! runner of the asking session's model, or the persona's model on the same provider. It has a
//! limit of at most [`MAX_TIMEOUT`]; a persona that has not answered by then is reported as
//! `timed_out` and its request dropped, never waited for. The answer is asked for as a JSON
//! object (`view`, `confidence`); a model that answers in prose still counts, its text taken as
//! the view and a confidence read from the text when it states one. The synthesis is one more
//! call on the session's model over the views that arrived, under the same limit; when it fails
//! the views are returned without it, with why.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::message::Message;
use crate::roles::{AgentSettings, Problem, normalize_name};
use crate::subagent::SubAgents;

/// The most personas one consultation asks.
pub const MAX_ADVISORS: usize = 5;

/// The longest a persona (and the synthesis) is given.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(30);

/// Who is asked when the call names nobody.
pub const DEFAULT_PANEL: &[&str] = &["skeptic", "pragmatist", "user-advocate"];

/// The longest answer asked of a persona and of the synthesis, in tokens.
const ANSWER_TOKENS: u32 = 1_024;

/// Built-in personas, as files in the same format the person writes.
const BUILTIN: &[(&str, &str)] = &[
    ("skeptic", include_str!("../roles/advisors/skeptic.json")),
    (
        "pragmatist",
        include_str!("../roles/advisors/pragmatist.json"),
    ),
    (
        "user-advocate",
        include_str!("../roles/advisors/user-advocate.json"),
    ),
    ("security", include_str!("../roles/advisors/security.json")),
    ("optimist", include_str!("../roles/advisors/optimist.json")),
];

/// A persona as written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PersonaManifest {
    pub schema_version: u32,
    pub name: String,
    pub description: String,
    /// Who the persona is and what it looks for.
    pub prompt: String,
    /// The model it answers on (else the asking session's).
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
}

/// A persona that loaded.
#[derive(Clone, Debug)]
pub struct Persona {
    pub manifest: PersonaManifest,
    /// `built-in <name>` or the file it came from.
    pub source: String,
}

/// Every persona that loaded, and the files refused with why.
#[derive(Clone, Debug, Default)]
pub struct Personas {
    personas: BTreeMap<String, Persona>,
    problems: Vec<Problem>,
}

impl Personas {
    /// The built-in personas, then the person's from `<data_dir>/advisors/*.json`.
    pub fn load(data_dir: Option<&Path>, settings: &AgentSettings) -> Self {
        let mut personas = Personas::default();
        for (name, text) in BUILTIN {
            personas.add(&format!("built-in {name}"), Ok(text.to_string()), settings);
        }
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        let user = data_dir
            .map(|d| crate::roles::read_dir(&d.join("advisors")))
            .unwrap_or_default();
        for (source, text) in user {
            let name = text
                .as_deref()
                .ok()
                .and_then(|t| crate::roles::parse::<PersonaManifest>(t).ok())
                .map(|m| m.name);
            if let Some(name) = name {
                if let Some(first) = seen.get(&name) {
                    let message = format!(
                        "an advisor named `{name}` is already defined in {first}; choose another name"
                    );
                    personas.problems.push(Problem { source, message });
                    continue;
                }
                seen.insert(name, source.clone());
            }
            personas.add(&source, text, settings);
        }
        for problem in &personas.problems {
            tracing::warn!(source = %problem.source, message = %problem.message, "advisor file refused");
        }
        personas
    }

    fn add(&mut self, source: &str, text: Result<String, String>, settings: &AgentSettings) {
        let checked = text
            .and_then(|t| crate::roles::parse::<PersonaManifest>(&t))
            .and_then(|m| validate(m, settings));
        match checked {
            Ok(manifest) => {
                let persona = Persona {
                    manifest,
                    source: source.to_string(),
                };
                self.personas.insert(persona.manifest.name.clone(), persona);
            }
            Err(message) => self.problems.push(Problem {
                source: source.to_string(),
                message,
            }),
        }
    }

    /// The personas, by name.
    pub fn iter(&self) -> impl Iterator<Item = &Persona> {
        self.personas.values()
    }

    pub fn names(&self) -> Vec<&str> {
        self.personas.keys().map(String::as_str).collect()
    }

    /// The persona `name` (any case, spaces or underscores for hyphens), or why not with the
    /// list.
    pub fn get(&self, name: &str) -> Result<&Persona, String> {
        self.personas.get(&normalize_name(name)).ok_or_else(|| {
            format!(
                "there is no advisor `{name}`; advisors: {}",
                self.names().join(", ")
            )
        })
    }

    /// Files refused, with why.
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }
}

fn validate(
    mut manifest: PersonaManifest,
    settings: &AgentSettings,
) -> Result<PersonaManifest, String> {
    crate::roles::check_prompted(
        "advisor",
        manifest.schema_version,
        &manifest.name,
        &manifest.description,
        &manifest.prompt,
    )?;
    let name = manifest.name.clone();
    if let Some(model) = settings.models.get(&name) {
        manifest.model = Some(model.clone());
    }
    manifest.model = manifest.model.filter(|m| !m.trim().is_empty());
    Ok(manifest)
}

/// One consultation.
#[derive(Clone, Debug)]
pub struct Consult {
    pub question: String,
    /// What the advisors should know besides the question (they see nothing else).
    pub context: Option<String>,
    /// Persona names; empty: [`DEFAULT_PANEL`].
    pub personas: Vec<String>,
    /// Each persona's limit, at most [`MAX_TIMEOUT`].
    pub timeout: Duration,
}

/// How a persona's consultation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AdvisorStatus {
    Answered,
    TimedOut,
    Failed,
}

/// One persona's view.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AdvisorView {
    pub persona: String,
    pub status: AdvisorStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub view: Option<String>,
    /// From 0 to 1, when the persona gave one.
    pub confidence: Option<f64>,
    /// Whether the answer came as the JSON object asked for (else read from prose).
    pub structured: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub seconds: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a consultation returns.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Consultation {
    pub question: String,
    pub advisors: Vec<AdvisorView>,
    pub synthesis: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synthesis_error: Option<String>,
}

/// Personas and the runners they answer on. Cheap to clone.
#[derive(Clone)]
pub struct Advisors {
    subagents: SubAgents,
    personas: Arc<RwLock<Arc<Personas>>>,
}

impl std::fmt::Debug for Advisors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Advisors")
            .field("personas", &self.personas().names())
            .finish()
    }
}

impl Advisors {
    /// Advisors answering on the runners `subagents` gets its children's from; the built-in
    /// personas until [`Advisors::set_personas`].
    pub fn new(subagents: SubAgents) -> Self {
        Advisors {
            subagents,
            personas: Arc::new(RwLock::new(Arc::new(Personas::load(
                None,
                &AgentSettings::default(),
            )))),
        }
    }

    pub fn set_personas(&self, personas: Personas) {
        *self.personas.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(personas);
    }

    pub fn personas(&self) -> Arc<Personas> {
        self.personas
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Asks every persona of `consult` in parallel on behalf of `session_id`, then synthesises
    /// the views that arrived. Refuses an unknown persona, more than [`MAX_ADVISORS`] or an
    /// empty question before asking anyone.
    pub async fn consult(
        &self,
        session_id: &str,
        consult: Consult,
        cancel: &CancellationToken,
    ) -> Result<Consultation, String> {
        let question = consult.question.trim();
        if question.is_empty() {
            return Err("advisors need a `question`".into());
        }
        let personas = self.personas();
        let names: Vec<String> = if consult.personas.is_empty() {
            DEFAULT_PANEL.iter().map(|n| n.to_string()).collect()
        } else {
            consult.personas.clone()
        };
        if names.len() > MAX_ADVISORS {
            return Err(format!(
                "at most {MAX_ADVISORS} advisors are consulted at once; {} were named",
                names.len()
            ));
        }
        let mut chosen: Vec<&Persona> = Vec::new();
        for name in &names {
            let persona = personas.get(name)?;
            if chosen
                .iter()
                .any(|p| p.manifest.name == persona.manifest.name)
            {
                return Err(format!("the advisor `{name}` is named twice"));
            }
            chosen.push(persona);
        }
        let limit = consult.timeout.min(MAX_TIMEOUT);
        let message = question_message(question, consult.context.as_deref());
        let asks = chosen
            .iter()
            .map(|persona| self.ask(session_id, persona, &message, limit, cancel));
        let advisors = futures::future::join_all(asks).await;
        if cancel.is_cancelled() {
            return Err("the consultation was cancelled".into());
        }
        let (synthesis, synthesis_error) = match self
            .synthesise(session_id, question, &advisors, limit, cancel)
            .await
        {
            Ok(text) => (Some(text), None),
            Err(why) => (None, Some(why)),
        };
        Ok(Consultation {
            question: question.to_string(),
            advisors,
            synthesis,
            synthesis_error,
        })
    }

    async fn ask(
        &self,
        session_id: &str,
        persona: &Persona,
        message: &str,
        limit: Duration,
        cancel: &CancellationToken,
    ) -> AdvisorView {
        let started = Instant::now();
        let name = persona.manifest.name.clone();
        let failed = |status, error: String| AdvisorView {
            persona: name.clone(),
            status,
            view: None,
            confidence: None,
            structured: false,
            model: persona.manifest.model.clone(),
            seconds: started.elapsed().as_secs_f64(),
            error: Some(error),
        };
        let runner = match self
            .subagents
            .model_runner(session_id, persona.manifest.model.as_deref())
        {
            Ok(runner) => runner,
            Err(why) => return failed(AdvisorStatus::Failed, why),
        };
        let system = persona_instructions(&persona.manifest.prompt);
        let call = runner.complete(&system, Message::user_text(message), ANSWER_TOKENS, cancel);
        match tokio::time::timeout(limit, call).await {
            Err(_) => failed(
                AdvisorStatus::TimedOut,
                format!("no answer within {} s; not waited for", limit.as_secs_f64()),
            ),
            Ok(Err(error)) => failed(AdvisorStatus::Failed, error.to_string()),
            Ok(Ok(text)) if text.trim().is_empty() => {
                failed(AdvisorStatus::Failed, "the model's answer was empty".into())
            }
            Ok(Ok(text)) => {
                let (view, confidence, structured) = read_view(&text);
                AdvisorView {
                    persona: name.clone(),
                    status: AdvisorStatus::Answered,
                    view: Some(view),
                    confidence,
                    structured,
                    model: Some(runner.config().model.clone()),
                    seconds: started.elapsed().as_secs_f64(),
                    error: None,
                }
            }
        }
    }

    async fn synthesise(
        &self,
        session_id: &str,
        question: &str,
        advisors: &[AdvisorView],
        limit: Duration,
        cancel: &CancellationToken,
    ) -> Result<String, String> {
        let answered: Vec<&AdvisorView> = advisors
            .iter()
            .filter(|a| a.status == AdvisorStatus::Answered)
            .collect();
        if answered.is_empty() {
            return Err("no advisor answered, so there is nothing to synthesise".into());
        }
        let runner = self.subagents.model_runner(session_id, None)?;
        let mut text = format!("Question:\n{question}\n\nThe advisors' views:\n");
        for view in answered {
            let confidence = view
                .confidence
                .map_or("not stated".to_string(), |c| format!("{c:.2}"));
            text.push_str(&format!(
                "\n[{}] (confidence {confidence})\n{}\n",
                view.persona,
                view.view.as_deref().unwrap_or_default()
            ));
        }
        let call = runner.complete(
            SYNTHESIS_INSTRUCTIONS,
            Message::user_text(text),
            ANSWER_TOKENS,
            cancel,
        );
        match tokio::time::timeout(limit, call).await {
            Err(_) => Err(format!(
                "the synthesis took longer than {} s",
                limit.as_secs_f64()
            )),
            Ok(Err(error)) => Err(format!("the synthesis failed: {error}")),
            Ok(Ok(text)) if text.trim().is_empty() => Err("the synthesis was empty".into()),
            Ok(Ok(text)) => Ok(text.trim().to_string()),
        }
    }
}

const SYNTHESIS_INSTRUCTIONS: &str = "You combine several advisors' views for another agent \
     that must decide. Say where they agree, where they differ and why, and what you would \
     recommend, weighing each view by its confidence and its reasons. At most 150 words, plain \
     text.";

fn persona_instructions(prompt: &str) -> String {
    format!(
        "{}\n\nYou are one of several advisors asked the question below in parallel; another \
         agent weighs your view against theirs. Give your own view in at most 200 words, then \
         how confident you are in it. Answer with one JSON object and nothing else: \
         {{\"view\": \"<your view>\", \"confidence\": <a number from 0 to 1>}}",
        prompt.trim()
    )
}

fn question_message(question: &str, context: Option<&str>) -> String {
    match context.map(str::trim).filter(|c| !c.is_empty()) {
        Some(context) => format!("Question:\n{question}\n\nWhat you should know:\n{context}"),
        None => format!("Question:\n{question}"),
    }
}

/// The view and confidence in a persona's answer: the JSON object asked for (fenced or not),
/// else the whole text with a confidence it states (`confidence: 0.7`, `Confidence: 70%`,
/// `confidence: high`).
pub fn read_view(text: &str) -> (String, Option<f64>, bool) {
    if let Some(object) = json_object(text) {
        let view = ["view", "opinion", "answer"]
            .iter()
            .find_map(|k| object.get(*k).and_then(Value::as_str))
            .map(str::trim)
            .filter(|v| !v.is_empty());
        if let Some(view) = view {
            let confidence = object.get("confidence").and_then(confidence_of);
            return (view.to_string(), confidence, true);
        }
    }
    (text.trim().to_string(), stated_confidence(text), false)
}

/// The first JSON object in `text`, from its first `{` to its last `}`.
pub(crate) fn json_object(text: &str) -> Option<serde_json::Map<String, Value>> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    if end <= start {
        return None;
    }
    match serde_json::from_str(&text[start..=end]) {
        Ok(Value::Object(object)) => Some(object),
        _ => None,
    }
}

/// A confidence as a number from 0 to 1: `0.7`, `70` (a percentage), `"70%"`, `"high"`.
fn confidence_of(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64().and_then(scale),
        Value::String(s) => word_confidence(s),
        _ => None,
    }
}

fn scale(n: f64) -> Option<f64> {
    if (0.0..=1.0).contains(&n) {
        Some(n)
    } else if n > 1.0 && n <= 100.0 {
        Some(n / 100.0)
    } else {
        None
    }
}

fn word_confidence(text: &str) -> Option<f64> {
    let word = text
        .trim()
        .trim_start_matches([':', '=', ' ', '*'])
        .to_ascii_lowercase();
    let number: String = word
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    if !number.is_empty() {
        let n: f64 = number.parse().ok()?;
        let percent = word[number.len()..].trim_start().starts_with('%');
        return if percent {
            (0.0..=100.0).contains(&n).then_some(n / 100.0)
        } else {
            scale(n)
        };
    }
    if word.starts_with("very high") {
        Some(0.9)
    } else if word.starts_with("high") {
        Some(0.8)
    } else if word.starts_with("medium") || word.starts_with("moderate") {
        Some(0.5)
    } else if word.starts_with("very low") {
        Some(0.1)
    } else if word.starts_with("low") {
        Some(0.2)
    } else {
        None
    }
}

/// A confidence the prose states after the word "confidence".
fn stated_confidence(text: &str) -> Option<f64> {
    let lower = text.to_ascii_lowercase();
    lower.match_indices("confidence").find_map(|(at, word)| {
        let rest = &lower[at + word.len()..];
        let mut rest = rest.trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
        // "confidence is about 0.6", "confidence level: high"
        while let Some(next) = ["is ", "level", "of ", "about ", "around ", "roughly "]
            .iter()
            .find_map(|filler| rest.strip_prefix(filler))
        {
            rest = next.trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
        }
        word_confidence(rest)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_personas_load_and_a_default_panel_exists() {
        let personas = Personas::load(None, &AgentSettings::default());
        assert!(personas.problems().is_empty(), "{:?}", personas.problems());
        for name in DEFAULT_PANEL {
            personas.get(name).unwrap();
        }
        assert!(personas.names().len() >= MAX_ADVISORS);
        let error = personas.get("oracle").unwrap_err();
        assert!(error.contains("skeptic"), "{error}");
        assert_eq!(
            personas.get("User Advocate").unwrap().manifest.name,
            "user-advocate"
        );
    }

    #[test]
    fn the_persons_personas_load_replace_built_ins_and_bad_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let advisors = dir.path().join("advisors");
        std::fs::create_dir_all(&advisors).unwrap();
        let write = |file: &str, json: Value| {
            std::fs::write(advisors.join(file), json.to_string()).unwrap();
        };
        write(
            "lawyer.json",
            serde_json::json!({"schemaVersion": 1, "name": "lawyer",
                "description": "Legal risk", "prompt": "You are a careful lawyer."}),
        );
        write(
            "skeptic.json",
            serde_json::json!({"schemaVersion": 1, "name": "skeptic",
                "description": "Mine", "prompt": "My own skeptic.", "model": "cheap"}),
        );
        write(
            "bad.json",
            serde_json::json!({"schemaVersion": 1, "name": "Bad Name",
                "description": "x", "prompt": "y"}),
        );
        write("broken.json", serde_json::json!({"name": "x"}));
        let mut settings = AgentSettings::default();
        settings.models.insert("lawyer".into(), "big-model".into());
        let personas = Personas::load(Some(dir.path()), &settings);
        assert_eq!(
            personas.get("lawyer").unwrap().manifest.model.as_deref(),
            Some("big-model")
        );
        let skeptic = personas.get("skeptic").unwrap();
        assert_eq!(skeptic.manifest.prompt, "My own skeptic.");
        assert!(skeptic.source.ends_with("skeptic.json"));
        let problems = personas.problems();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems
                .iter()
                .any(|p| p.message.contains("`Bad Name` is not valid"))
        );
        assert!(
            problems
                .iter()
                .any(|p| p.message.contains("not a valid manifest"))
        );
    }

    #[test]
    fn views_are_read_from_json_fenced_json_and_prose() {
        let (view, confidence, structured) =
            read_view(r#"{"view": "Ship it.", "confidence": 0.8}"#);
        assert_eq!(
            (view.as_str(), confidence, structured),
            ("Ship it.", Some(0.8), true)
        );

        let fenced = "Here you go:\n```json\n{\"view\": \"Wait a week.\", \"confidence\": 65}\n```";
        assert_eq!(read_view(fenced), ("Wait a week.".into(), Some(0.65), true));

        let words = r#"{"view": "Risky.", "confidence": "high"}"#;
        assert_eq!(read_view(words).1, Some(0.8));

        let prose = "I would not do it yet: the tests are thin.\n\nConfidence: 70%";
        let (view, confidence, structured) = read_view(prose);
        assert_eq!(view, prose.trim());
        assert_eq!(confidence, Some(0.7));
        assert!(!structured);

        assert_eq!(read_view("My confidence is low here.").1, Some(0.2));
        assert_eq!(read_view("Confidence level: about 60%").1, Some(0.6));
        assert_eq!(read_view("No number at all.").1, None);
        assert_eq!(read_view(r#"{"view": "x", "confidence": 400}"#).1, None);
        // An object without a view is prose.
        assert!(!read_view(r#"{"confidence": 0.5}"#).2);
    }
}
