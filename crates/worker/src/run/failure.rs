//! The failures a run reports, as the failure grammar words them (codemode_protocol's
//! failures.rs holds every code and text; this file only fills them in): the program's entry
//! refused, an uncaught throw or rejection with its place in the model's code, a promise
//! nothing settles. The runtime's `describeThrow` and `typeName` say what a value is.

use codemode_protocol::{failures, FailureCode, RunError, SourceLocation};

use crate::engine::helpers::Helpers;
use crate::engine::modules::{self, PROGRAM_NAME};
use crate::run::entry::{EntryError, Shift};
use crate::run::event_loop::Settled;
use crate::run::location::{locate, source_location};

pub(crate) fn fail(code: FailureCode, vars: &[(&str, &str)]) -> RunError {
    RunError {
        code: code.as_str().to_string(),
        message: code.render(vars),
        location: None,
    }
}

/// A failure that happened at `location`: the place is also written into the text (after
/// `detail`), so a model that reads only the text still learns it.
pub(crate) fn fail_at(
    code: FailureCode,
    detail: &str,
    hint: &str,
    location: Option<SourceLocation>,
) -> RunError {
    let detail = match &location {
        Some(l) => format!("{detail}{}", place(l)),
        None => detail.to_string(),
    };
    let mut error = fail(code, &[("detail", &detail), ("hint", hint)]);
    error.location = location.map(Box::new);
    error
}

/// " (line 3, column 7)", or " (module \"./a.js\", line 3, column 7)".
fn place(l: &SourceLocation) -> String {
    match &l.module {
        Some(m) => format!(" (module \"{m}\", line {}, column {})", l.line, l.column),
        None => format!(" (line {}, column {})", l.line, l.column),
    }
}

/// CPU_LIMIT's failure: the budget of `ms` was spent and the run (or invocation) stopped.
pub(crate) fn cpu_limit(ms: u32) -> RunError {
    fail(FailureCode::CpuLimit, &[("ms", &ms.to_string())])
}

/// INTERNAL's text for a run (or invocation) stopped by a Cancel or a lost host while it was
/// waiting: the outcome the host reports instead (a timeout, an abort) replaces it.
pub(crate) fn stopped() -> RunError {
    fail(
        FailureCode::Internal,
        &[("detail", "the run was stopped before it settled")],
    )
}

/// The failure for code the entry rewrite refused (entry.rs), before anything of the run ran.
/// A syntax error is worded by V8 (models know its wording), at V8's place.
pub(crate) fn entry_failure(scope: &mut v8::PinScope, error: EntryError) -> RunError {
    let at_line = |line: u32| {
        Some(Box::new(SourceLocation {
            line,
            column: 1,
            module: None,
        }))
    };
    match error {
        EntryError::Shape(found) => fail(FailureCode::EntryShape, &[("found", &found)]),
        EntryError::Syntax { oxc, source, shape } => {
            let hint = if shape {
                failures::ENTRY_SHAPE_HINT
            } else {
                ""
            };
            let (detail, location) = v8_syntax_error(scope, &source)
                .unwrap_or_else(|| (format!("SyntaxError: {oxc}"), None));
            fail_at(FailureCode::SyntaxError, &detail, hint, location)
        }
        EntryError::TypeScriptSyntax {
            message,
            line,
            column,
        } => {
            let location = SourceLocation {
                line,
                column,
                module: None,
            };
            let detail = format!("SyntaxError: {message}");
            fail_at(FailureCode::SyntaxError, &detail, "", Some(location))
        }
        EntryError::TooDeep(t) => RunError {
            code: FailureCode::NestingTooDeep.as_str().to_string(),
            message: t.text(CODE),
            location: at_line(t.line),
        },
        EntryError::Refused(r) => RunError {
            code: FailureCode::TypeScriptUnsupported.as_str().to_string(),
            message: r.text(CODE),
            location: at_line(r.line),
        },
    }
}

/// How a failure's text names the program (a module is named by its key).
const CODE: &str = "The code";

pub(crate) fn settle_failure(
    scope: &mut v8::PinScope,
    helpers: &Helpers,
    settled: Settled,
    shift: &Shift,
) -> RunError {
    match settled {
        Settled::Rejected(reason) => {
            let location = locate(scope, reason, shift);
            let (code, detail) = uncaught(scope, helpers, reason);
            fail_at(code, &detail, "", location)
        }
        Settled::Stuck => fail(FailureCode::NeverSettled, &[]),
        Settled::Stopped | Settled::Fulfilled(_) => stopped(),
    }
}

