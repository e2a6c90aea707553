//! Resources, resource templates, prompts and completions as MCP serves them: listed from the
//! registry, read by calling their reader tool through [`Host::call_tool`] (so the guard, the
//! sandbox, deadlines and the run log apply), and the reader's value turned into MCP's shapes.

use kiln_core::model::content::CONTENT_KEY;
use kiln_core::tool::{Tool, ToolOutcome};
use kiln_host::Host;
use kiln_host::api::CallOptions;
use kiln_registry::served::Served;
use rmcp::ErrorData;
use rmcp::model::{
    CompleteResult, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ReadResourceResult, Reference,
};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// An rmcp result from its wire JSON (what these results are, field for field), marked
/// complete (the 2026-07-28 `resultType`; rmcp drops it for older peers).
fn wire<T: DeserializeOwned>(mut v: Value) -> Result<T, ErrorData> {
    if let Value::Object(m) = &mut v {
        m.insert("resultType".into(), json!("complete"));
    }
    serde_json::from_value(v)
        .map_err(|e| ErrorData::internal_error(format!("kiln built a malformed result: {e}"), None))
}

fn put(m: &mut Map<String, Value>, key: &str, v: Option<impl Into<Value>>) {
    if let Some(v) = v {
        m.insert(key.into(), v.into());
    }
}

/// `resources/list`.
pub fn list_resources(served: &Served) -> Result<ListResourcesResult, ErrorData> {
    let resources: Vec<Value> = served
        .resources
        .values()
        .map(|r| {
            let mut m = Map::new();
            m.insert("uri".into(), json!(r.uri));
            m.insert("name".into(), json!(r.listing.name));
            m.insert("description".into(), json!(r.listing.description));
            put(&mut m, "title", r.listing.title.clone());
            put(&mut m, "mimeType", r.listing.mime.clone());
            put(&mut m, "size", r.listing.size);
            Value::Object(m)
        })
        .collect();
    wire(json!({ "resources": resources }))
}

/// `resources/templates/list`.
pub fn list_templates(served: &Served) -> Result<ListResourceTemplatesResult, ErrorData> {
    let templates: Vec<Value> = served
        .templates
        .values()
        .map(|t| {
            let mut m = Map::new();
            m.insert("uriTemplate".into(), json!(t.uri_template));
            m.insert("name".into(), json!(t.listing.name));
            m.insert("description".into(), json!(t.listing.description));
            put(&mut m, "title", t.listing.title.clone());
            put(&mut m, "mimeType", t.listing.mime.clone());
            Value::Object(m)
        })
        .collect();
    wire(json!({ "resourceTemplates": templates }))
}

/// `prompts/list`.
pub fn list_prompts(served: &Served) -> Result<ListPromptsResult, ErrorData> {
    let prompts: Vec<Value> = served
        .prompts
        .values()
        .map(|p| {
            let mut m = Map::new();
            m.insert("name".into(), json!(p.name));
            m.insert("description".into(), json!(p.description));
            put(&mut m, "title", p.title.clone());
            m.insert("arguments".into(), json!(p.args));
            Value::Object(m)
        })
        .collect();
    wire(json!({ "prompts": prompts }))
}

/// Runs a reader, getter or completion tool as a call of the MCP client; its failure is
/// worded for `what` (`resource "notes://x"`), not for the tool behind it.
async fn call(
    host: &Host,
    tool: &Arc<Tool>,
    args: Map<String, Value>,
    opts: CallOptions,
    what: &str,
) -> Result<Value, ErrorData> {
    let outcome: ToolOutcome = host
        .call_tool(tool, Value::Object(args), opts)
        .await
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    outcome.result.map_err(|f| {
        let message = kiln_core::error::public::scrub(&f.message)
            .replace(&format!("Tool \"{}\"", tool.name), what)
            .replace(&format!("tool \"{}\"", tool.name), what)
            .replace("but the caller only has", "but the server was granted only");
        match f.kind {
            kiln_core::tool::FailureKind::InvalidArguments => {
                ErrorData::invalid_params(message, None)
            }
            _ => ErrorData::internal_error(message, None),
        }
    })
}

/// `resources/read`: the resource at `uri`, or the template it matches.
pub async fn read(
    host: &Host,
    uri: &str,
    opts: CallOptions,
) -> Result<ReadResourceResult, ErrorData> {
    let found = host.registry().served().find(uri);
    let Some(kiln_registry::served::Found {
        reader,
        params,
        mime,
    }) = found
    else {
        return Err(ErrorData::resource_not_found(
            format!(
                "no resource \"{uri}\": resources/list and resources/templates/list show what there is"
            ),
            Some(json!({ "uri": uri })),
        ));
    };
    let value = call(host, &reader, params, opts, &format!("resource \"{uri}\"")).await?;
    wire(json!({ "contents": contents(uri, mime.as_deref(), value) }))
}

/// A reader's value as resource contents: a string is text, `resource_blob(...)` bytes,
/// content blocks each their own, anything else its JSON.
fn contents(uri: &str, mime: Option<&str>, value: Value) -> Vec<Value> {
    match value {
        Value::String(text) => {
            vec![json!({"uri": uri, "mimeType": mime.unwrap_or("text/plain"), "text": text})]
        }
        Value::Object(m) if m.contains_key("$blob") => vec![json!({
            "uri": uri,
            "mimeType": m.get("mime").and_then(Value::as_str).or(mime).unwrap_or("application/octet-stream"),
            "blob": m["$blob"],
        })],
        Value::Object(m) if m.contains_key(CONTENT_KEY) => m[CONTENT_KEY]
            .as_array()
            .map(|blocks| {
                blocks
                    .iter()
                    .filter_map(|b| block_contents(uri, mime, b))
                    .collect()
            })
            .unwrap_or_default(),
        other => vec![json!({
            "uri": uri,
            "mimeType": mime.unwrap_or("application/json"),
            "text": other.to_string(),
        })],
    }
}

