//! The host's own capability names, typed: the code branches on these and nothing else.

use std::fmt;

/// The host's own capabilities: they gate host functions, and the code decides on them by
/// name (what an unscoped grant reaches, how scopes hold one another). Every other name is an
/// application's, compared only as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostCap {
    /// `net`: outgoing connections (`http_get`, `http_post`, MCP over HTTP).
    Net,
    /// `fs.read`: reading files under the workspace.
    FsRead,
    /// `fs.write`: writing files under the workspace.
    FsWrite,
    /// `env`: reading environment variables.
    Env,
    /// `store`: the key-value store.
    Store,
    /// `mcp`: a mounted MCP server's tools (`mcp:SERVER`).
    Mcp,
}

impl HostCap {
    /// Every host capability.
    pub const ALL: [HostCap; 6] = [
        HostCap::Net,
        HostCap::FsRead,
        HostCap::FsWrite,
        HostCap::Env,
        HostCap::Store,
        HostCap::Mcp,
    ];

    /// Its name as grants and declarations write it.
    pub const fn name(self) -> &'static str {
        match self {
            HostCap::Net => "net",
            HostCap::FsRead => "fs.read",
            HostCap::FsWrite => "fs.write",
            HostCap::Env => "env",
            HostCap::Store => "store",
            HostCap::Mcp => "mcp",
        }
    }

    /// The host capability named `name`, if it is one.
    pub fn of(name: &str) -> Option<HostCap> {
        HostCap::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Whether `name` names this capability.
    pub fn is(self, name: &str) -> bool {
        self.name() == name
    }
}

impl fmt::Display for HostCap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
