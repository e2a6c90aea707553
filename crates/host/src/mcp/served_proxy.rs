//! A mounted server's resources, resource templates and prompts, served on by kiln beside its
//! tools: each read or prompt is a native tool under `mcp:SERVER` forwarding to the server's
//! live connection, so it takes the guard and the run log as its tools do. Resources keep
//! their URIs (they name the resource); their names and the prompts' are `SERVER__NAME`.

use super::McpError;
use super::state::Slot;
use kiln_core::error::SourceLoc;
use kiln_core::tool::{FailureKind, Tool, ToolFailure};
use kiln_registry::mount_spec::{MountSpec, SEPARATOR};
use kiln_registry::native::NativeTool;
use kiln_registry::served::{
    COMPLETE_PREFIX, Listing, PROMPT_PREFIX, Prompt, PromptArg, READ_PREFIX, Resource,
    ResourceTemplate, Served, reader_name, template_params,
};
use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams};
use rmcp::{Peer, RoleClient};
use serde_json::{Value, json};
use std::sync::Arc;

/// What the server offers besides tools (nothing when it declares no resources or prompts).
/// Resources are listed before templates, and both before prompts, so the first listing to
/// fail is the one reported.
pub(super) async fn list(
    spec: &MountSpec,
    slot: &Slot,
    peer: &Peer<RoleClient>,
) -> Result<Served, McpError> {
    let caps = peer.peer_info().map(|i| i.capabilities.clone());
    let mut served = Served::default();
    let completes = caps.as_ref().is_some_and(|c| c.completions.is_some());
    let at = Listed { spec, slot, peer };
    if caps.as_ref().is_some_and(|c| c.resources.is_some()) {
        list_resources(&at, &mut served).await?;
        list_templates(&at, completes, &mut served).await?;
    }
    if caps.as_ref().is_some_and(|c| c.prompts.is_some()) {
        list_prompts(&at, completes, &mut served).await?;
    }
    Ok(served)
}

/// The mount being listed and its live connection, which every listing step needs.
struct Listed<'a> {
    spec: &'a MountSpec,
    slot: &'a Slot,
    peer: &'a Peer<RoleClient>,
}

/// A listing request's failure, naming the server and the request.
fn list_failed(spec: &MountSpec, what: &str, e: rmcp::ServiceError) -> McpError {
    McpError::Server {
        server: spec.name.clone(),
        message: format!("{what} failed: {e}"),
    }
}

/// `resources/list`: each resource under its URI, with a reader for it.
async fn list_resources(at: &Listed<'_>, served: &mut Served) -> Result<(), McpError> {
    let (spec, slot) = (at.spec, at.slot);
    for r in at
        .peer
        .list_all_resources()
        .await
        .map_err(|e| list_failed(spec, "resources/list", e))?
    {
        let listing = Listing {
            name: format!("{}{SEPARATOR}{}", spec.name, r.name),
            title: r.title.clone(),
            description: r.description.clone().unwrap_or_default(),
            mime: r.mime_type.clone(),
            size: r.size,
        };
        let reader = reader(
            spec,
            slot,
            &r.uri,
            Vec::new(),
            ResourceAt::Uri(r.uri.clone()),
        )?;
        let loc = located(spec);
        served.resources.insert(
            r.uri.clone(),
            Resource {
                uri: r.uri.clone(),
                listing,
                reader,
                loc,
            },
        );
    }
    Ok(())
}

/// `resources/templates/list`: each template with a reader filling it in, and a completer for
/// each of its parameters when the server `completes`.
async fn list_templates(
    at: &Listed<'_>,
    completes: bool,
    served: &mut Served,
) -> Result<(), McpError> {
    let (spec, slot) = (at.spec, at.slot);
    for t in at
        .peer
        .list_all_resource_templates()
        .await
        .map_err(|e| list_failed(spec, "resources/templates/list", e))?
    {
        let template = t.uri_template.clone();
        let listing = Listing {
            name: format!("{}{SEPARATOR}{}", spec.name, t.name),
            title: t.title.clone(),
            description: t.description.clone().unwrap_or_default(),
            mime: t.mime_type.clone(),
            size: None,
        };
        let params = template_params(&template);
        let mut completions = Vec::new();
        for p in params.iter().filter(|_| completes) {
            let at = Completed::Template(template.clone());
            completions.push((p.clone(), completer(spec, slot, at, p)?));
        }
        let reader = reader(
            spec,
            slot,
            &template,
            params,
            ResourceAt::Template(template.clone()),
        )?;
        served.templates.insert(
            template.clone(),
            ResourceTemplate {
                uri_template: template,
                listing,
                reader,
                completions,
                loc: located(spec),
            },
        );
    }
    Ok(())
}

