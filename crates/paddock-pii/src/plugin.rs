//! Plugin filters: TypeScript or JavaScript whose default export is a synchronous pure
//! `(text) => ({ text, triggered })`, run in a QuickJS sandbox.
//!
//! Compilation happens once, when a plugin is added or a pipeline is loaded: oxc parses the
//! source, strips TypeScript types, and the result is checked for module syntax the sandbox
//! does not offer (`import`, `import()`, `export … from`, `import.meta`).
//!
//! Each run gets a fresh QuickJS runtime. That costs a fraction of a millisecond and buys
//! the guarantees the pipeline needs: no state survives between runs (a plugin cannot carry
//! text from one message into the next, and a run that hit a limit cannot leave a broken
//! engine behind), memory and time limits apply to exactly one run, and the runtime never
//! crosses threads, so concurrent sends need no locking. The context is built from a chosen
//! list of intrinsics: there is no module loader, no `std`/`os` module, and nothing that
//! reaches the filesystem, processes, the environment or the network.
//!
//! Plugin sources are hostile (agents write them), so time is enforced three ways:
//! - QuickJS calls an interrupt handler every few thousand bytecode steps; past the deadline
//!   it raises an uncatchable error. That alone is not enough: the handler runs on a step
//!   counter, so a loop-free microtask chain whose jobs take a fixed number of steps can keep
//!   dodging it, and a native call (`indexOf` on a long string, sorting a large array) takes
//!   no steps at all while it runs.
//! - The job queue is driven from Rust, one job at a time, with the deadline checked between
//!   jobs and at most [`PluginLimits::max_jobs`] jobs per run. Jobs run only while the module
//!   is evaluated (a host's microtask checkpoint); the filter call itself is synchronous, and
//!   whatever it queues is discarded with the runtime.
//! - Every run executes on a thread of its own and the caller waits for it only until the
//!   deadline plus a grace period. A run that is still busy then is reported as over its time
//!   limit, and its thread is left to wind down on its own (it is interrupted at QuickJS's next
//!   check); at most [`PluginLimits::max_lingering`] such threads may exist before new runs
//!   are refused. Those threads are detached, so they never hold up the daemon's shutdown.

use std::cell::Cell;
use std::path::Path;
use std::rc::Rc;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use oxc_allocator::Allocator;
use oxc_ast::ast::{
    ExportAllDeclaration, ExportNamedDeclaration, ImportDeclaration, ImportExpression,
    MetaProperty, Program, TSImportEqualsDeclaration,
};
use oxc_ast_visit::{Visit, walk};
use oxc_codegen::Codegen;
use oxc_parser::Parser;
use oxc_semantic::SemanticBuilder;
use oxc_span::SourceType;
use oxc_transformer::{TransformOptions, Transformer};
use rquickjs::context::intrinsic;
use rquickjs::promise::PromiseState;
use rquickjs::{Context, Ctx, Function, Module, Object, Promise, Runtime, Value};

use crate::error::{FilterFailure, PluginError};

/// The largest plugin source accepted.
pub const MAX_SOURCE_BYTES: usize = 64 * 1024;

/// How long past its deadline a run's caller still waits for the run's own, precise answer
/// before it reports the time limit itself.
const GRACE: Duration = Duration::from_millis(250);

/// Limits for one plugin run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PluginLimits {
    /// Wall-clock time for one run, including evaluating the module.
    pub time: Duration,
    /// Promise jobs (microtasks) a run may execute while its module is evaluated.
    pub max_jobs: usize,
    /// Heap the QuickJS runtime may allocate.
    pub memory_bytes: usize,
    /// JavaScript stack depth, in bytes.
    pub stack_bytes: usize,
    /// Output may be at most this many bytes, or four times the input, whichever is larger.
    pub min_output_bytes: usize,
    /// Runs that outlived their time limit and whose threads are still winding down; at this
    /// many, new runs are refused until one of them ends.
    pub max_lingering: usize,
}

impl Default for PluginLimits {
    fn default() -> Self {
        PluginLimits {
            time: Duration::from_millis(250),
            max_jobs: 10_000,
            memory_bytes: 32 * 1024 * 1024,
            stack_bytes: 256 * 1024,
            min_output_bytes: 64 * 1024,
            max_lingering: 4,
        }
    }
}

