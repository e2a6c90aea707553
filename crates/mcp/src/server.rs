//! The MCP server: the registry's tools, as the grants allow, listed and called through
//! [`Host::call`]; a reload is announced to every client that asked (both revisions).

use crate::ask::rounds::Rounds;
use crate::listen::{changed, notify_listener};
use crate::notify::{self, CallNotifier};
use crate::served;
use crate::task_call::{Ran, TaskCall};
use crate::tasks::{Tasks, durable::SharedTasks};
use kiln_core::capability::Grants;
use kiln_core::context::call_events::LogLevel;
use kiln_host::Host;
use kiln_host::api::CallOptions;
use kiln_host::mcp::McpError;
use kiln_host::mcp::convert::outcome_to_mcp;
use kiln_registry::served::apps::visible_to_model;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, SubscriptionFilter, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;

/// Agents offered as tools are named `ask_AGENT`.
pub(crate) const AGENT_PREFIX: &str = "ask_";

/// Serves a host's tools over MCP. Cheap to clone: the HTTP transport makes one per session
/// and per stateless request, all sharing the host and the reload signal.
#[derive(Clone)]
pub struct McpServer {
    pub(crate) host: Arc<Host>,
    pub(crate) grants: Grants,
    pub(crate) agents: bool,
    /// Offer `run_code` and `search_tools` over the tools instead of the tools themselves.
    pub(crate) code_mode: bool,
    changed: broadcast::Sender<()>,
    /// The level this session's client set with `logging/setLevel` (one per session).
    log_level: Arc<Mutex<Option<LogLevel>>>,
    /// The resources this session's client subscribed to (`resources/subscribe`).
    subscribed: Arc<Mutex<std::collections::BTreeSet<String>>>,
    /// Seals and opens the `requestState` of input-required rounds.
    codec: Arc<rmcp::model::RequestStateCodec>,
    /// The calls running as tasks (the tasks extension), shared by every session.
    tasks: crate::tasks::Tasks,
    /// This session's id (a new one per session; unused by stateless requests, which have
    /// none): a task started in a session is seen in that session only.
    pub(crate) session: Arc<str>,
    /// `--defer`: tools (names, or prefixes ending in `*`) listed only once a search finds them.
    pub(crate) defer: Arc<[String]>,
    /// The deferred tools this session's searches found.
    pub(crate) found: Arc<Mutex<std::collections::BTreeSet<String>>>,
}

impl McpServer {
    /// A server offering the tools `grants` cover (the same grants apply to every call).
    pub fn new(host: Arc<Host>, grants: Grants) -> Self {
        let (changed, _) = broadcast::channel(16);
        McpServer {
            host,
            grants,
            agents: false,
            code_mode: false,
            changed,
            log_level: Arc::default(),
            subscribed: Arc::default(),
            codec: Arc::new(crate::ask::rounds::codec()),
            tasks: crate::tasks::Tasks::default(),
            session: crate::tasks::new_session_id(),
            defer: Arc::new([]),
            found: Arc::default(),
        }
    }

    /// The server for a new session: the same tools and reload signal, its own log level.
    pub fn for_session(&self) -> Self {
        McpServer {
            log_level: Arc::default(),
            subscribed: Arc::default(),
            session: crate::tasks::new_session_id(),
            found: Arc::default(),
            ..self.clone()
        }
    }

    /// Also offers each agent as a tool `ask_AGENT` taking a `prompt`, so an outside
    /// assistant can hand work to a kiln agent (which runs with its own grants).
    pub fn with_agents(mut self, on: bool) -> Self {
        self.agents = on;
        self
    }

    /// Starts tasks (the tools declared `.task(...)`, from clients with the tasks extension) in
    /// `engine` instead of this process, so they survive it and any process serving the same
    /// engine answers for them.
    pub fn with_durable_tasks(
        mut self,
        engine: Arc<dyn crate::tasks::durable::DurableTasks>,
    ) -> Self {
        self.tasks = crate::tasks::Tasks::durable(engine);
        self
    }

    /// Keeps the tasks started here in `shared` too (see [`crate::tasks::Tasks::share`]); also
    /// the tasks, to cancel one another server was asked to.
    pub fn with_shared_tasks(mut self, shared: Arc<dyn SharedTasks>) -> (Self, Tasks) {
        self.tasks.share(shared);
        (self.clone(), self.tasks)
    }

    /// Offers `search_tools` and `run_code` over every tool served (mounted servers' tools
    /// included) instead of the tools: a client scripts them in one call.
    pub fn with_code_mode(mut self, on: bool) -> Self {
        self.code_mode = on;
        self
    }

    /// Lists the tools `patterns` name (a tool's name, or a prefix ending in `*`) only once a
    /// session's `search_tools` finds them; they stay callable by name under the grants.
    pub fn with_defer(mut self, patterns: Vec<String>) -> Self {
        self.defer = patterns.into();
        self
    }

