//! `:mcp` in the REPL: each MCP server, its state, how it is reached and where it is declared.

use super::{Repl, paint};

impl Repl {
    /// Lists the MCP servers (declared in scripts, then `--mcp`) with their state.
    pub(super) fn mcp(&self) {
        let servers = self.host.mcp_servers();
        if servers.is_empty() {
            say!(
                self.out,
                "no MCP servers (declare one with mcp_server(\"name\")... or pass --mcp NAME=CMD)"
            );
        }
        for s in servers {
            say!(
                self.out,
                "  {}  {}  {}  ({})",
                paint(self.color, "1", &s.name),
                s.state,
                s.target,
                s.origin
            );
        }
    }
}
