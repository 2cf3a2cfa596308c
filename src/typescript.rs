//! `stripTypes` and `checkProgram` for the dialect adapter: its code normalization reads the
//! program with acorn, which knows no TypeScript, so a program acorn refuses gets its types
//! blanked here first, by the same code the worker uses (codemode-typestrip), every line and
//! column kept. Both run on Node's own thread, so nothing here may recurse with the program's
//! nesting: `checkProgram` bounds size and nesting in one linear pass before acorn reads the
//! code, and the stripper (oxc, which recurses per level) runs on a thread of its own with a
//! stack sized for the nesting bound, whatever stack the caller's thread has.

use codemode_pool::protocol::{limits, FailureCode};
use codemode_typestrip::StripError;
use napi::JsString;
use napi_derive::napi;

/// The stripper's thread stack: the nesting bound needs under 1 MiB of it (docs/bounds.md).
const STRIP_STACK_BYTES: usize = 8 * 1024 * 1024;

/// What [`strip_types`] made of a program.
#[napi(object)]
pub struct Stripped {
    /// The program with its types blanked; absent when it does not parse as TypeScript or uses
    /// a construct that cannot be stripped.
    pub code: Option<String>,
    /// `TYPESCRIPT_UNSUPPORTED`'s text, naming the construct and its line, or
    /// `NESTING_TOO_DEEP`'s.
    pub refused: Option<String>,
    /// The 1-based line of the refused construct.
    pub line: Option<u32>,
}

/// Blanks the TypeScript types of `code` (see codemode-typestrip).
#[napi]
pub fn strip_types(code: String) -> Stripped {
    let stripped = std::thread::Builder::new()
        .name("codemode-strip".into())
        .stack_size(STRIP_STACK_BYTES)
        .spawn(move || codemode_typestrip::strip(&code))
        .ok()
        .and_then(|t| t.join().ok());
    let Some(stripped) = stripped else {
        // No thread (or it panicked): no TypeScript, as for code that is not TypeScript.
        return not_typescript();
    };
    match stripped {
        Ok(js) => Stripped {
            code: Some(js),
            refused: None,
            line: None,
        },
        Err(StripError::Refused(r)) => Stripped {
            code: None,
            refused: Some(r.text("The code")),
            line: Some(r.line),
        },
        Err(StripError::TooDeep(t)) => Stripped {
            code: None,
            refused: Some(t.text("The code")),
            line: Some(t.line),
        },
        Err(StripError::Syntax { .. }) => not_typescript(),
    }
}

fn not_typescript() -> Stripped {
    Stripped {
        code: None,
        refused: None,
        line: None,
    }
}

/// The program failure text (`CODE_TOO_LARGE`, `NESTING_TOO_DEEP`) for code the dialect adapter
/// must not read, or nothing: longer than `limits::CODE_BYTES` (measured before the code is
/// copied out of V8), or nested past `limits::NESTING_LEVELS` (counted in one pass, no recursion).
#[napi]
// napi-derive leaves a function taking a borrowed JS value uncalled in test builds (it registers
// exports only outside them); the JS suites call it.
#[cfg_attr(test, allow(dead_code))]
pub fn check_program(code: JsString<'_>) -> napi::Result<Option<String>> {
    let size = code.utf8_len()?;
    if size > limits::CODE_BYTES {
        return Ok(Some(FailureCode::CodeTooLarge.render(&[
            ("size", &size.to_string()),
            ("limit", &limits::CODE_BYTES.to_string()),
        ])));
    }
    let code = code.into_utf8()?;
    Ok(codemode_typestrip::check_nesting(code.as_str()?)
        .err()
        .map(|t| t.text("The code")))
}