    /// The agent an `ask_AGENT` name stands for, when agents are offered and no tool has it.
    fn agent_for(&self, name: &str) -> Option<String> {
        let agent = name.strip_prefix(AGENT_PREFIX)?;
        let reg = self.host.registry();
        (self.agents && reg.find(name).is_none() && reg.agent(agent).is_some())
            .then(|| agent.to_string())
    }

    /// How a call, a read, a prompt or a completion is called: the server's grants, the
    /// client as the actor, the request's cancellation, and an observer through which its
    /// handler (tool `name`, if one) can ask the client (answered from `rounds` on a
    /// 2026-07-28 request).
    fn read_options(
        &self,
        name: &str,
        cx: &RequestContext<RoleServer>,
        rounds: Option<Arc<Rounds>>,
    ) -> (CallOptions, CallNotifier) {
        let session_level = self.log_level.lock().ok().and_then(|l| *l);
        let notifier = CallNotifier::start(name, cx, session_level, rounds);
        let opts = CallOptions {
            grants: Some(self.grants_for(cx)),
            actor_id: Self::actor(cx),
            cancel: Some(cx.ct.clone()),
            observer: Some(notifier.observer.clone()),
            ..CallOptions::default()
        };
        (opts, notifier)
    }

    /// The round of a 2026-07-28 request (none on a 2025-11-25 session, whose handlers ask the
    /// client as they run); `Err` when its state is not one kiln sealed for this request.
    fn rounds(
        &self,
        cx: &RequestContext<RoleServer>,
        state: Option<&str>,
        responses: Option<&rmcp::model::InputResponses>,
        binding: String,
    ) -> Result<Option<Arc<Rounds>>, ErrorData> {
        let stateless = cx.protocol_version().is_some_and(|v| !v.has_initialize());
        if !stateless {
            return Ok(None);
        }
        let askable = crate::ask::questions::Askable::of(cx);
        Rounds::open(&self.codec, state, responses, binding, askable).map(|r| Some(Arc::new(r)))
    }

    /// Runs `work` (a read or a prompt) as one round of the request: the answers its retry
    /// brought are known to the handler, and the questions the handler asked go out instead of
    /// its result.
    async fn in_round<T, R, Fut>(
        &self,
        cx: &RequestContext<RoleServer>,
        state: Option<&str>,
        responses: Option<&rmcp::model::InputResponses>,
        binding: String,
        work: impl FnOnce(CallOptions) -> Fut,
    ) -> Result<R, ErrorData>
    where
        Fut: std::future::Future<Output = Result<T, ErrorData>>,
        R: From<T> + From<rmcp::model::InputRequiredResult>,
    {
        let rounds = self.rounds(cx, state, responses, binding)?;
        let (opts, notifier) = self.read_options("", cx, rounds.clone());
        let done = work(opts).await;
        notifier.finish().await;
        match self.answer_rounds(rounds.as_deref())? {
            Some(questions) => Ok(questions.into()),
            None => Ok(done?.into()),
        }
    }

    /// What to answer instead of the result when the handler stopped for the client: the
    /// missing-capability error, or the questions.
    fn answer_rounds(
        &self,
        rounds: Option<&Rounds>,
    ) -> Result<Option<rmcp::model::InputRequiredResult>, ErrorData> {
        let Some(rounds) = rounds else {
            return Ok(None);
        };
        if let Some(error) = rounds.missing_capability() {
            return Err(error);
        }
        Ok(rounds.input_required(&self.codec))
    }

    /// How a call of `tool` runs as a task: `None` when it is answered in the request (the tool
    /// is no task, or the client did not declare the tasks extension and the tool allows
    /// that); `Err` (-32021) when the tool requires a task and the client cannot take one.
    fn task_mode(
        &self,
        tool: &kiln_core::tool::Tool,
        cx: &RequestContext<RoleServer>,
    ) -> Result<Option<kiln_core::tool::TaskMode>, ErrorData> {
        let Some(mode) = tool.meta.task else {
            return Ok(None);
        };
        let declared = cx
            .client_capabilities()
            .is_some_and(|caps| caps.supports_tasks());
        match (declared, mode.required) {
            (true, _) => Ok(Some(mode)),
            (false, false) => Ok(None),
            (false, true) => Err(ErrorData::missing_required_client_capability(
                rmcp::model::ClientCapabilities::builder()
                    .enable_tasks()
                    .build(),
            )),
        }
    }

    /// Tells every client that asked that the tool list changed (after a reload).
    pub fn notify_tools_changed(&self) {
        let _ = self.changed.send(());
    }