/// `prompts/list`: each prompt as `SERVER__NAME` with a getter, and a completer for each
/// argument when the server `completes`.
async fn list_prompts(
    at: &Listed<'_>,
    completes: bool,
    served: &mut Served,
) -> Result<(), McpError> {
    let (spec, slot) = (at.spec, at.slot);
    for p in at
        .peer
        .list_all_prompts()
        .await
        .map_err(|e| list_failed(spec, "prompts/list", e))?
    {
        let args: Vec<PromptArg> = p
            .arguments
            .clone()
            .unwrap_or_default()
            .into_iter()
            .map(|a| PromptArg {
                name: a.name,
                description: a.description.unwrap_or_default(),
                required: a.required.unwrap_or(false),
            })
            .collect();
        let name = format!("{}{SEPARATOR}{}", spec.name, p.name);
        let getter = getter(spec, slot, &p.name, &name, &args)?;
        let mut completions = Vec::new();
        for a in args.iter().filter(|_| completes) {
            let at = Completed::Prompt(p.name.clone());
            completions.push((a.name.clone(), completer(spec, slot, at, &a.name)?));
        }
        served.prompts.insert(
            name.clone(),
            Prompt {
                name,
                title: p.title.clone(),
                description: p.description.clone().unwrap_or_default(),
                args,
                getter,
                completions,
                loc: located(spec),
            },
        );
    }
    Ok(())
}

/// Where the mount was declared, for the served items' locations.
fn located(spec: &MountSpec) -> SourceLoc {
    spec.declared
        .clone()
        .unwrap_or_else(|| SourceLoc::new(&spec.source_path(), 0, 0))
}

/// Where a reader's resource is: one URI, or a template filled with the reader's arguments.
#[derive(Clone)]
enum ResourceAt {
    Uri(String),
    Template(String),
}

impl ResourceAt {
    fn uri(&self, args: &Value) -> String {
        match self {
            ResourceAt::Uri(uri) => uri.clone(),
            ResourceAt::Template(t) => template_params(t).iter().fold(t.clone(), |uri, p| {
                uri.replace(&format!("{{{p}}}"), args[p].as_str().unwrap_or_default())
            }),
        }
    }
}

fn not_running(server: &str) -> ToolFailure {
    ToolFailure::visible(
        FailureKind::ToolError,
        format!(
            "MCP server \"{server}\" is not running (kiln is restarting it); try again shortly"
        ),
    )
}

/// The tool reading a resource (or a template's) from the server; its value is the contents
/// as embedded resource blocks, which kiln serves on as they came.
fn reader(
    spec: &MountSpec,
    slot: &Slot,
    key: &str,
    params: Vec<String>,
    at: ResourceAt,
) -> Result<Arc<Tool>, McpError> {
    let (server, slot) = (spec.name.clone(), slot.clone());
    let name = reader_name(READ_PREFIX, &format!("{}{SEPARATOR}{key}", spec.name));
    let mut native = NativeTool::new(
        name,
        move |args: Value, _ctx: &kiln_core::context::CallContext| {
            let peer = slot.read().ok().and_then(|p| p.clone());
            let (server, uri) = (server.clone(), at.uri(&args));
            async move {
                let peer = peer.ok_or_else(|| not_running(&server))?;
                let read = peer
                    .read_resource(ReadResourceRequestParams::new(uri.clone()))
                    .await
                    .map_err(|e| {
                        ToolFailure::visible(
                            FailureKind::ToolError,
                            format!("MCP server \"{server}\" did not read {uri}: {e}"),
                        )
                    })?;
                let blocks: Vec<Value> = serde_json::to_value(&read.contents)
                    .ok()
                    .and_then(|v| v.as_array().cloned())
                    .unwrap_or_default()
                    .into_iter()
                    .map(|resource| json!({"type": "resource", "resource": resource}))
                    .collect();
                Ok(json!({ kiln_core::model::content::CONTENT_KEY: blocks }))
            }
        },
    )
    .description(format!("Reads {key} from MCP server \"{}\"", spec.name))
    .requires(&spec.capability())
    .located(located(spec));
    for p in params {
        native = native.param(&p, "string", json!({}));
    }
    native
        .into_tool()
        .map(Arc::new)
        .map_err(|e| McpError::Server {
            server: spec.name.clone(),
            message: format!("cannot serve {key}: {e:?}"),
        })
}

