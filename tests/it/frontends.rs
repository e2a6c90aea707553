//! What chat front ends see of a run: tools' progress and events live at every door, the
//! AG-UI door and the AI SDK's UI message stream door, driven by their official clients.

pub(crate) mod ag_ui;
pub(crate) mod example_page;
pub(crate) mod tool_notes;
pub(crate) mod ui_chat;

use crate::doors::serve::Serve;
use std::path::Path;

/// Ann's and Bob's tokens, as request headers.
pub(crate) const ANN: [(&str, &str); 1] = [("authorization", "Bearer tok-ann-0123456789abcdef")];
pub(crate) const BOB: [(&str, &str); 1] = [("authorization", "Bearer tok-bob-0123456789abcdef")];
/// Carl's token: a ceiling without `store`.
pub(crate) const CARL: [(&str, &str); 1] = [("authorization", "Bearer tok-carl-0123456789abcde")];

/// `kiln serve` on `scripts` with Ann and Bob (each may use `store`), Carl (who may not), and a
/// `--max-body` of 4 KiB: for the doors' walls.
pub(crate) fn serve_two_actors(scripts: &Path) -> Serve {
    let tokens = serde_json::json!([
        {"token": "tok-ann-0123456789abcdef", "actor": "ann", "caps": ["store"]},
        {"token": "tok-bob-0123456789abcdef", "actor": "bob", "caps": ["store"]},
        {"token": "tok-carl-0123456789abcde", "actor": "carl", "caps": []}
    ])
    .to_string();
    Serve::start(
        scripts,
        &scripts.join("k.db"),
        &["--max-body", "4096"],
        &[("KILN_TOKENS", &tokens)],
    )
}
