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

use std::cell::Cell;
use std::path::Path;
use std::rc::Rc;
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
use rquickjs::{Context, Ctx, Function, Module, Object, Runtime, Value};

use crate::error::{FilterFailure, PluginError};

/// The largest plugin source accepted.
pub const MAX_SOURCE_BYTES: usize = 64 * 1024;

/// Limits for one plugin run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PluginLimits {
    /// Wall-clock time for one run, including evaluating the module.
    pub time: Duration,
    /// Heap the QuickJS runtime may allocate.
    pub memory_bytes: usize,
    /// JavaScript stack depth, in bytes.
    pub stack_bytes: usize,
    /// Output may be at most this many bytes, or four times the input, whichever is larger.
    pub min_output_bytes: usize,
}

impl Default for PluginLimits {
    fn default() -> Self {
        PluginLimits {
            time: Duration::from_millis(250),
            memory_bytes: 32 * 1024 * 1024,
            stack_bytes: 256 * 1024,
            min_output_bytes: 64 * 1024,
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
    /// The JavaScript module, TypeScript types removed.
    javascript: String,
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
    Ok(CompiledPlugin { javascript })
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

    /// Runs the plugin on `text` under `limits`.
    pub(crate) fn run(
        &self,
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
        let context = Context::custom::<Intrinsics>(&runtime).map_err(|_| FilterFailure::Engine)?;
        let max_output = limits.min_output_bytes.max(text.len().saturating_mul(4));
        let outcome = context.with(|ctx| self.call(&ctx, text, max_output));
        // Classify after the fact: QuickJS reports an interrupt and an allocation failure as
        // ordinary exceptions, so the flags and the error text decide which limit was hit.
        match outcome {
            Ok(output) => Ok(output),
            Err(_) if timed_out.get() => Err(FilterFailure::TimeLimit { limit: limits.time }),
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

    fn call(&self, ctx: &Ctx<'_>, text: &str, max_output: usize) -> Result<PluginOutput, Failure> {
        let exception = |ctx: &Ctx<'_>| Failure::Exception(classify(ctx));
        let module = Module::declare(ctx.clone(), "plugin", self.javascript.as_str())
            .map_err(|_| exception(ctx))?;
        let (module, promise) = module.eval().map_err(|_| exception(ctx))?;
        // A module without top-level await settles synchronously; `finish` surfaces errors
        // thrown while evaluating it.
        promise.finish::<Value>().map_err(|_| exception(ctx))?;
        let function: Function = module.get("default").map_err(|_| {
            Failure::Failed(FilterFailure::InvalidResult {
                reason: "the default export is not a function",
            })
        })?;
        let result: Value = function.call((text,)).map_err(|_| exception(ctx))?;
        let output = read_result(&result, text)?;
        if output.text.len() > max_output {
            return Err(Failure::Failed(FilterFailure::OutputTooLarge {
                len: output.text.len(),
                limit: max_output,
            }));
        }
        Ok(output)
    }
}

enum Failure {
    Exception(ExceptionKind),
    Failed(FilterFailure),
}

enum ExceptionKind {
    OutOfMemory,
    StackOverflow,
    Other,
}

/// Reads the pending exception only to tell limits from ordinary throws. The message may
/// contain text the plugin saw, so it is never returned.
fn classify(ctx: &Ctx<'_>) -> ExceptionKind {
    let caught = ctx.catch();
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
        compile(source).unwrap().run(text, &PluginLimits::default())
    }

    #[test]
    fn strips_typescript() {
        let compiled =
            compile("type R = { text: string; triggered: boolean };\nexport default (text: string): R => ({ text, triggered: false });")
                .unwrap();
        assert!(!compiled.javascript().contains("string"));
        let output = compiled.run("hello", &PluginLimits::default()).unwrap();
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
}
