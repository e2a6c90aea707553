//! `run_in_terminal(command, args)`: a command run in the terminal the caller lends (an editor
//! over ACP, where the person watches it), never by kiln itself: kiln runs no programs. It
//! needs capability `terminal`, scoped by the command's name (`terminal:cargo` runs `cargo`
//! only); a caller that lends no terminal refuses it. The result is `#{ output, exit_code,
//! signal, truncated }`.

use crate::host::{denied, gate};
use crate::sandbox;
use rhai::{Array, Engine, EvalAltResult, Map};
use serde_json::{Value, json};

/// The capability: `terminal`, or `terminal:COMMAND`.
pub const TERMINAL_CAP: &str = "terminal";
/// What a caller lending its terminal is asked.
const RUN_REQUEST: &str = "terminal/run";

fn run_in_terminal(command: &str, args: Array) -> Result<Map, Box<EvalAltResult>> {
    let func = "run_in_terminal";
    if command.is_empty() || command.contains(char::is_whitespace) {
        return Err(format!(
            "{func}(\"{command}\"): the command is one program's name; its arguments go in the list"
        )
        .into());
    }
    let args: Vec<String> = args.into_iter().map(|a| a.to_string()).collect();
    let services = gate(func, TERMINAL_CAP, command, |scope| scope == command)?;
    // The client takes absolute paths only.
    let cwd = services
        .workspace
        .canonicalize()
        .map_err(|e| format!("{func}: workspace {}: {e}", services.workspace.display()))?;
    let params = json!({"command": command, "args": args, "cwd": cwd.to_string_lossy()});
    let lent = crate::host::current_events().and_then(|e| e.lend(RUN_REQUEST, params));
    sandbox::check_stop()?;
    let Some(ran) = lent else {
        return Err(denied(format!(
            "{func}(\"{command}\") refused: only a tool called from an editor that lends its terminal (kiln acp) runs commands; kiln runs none itself"
        )));
    };
    let ran = ran.map_err(|e| format!("{func}(\"{command}\"): {e}"))?;
    let mut out = Map::new();
    let text = |k: &str| ran[k].as_str().unwrap_or_default().to_string();
    out.insert("output".into(), text("output").into());
    out.insert("truncated".into(), (ran["truncated"] == true).into());
    let int = |v: &Value| v.as_i64().map_or(rhai::Dynamic::UNIT, rhai::Dynamic::from);
    out.insert("exit_code".into(), int(&ran["exitCode"]));
    let signal = ran["signal"]
        .as_str()
        .map_or(rhai::Dynamic::UNIT, |s| s.to_string().into());
    out.insert("signal".into(), signal);
    Ok(out)
}

/// Registers `run_in_terminal`.
pub fn register(engine: &mut Engine) {
    engine.register_fn("run_in_terminal", run_in_terminal);
}
