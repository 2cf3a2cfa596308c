//! The entry contract: optional `import` declarations followed by exactly one expression.
//!
//! The program is parsed with oxc; when it has the right shape, the expression is rewritten in
//! place into `export default (<expr>\n);` so V8 can compile the whole program as one ES module
//! (imports resolve through the module map) and the worker reads the function off the module's
//! namespace. The rewrite adds no lines before the expression, so V8's line numbers still match
//! what the model wrote; [`Shift`] undoes the columns it moves on the expression's first line.
//!
//! TypeScript: code that does not parse as JavaScript is parsed again as TypeScript and, when
//! that succeeds, its types are blanked (codemode-typestrip), which keeps every line and column;
//! the rewrite then runs on the result. Plain JavaScript parses once, as before.
//!
//! Before either parse, the program's nesting is counted (codemode-typestrip's `nesting`): oxc
//! recurses per level with no depth check, so code past `limits::NESTING_LEVELS` is refused
//! unparsed instead of overflowing the worker's stack.

use codemode_typestrip::{StripError, TooDeep};
use oxc_allocator::Allocator;
use oxc_ast::ast::{Program, Statement};
use oxc_parser::{ParseOptions, Parser};
use oxc_span::{GetSpan, SourceType};

pub use codemode_typestrip::Refusal;

#[derive(Debug, PartialEq, Eq)]
pub enum EntryError {
    /// The code is not JavaScript (nor TypeScript that parses further): oxc's description of
    /// the first error, the source V8 should compile for its own text (the code, or the code
    /// with its types blanked), and whether the code would parse as a function's body (then
    /// the entry shape is what is wrong, and the text says so).
    Syntax {
        oxc: String,
        source: String,
        shape: bool,
    },
    /// TypeScript with a syntax error: oxc's text and its 1-based line and column.
    TypeScriptSyntax {
        message: String,
        line: u32,
        column: u32,
    },
    /// TypeScript that cannot run with its types removed.
    Refused(Refusal),
    /// What was found instead of one expression (completes "Found ...").
    Shape(String),
    /// Nested past the bound; not parsed.
    TooDeep(TooDeep),
}

/// The module source that default-exports the program's expression, and the column shift the
/// rewrite made.
#[derive(Debug, PartialEq, Eq)]
pub struct Entry {
    pub source: String,
    pub shift: Shift,
}

/// Where `export default (` went in: on line `line` (1-based), at UTF-16 column `column`
/// (1-based), moving what followed on that line `delta` columns to the right.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Shift {
    pub line: u32,
    pub column: u32,
    pub delta: u32,
}

impl Shift {
    /// The model's line and column for a 1-based position in the module source; `None` for a
    /// position inside the inserted `export default (` itself.
    pub fn undo(&self, line: u32, column: u32) -> Option<(u32, u32)> {
        if line != self.line || column < self.column {
            Some((line, column))
        } else if column < self.column + self.delta {
            None
        } else {
            Some((line, column - self.delta))
        }
    }
}

const EXPORT: &str = "export default (";

/// Returns the module source that default-exports the program's expression.
pub fn to_module_source(code: &str) -> Result<Entry, EntryError> {
    codemode_typestrip::check_nesting(code).map_err(EntryError::TooDeep)?;
    let allocator = Allocator::default();
    let ret = Parser::new(&allocator, code, SourceType::mjs()).parse();
    if let Some(first) = ret.diagnostics.errors().next() {
        let js_offset = first.labels.first().map(|l| l.offset()).unwrap_or(0);
        let oxc = first.to_string();
        return match codemode_typestrip::strip(code) {
            Ok(js) => from_stripped(js),
            Err(StripError::Refused(r)) => Err(EntryError::Refused(r)),
            Err(StripError::TooDeep(t)) => Err(EntryError::TooDeep(t)),
            // The TypeScript parser read further than the JavaScript one: the code is
            // TypeScript, and its error is the one to report.
            Err(StripError::Syntax {
                message,
                line,
                column,
                offset,
            }) if offset > js_offset => Err(EntryError::TypeScriptSyntax {
                message,
                line,
                column,
            }),
            Err(StripError::Syntax { .. }) => Err(EntryError::Syntax {
                oxc,
                shape: parses_as_body(code),
                source: code.to_string(),
            }),
        };
    }
    if ret.panicked {
        return Err(EntryError::Syntax {
            oxc: "the parser could not read the code".into(),
            source: code.to_string(),
            shape: false,
        });
    }
    // oxc reads decorators as JavaScript (a proposal V8 does not implement): a program that
    // may hold one is checked by the stripper, which refuses them by name and line.
    if code.contains('@') {
        if let Err(StripError::Refused(r)) = codemode_typestrip::strip(code) {
            return Err(EntryError::Refused(r));
        }
    }
    rewrite(code, &ret.program)
}

