//! `resource(uri)`, `resource_template(uri_template)` and `prompt(name)`: what a script offers
//! an MCP client besides tools. Each is read through a tool of its own (built like any tool,
//! from its `.handler`, `.requires` and `.timeout`), and each `.complete(arg, |prefix| [...])`
//! is a tool taking `{"value": prefix}`; [`finish`] turns a draft into them.

use crate::convert::timeout_ms;
use crate::dsl::{ToolDraft, collect_draft, lock, required};
use kiln_core::error::{LoadError, SourceLoc};
use kiln_core::schema::Param;
use kiln_core::tool::Tool;
use kiln_registry::served::{
    Listing, PROMPT_PREFIX, Prompt, PromptArg, READ_PREFIX, Resource, ResourceTemplate, Served,
    reader_name, template_problem,
};
use rhai::{Array, Dynamic, Engine, EvalAltResult, FnPtr, INT, Map, NativeCallContext, Position};
use serde_json::json;
use std::sync::{Arc, Mutex};

/// Which builder made a draft.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
enum Kind {
    #[default]
    Resource,
    Template,
    Prompt,
}

impl Kind {
    fn word(self) -> &'static str {
        match self {
            Kind::Resource => "resource",
            Kind::Template => "resource template",
            Kind::Prompt => "prompt",
        }
    }
}

/// What a script said about one resource, template or prompt.
#[derive(Debug, Default)]
pub struct ServedDraft {
    kind: Kind,
    /// The URI, the URI template or the prompt's name.
    key: String,
    pos: Position,
    listing: Listing,
    args: Vec<PromptArg>,
    requires: Vec<(String, Position)>,
    timeout_ms: Option<u64>,
    handler: Option<(FnPtr, Position)>,
    completions: Vec<(String, FnPtr, Position)>,
    errors: Vec<(Position, String)>,
}

/// Handle to a resource or template draft, returned by each of its builder methods.
#[derive(Clone)]
pub struct ResourceBuilder(Arc<Mutex<ServedDraft>>);

/// Handle to a prompt draft, returned by each of its builder methods.
#[derive(Clone)]
pub struct PromptBuilder(Arc<Mutex<ServedDraft>>);

/// The methods both builders share.
trait Builder: Clone + Send + Sync + 'static {
    fn draft(&self) -> &Arc<Mutex<ServedDraft>>;
    fn with(&mut self, f: impl FnOnce(&mut ServedDraft)) -> Self {
        f(&mut lock(self.draft()));
        self.clone()
    }
}

impl Builder for ResourceBuilder {
    fn draft(&self) -> &Arc<Mutex<ServedDraft>> {
        &self.0
    }
}

impl Builder for PromptBuilder {
    fn draft(&self) -> &Arc<Mutex<ServedDraft>> {
        &self.0
    }
}

fn new_draft(
    ctx: &NativeCallContext,
    kind: Kind,
    key: &str,
) -> Result<Arc<Mutex<ServedDraft>>, Box<EvalAltResult>> {
    let pos = ctx.call_position();
    let mut draft = ServedDraft {
        kind,
        key: key.to_string(),
        pos,
        ..ServedDraft::default()
    };
    draft.listing.name = key.to_string();
    if kind == Kind::Template
        && let Some(problem) = template_problem(key)
    {
        draft.errors.push((pos, problem));
    }
    let draft = Arc::new(Mutex::new(draft));
    let word = match kind {
        Kind::Resource => "resource",
        Kind::Template => "resource_template",
        Kind::Prompt => "prompt",
    };
    collect_draft(&draft, word, pos)?;
    Ok(draft)
}

/// A built resource, template or prompt.
pub enum Item {
    /// `resource(uri)`.
    Resource(Resource),
    /// `resource_template(uri_template)`.
    Template(ResourceTemplate),
    /// `prompt(name)`.
    Prompt(Prompt),
}