fn block_contents(uri: &str, mime: Option<&str>, block: &Value) -> Option<Value> {
    match block["type"].as_str()? {
        "text" => Some(
            json!({"uri": uri, "mimeType": mime.unwrap_or("text/plain"), "text": block["text"]}),
        ),
        "image" | "audio" => {
            Some(json!({"uri": uri, "mimeType": block["mimeType"], "blob": block["data"]}))
        }
        "resource" => Some(block["resource"].clone()),
        _ => None,
    }
}

/// `prompts/get`.
pub async fn get_prompt(
    host: &Host,
    name: &str,
    args: Map<String, Value>,
    opts: CallOptions,
) -> Result<GetPromptResult, ErrorData> {
    let reg = host.registry();
    let Some(prompt) = reg.served().prompts.get(name) else {
        return Err(ErrorData::invalid_params(
            format!("no prompt \"{name}\": prompts/list shows what there is"),
            None,
        ));
    };
    let (getter, description) = (prompt.getter.clone(), prompt.description.clone());
    drop(reg);
    let value = call(host, &getter, args, opts, &format!("prompt \"{name}\"")).await?;
    wire(json!({ "description": description, "messages": messages(value) }))
}

/// A getter's value as messages: a string is one user message, content blocks one each, and
/// a list of `#{ role, content }` maps is taken as written (a string content is text).
fn messages(value: Value) -> Vec<Value> {
    let user = |content: Value| json!({"role": "user", "content": content});
    let text = |t: &str| json!({"type": "text", "text": t});
    match value {
        Value::String(s) => vec![user(text(&s))],
        Value::Object(m) if m.contains_key(CONTENT_KEY) => m[CONTENT_KEY]
            .as_array()
            .map(|blocks| blocks.iter().cloned().map(user).collect())
            .unwrap_or_default(),
        Value::Array(items) => items
            .into_iter()
            .map(|item| {
                let role = item["role"].as_str().unwrap_or("user").to_string();
                let content = match &item["content"] {
                    Value::String(s) => text(s),
                    Value::Null => text(&item.to_string()),
                    c => c.clone(),
                };
                json!({"role": role, "content": content})
            })
            .collect(),
        other => vec![user(text(&other.to_string()))],
    }
}

/// `completion/complete`: the values the prompt's or template's completion gives for the
/// argument's prefix (none where it has no completion).
pub async fn complete(
    host: &Host,
    reference: &Reference,
    arg: &str,
    prefix: &str,
    opts: CallOptions,
) -> Result<CompleteResult, ErrorData> {
    let reg = host.registry();
    let served = reg.served();
    let completions = match reference {
        Reference::Prompt(p) => served.prompts.get(&p.name).map(|p| &p.completions),
        Reference::Resource(r) => served.templates.get(&r.uri).map(|t| &t.completions),
        _ => None,
    };
    let Some(completions) = completions else {
        return Err(ErrorData::invalid_params(
            "completion/complete: no such prompt or resource template",
            None,
        ));
    };
    let completer = completions
        .iter()
        .find(|(name, _)| name == arg)
        .map(|(_, t)| t.clone());
    drop(reg);
    let values: Vec<String> = match completer {
        None => Vec::new(),
        Some(tool) => {
            let mut args = Map::new();
            args.insert("value".into(), json!(prefix));
            match call(
                host,
                &tool,
                args,
                opts,
                &format!("the completion of \"{arg}\""),
            )
            .await?
            {
                Value::Array(items) => items
                    .into_iter()
                    .map(|v| match v {
                        Value::String(s) => s,
                        other => other.to_string(),
                    })
                    .collect(),
                Value::Null => Vec::new(),
                other => vec![other.to_string()],
            }
        }
    };
    let total = values.len();
    let shown: Vec<String> = values.into_iter().take(100).collect();
    wire(json!({"completion": {"values": shown, "total": total, "hasMore": total > 100}}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_values_become_contents() {
        assert_eq!(
            contents("a://x", None, json!("hi")),
            [json!({"uri": "a://x", "mimeType": "text/plain", "text": "hi"})]
        );
        assert_eq!(
            contents("a://x", None, json!({"$blob": "AAAA", "mime": "image/png"})),
            [json!({"uri": "a://x", "mimeType": "image/png", "blob": "AAAA"})]
        );
        assert_eq!(
            contents("a://x", Some("application/json"), json!({"id": "1"})),
            [json!({"uri": "a://x", "mimeType": "application/json", "text": "{\"id\":\"1\"}"})]
        );
    }

    #[test]
    fn getter_values_become_messages() {
        assert_eq!(
            messages(json!("hello")),
            [json!({"role": "user", "content": {"type": "text", "text": "hello"}})]
        );
        let blocks = json!({"$content": [
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "text", "text": "look"}
        ]});
        let got = messages(blocks);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0]["content"]["type"], "image");
        assert_eq!(
            messages(json!([{"role": "assistant", "content": "ok"}])),
            [json!({"role": "assistant", "content": {"type": "text", "text": "ok"}})]
        );
    }
}
