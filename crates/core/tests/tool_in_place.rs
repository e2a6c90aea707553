//! Where a lone call runs on a multi-thread runtime: on the worker itself only after a quick
//! call, else through `block_in_place`. Seen from inside the handler: `running::drive` refuses
//! on a thread marked in place and drives a future anywhere else.

use kiln_core::capability::Grants;
use kiln_core::context::CallContext;
use kiln_core::error::SourceLoc;
use kiln_core::failure::ToolFailure;
use kiln_core::services::Services;
use kiln_core::tool::parts::ToolParts;
use kiln_core::tool::running;
use kiln_core::tool::{Handler, Tool};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Says whether it ran in place (its `drive` refused), sleeping `sleep_ms` from the args.
struct Probe;

impl Handler for Probe {
    fn call(
        &self,
        _tool: &Tool,
        args: &Value,
        ctx: &CallContext,
        deadline: Instant,
    ) -> Result<Value, ToolFailure> {
        std::thread::sleep(Duration::from_millis(
            args["sleep_ms"].as_u64().unwrap_or(0),
        ));
        let driven = running::drive(Box::pin(async { Ok(json!(1)) }), deadline, ctx, "probe");
        Ok(json!({"in_place": driven.is_err()}))
    }

    fn runs_in_place(&self) -> bool {
        true
    }
}

fn probe() -> Arc<Tool> {
    let parts = ToolParts {
        name: "probe".into(),
        description: "probe".into(),
        requires: Vec::new(),
        schema: json!({"type": "object"}),
        output_schema: None,
        exclusive: false,
        timeout: Duration::from_secs(10),
        retries: 0,
        rate_limit: None,
        loc: SourceLoc::new("probe.rs", 1, 1),
        title: None,
        hints: Default::default(),
        task: None,
        handler: Arc::new(Probe),
    };
    Arc::new(parts.build().expect("tool"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_runs_on_the_worker_only_after_a_quick_one() {
    let tool = probe();
    let ctx = CallContext::new(Grants::default(), Arc::new(Services::new(".".into())));
    let in_place = |outcome: kiln_core::failure::ToolOutcome| {
        outcome.result.expect("the probe answers")["in_place"] == true
    };
    let call = |ms: u64| tool.execute_in_place(json!({"sleep_ms": ms}), ctx.clone());
    assert!(
        !in_place(call(0).await),
        "the first call is not known to be quick"
    );
    assert!(
        in_place(call(20).await),
        "after a quick call it runs in place"
    );
    assert!(
        !in_place(call(0).await),
        "after a slow one it is handed over again"
    );
    assert!(in_place(call(0).await));
}