/// The failure for a pending exception: a SyntaxError (from a module) or an uncaught throw.
pub(crate) fn exception_failure(
    tc: &mut v8::PinnedRef<v8::TryCatch<v8::HandleScope>>,
    helpers: &Helpers,
    shift: &Shift,
) -> RunError {
    if tc.is_execution_terminating() || tc.has_terminated() {
        return stopped();
    }
    let Some(exception) = tc.exception() else {
        return fail(
            FailureCode::Internal,
            &[("detail", "no exception was recorded")],
        );
    };
    // Where V8 says the throw happened (a syntax error's place, a throw of a non-Error).
    let thrown_at = tc.message().map(|m| {
        let line = m.get_line_number(tc).unwrap_or(0) as u32;
        let column = m.get_start_column() as u32 + 1;
        let name = m
            .get_script_resource_name(tc)
            .map(|r| r.to_rust_string_lossy(tc));
        (line, column, name)
    });
    let is_syntax = exception
        .to_object(tc)
        .and_then(|o| {
            let key = v8::String::new(tc, "name")?;
            o.get(tc, key.into())
        })
        .map(|n| n.to_rust_string_lossy(tc) == "SyntaxError")
        .unwrap_or(false);
    tc.reset();
    let from_message = thrown_at.and_then(|(line, column, name)| {
        source_location(tc, name.as_deref().unwrap_or(""), line, column, shift)
    });
    let location = if is_syntax {
        from_message
    } else {
        locate(tc, exception, shift).or(from_message)
    };
    let (code, detail) = uncaught(tc, helpers, exception);
    if is_syntax {
        // SYNTAX_ERROR's text ends the detail with its own period (a module's refusal, worded
        // by the failure table, already has one).
        let detail = detail.strip_suffix('.').unwrap_or(&detail);
        fail_at(FailureCode::SyntaxError, detail, "", location)
    } else {
        fail_at(code, &detail, "", location)
    }
}

/// The code and detail of an uncaught throw or rejection: a denial's (the runtime's own Error
/// for a call a person or `decide` refused, with the text the runtime gave it) or the
/// program's (the thrown value described).
fn uncaught(
    scope: &mut v8::PinScope,
    helpers: &Helpers,
    value: v8::Local<v8::Value>,
) -> (FailureCode, String) {
    match crate::natives::host::denial_text(scope, value) {
        Some(text) => (FailureCode::DenialUncaught, format!("Error: {text}")),
        None => (
            FailureCode::ProgramError,
            describe_throw(scope, helpers, value),
        ),
    }
}

/// V8's own SyntaxError text for code oxc refused (models know V8's wording), and where. The
/// code is compiled as written (or with its types blanked, which moves nothing), so V8's
/// position is the model's.
fn v8_syntax_error(
    scope: &mut v8::PinScope,
    code: &str,
) -> Option<(String, Option<SourceLocation>)> {
    v8::tc_scope!(let tc, scope);
    if modules::compile(tc, PROGRAM_NAME, code).is_some() {
        return None;
    }
    let exception = tc.exception()?;
    let location = tc.message().and_then(|m| {
        let line = m.get_line_number(tc)? as u32;
        let column = m.get_start_column() as u32 + 1;
        Some(SourceLocation {
            line,
            column,
            module: None,
        })
    });
    let text = exception.to_rust_string_lossy(tc);
    Some((text, location))
}

/// Calls `f(value)` and returns its result as a string; `None` when it throws.
fn call_helper(
    scope: &mut v8::PinScope,
    f: &v8::Global<v8::Function>,
    value: v8::Local<v8::Value>,
) -> Option<String> {
    v8::tc_scope!(let tc, scope);
    let f = v8::Local::new(tc, f);
    let undefined = v8::undefined(tc).into();
    let out = f.call(tc, undefined, &[value])?;
    Some(out.to_rust_string_lossy(tc))
}

pub(crate) fn describe_throw(
    scope: &mut v8::PinScope,
    helpers: &Helpers,
    value: v8::Local<v8::Value>,
) -> String {
    call_helper(scope, &helpers.describe_throw, value)
        .unwrap_or_else(|| "Uncaught exception (its description failed)".into())
}

pub(crate) fn type_name(
    scope: &mut v8::PinScope,
    helpers: &Helpers,
    value: v8::Local<v8::Value>,
) -> String {
    call_helper(scope, &helpers.type_name, value).unwrap_or_else(|| "a value".into())
}
