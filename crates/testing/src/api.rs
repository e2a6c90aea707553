//! What test scripts call: `test`, the assertions, `call_tool` under stated grants, `run_agent`
//! (see `agent`), `fake_http` and `http_requests`.

use super::diff;
use super::env::{self, Route};
use kiln_core::capability::Grants;
use kiln_core::services::FakeReply;
use kiln_script::convert;
use rhai::{Array, Dynamic, Engine, EvalAltResult, FnPtr, Map, NativeCallContext, Position};
use serde_json::{Value, json};
use std::cell::RefCell;

pub type RhaiResult<T> = Result<T, Box<EvalAltResult>>;

/// A `test("name", || ...)` block found while loading a test file.
#[derive(Clone)]
pub struct Declared {
    /// The test's name.
    pub name: String,
    /// Line of the `test(...)` call.
    pub line: usize,
    /// The test body.
    pub body: FnPtr,
}

thread_local! {
    /// Tests declared by the file being loaded on this thread (`None` outside loading).
    static DECLARED: RefCell<Option<Vec<Declared>>> = const { RefCell::new(None) };
}

/// Runs a test file's top level with `f`, returning the tests it declared.
pub fn collect<T>(f: impl FnOnce() -> T) -> (T, Vec<Declared>) {
    DECLARED.with(|d| *d.borrow_mut() = Some(Vec::new()));
    let out = f();
    let tests = DECLARED.with(|d| d.borrow_mut().take()).unwrap_or_default();
    (out, tests)
}

/// An error thrown at the current call.
pub fn fail(msg: impl Into<String>) -> Box<EvalAltResult> {
    EvalAltResult::ErrorRuntime(Dynamic::from(msg.into()), Position::NONE).into()
}

fn to_json(what: &str, v: &Dynamic) -> RhaiResult<Value> {
    convert::to_json(v).map_err(|e| fail(format!("{what}: {e}")))
}

/// A value for comparison: JSON when it converts, else its debug text.
fn comparable(v: &Dynamic) -> Value {
    convert::to_json(v).unwrap_or_else(|_| Value::String(format!("{v:?}")))
}

fn declare(ctx: NativeCallContext, name: &str, body: FnPtr) -> RhaiResult<()> {
    let line = ctx.call_position().line().unwrap_or(0);
    DECLARED.with(|d| match d.borrow_mut().as_mut() {
        Some(list) => {
            if list.iter().any(|t| t.name == name) {
                return Err(fail(format!(
                    "test \"{name}\" is declared twice in this file"
                )));
            }
            list.push(Declared {
                name: name.to_string(),
                line,
                body,
            });
            Ok(())
        }
        None => Err(fail(
            "test() can only be called at the top level of a test file",
        )),
    })
}

fn assert_eq(actual: Dynamic, expected: Dynamic, note: &str) -> RhaiResult<()> {
    let (a, e) = (comparable(&actual), comparable(&expected));
    if diff::same(&e, &a) {
        return Ok(());
    }
    let title = if note.is_empty() {
        "assert_eq failed".to_string()
    } else {
        format!("assert_eq failed: {note}")
    };
    Err(fail(format!("{title}\n{}", diff::explain(&e, &a))))
}

fn assert_match(text: Dynamic, pattern: &str) -> RhaiResult<()> {
    let re = regex::Regex::new(pattern)
        .map_err(|e| fail(format!("assert_match: bad regex /{pattern}/: {e}")))?;
    let text = if text.is_string() {
        text.to_string()
    } else {
        comparable(&text).to_string()
    };
    if re.is_match(&text) {
        return Ok(());
    }
    Err(fail(format!(
        "assert_match failed: the text does not match /{pattern}/\n  text: {}",
        kiln_providers::truncate(&format!("{text:?}"), 500)
    )))
}

/// Passes when `result` (of `call_tool` or `run_agent`) failed with this kind.
fn assert_err(result: Dynamic, kind: &str) -> RhaiResult<()> {
    let r = comparable(&result);
    let got = &r["error"];
    if got.is_null() {
        return Err(fail(format!(
            "assert_err failed: expected a failure of kind \"{kind}\", but it succeeded: {}",
            kiln_providers::truncate(&r.to_string(), 500)
        )));
    }
    let got_kind = got["kind"].as_str().or(got.as_str()).unwrap_or("");
    if got_kind == kind {
        return Ok(());
    }
    Err(fail(format!(
        "assert_err failed: expected kind \"{kind}\", got \"{got_kind}\": {}",
        kiln_providers::truncate(got["message"].as_str().unwrap_or(&got.to_string()), 500)
    )))
}

fn assert_true(ok: bool, note: &str) -> RhaiResult<()> {
    if ok {
        Ok(())
    } else if note.is_empty() {
        Err(fail("assert failed"))
    } else {
        Err(fail(format!("assert failed: {note}")))
    }
}

/// Grants from `opts.caps`: an array of capability strings (none when absent).
pub fn grants_of(func: &str, opts: &Map) -> RhaiResult<Option<Grants>> {
    let Some(caps) = opts.get("caps") else {
        return Ok(None);
    };
    let list: Vec<String> = match caps.clone().try_cast::<Array>() {
        Some(a) => a.into_iter().map(|c| c.to_string()).collect(),
        None if caps.is_string() => vec![caps.to_string()],
        None => {
            return Err(fail(format!(
                "{func}: opts.caps must be an array of strings"
            )));
        }
    };
    Grants::parse(&list)
        .map(Some)
        .map_err(|e| fail(format!("{func}: opts.caps: {e}")))
}