/// TypeScript with its types blanked: parsed again, as the JavaScript it now is.
fn from_stripped(js: String) -> Result<Entry, EntryError> {
    let allocator = Allocator::default();
    let ret = Parser::new(&allocator, &js, SourceType::mjs()).parse();
    if let Some(first) = ret.diagnostics.errors().next() {
        return Err(EntryError::Syntax {
            oxc: first.to_string(),
            shape: parses_as_body(&js),
            source: js,
        });
    }
    rewrite(&js, &ret.program)
}

/// Whether `code` parses once a top-level `return` is allowed: statements meant as a
/// function's body, written without the function.
fn parses_as_body(code: &str) -> bool {
    let allocator = Allocator::default();
    let ret = Parser::new(&allocator, code, SourceType::mjs())
        .with_options(ParseOptions {
            allow_return_outside_function: true,
            ..ParseOptions::default()
        })
        .parse();
    !ret.panicked && ret.diagnostics.errors().next().is_none()
}

fn rewrite(code: &str, program: &Program) -> Result<Entry, EntryError> {
    let mut expression = None;
    let mut others = Vec::new();
    for stmt in program.body.iter() {
        match stmt {
            Statement::ImportDeclaration(_) if expression.is_none() && others.is_empty() => {}
            Statement::EmptyStatement(_) => {}
            Statement::ExpressionStatement(s) if expression.is_none() && others.is_empty() => {
                expression = Some((s.span, s.expression.span()));
            }
            other => others.push(describe(other)),
        }
    }
    if !others.is_empty() {
        let found = if expression.is_some() || others.len() > 1 {
            let n = others.len() + usize::from(expression.is_some());
            format!("{n} statements ({})", others.join(", "))
        } else {
            others.remove(0)
        };
        return Err(EntryError::Shape(found));
    }
    let Some((stmt, expr)) = expression else {
        let found = if program.directives.is_empty() {
            "no expression".to_string()
        } else {
            "only a string directive".to_string()
        };
        return Err(EntryError::Shape(found));
    };
    let (s0, s1) = (stmt.start as usize, stmt.end as usize);
    let (e0, e1) = (expr.start as usize, expr.end as usize);
    let mut out = String::with_capacity(code.len() + 24);
    out.push_str(&code[..s0]);
    out.push_str(EXPORT);
    out.push_str(&code[e0..e1]);
    out.push_str("\n);");
    out.push_str(&code[s1..]);
    let (line, column) = codemode_typestrip::line_column(code, s0);
    let skipped = code[s0..e0].encode_utf16().count() as u32;
    let shift = Shift {
        line,
        column,
        delta: (EXPORT.len() as u32).saturating_sub(skipped),
    };
    Ok(Entry { source: out, shift })
}

