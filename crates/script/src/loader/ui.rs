//! A tool's `.ui(...)` at load: the link in the tool's `_meta.ui`, and the page it gives (a
//! file beside the script, read now and watched like an import, or inline HTML) served as a
//! `ui://` resource.

use crate::ScriptUnit;
use crate::dsl::ui::{UiDraft, UiSource};
use kiln_core::error::LoadError;
use kiln_core::error::SourceLoc;
use kiln_core::model::content::CONTENT_KEY;
use kiln_core::tool::Tool;
use kiln_registry::LoadedFile;
use kiln_registry::native::NativeTool;
use kiln_registry::served::apps::{MAX_PAGE_BYTES, MIME};
use kiln_registry::served::{Listing, READ_PREFIX, Resource, reader_name};
use serde_json::{Map, Value, json};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// Links `tool` to its page and, when the tool gives the page, serves it from `file`.
pub(crate) fn attach(ui: UiDraft, tool: &mut Tool, unit: &Arc<ScriptUnit>, file: &mut LoadedFile) {
    let at = crate::loc(&unit.path, ui.pos);
    tool.meta.extra.insert("ui".into(), ui.tool_meta());
    // The flat key the extension's first hosts read, still sent by its SDK.
    tool.meta
        .extra
        .insert("ui/resourceUri".into(), Value::String(ui.uri.clone()));
    let html = match &ui.source {
        None => return,
        Some(UiSource::Inline(html)) => Ok(Arc::<str>::from(html.as_str())),
        Some(UiSource::File(name)) => read_page(&unit.path, name).map(|(html, path)| {
            file.imports.push(path);
            html
        }),
    };
    let fail = |m: String| LoadError::at(at.clone(), format!("tool \"{}\": {m}", tool.name));
    let page = match html {
        Ok(html) if html.trim().is_empty() => Err(vec![fail("the page is empty".into())]),
        Ok(html) => Page {
            uri: ui.uri.clone(),
            tool: tool.name.clone(),
            html,
            meta: ui.resource_meta.clone(),
            loc: at.clone(),
        }
        .into_resource(),
        Err(m) => Err(vec![fail(m)]),
    };
    match page {
        Ok(resource) if file.served.resources.contains_key(&ui.uri) => {
            let prev = &file.served.resources[&ui.uri].loc;
            file.errors.push(fail(format!(
                "{} is given twice (also at {prev}); other tools link it with .ui(\"{}\") alone",
                resource.uri, resource.uri
            )));
        }
        Ok(resource) => {
            file.served.resources.insert(ui.uri.clone(), resource);
        }
        Err(errors) => file.errors.extend(errors),
    }
}

/// Reads the page `name` names beside the script at `script`: a relative path that stays in
/// the script's folder, a UTF-8 file of at most [`MAX_PAGE_BYTES`]. Its canonical path is
/// returned to be watched.
fn read_page(script: &str, name: &str) -> Result<(Arc<str>, PathBuf), String> {
    let relative = Path::new(name);
    let inside = relative
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if name.is_empty() || !inside {
        return Err(format!(
            ".ui(...): file \"{name}\" must be a path inside the script's folder (no .., not absolute)"
        ));
    }
    let folder = Path::new(script).parent().unwrap_or(Path::new(""));
    let path = folder.join(relative);
    let shown = path.display();
    let meta =
        std::fs::metadata(&path).map_err(|e| format!(".ui(...): cannot read {shown}: {e}"))?;
    if meta.len() > MAX_PAGE_BYTES as u64 {
        return Err(format!(
            ".ui(...): {shown} holds {} bytes; a page may hold {MAX_PAGE_BYTES}",
            meta.len()
        ));
    }
    let bytes = std::fs::read(&path).map_err(|e| format!(".ui(...): cannot read {shown}: {e}"))?;
    let html = String::from_utf8(bytes).map_err(|e| {
        format!(
            ".ui(...): {shown} is not UTF-8 text (byte {})",
            e.utf8_error().valid_up_to()
        )
    })?;
    let canonical = crate::imports::canonical(&path).unwrap_or(path);
    Ok((html.into(), canonical))
}

/// A page kiln serves itself: its URI, HTML and the `_meta.ui` of its contents.
pub(crate) struct Page {
    /// The `ui://` URI.
    pub(crate) uri: String,
    /// The tool that gives it (its listing's name).
    pub(crate) tool: String,
    /// The HTML.
    pub(crate) html: Arc<str>,
    /// `csp`, `permissions`, `prefersBorder`, `domain`, as MCP Apps spells them.
    pub(crate) meta: Map<String, Value>,
    /// Where the page was declared.
    pub(crate) loc: SourceLoc,
}

impl Page {
    /// The page as a served resource, read through a tool of its own that answers its
    /// contents (type, text and `_meta.ui`) as one resource block.
    pub(crate) fn into_resource(self) -> Result<Resource, Vec<LoadError>> {
        let contents = json!({
            "uri": self.uri,
            "mimeType": MIME,
            "text": &*self.html,
            "_meta": { "ui": self.meta },
        });
        let answer = json!({ CONTENT_KEY: [{"type": "resource", "resource": contents}] });
        let reader = NativeTool::new(
            reader_name(READ_PREFIX, &self.uri),
            move |_args: Value, _ctx: &kiln_core::context::CallContext| {
                let answer = answer.clone();
                async move { Ok(answer) }
            },
        )
        .description(format!("The page of tool \"{}\" (MCP Apps)", self.tool))
        .located(self.loc.clone())
        .into_tool()?;
        Ok(Resource {
            uri: self.uri.clone(),
            listing: Listing {
                name: format!("{} app", self.tool),
                title: None,
                description: format!("The page tool \"{}\" shows its results in", self.tool),
                mime: Some(MIME.into()),
                size: Some(self.html.len() as u64),
            },
            reader: Arc::new(reader),
            loc: self.loc,
        })
    }
}