    /// The tools offered now, in registry order (stdlib, native, then scripts by path).
    pub fn tools(&self) -> Vec<Arc<kiln_core::tool::Tool>> {
        self.tools_for(&self.grants)
    }

    pub(crate) fn tools_for(&self, grants: &Grants) -> Vec<Arc<kiln_core::tool::Tool>> {
        let ctx = self.host.context(grants.clone());
        self.host.registry().available(None, &ctx)
    }

    /// Serves one client on stdin/stdout until it disconnects. Nothing else may write to
    /// stdout meanwhile (logs go to stderr).
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        let running = self
            .serve(crate::frames::relay(
                tokio::io::stdin(),
                tokio::io::stdout(),
            ))
            .await
            .map_err(|e| McpError::Session(e.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|e| McpError::Session(e.to_string()))?;
        Ok(())
    }

    /// `tools/call`, in its span.
    async fn call_tool_in(
        &self,
        req: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = req.name.to_string();
        if let Some(agent) = self.agent_for(&name) {
            let args = req.arguments.unwrap_or_default();
            return Ok(self.ask_agent(&agent, &args, &cx).await.into());
        }
        let found = match self.code_mode {
            true => self
                .offered(&self.grants_for(&cx))
                .into_iter()
                .find(|t| t.name == name),
            false => self
                .host
                .registry()
                .find(&name)
                .or_else(|| self.search_tool_for(&name, &self.grants_for(&cx), &cx)),
        };
        let found = found.filter(|t| Self::shows_apps(&cx) || visible_to_model(t));
        let Some(tool) = found else {
            // invalid_params, not method_not_found: the latter becomes an HTTP 404 on 2026.
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool \"{name}\": kiln has no such tool loaded now (a reload may have removed it); tools/list shows the current ones"
                ),
                None,
            ));
        };
        let grants = match self.approved_grants(&tool, &req, &cx).await {
            Ok(grants) => grants,
            Err(answer) => return Ok(answer),
        };
        let rounds = self.rounds(
            &cx,
            req.request_state.as_deref(),
            req.input_responses.as_ref(),
            format!("tools/call:{name}"),
        )?;
        let args = serde_json::Value::Object(req.arguments.unwrap_or_default());
        let (mut opts, mut notifier) = self.read_options(&name, &cx, rounds.clone());
        opts.grants = Some(grants);
        // A program's calls ask the client themselves, each as it comes.
        let terminal = self.host.services().approver.is_some();
        if tool.nested_log().is_some() {
            opts.approver = crate::ask::ClientApprover::new(&cx, terminal)
                .map(|a| Arc::new(a) as Arc<dyn kiln_core::context::Approver>);
        }
        let found_before = self.found_count();
        let outcome = match self.task_mode(&tool, &cx)? {
            Some(mode) => {
                let call = TaskCall {
                    host: self.host.clone(),
                    tool: tool.clone(),
                    args,
                    opts,
                    mode,
                    owner: self.task_owner(&cx),
                };
                match call.run(&self.tasks, &mut notifier, &cx).await {
                    Ran::Answered(outcome) => outcome,
                    Ran::Task(task) => {
                        notifier.finish().await;
                        return Ok(CallToolResponse::Task(task));
                    }
                    Ran::Crashed(e) => {
                        notifier.finish().await;
                        return Err(e);
                    }
                }
            }
            None => {
                notifier
                    .run(&cx, self.host.call_tool(&tool, args, opts))
                    .await
            }
        };
        notifier.finish().await;
        self.announce_found(found_before, &cx).await;
        if let Some(questions) = self.answer_rounds(rounds.as_deref())? {
            return Ok(questions.into());
        }
        let outcome = outcome.map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        if let Err(f) = &outcome.result {
            tracing::info!(tool = %name, kind = f.kind.as_str(), detail = ?f.detail, "MCP call failed");
        }
        let result = outcome_to_mcp(&outcome, tool.meta.output.is_some());
        Ok(Self::link_page(&tool, result).into())
    }
}

