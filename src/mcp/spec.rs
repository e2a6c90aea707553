//! `--mcp NAME=SERVER`: which outside MCP server to mount, and under which name.

use super::McpError;

/// Separates the server's name from its tool's in the registry (`fs__read_file`).
pub const SEPARATOR: &str = "__";

/// Where a mounted server lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A program kiln starts and talks to over stdio.
    Command {
        /// The program.
        program: String,
        /// Its arguments.
        args: Vec<String>,
    },
    /// A streamable HTTP endpoint, with the environment variable holding its bearer token.
    Url {
        /// The endpoint.
        url: String,
        /// `bearer_env=VAR`: send `Authorization: Bearer $VAR`.
        bearer_env: Option<String>,
    },
}

/// One server to mount: `NAME=COMMAND [ARGS...]` or `NAME=http://HOST:PORT/mcp [bearer_env=VAR]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountSpec {
    /// The server's name: tools become `NAME__TOOL`, needing `mcp:NAME`.
    pub name: String,
    /// Where it lives.
    pub target: Target,
}

impl MountSpec {
    /// Parses `NAME=COMMAND ARGS...` (split on whitespace) or `NAME=URL [bearer_env=VAR]`.
    pub fn parse(spec: &str) -> Result<Self, McpError> {
        let bad = |reason: &str| McpError::BadSpec {
            spec: spec.to_string(),
            reason: reason.to_string(),
        };
        let (name, rest) = spec
            .split_once('=')
            .ok_or_else(|| bad("expected NAME=COMMAND or NAME=URL"))?;
        let name_ok = !name.is_empty()
            && !name.contains(SEPARATOR)
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !name_ok {
            return Err(bad(
                "the name must be letters, digits, - or _ (and not contain __)",
            ));
        }
        let rest = rest.trim();
        let target = if rest.starts_with("http://") || rest.starts_with("https://") {
            let mut words = rest.split_whitespace();
            let url = words.next().unwrap_or_default().to_string();
            let bearer_env = match (words.next(), words.next()) {
                (None, _) => None,
                (Some(w), None) => match w.strip_prefix("bearer_env=") {
                    Some(var) if !var.is_empty() => Some(var.to_string()),
                    _ => return Err(bad("after the URL only bearer_env=VAR may follow")),
                },
                _ => return Err(bad("after the URL only bearer_env=VAR may follow")),
            };
            Target::Url { url, bearer_env }
        } else {
            let mut words = rest.split_whitespace().map(str::to_string);
            let program = words.next().ok_or_else(|| bad("no command given"))?;
            Target::Command {
                program,
                args: words.collect(),
            }
        };
        Ok(MountSpec {
            name: name.to_string(),
            target,
        })
    }

    /// The capability a caller needs to use this server's tools.
    pub fn capability(&self) -> String {
        format!("mcp:{}", self.name)
    }

    pub(crate) fn source_path(&self) -> String {
        format!("<mcp:{}>", self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_commands_and_urls_and_refuse_bad_names() {
        let s = MountSpec::parse("py=python3 server.py --quiet").expect("command");
        assert_eq!(s.name, "py");
        assert_eq!(
            s.target,
            Target::Command {
                program: "python3".into(),
                args: vec!["server.py".into(), "--quiet".into()]
            }
        );
        assert_eq!(s.capability(), "mcp:py");
        let u = MountSpec::parse("gh=http://127.0.0.1:3000/mcp bearer_env=GH").expect("url");
        assert_eq!(
            u.target,
            Target::Url {
                url: "http://127.0.0.1:3000/mcp".into(),
                bearer_env: Some("GH".into())
            }
        );
        for bad in [
            "noequals",
            "=cmd",
            "a__b=cmd",
            "a b=cmd",
            "x=",
            "x=http://127.0.0.1/mcp token",
        ] {
            let e = MountSpec::parse(bad).expect_err(bad).to_string();
            assert!(e.contains(bad), "{e}");
        }
    }
}