/// The tool getting a prompt from the server; its value is the messages as they came.
fn getter(
    spec: &MountSpec,
    slot: &Slot,
    remote: &str,
    name: &str,
    args: &[PromptArg],
) -> Result<Arc<Tool>, McpError> {
    let description = format!("Prompt {remote} of MCP server \"{}\"", spec.name);
    let (server, slot, remote) = (spec.name.clone(), slot.clone(), remote.to_string());
    let tool_name = reader_name(PROMPT_PREFIX, name);
    let mut native = NativeTool::new(
        tool_name,
        move |args: Value, _ctx: &kiln_core::context::CallContext| {
            let peer = slot.read().ok().and_then(|p| p.clone());
            let (server, remote) = (server.clone(), remote.clone());
            async move {
                let peer = peer.ok_or_else(|| not_running(&server))?;
                let mut req = GetPromptRequestParams::new(remote.clone());
                if let Value::Object(map) = args {
                    req.arguments = Some(map);
                }
                let got = peer.get_prompt(req).await.map_err(|e| {
                    ToolFailure::visible(
                        FailureKind::ToolError,
                        format!("MCP server \"{server}\" did not give prompt {remote}: {e}"),
                    )
                })?;
                Ok(serde_json::to_value(&got.messages).unwrap_or(Value::Array(Vec::new())))
            }
        },
    )
    .description(description)
    .requires(&spec.capability())
    .located(located(spec));
    for a in args {
        native = native.param(
            &a.name,
            "string",
            json!({"desc": a.description, "optional": !a.required}),
        );
    }
    native
        .into_tool()
        .map(Arc::new)
        .map_err(|e| McpError::Server {
            server: spec.name.clone(),
            message: format!("cannot serve prompt {name}: {e:?}"),
        })
}

/// What a completion completes an argument of, as the server names it.
#[derive(Clone)]
enum Completed {
    Prompt(String),
    Template(String),
}

/// The tool completing `arg` of a prompt or template through the server's
/// `completion/complete`; its value is the server's suggestions.
fn completer(
    spec: &MountSpec,
    slot: &Slot,
    at: Completed,
    arg: &str,
) -> Result<Arc<Tool>, McpError> {
    let key = match &at {
        Completed::Prompt(p) => format!("{}{SEPARATOR}{p}_{arg}", spec.name),
        Completed::Template(t) => format!("{}{SEPARATOR}{t}_{arg}", spec.name),
    };
    let (server, slot, arg_name) = (spec.name.clone(), slot.clone(), arg.to_string());
    let native = NativeTool::new(
        reader_name(COMPLETE_PREFIX, &key),
        move |args: Value, _ctx: &kiln_core::context::CallContext| {
            let peer = slot.read().ok().and_then(|p| p.clone());
            let (server, at, arg) = (server.clone(), at.clone(), arg_name.clone());
            let value = args["value"].as_str().unwrap_or_default().to_string();
            async move {
                let peer = peer.ok_or_else(|| not_running(&server))?;
                let done = match &at {
                    Completed::Prompt(p) => peer.complete_prompt_simple(p, &arg, value).await,
                    Completed::Template(t) => peer.complete_resource_simple(t, &arg, value).await,
                };
                let values = done.map_err(|e| {
                    ToolFailure::visible(
                        FailureKind::ToolError,
                        format!("MCP server \"{server}\" did not complete {arg}: {e}"),
                    )
                })?;
                Ok(json!(values))
            }
        },
    )
    .description(format!(
        "Completes {arg} through MCP server \"{}\"",
        spec.name
    ))
    .requires(&spec.capability())
    .located(located(spec))
    .param("value", "string", json!({}));
    native
        .into_tool()
        .map(Arc::new)
        .map_err(|e| McpError::Server {
            server: spec.name.clone(),
            message: format!("cannot complete {key}: {e:?}"),
        })
}
