//! `.ui(uri, #{ ... })`: a tool with a face (MCP Apps, the `io.modelcontextprotocol/ui`
//! extension). The tool links a `ui://` resource holding an HTML page that hosts render beside
//! the conversation; `file` (beside the script) or `html` gives the page, and a tool that only
//! links a page another tool gives says `visibility: ["app"]` to be called by that page alone.

use crate::dsl::{ToolBuilder, strings};
use kiln_registry::served::apps::is_origin;
use rhai::{Dynamic, Engine, Map, NativeCallContext, Position};
use serde_json::{Map as JsonMap, Value, json};

/// The scheme every app resource's URI uses.
pub const UI_SCHEME: &str = "ui://";

/// Who may call a tool with a face: the model, its page, or both (the default).
pub const VISIBILITIES: [&str; 2] = ["model", "app"];

/// The permissions a page may ask of its host, as the DSL spells them and as MCP Apps does.
const PERMISSIONS: [(&str, &str); 4] = [
    ("camera", "camera"),
    ("microphone", "microphone"),
    ("geolocation", "geolocation"),
    ("clipboard_write", "clipboardWrite"),
];

/// The CSP lists a page may declare, as the DSL spells them and as MCP Apps does.
const CSP_LISTS: [(&str, &str); 4] = [
    ("connect_domains", "connectDomains"),
    ("resource_domains", "resourceDomains"),
    ("frame_domains", "frameDomains"),
    ("base_uri_domains", "baseUriDomains"),
];

/// Where a page's HTML comes from.
#[derive(Debug, Clone)]
pub enum UiSource {
    /// `file: "form.html"`: a file beside the script (or below it), read at load and reloaded
    /// when it changes.
    File(String),
    /// `html: "<!doctype html>..."`: the page itself.
    Inline(String),
}

/// What a script said in `.ui(...)`.
#[derive(Debug, Clone)]
pub struct UiDraft {
    /// The `ui://` URI of the page.
    pub uri: String,
    /// Where `.ui(...)` was called.
    pub pos: Position,
    /// The page, when this tool gives it (else another tool does).
    pub source: Option<UiSource>,
    /// `visibility: [...]`, when given.
    pub visibility: Option<Vec<String>>,
    /// The resource's `_meta.ui`: `csp`, `permissions`, `prefersBorder`, `domain`.
    pub resource_meta: JsonMap<String, Value>,
}

impl UiDraft {
    /// The tool's `_meta.ui`: the page's URI and, when given, who may call the tool.
    pub fn tool_meta(&self) -> Value {
        let mut ui = json!({ "resourceUri": self.uri });
        if let Some(v) = &self.visibility {
            ui["visibility"] = json!(v);
        }
        ui
    }
}

/// Reads `.ui(uri, options)` into a draft, or says what is wrong with it.
fn read(uri: &str, pos: Position, options: Map) -> Result<UiDraft, String> {
    if !uri.starts_with(UI_SCHEME) || uri.len() == UI_SCHEME.len() {
        return Err(format!(
            ".ui(\"{uri}\"): an app's URI starts with ui:// and names it, as \"ui://orders/form\""
        ));
    }
    let mut draft = UiDraft {
        uri: uri.to_string(),
        pos,
        source: None,
        visibility: None,
        resource_meta: JsonMap::new(),
    };
    for (key, value) in options {
        let key = key.as_str();
        let wrong = |what: &str| format!(".ui(...): {key} must be {what}");
        match key {
            "file" | "html" => {
                let text = value.into_string().map_err(|_| wrong("a string"))?;
                if draft.source.is_some() {
                    return Err(".ui(...): give the page as file or as html, not both".into());
                }
                draft.source = Some(if key == "file" {
                    UiSource::File(text)
                } else {
                    UiSource::Inline(text)
                });
            }
            "visibility" => draft.visibility = Some(visibility(value)?),
            "csp" => {
                let csp = csp(value.try_cast::<Map>().ok_or_else(|| wrong("a map"))?)?;
                draft.resource_meta.insert("csp".into(), csp);
            }
            "permissions" => {
                let list = value.into_array().map_err(|_| wrong("a list"))?;
                draft
                    .resource_meta
                    .insert("permissions".into(), permissions(&strings(&list)?)?);
            }
            "prefers_border" => {
                let on = value.as_bool().map_err(|_| wrong("true or false"))?;
                draft
                    .resource_meta
                    .insert("prefersBorder".into(), json!(on));
            }
            "domain" => {
                let domain = value.into_string().map_err(|_| wrong("a string"))?;
                draft.resource_meta.insert("domain".into(), json!(domain));
            }
            other => {
                return Err(format!(
                    ".ui(...): unknown option \"{other}\" (file, html, visibility, csp, permissions, prefers_border, domain)"
                ));
            }
        }
    }
    Ok(draft)
}

