//! The server: the editor's buffers, the projects they belong to, and the loop answering the
//! editor's requests over one connection.

use crate::catalog::Catalog;
use crate::project::{self, Project};
use crate::{LspError, Options, complete, diagnostics, navigate, position};
use lsp_server::{Connection, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::{self as note, Notification as _};
use lsp_types::request::{self as req, Request as _};
use lsp_types::{
    CompletionOptions, CompletionResponse, DocumentSymbolResponse, GotoDefinitionResponse,
    InitializeParams, OneOf, PublishDiagnosticsParams, ServerCapabilities,
    TextDocumentSyncCapability, TextDocumentSyncKind, Url,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What the server knows between messages.
struct State {
    options: Options,
    /// Open buffers by canonical path.
    buffers: BTreeMap<PathBuf, String>,
    /// URIs as the editor sent them, by canonical path (diagnostics go back to the same URI).
    uris: BTreeMap<PathBuf, Url>,
    projects: Vec<Project>,
    catalog: Option<Catalog>,
}

/// The capabilities kiln's server offers.
fn capabilities() -> ServerCapabilities {
    ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::FULL)),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some([".", "\"", "{", ",", "["].map(String::from).to_vec()),
            ..CompletionOptions::default()
        }),
        hover_provider: Some(lsp_types::HoverProviderCapability::Simple(true)),
        definition_provider: Some(OneOf::Left(true)),
        document_symbol_provider: Some(OneOf::Left(true)),
        ..ServerCapabilities::default()
    }
}

/// Serves one editor over `conn` until it shuts down.
pub fn serve(conn: &Connection, mut options: Options) -> Result<(), LspError> {
    let caps =
        serde_json::to_value(capabilities()).map_err(|e| LspError::Protocol(e.to_string()))?;
    let init = conn
        .initialize(caps)
        .map_err(|e| LspError::Protocol(e.to_string()))?;
    let init: InitializeParams = serde_json::from_value(init).unwrap_or_default();
    if let Some(problem) = options.settle(&init) {
        // The project file does not read: say so on it, and go on with the default folder.
        let (path, line, col) = problem.place();
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let found = diagnostics::of_project(&text, line, col, problem.to_string());
        let params = params(&BTreeMap::new(), path, vec![found]);
        let n = Notification::new(note::PublishDiagnostics::METHOD.into(), params);
        send(conn, Message::Notification(n))?;
    }
    let mut state = State {
        options,
        buffers: BTreeMap::new(),
        uris: BTreeMap::new(),
        projects: Vec::new(),
        catalog: None,
    };
    for msg in &conn.receiver {
        match msg {
            Message::Request(r) => {
                if conn
                    .handle_shutdown(&r)
                    .map_err(|e| LspError::Protocol(e.to_string()))?
                {
                    return Ok(());
                }
                let response = state.answer(r);
                send(conn, Message::Response(response))?;
            }
            Message::Notification(n) => state.notified(n),
            Message::Response(_) => {}
        }
        // Publish once the editor has stopped typing for the messages already queued.
        if conn.receiver.is_empty() {
            for params in state.publish() {
                let n = Notification::new(note::PublishDiagnostics::METHOD.into(), params);
                send(conn, Message::Notification(n))?;
            }
        }
    }
    Ok(())
}

fn send(conn: &Connection, msg: Message) -> Result<(), LspError> {
    conn.sender
        .send(msg)
        .map_err(|_| LspError::Protocol("the editor closed the connection".into()))
}