impl ServerHandler for McpServer {
    // `logging` is deprecated by the 2026 revision, which still lets a server send log
    // messages a request asks for; tools' `log(...)` messages go there.
    #[allow(deprecated)]
    fn get_info(&self) -> ServerConfig {
        let caps = ServerCapabilities::builder()
            .enable_extensions_with(Self::apps_extension())
            .enable_completions()
            .enable_logging()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_resources()
            .enable_resources_list_changed()
            .enable_resources_subscribe()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_tasks()
            .build();
        ServerConfig::new(caps)
            .with_server_info(Implementation::new("kiln", env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _page: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.listing(&self.grants_for(&_cx), Self::shows_apps(&_cx));
        // ttl 0: caching clients refetch after a reload instead of serving a stale list.
        Ok(ListToolsResult::with_all_items(tools)
            .with_ttl_ms(0)
            .with_cache_scope(CacheScope::Private))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.listing(&self.grants, true)
            .into_iter()
            .find(|t| t.name == name)
            .or_else(|| self.deferred_tool(name))
    }

    async fn call_tool(
        &self,
        req: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let span = crate::trace::call_span(&req.name, req.meta.as_ref().map(|m| &***m), &cx.meta);
        tracing::Instrument::instrument(self.call_tool_in(req, cx), span).await
    }

    async fn list_resources(
        &self,
        _page: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        served::list_resources(self.host.registry().served())
    }

    async fn list_resource_templates(
        &self,
        _page: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, ErrorData> {
        served::list_templates(self.host.registry().served())
    }

    async fn read_resource(
        &self,
        req: rmcp::model::ReadResourceRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        let binding = format!("resources/read:{}", req.uri);
        let (state, responses) = (req.request_state.as_deref(), req.input_responses.as_ref());
        self.in_round(&cx, state, responses, binding, |opts| {
            served::read(&self.host, &req.uri, opts)
        })
        .await
    }

    async fn list_prompts(
        &self,
        _page: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, ErrorData> {
        served::list_prompts(self.host.registry().served())
    }

    async fn get_prompt(
        &self,
        req: rmcp::model::GetPromptRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        let binding = format!("prompts/get:{}", req.name);
        let (state, responses) = (req.request_state.as_deref(), req.input_responses.as_ref());
        let args = req.arguments.clone().unwrap_or_default();
        self.in_round(&cx, state, responses, binding, |opts| {
            served::get_prompt(&self.host, &req.name, args, opts)
        })
        .await
    }

    async fn complete(
        &self,
        req: rmcp::model::CompleteRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, ErrorData> {
        let (opts, notifier) = self.read_options("", &cx, None);
        let done = served::complete(
            &self.host,
            &req.r#ref,
            &req.argument.name,
            &req.argument.value,
            opts,
        )
        .await;
        notifier.finish().await;
        done
    }

    async fn get_task(
        &self,
        req: rmcp::model::GetTaskParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        self.tasks.get(&req, &self.task_owner(&cx)).await
    }

    async fn update_task(
        &self,
        req: rmcp::model::UpdateTaskParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.update(req, &self.task_owner(&cx)).await
    }

    async fn cancel_task(
        &self,
        req: rmcp::model::CancelTaskParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel(&req, &self.task_owner(&cx)).await
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        req: rmcp::model::SubscribeRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Ok(mut s) = self.subscribed.lock() {
            s.insert(req.uri);
        }
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        req: rmcp::model::UnsubscribeRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Ok(mut s) = self.subscribed.lock() {
            s.remove(&req.uri);
        }
        Ok(())
    }

    // Deprecated by the 2026 revision (which sets a level per request), still served to 2025
    // sessions: the level applies to the session's later calls.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        req: rmcp::model::SetLevelRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Ok(mut level) = self.log_level.lock() {
            *level = Some(notify::from_mcp(req.level));
        }
        Ok(())
    }

    // 2025-11-25 sessions get unscoped list_changed through their own peer. 2026 requests
    // never reach here, so they only hear of reloads on a `subscriptions/listen` stream.
    async fn on_initialized(&self, cx: NotificationContext<RoleServer>) {
        let mut rx = self.changed.subscribe();
        let peer = cx.peer.clone();
        let subscribed = self.subscribed.clone();
        tokio::spawn(async move {
            while changed(&mut rx).await {
                let sent = peer.notify_tool_list_changed().await.is_ok()
                    && peer.notify_resource_list_changed().await.is_ok()
                    && peer.notify_prompt_list_changed().await.is_ok();
                if !sent {
                    break;
                }
                // A reload may have changed any resource a script serves.
                let uris: Vec<String> = subscribed
                    .lock()
                    .map(|s| s.iter().cloned().collect())
                    .unwrap_or_default();
                for uri in uris {
                    let params = rmcp::model::ResourceUpdatedNotificationParam::new(uri);
                    let _ = peer.notify_resource_updated(params).await;
                }
            }
        });
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::builder()
            .tools_list_changed()
            .prompts_list_changed()
            .resources_list_changed()
            .build();
        // The 2026 form of resources/subscribe: any resource may change on a reload.
        accepted.resource_subscriptions = requested.resource_subscriptions.clone();
        Some(accepted)
    }

    async fn listen(&self, cx: SubscriptionContext) -> Result<(), ErrorData> {
        let mut rx = self.changed.subscribe();
        loop {
            tokio::select! {
                () = cx.cancelled() => return Ok(()),
                more = changed(&mut rx) => {
                    if !more || !notify_listener(&cx).await {
                        return Ok(());
                    }
                }
            }
        }
    }
}
