//! `--mcp NAME=SERVER`: which outside MCP server to mount, and under which name.

/// A `--mcp` mount (or a script's `mcp_server`) written wrong.
#[derive(Debug, Clone, thiserror::Error)]
#[error("bad MCP server spec \"{spec}\": {reason}")]
pub struct BadMountSpec {
    /// The spec as given.
    pub spec: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Separates the server's name from its tool's in the registry (`fs__read_file`).
pub use kiln_core::tool::MOUNT_SEPARATOR as SEPARATOR;

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
        /// `oauth`: OAuth 2.1 as the MCP authorization spec says (`kiln auth login NAME`).
        oauth: Option<OAuth>,
    },
}

/// How kiln gets a mounted server's OAuth tokens: the scopes to ask for and how kiln is
/// known to the authorization server (a pre-registered client, a client ID metadata document,
/// or, with neither, dynamic registration).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OAuth {
    /// The scopes to ask for; none: what the server's challenge or metadata says.
    pub scopes: Vec<String>,
    /// A client id registered with the authorization server beforehand.
    pub client_id: Option<String>,
    /// The variable holding that client's secret (a confidential client).
    pub client_secret_env: Option<String>,
    /// The URL of kiln's client ID metadata document, for servers that take one.
    pub client_metadata_url: Option<String>,
    /// `grant=client_credentials`: a machine's own credentials (`client_id` and
    /// `client_secret_env`) get the token when the server is mounted; no login.
    pub client_credentials: bool,
    /// `token_url=URL`: where a machine's client (`client_credentials`) sends its secret,
    /// pinned: the server's (or remote agent's) metadata does not decide it then.
    pub token_url: Option<String>,
}

impl OAuth {
    /// Sets one `--mcp` option (`scopes=a,b`, `client_id=...`, `client_secret_env=VAR`,
    /// `client_metadata_url=URL`); `Err` names the known ones.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "scopes" => {
                self.scopes = value
                    .split([',', ' '])
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            }
            "client_id" => self.client_id = Some(value.to_string()),
            "client_secret_env" => {
                kiln_core::capability::declare_secret_var(value);
                self.client_secret_env = Some(value.to_string());
            }
            "client_metadata_url" => self.client_metadata_url = Some(value.to_string()),
            "token_url" => {
                check_url(value).map_err(|e| format!("token_url: {e}"))?;
                self.token_url = Some(value.to_string());
            }
            "grant" if value == "client_credentials" => self.client_credentials = true,
            "grant" if value == "authorization_code" => self.client_credentials = false,
            "grant" => {
                return Err(format!(
                    "grant \"{value}\": authorization_code (a person logs in) or client_credentials (a machine's own)"
                ));
            }
            other => {
                return Err(format!(
                    "unknown OAuth option \"{other}\" (scopes, client_id, client_secret_env, client_metadata_url, grant, token_url)"
                ));
            }
        }
        Ok(())
    }
}

/// One server to mount: `--mcp NAME=COMMAND [ARGS...]` or `NAME=http://HOST:PORT/mcp
/// [bearer_env=VAR]`, or a script's `mcp_server("NAME")...`.
#[derive(Debug, Clone, PartialEq)]
pub struct MountSpec {
    /// The server's name: tools become `NAME__TOOL`, needing `mcp:NAME`.
    pub name: String,
    /// Where it lives.
    pub target: Target,
    /// Variables a started server gets although kiln withholds them (the provider keys).
    pub env: Vec<String>,
    /// A limit applied to each of the server's tools.
    pub rate_limit: Option<kiln_core::ratelimit::RateLimit>,
    /// Where a script declared it; `None` for `--mcp`.
    pub declared: Option<kiln_core::error::SourceLoc>,
}

/// A server's name: it prefixes tool names every provider must accept, so letters, digits,
/// `-` and `_`, no `__`, and short enough to leave room for the tool's own name.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 32
        && !name.contains(SEPARATOR)
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid server name \"{name}\": letters, digits, - or _ (not __), at most 32"
        ))
    }
}

/// A server URL a user wrote: http(s) with a host. Plain http only to this machine (a bearer
/// token must not cross a network in clear); link-local and unspecified addresses (cloud
/// metadata endpoints) are refused. Names are not resolved here: a user-written URL is
/// trusted like a command line, unlike an address a model chose.
pub fn check_url(url: &str) -> Result<(), String> {
    use kiln_egress::{AddrClass, NetHost, classify};
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("bad URL \"{url}\": {e}"))?;
    let host = NetHost::of_url(&parsed).ok_or_else(|| format!("URL \"{url}\" has no host"))?;
    let loopback = match &host {
        NetHost::Ip(ip) => {
            let class = classify(*ip);
            if matches!(
                class,
                AddrClass::LinkLocal
                    | AddrClass::Unspecified
                    | AddrClass::Multicast
                    | AddrClass::Broadcast
            ) {
                return Err(format!(
                    "URL \"{url}\": a {} address is not an MCP server kiln connects to",
                    class.as_str()
                ));
            }
            class == AddrClass::Loopback
        }
        NetHost::Name(n) => n == "localhost",
    };
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        "http" => Err(format!(
            "URL \"{url}\": plain http only to this machine (127.0.0.1, ::1, localhost); use https"
        )),
        other => Err(format!(
            "URL \"{url}\": scheme {other} (expected http or https)"
        )),
    }
}