/// What a plugin returned for one text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PluginOutput {
    pub text: String,
    pub triggered: bool,
}

/// A plugin whose source was parsed, type-stripped and checked.
#[derive(Debug, Clone)]
pub(crate) struct CompiledPlugin {
    /// The JavaScript module, TypeScript types removed; shared with the threads that run it.
    javascript: Arc<str>,
}

/// Parses, strips types and checks a plugin source.
pub(crate) fn compile(source: &str) -> Result<CompiledPlugin, PluginError> {
    if source.trim().is_empty() {
        return Err(PluginError::Empty);
    }
    if source.len() > MAX_SOURCE_BYTES {
        return Err(PluginError::TooLarge {
            len: source.len(),
            limit: MAX_SOURCE_BYTES,
        });
    }
    let javascript = strip_types(source)?;
    check_module(&javascript)?;
    Ok(CompiledPlugin {
        javascript: javascript.into(),
    })
}

fn first_error(errors: &[oxc_diagnostics::OxcDiagnostic]) -> Option<String> {
    errors.first().map(|error| error.message.to_string())
}

fn strip_types(source: &str) -> Result<String, PluginError> {
    let allocator = Allocator::default();
    let source_type = SourceType::ts().with_module(true);
    let parsed = Parser::new(&allocator, source, source_type).parse();
    if let Some(message) = first_error(&parsed.errors) {
        return Err(PluginError::Syntax { message });
    }
    if parsed.panicked {
        return Err(PluginError::Syntax {
            message: "the parser gave up".to_owned(),
        });
    }
    let mut program = parsed.program;
    // Check before stripping: the TypeScript transform drops imports it considers unused, and
    // a plugin must not even ask for a module.
    forbid_modules(&program)?;
    let semantic = SemanticBuilder::new().build(&program);
    if let Some(message) = first_error(&semantic.errors) {
        return Err(PluginError::Syntax { message });
    }
    let scoping = semantic.semantic.into_scoping();
    let options = TransformOptions::default();
    let transformed = Transformer::new(&allocator, Path::new("plugin.ts"), &options)
        .build_with_scoping(scoping, &mut program);
    if let Some(message) = first_error(&transformed.errors) {
        return Err(PluginError::Syntax { message });
    }
    Ok(Codegen::new().build(&program).code)
}

/// Rejects module syntax the sandbox does not provide and requires a default export.
fn check_module(javascript: &str) -> Result<(), PluginError> {
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, javascript, SourceType::mjs()).parse();
    if let Some(message) = first_error(&parsed.errors) {
        return Err(PluginError::Syntax { message });
    }
    forbid_modules(&parsed.program)?;
    if !has_default_export(&parsed.program) {
        return Err(PluginError::NoDefaultExport);
    }
    Ok(())
}

fn forbid_modules(program: &Program<'_>) -> Result<(), PluginError> {
    let mut checker = ModuleChecker { forbidden: None };
    checker.visit_program(program);
    match checker.forbidden {
        Some(what) => Err(PluginError::Forbidden { what }),
        None => Ok(()),
    }
}

fn has_default_export(program: &Program<'_>) -> bool {
    use oxc_ast::ast::Statement;
    program.body.iter().any(|statement| match statement {
        Statement::ExportDefaultDeclaration(_) => true,
        Statement::ExportNamedDeclaration(named) => named
            .specifiers
            .iter()
            .any(|specifier| specifier.exported.name() == "default"),
        _ => false,
    })
}

struct ModuleChecker {
    forbidden: Option<&'static str>,
}

impl<'a> Visit<'a> for ModuleChecker {
    fn visit_import_declaration(&mut self, _: &ImportDeclaration<'a>) {
        self.forbidden.get_or_insert("`import` declarations");
    }

    fn visit_import_expression(&mut self, _: &ImportExpression<'a>) {
        self.forbidden.get_or_insert("dynamic `import()`");
    }

    fn visit_export_all_declaration(&mut self, _: &ExportAllDeclaration<'a>) {
        self.forbidden.get_or_insert("`export * from`");
    }

    fn visit_export_named_declaration(&mut self, it: &ExportNamedDeclaration<'a>) {
        if it.source.is_some() {
            self.forbidden.get_or_insert("`export … from`");
        }
        walk::walk_export_named_declaration(self, it);
    }

