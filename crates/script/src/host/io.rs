//! Host functions that reach the files of the workspace and the environment (the network ones
//! live in `host_net`).
//! Each is gated at every call (see `host::gate`): declared by the running tool, granted to
//! the caller, and the call's host, path or name inside the grant's scope.

use crate::host::{Check, denied, gate, gate_with};
use kiln_core::capability::{HostCap, fs_scope_allows, is_secret_var};
use rhai::{Array, Dynamic, Engine, EvalAltResult, Map};
use std::path::{Component, Path, PathBuf};

/// What a caller lending its files is asked: ACP's requests.
const READ_REQUEST: &str = "fs/read_text_file";
/// The same, to write a file.
const WRITE_REQUEST: &str = "fs/write_text_file";

/// Largest file `read_file` returns.
const MAX_READ_BYTES: u64 = 4 * 1024 * 1024;

/// What a host function returns to the script.
pub(crate) type RhaiResult<T> = Result<T, Box<EvalAltResult>>;

/// A failure the script sees (not a refusal).
pub(crate) fn fail(msg: String) -> Box<EvalAltResult> {
    msg.into()
}

// ---------- files ----------

/// Resolves `path` inside the workspace: relative, no `..`, and (after symlinks) still inside.
fn resolve(
    func: &str,
    workspace: &Path,
    path: &str,
    must_exist: bool,
) -> RhaiResult<(PathBuf, String)> {
    let rel = Path::new(path);
    if path.is_empty()
        || rel.is_absolute()
        || rel
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(denied(format!(
            "{func}(\"{path}\") refused: paths must be relative to the workspace, without `..`"
        )));
    }
    let root = workspace
        .canonicalize()
        .map_err(|e| fail(format!("{func}: workspace {}: {e}", workspace.display())))?;
    let joined = root.join(rel);
    let real = if must_exist || joined.exists() {
        joined
            .canonicalize()
            .map_err(|e| fail(format!("{func}(\"{path}\"): {e}")))?
    } else {
        let parent = joined
            .parent()
            .unwrap_or(&root)
            .canonicalize()
            .map_err(|e| fail(format!("{func}(\"{path}\"): folder: {e}")))?;
        parent.join(joined.file_name().unwrap_or_default())
    };
    if !real.starts_with(&root) {
        return Err(denied(format!(
            "{func}(\"{path}\") refused: it leads outside the workspace"
        )));
    }
    let inside = real
        .strip_prefix(&root)
        .map(|p| p.to_string_lossy().to_string())
        .unwrap_or_default();
    Ok((real, inside))
}

/// `path` relative to the workspace as written, `.` parts dropped (its other parts were
/// checked by the caller or are refused later by `resolve`).
fn lexical_inside(path: &str) -> String {
    Path::new(path)
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => Some(p.to_string_lossy().to_string()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn fs_gate(func: &str, cap: &str, path: &str, must_exist: bool) -> RhaiResult<PathBuf> {
    let workspace = crate::host::workspace().ok_or_else(|| {
        denied(format!(
            "{func}(\"{path}\") refused: host functions can only be called while a tool runs"
        ))
    })?;
    // The path as written is checked before anything touches the disk, so a tool cannot learn
    // whether a file outside its scope exists from the error it gets.
    let written = lexical_inside(path);
    gate_with(&Check {
        func,
        cap,
        target: &written,
        covers: &|scope: Option<&str>| scope.is_none_or(|s| fs_scope_allows(s, &written)),
        why_not: &String::new,
        approve: false,
    })?;
    let (real, inside) = resolve(func, &workspace, path, must_exist)?;
    // Again after symlinks: the real file must be inside the scope too.
    gate(func, cap, &inside, |scope| fs_scope_allows(scope, &inside))?;
    Ok(real)
}

fn read_file(path: &str) -> RhaiResult<String> {
    let real = fs_gate("read_file", HostCap::FsRead.name(), path, true)?;
    // A caller that lends its files (an editor over ACP) has the text as the person sees it,
    // unsaved changes included.
    let params = serde_json::json!({ "path": real.to_string_lossy() });
    if let Some(read) = crate::host::current_events().and_then(|e| e.lend(READ_REQUEST, params)) {
        let answer = read.map_err(|e| fail(format!("read_file(\"{path}\"): {e}")))?;
        let text = answer["content"].as_str().ok_or_else(|| {
            fail(format!(
                "read_file(\"{path}\"): the client's answer has no content"
            ))
        })?;
        if text.len() as u64 > MAX_READ_BYTES {
            return Err(fail(format!(
                "read_file(\"{path}\"): the file is {} bytes; the limit is {MAX_READ_BYTES}",
                text.len()
            )));
        }
        return Ok(text.to_string());
    }
    let meta = std::fs::metadata(&real).map_err(|e| fail(format!("read_file(\"{path}\"): {e}")))?;
    if meta.len() > MAX_READ_BYTES {
        return Err(fail(format!(
            "read_file(\"{path}\"): the file is {} bytes; the limit is {MAX_READ_BYTES}",
            meta.len()
        )));
    }
    std::fs::read_to_string(&real).map_err(|e| fail(format!("read_file(\"{path}\"): {e}")))
}

fn list_dir(path: &str) -> RhaiResult<Array> {
    let real = fs_gate("list_dir", HostCap::FsRead.name(), path, true)?;
    let mut out = Array::new();
    let entries =
        std::fs::read_dir(&real).map_err(|e| fail(format!("list_dir(\"{path}\"): {e}")))?;
    let mut rows: Vec<(String, bool, u64)> = entries
        .flatten()
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            Some((
                e.file_name().to_string_lossy().to_string(),
                m.is_dir(),
                m.len(),
            ))
        })
        .collect();
    rows.sort();
    for (name, dir, size) in rows {
        let mut m = Map::new();
        m.insert("name".into(), name.into());
        m.insert("kind".into(), (if dir { "dir" } else { "file" }).into());
        m.insert("size".into(), (size as rhai::INT).into());
        out.push(m.into());
    }
    Ok(out)
}