impl Item {
    /// Adds it to a file's; a second one with the same key in the file is an error.
    pub fn add_to(self, served: &mut Served, errors: &mut Vec<LoadError>) {
        let mut one = Served::default();
        match self {
            Item::Resource(r) => {
                one.resources.insert(r.uri.clone(), r);
            }
            Item::Template(t) => {
                one.templates.insert(t.uri_template.clone(), t);
            }
            Item::Prompt(p) => {
                one.prompts.insert(p.name.clone(), p);
            }
        }
        served.add(&one, errors);
    }
}

/// Builds a draft's reader (and its completions) with `build_tool`, the loader's tool builder,
/// so they are checked and compiled as tools are; errors name the resource or prompt.
pub fn finish(
    d: ServedDraft,
    path: &str,
    build_tool: impl Fn(ToolDraft) -> Result<Tool, Vec<LoadError>>,
) -> Result<Item, Vec<LoadError>> {
    let b = Building {
        path,
        what: format!("{} \"{}\"", d.kind.word(), d.key),
        build_tool,
    };
    let mut errors: Vec<LoadError> = d
        .errors
        .iter()
        .map(|(p, m)| LoadError::at(b.at(*p), format!("{}: {m}", b.what)))
        .collect();
    let params = reader_params(&d);
    let known: Vec<String> = params.iter().map(|p| p.name.clone()).collect();
    let tool = b.reader(&d, params);
    let completions = b.completions(&d, &known, &mut errors);
    let tool = match tool {
        Ok(t) if errors.is_empty() => Arc::new(t),
        Ok(_) => return Err(errors),
        Err(e) => {
            errors.extend(e);
            return Err(errors);
        }
    };
    let loc = b.at(d.pos);
    Ok(item(d, tool, completions, loc))
}

/// The params a draft's reader takes, which are also the arguments `.complete` may name: none
/// for a resource, a template's variables, a prompt's arguments (all strings).
fn reader_params(d: &ServedDraft) -> Vec<Param> {
    match d.kind {
        Kind::Resource => Vec::new(),
        Kind::Template => template_params(&d.key),
        Kind::Prompt => d
            .args
            .iter()
            .map(|a| Param {
                name: a.name.clone(),
                schema: json!({"type": "string", "description": a.description}),
                required: a.required,
            })
            .collect(),
    }
}

/// What building one draft's tools shares: the file errors point into, the name they give the
/// resource or prompt (`resource "docs://a"`), and the loader's tool builder.
struct Building<'a, B> {
    path: &'a str,
    what: String,
    build_tool: B,
}

impl<B: Fn(ToolDraft) -> Result<Tool, Vec<LoadError>>> Building<'_, B> {
    /// Where `pos` is in the file.
    fn at(&self, pos: Position) -> SourceLoc {
        crate::loc(self.path, pos)
    }

    /// Builds one tool; its errors name the resource or prompt, not the tool made for it, which
    /// the script never wrote.
    fn build(&self, draft: ToolDraft) -> Result<Tool, Vec<LoadError>> {
        let said = format!("tool \"{}\"", draft.name);
        (self.build_tool)(draft).map_err(|errs| {
            errs.into_iter()
                .map(|mut e| {
                    e.message = e.message.replace(&said, &self.what);
                    e
                })
                .collect()
        })
    }

    /// The tool that reads the resource or gets the prompt, from the draft's handler.
    fn reader(&self, d: &ServedDraft, params: Vec<Param>) -> Result<Tool, Vec<LoadError>> {
        let prefix = match d.kind {
            Kind::Prompt => PROMPT_PREFIX,
            _ => READ_PREFIX,
        };
        self.build(ToolDraft {
            name: reader_name(prefix, &d.key),
            pos: d.pos,
            description: d.listing.description.clone(),
            params,
            params_pos: Some(d.pos),
            requires: d.requires.clone(),
            timeout_ms: d.timeout_ms,
            handler: d.handler.clone(),
            ..ToolDraft::default()
        })
    }

    /// One tool per `.complete(arg, f)`, keyed by its argument; one naming no argument of the
    /// draft (`known`), or failing to build, adds to `errors` instead.
    fn completions(
        &self,
        d: &ServedDraft,
        known: &[String],
        errors: &mut Vec<LoadError>,
    ) -> Vec<(String, Arc<Tool>)> {
        let mut completions = Vec::new();
        for (arg, f, pos) in &d.completions {
            if !known.contains(arg) {
                errors.push(LoadError::at(
                    self.at(*pos),
                    format!(
                        "{}: .complete(\"{arg}\", ...) names no argument of it (it has: {})",
                        self.what,
                        if known.is_empty() {
                            "none".to_string()
                        } else {
                            known.join(", ")
                        }
                    ),
                ));
                continue;
            }
            match self.build(completion_draft(d, arg, f, *pos)) {
                Ok(t) => completions.push((arg.clone(), Arc::new(t))),
                Err(e) => errors.extend(e),
            }
        }
        completions
    }
}

