//! `:pipelines` and `:run NAME k=v ... | {json}` in the REPL.

use super::{Repl, paint};
use kiln_host::CallOptions;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

impl Repl {
    /// Lists the pipelines: inputs, outputs and description.
    pub(super) fn pipelines(&self) {
        let list = self.host.pipelines();
        if list.is_empty() {
            say!(self.out, "no pipelines loaded");
        }
        for p in list {
            let inputs: Vec<&str> = p.inputs.iter().map(|i| i.name.as_str()).collect();
            let outputs: Vec<&str> = p.outputs.iter().map(|o| o.name.as_str()).collect();
            say!(
                self.out,
                "  {}({}) -> {}  {}",
                paint(self.color, "1", &p.name),
                inputs.join(", "),
                outputs.join(", "),
                p.description
            );
        }
    }

    /// Runs a pipeline with the REPL's grants; Ctrl-C cancels it.
    pub(super) fn run_pipeline(&self, rest: &str) {
        let (name, args) = rest
            .split_once(char::is_whitespace)
            .map_or((rest, ""), |(n, a)| (n, a.trim()));
        let spec = match self.host.pipeline(name) {
            Ok(p) => p.spec,
            Err(e) => return self.error(&e.to_string()),
        };
        let inputs = if args.starts_with('{') {
            serde_json::from_str::<Value>(args)
                .map_err(|e| format!("inputs are not valid JSON: {e}"))
        } else {
            spec.inputs_from_pairs(&args.split_whitespace().collect::<Vec<_>>())
        };
        let inputs = match inputs {
            Ok(v) => v,
            Err(e) => return self.error(&e),
        };
        let cancel = CancellationToken::new();
        let opts = CallOptions {
            grants: Some(self.grants.clone()),
            cancel: Some(cancel.clone()),
            ..CallOptions::default()
        };
        let report = self.until_ctrl_c(&cancel, self.host.run_pipeline(name, inputs, opts));
        let report = match report {
            Ok(r) => r,
            Err(e) => return self.error(&e.to_string()),
        };
        for line in report.node_lines() {
            say!(self.out, "  {line}");
        }
        if !report.outputs.is_empty() {
            say!(self.out, "{}", report.outputs_text());
        }
        for f in report.failures() {
            self.error(&f);
        }
        say!(
            self.out,
            "{}",
            paint(self.color, "2", &format!("({:.2} ms)", report.duration_ms))
        );
    }
}