    fn visit_ts_import_equals_declaration(&mut self, _: &TSImportEqualsDeclaration<'a>) {
        self.forbidden.get_or_insert("`import … = require()`");
    }

    fn visit_meta_property(&mut self, _: &MetaProperty<'a>) {
        self.forbidden.get_or_insert("`import.meta`");
    }
}

/// The intrinsics a plugin gets: the language, regular expressions, JSON, collections and
/// typed arrays. `Eval` is required by QuickJS to compile the module at all; code it runs stays
/// inside the same sandbox. No `Performance` (a timer) and no loader.
type Intrinsics = (
    intrinsic::Eval,
    intrinsic::RegExpCompiler,
    intrinsic::RegExp,
    intrinsic::Json,
    intrinsic::MapSet,
    intrinsic::TypedArrays,
    intrinsic::Promise,
    intrinsic::Proxy,
    intrinsic::Date,
);

impl CompiledPlugin {
    /// The type-stripped JavaScript.
    #[cfg(test)]
    pub(crate) fn javascript(&self) -> &str {
        &self.javascript
    }
}

/// Runs plugins, each on a thread of its own, and counts the runs it stopped waiting for.
#[derive(Debug)]
pub(crate) struct PluginRunner {
    limits: PluginLimits,
    /// Threads of runs that were reported as over their time limit and have not ended yet.
    lingering: Arc<AtomicUsize>,
}

/// The life of one run's thread, shared by the thread and the caller waiting for it.
const RUNNING: u8 = 0;
const FINISHED: u8 = 1;
const ABANDONED: u8 = 2;