/// The tool draft of `.complete(arg, f)`: `f` takes the typed prefix as `value`, under the
/// draft's capabilities, with two seconds to answer.
fn completion_draft(d: &ServedDraft, arg: &str, f: &FnPtr, pos: Position) -> ToolDraft {
    ToolDraft {
        name: reader_name(
            kiln_registry::served::COMPLETE_PREFIX,
            &format!("{}_{arg}", d.key),
        ),
        pos,
        params: vec![Param {
            name: "value".into(),
            schema: json!({"type": "string"}),
            required: true,
        }],
        params_pos: Some(pos),
        requires: d.requires.clone(),
        timeout_ms: Some(2_000),
        handler: Some((f.clone(), pos)),
        first: Some("value"),
        ..ToolDraft::default()
    }
}

/// The finished resource, template or prompt, with its built tools.
fn item(
    d: ServedDraft,
    tool: Arc<Tool>,
    completions: Vec<(String, Arc<Tool>)>,
    loc: SourceLoc,
) -> Item {
    match d.kind {
        Kind::Resource => Item::Resource(Resource {
            uri: d.key,
            listing: d.listing,
            reader: tool,
            loc,
        }),
        Kind::Template => Item::Template(ResourceTemplate {
            uri_template: d.key,
            listing: d.listing,
            reader: tool,
            completions,
            loc,
        }),
        Kind::Prompt => Item::Prompt(Prompt {
            name: d.key,
            title: d.listing.title,
            description: d.listing.description,
            args: d.args,
            getter: tool,
            completions,
            loc,
        }),
    }
}

/// A template's parameters as required string params.
fn template_params(template: &str) -> Vec<Param> {
    kiln_registry::served::template_params(template)
        .into_iter()
        .map(|name| Param {
            name,
            schema: json!({"type": "string"}),
            required: true,
        })
        .collect()
}