impl MountSpec {
    /// Parses `NAME=COMMAND ARGS...` (split on whitespace) or `NAME=URL [bearer_env=VAR]`
    /// or `NAME=URL oauth [scopes=a,b] [client_id=ID] [client_secret_env=VAR]
    /// [client_metadata_url=URL]`.
    pub fn parse(spec: &str) -> Result<Self, BadMountSpec> {
        let bad = |reason: &str| BadMountSpec {
            spec: spec.to_string(),
            reason: reason.to_string(),
        };
        let (name, rest) = spec
            .split_once('=')
            .ok_or_else(|| bad("expected NAME=COMMAND or NAME=URL"))?;
        if check_name(name).is_err() {
            return Err(bad(
                "the name must be letters, digits, - or _ (and not contain __)",
            ));
        }
        let rest = rest.trim();
        let target = if rest.starts_with("http://") || rest.starts_with("https://") {
            let mut words = rest.split_whitespace();
            let url = words.next().unwrap_or_default().to_string();
            let (mut bearer_env, mut oauth) = (None, None::<OAuth>);
            for w in words {
                match w.split_once('=') {
                    None if w == "oauth" => {
                        oauth.get_or_insert_with(OAuth::default);
                    }
                    Some(("bearer_env", var)) if !var.is_empty() => {
                        // It holds a credential: `env` must not hand it to a tool.
                        kiln_core::capability::declare_secret_var(var);
                        bearer_env = Some(var.to_string());
                    }
                    Some((key, value)) if !value.is_empty() => oauth
                        .get_or_insert_with(OAuth::default)
                        .set(key, value)
                        .map_err(|e| {
                            bad(&format!("{e}; after the URL: bearer_env=VAR or oauth"))
                        })?,
                    _ => {
                        return Err(bad(
                            "after the URL: bearer_env=VAR, or oauth and its options",
                        ));
                    }
                }
            }
            if bearer_env.is_some() && oauth.is_some() {
                return Err(bad("a server takes bearer_env=VAR or oauth, not both"));
            }
            Target::Url {
                url,
                bearer_env,
                oauth,
            }
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
            env: Vec::new(),
            rate_limit: None,
            declared: None,
        })
    }

    /// Checks a server name (see [`check_name`]).
    pub fn check_name(name: &str) -> Result<(), String> {
        check_name(name)
    }

    /// Where it was declared: the script position, or `--mcp NAME`.
    pub fn origin(&self) -> kiln_core::error::SourceLoc {
        self.declared.clone().unwrap_or_else(|| {
            kiln_core::error::SourceLoc::new(&format!("--mcp {}", self.name), 0, 0)
        })
    }

    /// The same server started the same way (where it is declared does not matter).
    pub fn same_server(&self, other: &MountSpec) -> bool {
        self.name == other.name
            && self.target == other.target
            && self.env == other.env
            && self.rate_limit == other.rate_limit
    }

    /// The capability a caller needs to use this server's tools.
    pub fn capability(&self) -> String {
        format!("{}:{}", kiln_core::capability::HostCap::Mcp, self.name)
    }

    /// The registry source its tools form (distinct per declaration, so a script's server
    /// and a `--mcp` one of the same name collide as duplicate tools, not silently).
    pub fn source_path(&self) -> String {
        match &self.declared {
            None => format!("<mcp:{}>", self.name),
            Some(at) => format!("<mcp:{} declared at {at}>", self.name),
        }
    }

    /// How it is reached, for listings: the command line or the URL.
    pub fn target_text(&self) -> String {
        match &self.target {
            Target::Command { program, args } => std::iter::once(program.as_str())
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            Target::Url { url, .. } => url.clone(),
        }
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
                bearer_env: Some("GH".into()),
                oauth: None,
            }
        );
        let o = MountSpec::parse("gh=https://mcp.example.test/mcp oauth scopes=repo,read:org")
            .expect("oauth");
        let Target::Url { oauth, .. } = &o.target else {
            panic!("a URL")
        };
        assert_eq!(
            oauth.as_ref().map(|o| o.scopes.clone()),
            Some(vec!["repo".to_string(), "read:org".to_string()])
        );
        let mut pinned = OAuth::default();
        pinned
            .set("token_url", "https://login.example.test/token")
            .expect("a URL");
        assert_eq!(
            pinned.token_url.as_deref(),
            Some("https://login.example.test/token")
        );
        let bad = pinned.set("token_url", "not a url").expect_err("refused");
        assert!(bad.starts_with("token_url: "), "{bad}");
        for bad in [
            "noequals",
            "=cmd",
            "a__b=cmd",
            "a b=cmd",
            "x=",
            "x=http://127.0.0.1/mcp token",
            "x=http://127.0.0.1/mcp bearer_env=A oauth",
            "x=http://127.0.0.1/mcp oauth colour=red",
        ] {
            let e = MountSpec::parse(bad).expect_err(bad).to_string();
            assert!(e.contains(bad), "{e}");
        }
    }
}
