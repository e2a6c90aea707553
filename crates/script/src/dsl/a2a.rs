//! `a2a_agent("name")`: a remote A2A agent an agent may ask as a tool, listed as
//! `.tools(["a2a:name"])` and granted as capability `a2a:name`: `.url("https://…/a2a/x")`
//! (where its card is), `.bearer_env("VAR")` (its token, from the environment) or
//! `.oauth(#{ grant: "client_credentials", client_id, client_secret_env, scopes })` (a
//! machine's OAuth client), and `.description("...")` (what the model is told it is for).

use crate::dsl::lock;
use kiln_core::error::LoadError;
use kiln_registry::a2a_agent::A2aAgentSpec;
use rhai::{EvalAltResult, Map, NativeCallContext, Position};
use std::sync::{Arc, Mutex};

/// What a script said about one remote agent.
#[derive(Debug, Default)]
pub struct A2aAgentDraft {
    name: String,
    pos: Position,
    url: Option<String>,
    bearer_env: Option<String>,
    oauth: Option<kiln_registry::mount_spec::OAuth>,
    /// What `.oauth(...)` was given wrong.
    problems: Vec<String>,
    description: Option<String>,
}

/// Handle to a remote agent's draft, returned by every `a2a_agent` builder method.
#[derive(Clone)]
pub struct A2aAgentBuilder(Arc<Mutex<A2aAgentDraft>>);

impl A2aAgentBuilder {
    fn with(&mut self, f: impl FnOnce(&mut A2aAgentDraft)) -> A2aAgentBuilder {
        f(&mut lock(&self.0));
        self.clone()
    }
}

fn new_agent(ctx: NativeCallContext, name: &str) -> Result<A2aAgentBuilder, Box<EvalAltResult>> {
    let draft = Arc::new(Mutex::new(A2aAgentDraft {
        name: name.to_string(),
        pos: ctx.call_position(),
        ..A2aAgentDraft::default()
    }));
    crate::dsl::collect_draft(&draft, "a2a_agent", ctx.call_position())?;
    Ok(A2aAgentBuilder(draft))
}

/// Registers `a2a_agent(...)` and its builder methods.
pub(crate) fn register(engine: &mut rhai::Engine) {
    engine.register_type_with_name::<A2aAgentBuilder>("A2aAgentBuilder");
    engine.register_fn("a2a_agent", new_agent);
    engine.register_fn("url", |b: &mut A2aAgentBuilder, url: &str| {
        b.with(|d| d.url = Some(url.to_string()))
    });
    engine.register_fn("bearer_env", |b: &mut A2aAgentBuilder, var: &str| {
        // It holds a credential: `env` must not hand it to a tool.
        kiln_core::capability::declare_secret_var(var);
        b.with(|d| d.bearer_env = Some(var.to_string()))
    });
    engine.register_fn("oauth", |b: &mut A2aAgentBuilder, opts: Map| {
        let (oauth, problems) = crate::dsl::mcp::oauth_options(opts);
        b.with(|d| {
            d.problems.extend(problems);
            d.oauth = Some(oauth);
        })
    });
    engine.register_fn("description", |b: &mut A2aAgentBuilder, text: &str| {
        b.with(|d| d.description = Some(text.to_string()))
    });
}

/// The draft as a remote agent, or what is wrong with it (at the `a2a_agent(...)` call).
pub(crate) fn finish(d: A2aAgentDraft, path: &str) -> Result<A2aAgentSpec, Vec<LoadError>> {
    let at = crate::loc(path, d.pos);
    let err = |m: String| LoadError::at(at.clone(), format!("a2a_agent \"{}\": {m}", d.name));
    let mut errors = Vec::new();
    if let Err(reason) = kiln_registry::mount_spec::check_name(&d.name) {
        errors.push(err(reason.replace("server name", "name")));
    }
    match &d.url {
        None => errors.push(err(
            "needs .url(\"https://…/a2a/NAME\"): where its agent card is".into(),
        )),
        Some(url) => {
            if let Err(reason) = kiln_registry::mount_spec::check_url(url) {
                errors.push(err(reason));
            }
        }
    }
    errors.extend(d.problems.iter().map(|p| err(p.clone())));
    if let Some(o) = &d.oauth {
        if d.bearer_env.is_some() {
            errors.push(err("takes .bearer_env(...) or .oauth(...), not both".into()));
        }
        if !o.client_credentials || o.client_id.is_none() || o.client_secret_env.is_none() {
            errors.push(err(
                "oauth: a remote agent takes a machine's client: grant: \"client_credentials\", client_id and client_secret_env".into(),
            ));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(A2aAgentSpec {
        name: d.name,
        url: d.url.unwrap_or_default(),
        bearer_env: d.bearer_env,
        oauth: d.oauth,
        description: d.description,
        loc: at,
    })
}