/// Registers the three builders, their methods and `resource_blob(data, mime)`.
pub fn register(engine: &mut Engine) {
    engine.register_type_with_name::<ResourceBuilder>("ResourceBuilder");
    engine.register_type_with_name::<PromptBuilder>("PromptBuilder");
    engine.register_fn("resource", |ctx: NativeCallContext, uri: &str| {
        new_draft(&ctx, Kind::Resource, uri).map(ResourceBuilder)
    });
    engine.register_fn("resource_template", |ctx: NativeCallContext, uri: &str| {
        new_draft(&ctx, Kind::Template, uri).map(ResourceBuilder)
    });
    engine.register_fn("prompt", |ctx: NativeCallContext, name: &str| {
        new_draft(&ctx, Kind::Prompt, name).map(PromptBuilder)
    });
    // A resource's bytes: base64 and their MIME type.
    engine.register_fn("resource_blob", |data: &str, mime: &str| {
        let mut m = Map::new();
        m.insert("$blob".into(), data.into());
        m.insert("mime".into(), mime.into());
        m
    });
    common::<ResourceBuilder>(engine);
    common::<PromptBuilder>(engine);
    engine.register_fn("name", |b: &mut ResourceBuilder, name: &str| {
        b.with(|d| d.listing.name = name.to_string())
    });
    engine.register_fn("mime", |b: &mut ResourceBuilder, mime: &str| {
        b.with(|d| d.listing.mime = Some(mime.to_string()))
    });
    engine.register_fn(
        "size",
        |ctx: NativeCallContext, b: &mut ResourceBuilder, n: INT| {
            let pos = ctx.call_position();
            b.with(|d| match u64::try_from(n) {
                Ok(n) => d.listing.size = Some(n),
                Err(_) => d
                    .errors
                    .push((pos, format!("size must be a number of bytes, not {n}"))),
            })
        },
    );
    engine.register_fn(
        "arg",
        |ctx: NativeCallContext, b: &mut PromptBuilder, name: &str, desc: &str| {
            add_arg(b, ctx.call_position(), name, desc, true)
        },
    );
    engine.register_fn(
        "arg",
        |ctx: NativeCallContext, b: &mut PromptBuilder, name: &str, desc: &str, opts: Map| {
            let pos = ctx.call_position();
            let required = opts.get("required").map(|r| r.as_bool());
            match required {
                None | Some(Ok(_)) => {
                    let required = required.and_then(Result::ok).unwrap_or(true);
                    add_arg(b, pos, name, desc, required)
                }
                Some(Err(t)) => b.with(|d| {
                    d.errors.push((
                        pos,
                        format!("arg \"{name}\": required must be true or false, not a {t}"),
                    ))
                }),
            }
        },
    );
}

fn add_arg(
    b: &mut PromptBuilder,
    pos: Position,
    name: &str,
    desc: &str,
    required: bool,
) -> PromptBuilder {
    b.with(|d| {
        if d.args.iter().any(|a| a.name == name) {
            d.errors
                .push((pos, format!("arg \"{name}\" is declared twice")));
        } else {
            d.args.push(PromptArg {
                name: name.to_string(),
                description: desc.to_string(),
                required,
            });
        }
    })
}

/// `.title`, `.description`, `.requires`, `.timeout`, `.handler` and `.complete` on `B`.
fn common<B: Builder>(engine: &mut Engine) {
    engine.register_fn("title", |b: &mut B, title: &str| {
        b.with(|d| d.listing.title = Some(title.to_string()))
    });
    engine.register_fn("description", |b: &mut B, text: &str| {
        b.with(|d| d.listing.description = text.to_string())
    });
    engine.register_fn(
        "requires",
        |ctx: NativeCallContext, b: &mut B, cap: &str| {
            let pos = ctx.call_position();
            b.with(|d| d.requires.push((cap.to_string(), pos)))
        },
    );
    engine.register_fn(
        "requires",
        |ctx: NativeCallContext, b: &mut B, caps: Array| {
            let pos = ctx.call_position();
            b.with(|d| match required(pos, &caps) {
                Ok(list) => d.requires.extend(list),
                Err(e) => d.errors.push((pos, e)),
            })
        },
    );
    engine.register_fn("timeout", |ctx: NativeCallContext, b: &mut B, ms: INT| {
        let pos = ctx.call_position();
        b.with(|d| match timeout_ms(&Dynamic::from_int(ms)) {
            Ok(ms) => d.timeout_ms = Some(ms),
            Err(e) => d.errors.push((pos, e)),
        })
    });
    engine.register_fn(
        "timeout",
        |ctx: NativeCallContext, b: &mut B, text: &str| {
            let pos = ctx.call_position();
            b.with(|d| match timeout_ms(&Dynamic::from(text.to_string())) {
                Ok(ms) => d.timeout_ms = Some(ms),
                Err(e) => d.errors.push((pos, e)),
            })
        },
    );
    engine.register_fn("handler", |ctx: NativeCallContext, b: &mut B, f: FnPtr| {
        let pos = ctx.call_position();
        b.with(|d| d.handler = Some((f, pos)))
    });
    engine.register_fn(
        "complete",
        |ctx: NativeCallContext, b: &mut B, arg: &str, f: FnPtr| {
            let pos = ctx.call_position();
            b.with(|d| d.completions.push((arg.to_string(), f, pos)))
        },
    );
}