/// A tool may not write what controls kiln itself: a script in a folder kiln loads (the next
/// reload would run it with the powers scripts have: declaring agents' capabilities, starting
/// MCP servers) or anything in `.kiln/` (the store and the run log).
fn refuse_control_files(path: &str, real: &Path) -> RhaiResult<()> {
    let services = crate::host::services();
    let workspace = services
        .as_ref()
        .map(|s| s.workspace.join(kiln_core::defaults::STATE_DIR));
    let state = workspace
        .and_then(|k| k.canonicalize().ok())
        .is_some_and(|k| real.starts_with(k));
    let script = real.extension().is_some_and(|e| e == "rhai")
        && services.is_some_and(|s| s.scripts.iter().any(|d| real.starts_with(d)));
    if state || script {
        return Err(denied(format!(
            "write_file(\"{path}\") refused: {} (kiln does not let a tool change what defines its tools, agents and log)",
            if script {
                "it is a script in a folder kiln loads"
            } else {
                "it is in .kiln/, kiln's own state"
            }
        )));
    }
    Ok(())
}

fn write_file(path: &str, text: &str) -> RhaiResult<()> {
    let real = fs_gate("write_file", HostCap::FsWrite.name(), path, false)?;
    refuse_control_files(path, &real)?;
    let params = serde_json::json!({ "path": real.to_string_lossy(), "content": text });
    if let Some(written) = crate::host::current_events().and_then(|e| e.lend(WRITE_REQUEST, params))
    {
        return written
            .map(|_| ())
            .map_err(|e| fail(format!("write_file(\"{path}\"): {e}")));
    }
    let dir = real
        .parent()
        .ok_or_else(|| fail(format!("write_file(\"{path}\"): no folder")))?;
    // Atomic: a temp file in the same folder, then a rename over the target. The temp name is
    // unique per write, so concurrent writers to one path never share (and clobber) it.
    let tmp = dir.join(format!(
        ".{}.kiln-tmp-{}",
        real.file_name().unwrap_or_default().to_string_lossy(),
        kiln_core::services::fresh_id()
    ));
    std::fs::write(&tmp, text).map_err(|e| fail(format!("write_file(\"{path}\"): {e}")))?;
    std::fs::rename(&tmp, &real).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail(format!("write_file(\"{path}\"): {e}"))
    })
}

// ---------- environment ----------

fn env(name: &str) -> RhaiResult<Dynamic> {
    let secret = is_secret_var(name);
    // A secret is readable only through a grant that names it; an unscoped grant does not do.
    let named = crate::host::scopes_for(HostCap::Env.name())
        .iter()
        .any(|s| s.as_deref() == Some(name));
    if secret && !named {
        return Err(denied(format!(
            "env(\"{name}\") refused: secrets are readable only through a grant naming them (env:{name})"
        )));
    }
    gate("env", HostCap::Env.name(), name, |scope| scope == name)?;
    Ok(std::env::var(name)
        .map(Dynamic::from)
        .unwrap_or(Dynamic::UNIT))
}

/// Registers the file and environment functions.
pub fn register(engine: &mut Engine) {
    engine.register_fn("read_file", read_file);
    engine.register_fn("list_dir", list_dir);
    engine.register_fn("write_file", write_file);
    engine.register_fn("env", env);
}
