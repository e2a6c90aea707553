//! `:mcp` in the REPL: each MCP server, its state, how it is reached and where it is declared.

use super::Repl;
#[cfg(feature = "mcp")]
use super::paint;

impl Repl {
    /// Without the `mcp` feature there are none to list.
    #[cfg(not(feature = "mcp"))]
    pub(super) fn mcp(&self) {
        say!(
            self.out,
            "no MCP servers: this kiln was built without the `mcp` feature"
        );
    }

    /// Lists the MCP servers (declared in scripts, then `--mcp`) with their state.
    #[cfg(feature = "mcp")]
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