fn describe(stmt: &Statement) -> String {
    match stmt {
        Statement::FunctionDeclaration(_) => {
            "a function declaration (write the function as an expression: `async () => { ... }`)"
                .into()
        }
        Statement::VariableDeclaration(_) => {
            "a variable declaration (declare variables inside the function body)".into()
        }
        Statement::ClassDeclaration(_) => "a class declaration".into(),
        Statement::ExportDefaultDeclaration(_)
        | Statement::ExportNamedDeclaration(_)
        | Statement::ExportAllDeclaration(_) => {
            "an export (write the bare function expression, without `export`)".into()
        }
        Statement::ImportDeclaration(_) => {
            "an import after the expression (imports must come first)".into()
        }
        Statement::ExpressionStatement(_) => "an expression statement".into(),
        Statement::ReturnStatement(_) => "a return statement".into(),
        Statement::BlockStatement(_) => "a block statement".into(),
        Statement::IfStatement(_) => "an if statement".into(),
        _ => "a statement".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_a_single_arrow() {
        let entry = to_module_source("async () => 1").unwrap();
        assert_eq!(entry.source, "export default (async () => 1\n);");
        assert_eq!(
            entry.shift,
            Shift {
                line: 1,
                column: 1,
                delta: 16
            }
        );
        assert_eq!(entry.shift.undo(1, 17), Some((1, 1)));
        assert_eq!(entry.shift.undo(1, 3), None);
        assert_eq!(entry.shift.undo(2, 17), Some((2, 17)));
    }

    #[test]
    fn keeps_imports_and_line_numbers() {
        let code = "import { a } from './a.js'\n\nasync () => a;\n";
        let src = to_module_source(code).unwrap().source;
        assert_eq!(
            src,
            "import { a } from './a.js'\n\nexport default (async () => a\n);\n"
        );
    }

    #[test]
    fn refuses_statements_and_declarations() {
        assert!(matches!(
            to_module_source("function f() {}"),
            Err(EntryError::Shape(s)) if s.contains("function declaration")
        ));
        assert!(matches!(
            to_module_source("const x = 1; async () => x"),
            Err(EntryError::Shape(s)) if s.starts_with("2 statements")
        ));
        assert!(matches!(to_module_source(""), Err(EntryError::Shape(s)) if s == "no expression"));
        assert!(matches!(
            to_module_source("export default async () => 1"),
            Err(EntryError::Shape(s)) if s.contains("export")
        ));
    }

    #[test]
    fn reports_syntax_errors() {
        assert!(matches!(
            to_module_source("async () => {"),
            Err(EntryError::Syntax { shape: false, .. })
        ));
        // A body without its function: the shape is the problem.
        assert!(matches!(
            to_module_source("const x = 1\nreturn x"),
            Err(EntryError::Syntax { shape: true, .. })
        ));
    }

    #[test]
    fn refuses_nesting_past_the_bound_unparsed() {
        let bound = codemode_protocol::limits::NESTING_LEVELS as usize;
        for code in [
            format!("async () => {}1{}", "(".repeat(20_000), ")".repeat(20_000)),
            format!("async () => {}1", "- ".repeat(20_000)),
            format!(
                "async (a: number) => {}1{}",
                "(".repeat(20_000),
                ")".repeat(20_000)
            ),
        ] {
            assert!(matches!(
                to_module_source(&code),
                Err(EntryError::TooDeep(t)) if t.line == 1 && t.limit as usize == bound
            ));
        }
        // Within the bound, oxc reads it (on the test thread's stack).
        let ok = format!(
            "async () => {}1{}",
            "(".repeat(bound - 10),
            ")".repeat(bound - 10)
        );
        assert!(to_module_source(&ok).is_ok());
    }

    #[test]
    fn strips_typescript() {
        let code = "import type { T } from './t.js'\nasync (a: number): Promise<T> => a as T";
        let entry = to_module_source(code).unwrap();
        assert!(
            entry
                .source
                .contains("export default (async (a        )             => a\n);"),
            "{}",
            entry.source
        );
        assert_eq!(entry.shift.line, 2);
        assert!(matches!(
            to_module_source("async () => {\n  enum E { A }\n}"),
            Err(EntryError::Refused(r)) if r.line == 2
        ));
        assert!(matches!(
            to_module_source("async () => {\n  const x: number = ;\n}"),
            Err(EntryError::TypeScriptSyntax { line: 2, .. })
        ));
    }
}
