//! Helpers shared by the integration tests.

use kiln::capability::Grants;
use kiln::tool::ToolOutcome;
use kiln::{Host, HostConfig};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A temp scripts folder with files written into it.
pub struct Scripts {
    pub dir: tempfile::TempDir,
}

impl Scripts {
    pub fn new(files: &[(&str, &str)]) -> Scripts {
        let dir = tempfile::tempdir().expect("tempdir");
        for (name, src) in files {
            std::fs::write(dir.path().join(name), src).expect("write script");
        }
        Scripts { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn host(&self) -> Host {
        Host::new(HostConfig {
            scripts: vec![self.dir.path().to_path_buf()],
            workspace: self.dir.path().to_path_buf(),
            ..HostConfig::default()
        })
        .expect("host")
    }

    /// Load errors as strings with the temp path replaced by `DIR`.
    pub fn errors(&self, host: &Host) -> Vec<String> {
        let prefix = format!("{}/", self.dir.path().display());
        host.registry()
            .errors
            .iter()
            .map(|e| e.to_string().replace(&prefix, "DIR/"))
            .collect()
    }
}

/// A host with one script.
pub fn host_with(src: &str) -> (Scripts, Host) {
    let s = Scripts::new(&[("t.rhai", src)]);
    let h = s.host();
    (s, h)
}

/// Calls a tool synchronously with grants.
pub fn call(host: &Host, tool: &str, args: Value, caps: &[&str]) -> ToolOutcome {
    let t = host.tool(tool).expect("tool exists");
    let ctx = host.context(Grants::parse(caps).expect("caps"));
    t.execute(&args, &ctx)
}

/// The error kind and message of a failed outcome.
pub fn failure(o: &ToolOutcome) -> (String, String) {
    match &o.result {
        Err(f) => (f.kind.as_str().to_string(), f.message.clone()),
        Ok(v) => panic!("expected failure, got {v}"),
    }
}

/// The path of the real kiln binary built for these tests.
pub fn kiln_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_kiln"))
}

/// Runs the real binary.
pub fn kiln(args: &[&str], cwd: &Path) -> Output {
    Command::new(kiln_bin())
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .env_remove("KILN_LOG")
        .output()
        .expect("run kiln")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// The repository root (for examples and specs).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}