impl PluginRunner {
    pub(crate) fn new(limits: PluginLimits) -> PluginRunner {
        PluginRunner {
            limits,
            lingering: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Runs `plugin` on `text`. Returns within the time limit plus a short grace period,
    /// whatever the plugin does.
    pub(crate) fn run(
        &self,
        plugin: &CompiledPlugin,
        text: &str,
    ) -> Result<PluginOutput, FilterFailure> {
        let javascript = Arc::clone(&plugin.javascript);
        let text = text.to_owned();
        let limits = self.limits;
        self.supervise(move || execute(&javascript, &text, &limits))
    }

    /// Threads of abandoned runs that are still winding down.
    #[cfg(test)]
    fn lingering(&self) -> usize {
        self.lingering.load(Ordering::Acquire)
    }

    /// Runs `work` on a new thread and waits for its answer until the deadline plus [`GRACE`].
    /// After that the run is reported as over its time limit and its thread is abandoned: it
    /// keeps running until QuickJS interrupts it, then exits and no longer counts as lingering.
    fn supervise(
        &self,
        work: impl FnOnce() -> Result<PluginOutput, FilterFailure> + Send + 'static,
    ) -> Result<PluginOutput, FilterFailure> {
        let limit = self.limits.time;
        let lingering = self.lingering.load(Ordering::Acquire);
        if lingering >= self.limits.max_lingering {
            return Err(FilterFailure::SandboxBusy { lingering });
        }
        let (sender, receiver) = mpsc::sync_channel(1);
        let state = Arc::new(AtomicU8::new(RUNNING));
        let guard = ThreadGuard {
            state: Arc::clone(&state),
            lingering: Arc::clone(&self.lingering),
        };
        // The QuickJS stack limit is measured from where the runtime starts; the thread needs
        // that much and room for the host frames around it.
        let stack = self
            .limits
            .stack_bytes
            .saturating_mul(2)
            .saturating_add(2 * 1024 * 1024);
        std::thread::Builder::new()
            .name("pii-plugin".to_owned())
            .stack_size(stack)
            .spawn(move || {
                let _guard = guard;
                // The caller may have stopped waiting; then nobody needs the answer.
                let _ = sender.send(work());
            })
            .map_err(|_| FilterFailure::Engine)?;
        let patience = limit.saturating_add(GRACE);
        match receiver.recv_timeout(patience) {
            Ok(answer) => answer,
            // The thread ended without an answer: it panicked.
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(FilterFailure::Engine),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // Count the thread before marking it abandoned, so that its own decrement,
                // which only an abandoned thread makes, can never come first.
                self.lingering.fetch_add(1, Ordering::AcqRel);
                let abandoned = state
                    .compare_exchange(RUNNING, ABANDONED, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok();
                if abandoned {
                    return Err(FilterFailure::TimeLimit { limit });
                }
                // It finished just now: its answer is in the channel (or it panicked).
                self.lingering.fetch_sub(1, Ordering::AcqRel);
                receiver
                    .recv_timeout(GRACE)
                    .unwrap_or(Err(FilterFailure::Engine))
            }
        }
    }
}

/// Marks a run's thread finished when it ends (normally or by a panic); an abandoned thread
/// stops counting as lingering instead.
struct ThreadGuard {
    state: Arc<AtomicU8>,
    lingering: Arc<AtomicUsize>,
}

impl Drop for ThreadGuard {
    fn drop(&mut self) {
        let finished = self
            .state
            .compare_exchange(RUNNING, FINISHED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if !finished {
            self.lingering.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Runs a plugin's module and its default export on `text` in a fresh runtime, on the
/// calling thread.
fn execute(
    javascript: &str,
    text: &str,
    limits: &PluginLimits,
) -> Result<PluginOutput, FilterFailure> {
    let runtime = Runtime::new().map_err(|_| FilterFailure::Engine)?;
    runtime.set_memory_limit(limits.memory_bytes);
    runtime.set_max_stack_size(limits.stack_bytes);
    let deadline = Instant::now() + limits.time;
    let timed_out = Rc::new(Cell::new(false));
    let flag = Rc::clone(&timed_out);
    runtime.set_interrupt_handler(Some(Box::new(move || {
        let expired = Instant::now() >= deadline;
        if expired {
            flag.set(true);
        }
        expired
    })));
    // A job that runs out of memory or stack rejects a promise nobody handles instead of
    // failing the run; the tracker notices, so that limit still fails the run.
    let job_limit = Rc::new(Cell::new(None));
    let seen = Rc::clone(&job_limit);
    runtime.set_host_promise_rejection_tracker(Some(Box::new(
        move |_ctx, _promise, reason, handled| {
            if !handled && seen.get().is_none() {
                let kind = classify_value(&reason);
                if !matches!(kind, ExceptionKind::Other) {
                    seen.set(Some(kind));
                }
            }
        },
    )));
    let context = Context::custom::<Intrinsics>(&runtime).map_err(|_| FilterFailure::Engine)?;
    let max_output = limits.min_output_bytes.max(text.len().saturating_mul(4));
    let run = Run {
        javascript,
        deadline,
        max_jobs: limits.max_jobs,
        max_output,
        job_limit,
    };
    let outcome = context.with(|ctx| run.call(&ctx, text));
    // Classify after the fact: QuickJS reports an interrupt and an allocation failure as
    // ordinary exceptions, so the flags and the error text decide which limit was hit.
    match outcome {
        Ok(output) => Ok(output),
        Err(_) if timed_out.get() => Err(FilterFailure::TimeLimit { limit: limits.time }),
        Err(Failure::TimedOut) => Err(FilterFailure::TimeLimit { limit: limits.time }),
        Err(Failure::Failed(failure)) => Err(failure),
        Err(Failure::Exception(kind)) => Err(match kind {
            ExceptionKind::OutOfMemory => FilterFailure::MemoryLimit {
                limit_bytes: limits.memory_bytes,
            },
            ExceptionKind::StackOverflow => FilterFailure::StackOverflow,
            ExceptionKind::Other => FilterFailure::Threw,
        }),
    }
}

/// One run inside its runtime.
struct Run<'a> {
    javascript: &'a str,
    deadline: Instant,
    max_jobs: usize,
    max_output: usize,
    /// A limit a job hit, reported by the rejection tracker.
    job_limit: Rc<Cell<Option<ExceptionKind>>>,
}

impl Run<'_> {
    fn call(&self, ctx: &Ctx<'_>, text: &str) -> Result<PluginOutput, Failure> {
        let exception = |ctx: &Ctx<'_>| Failure::Exception(classify(ctx));
        let module =
            Module::declare(ctx.clone(), "plugin", self.javascript).map_err(|_| exception(ctx))?;
        let (module, promise) = module.eval().map_err(|_| exception(ctx))?;
        self.settle(ctx, &promise)?;
        let function: Function = module.get("default").map_err(|_| {
            Failure::Failed(FilterFailure::InvalidResult {
                reason: "the default export is not a function",
            })
        })?;
        let result: Value = function.call((text,)).map_err(|_| exception(ctx))?;
        let output = read_result(&result, text)?;
        if output.text.len() > self.max_output {
            return Err(Failure::Failed(FilterFailure::OutputTooLarge {
                len: output.text.len(),
                limit: self.max_output,
            }));
        }
        Ok(output)
    }

    /// Finishes evaluating the module: runs the job queue until it is empty, one job at a
    /// time, checking the deadline between jobs and counting them, then requires the module's
    /// promise to be fulfilled (a rejection is an exception the module threw).
    fn settle(&self, ctx: &Ctx<'_>, promise: &Promise<'_>) -> Result<(), Failure> {
        let mut jobs = 0usize;
        loop {
            if Instant::now() >= self.deadline {
                return Err(Failure::TimedOut);
            }
            // A job that throws (the interrupt included) has its exception cleared here; the
            // deadline check above and the promise state below account for it.
            if !ctx.execute_pending_job() {
                break;
            }
            jobs += 1;
            if jobs > self.max_jobs {
                return Err(Failure::Failed(FilterFailure::JobLimit {
                    limit: self.max_jobs,
                }));
            }
        }
        if let Some(kind) = self.job_limit.get() {
            return Err(Failure::Exception(kind));
        }
        match promise.state() {
            PromiseState::Resolved => Ok(()),
            PromiseState::Rejected => {
                // Rethrows the rejection reason, so that `classify` reads it like any other.
                let _ = promise.result::<Value>();
                Err(Failure::Exception(classify(ctx)))
            }
            PromiseState::Pending => Err(Failure::Failed(FilterFailure::InvalidResult {
                reason: "the module never finished evaluating: a top-level `await` never settled",
            })),
        }
    }
}

enum Failure {
    /// The deadline passed between two jobs.
    TimedOut,
    Exception(ExceptionKind),
    Failed(FilterFailure),
}

#[derive(Debug, Clone, Copy)]
enum ExceptionKind {
    OutOfMemory,
    StackOverflow,
    Other,
}

/// Reads the pending exception only to tell limits from ordinary throws. The message may
/// contain text the plugin saw, so it is never returned.
fn classify(ctx: &Ctx<'_>) -> ExceptionKind {
    classify_value(&ctx.catch())
}

/// [`classify`] for a thrown or rejected value.
fn classify_value(caught: &Value<'_>) -> ExceptionKind {
    let message = caught
        .as_object()
        .and_then(|object| object.get::<_, String>("message").ok())
        .or_else(|| caught.as_string().and_then(|s| s.to_string().ok()))
        .unwrap_or_default();
    if message.contains("out of memory") {
        ExceptionKind::OutOfMemory
    } else if message.contains("stack overflow") || message.contains("call stack") {
        ExceptionKind::StackOverflow
    } else {
        ExceptionKind::Other
    }
}

/// Accepts `{ text: string, triggered: boolean }` as own data properties, or a plain string
/// (the legacy form, where `triggered` is estimated by comparing input and output).
fn read_result(result: &Value<'_>, input: &str) -> Result<PluginOutput, Failure> {
    let invalid = |reason: &'static str| Failure::Failed(FilterFailure::InvalidResult { reason });
    if let Some(string) = result.as_string() {
        let text = string
            .to_string()
            .map_err(|_| invalid("the returned string is not valid text"))?;
        let triggered = text != input;
        return Ok(PluginOutput { text, triggered });
    }
    let Some(object) = result.as_object() else {
        return Err(invalid("the result is neither an object nor a string"));
    };
    if result.is_promise() {
        return Err(invalid(
            "the filter returned a promise; filters must be synchronous",
        ));
    }
    let text = own_property(object, "text")
        .ok_or_else(|| invalid("the result has no own `text` property"))?;
    let triggered = own_property(object, "triggered")
        .ok_or_else(|| invalid("the result has no own `triggered` property"))?;
    let text = text
        .as_string()
        .and_then(|s| s.to_string().ok())
        .ok_or_else(|| invalid("the result's `text` is not a string"))?;
    let triggered = triggered
        .as_bool()
        .ok_or_else(|| invalid("the result's `triggered` is not a boolean"))?;
    Ok(PluginOutput { text, triggered })
}

/// An own property of `object`; inherited values (say, from a polluted `Object.prototype`)
/// do not count.
fn own_property<'js>(object: &Object<'js>, name: &str) -> Option<Value<'js>> {
    let own = object
        .own_keys::<String>(rquickjs::object::Filter::new().string().enum_only())
        .filter_map(Result::ok)
        .any(|key| key == name);
    if !own {
        return None;
    }
    object.get::<_, Value>(name).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(source: &str, text: &str) -> Result<PluginOutput, FilterFailure> {
        PluginRunner::new(PluginLimits::default()).run(&compile(source).unwrap(), text)
    }

    #[test]
    fn strips_typescript() {
        let compiled =
            compile("type R = { text: string; triggered: boolean };\nexport default (text: string): R => ({ text, triggered: false });")
                .unwrap();
        assert!(!compiled.javascript().contains("string"));
        let output = PluginRunner::new(PluginLimits::default())
            .run(&compiled, "hello")
            .unwrap();
        assert_eq!(
            output,
            PluginOutput {
                text: "hello".into(),
                triggered: false
            }
        );
    }

    #[test]
    fn legacy_string_results() {
        let output = run("export default (t) => t.replace('a', 'b')", "abc").unwrap();
        assert_eq!(
            output,
            PluginOutput {
                text: "bbc".into(),
                triggered: true
            }
        );
        let output = run("export default (t) => t", "abc").unwrap();
        assert!(!output.triggered);
    }

    #[test]
    fn rejects_module_syntax() {
        assert!(matches!(
            compile("import fs from 'fs'; export default (t) => t"),
            Err(PluginError::Forbidden { .. })
        ));
        assert!(matches!(
            compile("export default (t) => { import('fs'); return t }"),
            Err(PluginError::Forbidden { .. })
        ));
        assert!(matches!(
            compile("export * from 'x'"),
            Err(PluginError::Forbidden { .. })
        ));
        assert!(matches!(
            compile("const f = (t) => t;"),
            Err(PluginError::NoDefaultExport)
        ));
        assert!(matches!(
            compile("export default (t => "),
            Err(PluginError::Syntax { .. })
        ));
    }

    fn output(text: &str) -> Result<PluginOutput, FilterFailure> {
        Ok(PluginOutput {
            text: text.to_owned(),
            triggered: false,
        })
    }

    /// Waits until `condition` holds, failing the test after a generous deadline.
    fn wait_until(what: &str, condition: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !condition() {
            assert!(Instant::now() < deadline, "timed out waiting until {what}");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    #[test]
    fn a_run_that_outlives_its_deadline_is_reported_and_counted_until_it_ends() {
        let limit = Duration::from_millis(50);
        let runner = PluginRunner::new(PluginLimits {
            time: limit,
            max_lingering: 1,
            ..PluginLimits::default()
        });
        // Work that ignores every deadline until the test lets it go.
        let (release, released) = mpsc::channel::<()>();
        let answer = runner.supervise(move || {
            let _ = released.recv();
            output("late")
        });
        assert_eq!(answer, Err(FilterFailure::TimeLimit { limit }));
        assert_eq!(runner.lingering(), 1);
        // At the cap no new run starts: the caller gets a typed refusal at once.
        assert_eq!(
            runner.supervise(|| output("refused")),
            Err(FilterFailure::SandboxBusy { lingering: 1 })
        );
        release.send(()).unwrap();
        wait_until("the abandoned thread ended", || runner.lingering() == 0);
        assert_eq!(runner.supervise(|| output("next")), output("next"));
    }

    #[test]
    fn a_panicking_run_is_an_engine_failure() {
        // The panic hook runs before the thread unwinds; with RUST_BACKTRACE set, symbolising
        // the first backtrace on a loaded machine can take longer than the default limit, so
        // the limit here is a hang deadline and only the panic can end the run.
        let runner = PluginRunner::new(PluginLimits {
            time: Duration::from_secs(60),
            ..PluginLimits::default()
        });
        assert_eq!(
            runner.supervise(|| panic!("the sandbox broke")),
            Err(FilterFailure::Engine)
        );
        assert_eq!(runner.lingering(), 0);
        assert_eq!(runner.supervise(|| output("fine")), output("fine"));
    }
}
