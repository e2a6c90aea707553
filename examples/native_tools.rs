//! A native Rust tool and an application host function beside script tools.
//!
//! `order_total` is written in Rust; `crm_lookup(id)` is an application function that scripts
//! may call only when their tool declares capability `crm` and the caller holds a grant of it
//! covering the customer (`crm:acme` covers ids starting with `acme-`).
//! `cargo run --example native_tools`.

use kiln::{CallContext, CallOptions, Grants, Host, HostFn, NativeTool, ToolFailure};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let order_total = NativeTool::new(
        "order_total",
        |args: Value, _ctx: &CallContext| async move {
            let items = args["items"].as_array().cloned().unwrap_or_default();
            let mut total = 0.0;
            for item in &items {
                let price = item["price"].as_f64();
                let qty = item["qty"].as_f64();
                let (Some(price), Some(qty)) = (price, qty) else {
                    return Err(ToolFailure::tool_error("each item needs a price and a qty"));
                };
                total += price * qty;
            }
            Ok(json!({ "total": total }))
        },
    )
    .description("Sums an order's items (price x qty)")
    .param("items", "array", json!({ "desc": "[{price, qty}]" }));

    let crm_lookup = HostFn::new("crm_lookup", "crm", &["id"], |args, ctx| {
        let id = args[0].as_str().unwrap_or_default();
        Ok(json!({ "id": id, "name": "Ada Lovelace", "asked_by": ctx.who.actor_id }))
    })
    .scope_check(|scope, args| {
        args[0]
            .as_str()
            .is_some_and(|id| id.starts_with(&format!("{scope}-")))
    });

    let host = Host::builder()
        .scripts(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/support"))
        .tool(order_total)
        .host_fn(crm_lookup)
        .build()?;
    for e in host.load_errors() {
        eprintln!("{e}");
    }

    let grants = |caps: &[&str]| CallOptions {
        grants: Some(Grants::parse(caps).expect("valid capabilities")),
        actor_id: Some("agent-7".into()),
        ..CallOptions::default()
    };
    let order = json!({ "items": [{ "price": 2.5, "qty": 4 }, { "price": 10, "qty": 1 }] });
    let shown = |o: kiln::ToolOutcome| o.to_json(false).to_string();

    println!(
        "order_total: {}",
        shown(host.call("order_total", order, grants(&[])).await?)
    );
    let id = json!({ "id": "acme-42" });
    println!(
        "customer_card, granted crm:acme: {}",
        shown(
            host.call("customer_card", id.clone(), grants(&["crm:acme"]))
                .await?
        )
    );
    println!(
        "customer_card, granted crm:globex: {}",
        shown(
            host.call("customer_card", id.clone(), grants(&["crm:globex"]))
                .await?
        )
    );
    println!(
        "customer_card, granted nothing: {}",
        shown(host.call("customer_card", id, grants(&[])).await?)
    );
    Ok(())
}