fn visibility(value: Dynamic) -> Result<Vec<String>, String> {
    let list = value
        .into_array()
        .map_err(|_| ".ui(...): visibility must be a list, as [\"app\"]".to_string())?;
    let list = strings(&list)?;
    if list.is_empty() {
        return Err(
            ".ui(...): visibility names who may call the tool: \"model\", \"app\" or both".into(),
        );
    }
    if let Some(bad) = list.iter().find(|v| !VISIBILITIES.contains(&v.as_str())) {
        return Err(format!(
            ".ui(...): visibility \"{bad}\" is not \"model\" or \"app\""
        ));
    }
    Ok(list)
}

fn csp(map: Map) -> Result<Value, String> {
    let mut out = JsonMap::new();
    for (key, value) in map {
        let Some((_, wire)) = CSP_LISTS.iter().find(|(dsl, _)| *dsl == key.as_str()) else {
            return Err(format!(
                ".ui(...): csp has no \"{key}\" (connect_domains, resource_domains, frame_domains, base_uri_domains)"
            ));
        };
        let list = value
            .into_array()
            .map_err(|_| format!(".ui(...): csp.{key} must be a list of origins"))?;
        let origins = strings(&list)?;
        if let Some(bad) = origins.iter().find(|o| !is_origin(o)) {
            return Err(format!(
                ".ui(...): csp.{key}: \"{bad}\" is not an origin (as \"https://api.example.com\" or \"https://*.example.com\")"
            ));
        }
        out.insert((*wire).into(), json!(origins));
    }
    Ok(Value::Object(out))
}

fn permissions(names: &[String]) -> Result<Value, String> {
    let mut out = JsonMap::new();
    for name in names {
        let Some((_, wire)) = PERMISSIONS.iter().find(|(dsl, _)| dsl == name) else {
            return Err(format!(
                ".ui(...): no permission \"{name}\" (camera, microphone, geolocation, clipboard_write)"
            ));
        };
        out.insert((*wire).into(), json!({}));
    }
    Ok(Value::Object(out))
}

fn ui(b: &mut ToolBuilder, pos: Position, uri: &str, options: Map) -> ToolBuilder {
    let read = read(uri, pos, options);
    b.with(|d| match read {
        _ if d.ui.is_some() => d.errors.push((pos, ".ui(...) is given twice".into())),
        Ok(draft) => d.ui = Some(draft),
        Err(e) => d.errors.push((pos, e)),
    })
}

/// Registers `.ui(uri)` and `.ui(uri, #{ ... })` on the tool builder.
pub(crate) fn register(engine: &mut Engine) {
    engine.register_fn(
        "ui",
        |ctx: NativeCallContext, b: &mut ToolBuilder, uri: &str| {
            ui(b, ctx.call_position(), uri, Map::new())
        },
    );
    engine.register_fn(
        "ui",
        |ctx: NativeCallContext, b: &mut ToolBuilder, uri: &str, options: Map| {
            ui(b, ctx.call_position(), uri, options)
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_names_its_csp_and_permissions_as_mcp_apps_does() {
        let mut options = Map::new();
        let mut csp_map = Map::new();
        csp_map.insert(
            "connect_domains".into(),
            Dynamic::from_array(vec!["https://api.example.com".into()]),
        );
        options.insert("csp".into(), Dynamic::from_map(csp_map));
        options.insert(
            "permissions".into(),
            Dynamic::from_array(vec!["clipboard_write".into()]),
        );
        options.insert("html".into(), "<p>hi</p>".into());
        let d = read("ui://a/b", Position::NONE, options).expect("reads");
        assert_eq!(
            Value::Object(d.resource_meta.clone()),
            json!({"csp": {"connectDomains": ["https://api.example.com"]},
                   "permissions": {"clipboardWrite": {}}})
        );
        assert_eq!(d.tool_meta(), json!({"resourceUri": "ui://a/b"}));
        assert!(read("https://a", Position::NONE, Map::new()).is_err());
    }
}