impl State {
    fn notified(&mut self, n: Notification) {
        let (uri, text) = match n.method.as_str() {
            note::DidOpenTextDocument::METHOD => {
                match serde_json::from_value::<lsp_types::DidOpenTextDocumentParams>(n.params) {
                    Ok(p) => (p.text_document.uri, Some(p.text_document.text)),
                    Err(_) => return,
                }
            }
            note::DidChangeTextDocument::METHOD => {
                match serde_json::from_value::<lsp_types::DidChangeTextDocumentParams>(n.params) {
                    // Full sync: the last change is the whole text.
                    Ok(p) => match p.content_changes.into_iter().last() {
                        Some(change) => (p.text_document.uri, Some(change.text)),
                        None => return,
                    },
                    Err(_) => return,
                }
            }
            note::DidCloseTextDocument::METHOD => {
                match serde_json::from_value::<lsp_types::DidCloseTextDocumentParams>(n.params) {
                    Ok(p) => (p.text_document.uri, None),
                    Err(_) => return,
                }
            }
            note::DidSaveTextDocument::METHOD => {
                // Files importing a saved module read it from the disk: load them again.
                self.projects.iter_mut().for_each(|p| p.dirty = true);
                return;
            }
            _ => return,
        };
        let Some(path) = canonical(&uri) else {
            return;
        };
        self.uris.insert(path.clone(), uri);
        match text {
            Some(text) => {
                self.buffers.insert(path.clone(), text);
            }
            None => {
                self.buffers.remove(&path);
            }
        }
        match self.project_of(&path) {
            Some(i) => self.projects[i].dirty = true,
            None => tracing::warn!("no project for {}", path.display()),
        }
    }

    /// The index of `path`'s project, opened when it is the first of its folder.
    fn project_of(&mut self, path: &Path) -> Option<usize> {
        if let Some(i) = self.projects.iter().position(|p| p.holds(path)) {
            return Some(i);
        }
        let (roots, single) = project::roots_for(path, &self.options.scripts);
        match Project::open(roots, single, self.options.stdlib) {
            Ok(p) => {
                if self.catalog.is_none() {
                    self.catalog = Some(catalog_of(&p));
                }
                self.projects.push(p);
                Some(self.projects.len() - 1)
            }
            Err(e) => {
                tracing::warn!("{e}");
                None
            }
        }
    }

    /// The diagnostics of every project that changed.
    fn publish(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        for project in self.projects.iter_mut().filter(|p| p.dirty) {
            let findings = project.load(&self.buffers);
            let mut now = std::collections::BTreeSet::new();
            for (path, (errors, advice)) in &findings {
                let text = match self.buffers.get(path) {
                    Some(t) => t.clone(),
                    None => std::fs::read_to_string(path).unwrap_or_default(),
                };
                now.insert(path.clone());
                out.push(params(
                    &self.uris,
                    path,
                    diagnostics::of(&text, errors, advice),
                ));
            }
            // A file with something to say is told "clean" again once it is fixed.
            project.told_clean.retain(|p| !now.contains(p));
            for gone in project.published.difference(&now) {
                out.push(params(&self.uris, gone, Vec::new()));
                project.told_clean.insert(gone.clone());
            }
            // Test files are not scripts: check that they parse.
            for (path, text) in &self.buffers {
                if kiln_script::is_test_file(path) && project.holds(path) {
                    let found = diagnostics::parse_only(project.host().engine(), text);
                    if !found.is_empty() {
                        now.insert(path.clone());
                        project.told_clean.remove(path);
                        out.push(params(&self.uris, path, found));
                    } else if project.told_clean.insert(path.clone()) {
                        out.push(params(&self.uris, path, found));
                    }
                }
            }
            // Open files with nothing to say are told so (a fixed file clears its marks).
            for path in self.buffers.keys() {
                if project.holds(path)
                    && !now.contains(path)
                    && !project.published.contains(path)
                    && project.told_clean.insert(path.clone())
                {
                    out.push(params(&self.uris, path, Vec::new()));
                }
            }
            project.published = now;
        }
        out
    }

