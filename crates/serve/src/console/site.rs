//! The page a project serves beside its agents (`kiln serve --static DIR`): the files of DIR
//! at `/app/` (`index.html` for the folder), read at each request so a rebuilt bundle is served
//! at once. Only files inside DIR are served (no `..`, no link out of it, no hidden file), at
//! most [`MAX_FILE_BYTES`] each, with the console's security headers: scripts and styles from
//! this server only, no inline script, no framing, and API calls to this server only.

use crate::console::ui::CSP;
use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use std::path::PathBuf;
use std::sync::Arc;

/// The largest file served.
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// `GET /app/`: the folder's `index.html`.
pub async fn index(State(state): State<Arc<AppState>>) -> Result<Response, ApiError> {
    serve(&state, "index.html").await
}

/// `GET /app/{*path}`.
pub async fn file(
    State(state): State<Arc<AppState>>,
    Path(path): Path<String>,
) -> Result<Response, ApiError> {
    serve(&state, &path).await
}

fn missing(path: &str) -> ApiError {
    ApiError::not_found("file_not_found", format!("no file \"/app/{path}\" here"))
}

async fn serve(state: &AppState, path: &str) -> Result<Response, ApiError> {
    let Some(root) = &state.options.static_dir else {
        return Err(missing(path));
    };
    let file = resolve(root, path).ok_or_else(|| missing(path))?;
    let bytes = tokio::fs::read(&file).await.map_err(|_| missing(path))?;
    let mut resp = bytes.into_response();
    let headers = resp.headers_mut();
    let fixed = |v: &'static str| HeaderValue::from_static(v);
    headers.insert(header::CONTENT_TYPE, fixed(media_type(&file)));
    headers.insert(header::CONTENT_SECURITY_POLICY, fixed(CSP));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, fixed("nosniff"));
    headers.insert(header::X_FRAME_OPTIONS, fixed("DENY"));
    headers.insert(header::REFERRER_POLICY, fixed("no-referrer"));
    headers.insert(header::CACHE_CONTROL, fixed("no-cache"));
    Ok(resp)
}

/// `path` under `root`, when it names a regular file inside it of at most [`MAX_FILE_BYTES`].
fn resolve(root: &std::path::Path, path: &str) -> Option<PathBuf> {
    let plain = path
        .split('/')
        .all(|part| !part.is_empty() && !part.starts_with('.') && !part.contains('\\'));
    if !plain {
        return None;
    }
    let root = root.canonicalize().ok()?;
    let file = root.join(path).canonicalize().ok()?;
    let meta = std::fs::metadata(&file).ok()?;
    (file.starts_with(&root) && meta.is_file() && meta.len() <= MAX_FILE_BYTES).then_some(file)
}

fn media_type(file: &std::path::Path) -> &'static str {
    match file.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("json" | "map") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("woff2") => "font/woff2",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use crate::console::site::*;

    #[test]
    fn only_plain_files_inside_the_folder_are_served() {
        let dir = tempfile::tempdir().expect("dir");
        let root = dir.path().join("site");
        std::fs::create_dir_all(root.join("js")).expect("mkdir");
        std::fs::write(root.join("index.html"), "<p>hi</p>").expect("write");
        std::fs::write(root.join("js/app.js"), "1").expect("write");
        std::fs::write(root.join(".env"), "KEY=1").expect("write");
        std::fs::write(dir.path().join("secret.txt"), "no").expect("write");
        assert!(resolve(&root, "index.html").is_some());
        assert!(resolve(&root, "js/app.js").is_some());
        for bad in [
            "../secret.txt",
            ".env",
            "js/../../secret.txt",
            "",
            "js",
            "js//app.js",
            "nope.js",
        ] {
            assert!(resolve(&root, bad).is_none(), "{bad}");
        }
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("out.txt"))
                .expect("link");
            assert!(
                resolve(&root, "out.txt").is_none(),
                "a link out of the folder"
            );
        }
    }
}
