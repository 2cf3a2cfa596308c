//! `stripTypes` for the dialect adapter: its code normalization reads the program with acorn,
//! which knows no TypeScript, so a program acorn refuses gets its types blanked here first,
//! by the same code the worker uses (codemode-typestrip), every line and column kept.

use codemode_pool::protocol::FailureCode;
use codemode_typestrip::StripError;
use napi_derive::napi;

/// What [`strip_types`] made of a program.
#[napi(object)]
pub struct Stripped {
    /// The program with its types blanked; absent when it does not parse as TypeScript or uses
    /// a construct that cannot be stripped.
    pub code: Option<String>,
    /// `TYPESCRIPT_UNSUPPORTED`'s text, naming the construct and its line.
    pub refused: Option<String>,
    /// The 1-based line of the refused construct.
    pub line: Option<u32>,
}

/// Blanks the TypeScript types of `code` (see codemode-typestrip).
#[napi]
pub fn strip_types(code: String) -> Stripped {
    match codemode_typestrip::strip(&code) {
        Ok(js) => Stripped {
            code: Some(js),
            refused: None,
            line: None,
        },
        Err(StripError::Refused(r)) => {
            let line = r.line.to_string();
            Stripped {
                code: None,
                refused: Some(FailureCode::TypeScriptUnsupported.render(&[
                    ("construct", r.construct),
                    ("line", &line),
                    ("instead", r.instead),
                ])),
                line: Some(r.line),
            }
        }
        Err(StripError::Syntax { .. }) => Stripped {
            code: None,
            refused: None,
            line: None,
        },
    }
}