    fn answer(&mut self, r: Request) -> Response {
        let id = r.id.clone();
        let result = match r.method.as_str() {
            req::Completion::METHOD => self
                .at::<lsp_types::CompletionParams>(r, |p| &p.text_document_position)
                .map(|(s, i, path, at)| {
                    let regs = s.projects[i].registries();
                    let dir = path.parent();
                    let items = complete::items(&s.buffers[&path], at, s.catalog(), &regs, dir);
                    serde_json::to_value(CompletionResponse::Array(items))
                }),
            req::HoverRequest::METHOD => self
                .at::<lsp_types::HoverParams>(r, |p| &p.text_document_position_params)
                .map(|(s, i, path, at)| {
                    let regs = s.projects[i].registries();
                    let dir = path.parent();
                    let hover = navigate::hover(&s.buffers[&path], at, s.catalog(), &regs, dir);
                    serde_json::to_value(hover)
                }),
            req::GotoDefinition::METHOD => self
                .at::<lsp_types::GotoDefinitionParams>(r, |p| &p.text_document_position_params)
                .map(|(s, i, path, at)| {
                    let files = s.projects[i].files(&s.buffers);
                    let found = navigate::definition(&path, &s.buffers[&path], at, &files);
                    serde_json::to_value(found.map(GotoDefinitionResponse::Scalar))
                }),
            req::DocumentSymbolRequest::METHOD => {
                match serde_json::from_value::<lsp_types::DocumentSymbolParams>(r.params) {
                    Ok(p) => {
                        let text = canonical(&p.text_document.uri)
                            .and_then(|path| self.buffers.get(&path).cloned())
                            .unwrap_or_default();
                        let symbols = navigate::symbols(&text);
                        Some(serde_json::to_value(DocumentSymbolResponse::Nested(
                            symbols,
                        )))
                    }
                    Err(e) => return invalid(id, e),
                }
            }
            _ => {
                return Response::new_err(
                    id,
                    lsp_server::ErrorCode::MethodNotFound as i32,
                    format!("kiln lsp does not answer {}", r.method),
                );
            }
        };
        match result {
            Some(Ok(v)) => Response::new_ok(id, v),
            Some(Err(e)) => invalid(id, e),
            None => Response::new_ok(id, Value::Null),
        }
    }

    /// The open buffer, its project (loaded fresh) and the byte offset a request points at.
    fn at<P: serde::de::DeserializeOwned>(
        &mut self,
        r: Request,
        position: impl Fn(&P) -> &lsp_types::TextDocumentPositionParams,
    ) -> Option<(&Self, usize, PathBuf, usize)> {
        let params: P = serde_json::from_value(r.params).ok()?;
        let tdp = position(&params);
        let path = canonical(&tdp.text_document.uri)?;
        let text = self.buffers.get(&path)?;
        let at = position::offset(text, tdp.position);
        let i = self.project_of(&path)?;
        if self.projects[i].dirty {
            let _ = self.projects[i].load(&self.buffers);
            // Its diagnostics are still to be published.
            self.projects[i].dirty = true;
        }
        Some((self, i, path, at))
    }

    fn catalog(&self) -> &Catalog {
        static EMPTY: std::sync::OnceLock<Catalog> = std::sync::OnceLock::new();
        self.catalog
            .as_ref()
            .unwrap_or_else(|| EMPTY.get_or_init(Catalog::default))
    }
}

fn invalid(id: RequestId, e: impl std::fmt::Display) -> Response {
    Response::new_err(
        id,
        lsp_server::ErrorCode::InvalidParams as i32,
        e.to_string(),
    )
}

fn params(
    uris: &BTreeMap<PathBuf, Url>,
    path: &Path,
    diagnostics: Vec<lsp_types::Diagnostic>,
) -> Value {
    let uri = uris
        .get(path)
        .cloned()
        .or_else(|| Url::from_file_path(path).ok())
        .unwrap_or_else(|| Url::parse("file:///").expect("a valid URL"));
    serde_json::to_value(PublishDiagnosticsParams::new(uri, diagnostics, None)).unwrap_or_default()
}

fn catalog_of(project: &Project) -> Catalog {
    let host = project.host();
    let defs = kiln_host::api::engine_definitions(host.engine());
    Catalog::from_definitions(&defs, host.host_fn_capabilities())
}

/// The canonical path of a `file:` URI (a file not yet saved: its canonical folder joined with
/// its name).
fn canonical(uri: &Url) -> Option<PathBuf> {
    let path = uri.to_file_path().ok()?;
    path.canonicalize().ok().or_else(|| {
        let parent = path.parent()?.canonicalize().ok()?;
        Some(parent.join(path.file_name()?))
    })
}