/// `opts.context` as a JSON object.
pub fn context_of(func: &str, opts: &Map) -> RhaiResult<serde_json::Map<String, Value>> {
    match opts.get("context") {
        None => Ok(serde_json::Map::new()),
        Some(c) => match to_json(&format!("{func}: opts.context"), c)? {
            Value::Object(m) => Ok(m),
            _ => Err(fail(format!("{func}: opts.context must be a map"))),
        },
    }
}

/// Runs a tool as `kiln call` would, under the grants of `opts.caps` only.
fn call_tool(name: &str, args: Dynamic, opts: Map) -> RhaiResult<Dynamic> {
    let env = env::current("call_tool").map_err(fail)?;
    let tool = env
        .host
        .tool(name)
        .map_err(|e| fail(format!("call_tool: {e}")))?;
    let grants = grants_of("call_tool", &opts)?.unwrap_or_default();
    let mut ctx = env.host.context(grants);
    ctx.run.context = context_of("call_tool", &opts)?;
    ctx.who.actor_id = opts.get("actor").map(|a| a.to_string());
    ctx.run.deadline = Some(env.deadline);
    let args = to_json(&format!("call_tool(\"{name}\"): arguments"), &args)?;
    let outcome = tool.execute(&args, &ctx);
    Ok(convert::to_dynamic(&outcome.to_json(true)))
}

/// `fake_http(pattern, reply)`: reply is a map (`status`, `json` or `body`, `headers`) or text.
fn fake_http(pattern: &str, reply: Dynamic) -> RhaiResult<()> {
    let env = env::current("fake_http").map_err(fail)?;
    let reply = if reply.is_string() {
        FakeReply {
            status: 200,
            headers: Vec::new(),
            body: reply.to_string(),
        }
    } else {
        let v = to_json("fake_http: reply", &reply)?;
        let Value::Object(m) = v else {
            return Err(fail(
                "fake_http: the reply must be text or #{ status, json | body, headers }",
            ));
        };
        let body = match (m.get("json"), m.get("body")) {
            (Some(j), _) => j.to_string(),
            (None, Some(Value::String(b))) => b.clone(),
            (None, Some(b)) => b.to_string(),
            (None, None) => String::new(),
        };
        let mut headers: Vec<(String, String)> = m
            .get("headers")
            .and_then(Value::as_object)
            .map(|h| {
                h.iter()
                    .map(|(k, v)| {
                        (
                            k.to_lowercase(),
                            v.as_str().map_or(v.to_string(), String::from),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        if m.contains_key("json") && !headers.iter().any(|(k, _)| k == "content-type") {
            headers.push(("content-type".into(), "application/json".into()));
        }
        let status = match m.get("status") {
            None => 200,
            Some(s) => s
                .as_u64()
                .and_then(|s| u16::try_from(s).ok())
                .filter(|s| (100..=599).contains(s))
                .ok_or_else(|| fail(format!("fake_http: status {s} is not an HTTP status")))?,
        };
        FakeReply {
            status,
            headers,
            body,
        }
    };
    if let Ok(mut routes) = env.fakes.routes.lock() {
        routes.push(Route {
            pattern: pattern.to_string(),
            reply,
        });
    }
    Ok(())
}

/// The HTTP requests the test's tools made so far: `#{ method, url, body }`.
fn http_requests() -> RhaiResult<Array> {
    let env = env::current("http_requests").map_err(fail)?;
    let seen = env.fakes.seen.lock().map(|s| s.clone()).unwrap_or_default();
    Ok(seen
        .into_iter()
        .map(|(method, url, body)| {
            convert::to_dynamic(&json!({"method": method, "url": url, "body": body}))
        })
        .collect())
}

/// The test's temporary workspace folder (where `read_file`/`write_file` are rooted).
fn workspace() -> RhaiResult<String> {
    let env = env::current("workspace").map_err(fail)?;
    Ok(env.host.config().workspace.display().to_string())
}

/// Adds the test functions to an engine that already has kiln's host functions.
pub fn register(engine: &mut Engine) {
    engine.register_fn("test", declare);
    engine.register_fn("assert", |ok: bool| assert_true(ok, ""));
    engine.register_fn("assert", |ok: bool, note: &str| assert_true(ok, note));
    engine.register_fn("assert_eq", |a: Dynamic, e: Dynamic| assert_eq(a, e, ""));
    engine.register_fn("assert_eq", |a: Dynamic, e: Dynamic, note: &str| {
        assert_eq(a, e, note)
    });
    engine.register_fn("assert_match", assert_match);
    engine.register_fn("assert_err", assert_err);
    engine.register_fn("try_call_tool", call_tool);
    engine.register_fn("try_call_tool", |name: &str, args: Dynamic| {
        call_tool(name, args, Map::new())
    });
    // Deprecated in test files: a script's `call_tool` returns the value (renames.rs warns and
    // `kiln check --fix` rewrites it).
    engine.register_fn("call_tool", call_tool);
    engine.register_fn("call_tool", |name: &str, args: Dynamic| {
        call_tool(name, args, Map::new())
    });
    engine.register_fn("fake_http", fake_http);
    engine.register_fn("http_requests", http_requests);
    engine.register_fn("workspace", workspace);
}
