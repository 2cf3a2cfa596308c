//! The entry contract: optional `import` declarations followed by exactly one expression.
//!
//! The program is parsed with oxc; when it has the right shape, the expression is rewritten in
//! place into `export default (<expr>\n);` so V8 can compile the whole program as one ES module
//! (imports resolve through the module map) and the worker reads the function off the module's
//! namespace. The rewrite adds no lines before the expression, so V8's line numbers still match
//! what the model wrote.

use oxc_allocator::Allocator;
use oxc_ast::ast::Statement;
use oxc_parser::Parser;
use oxc_span::{GetSpan, SourceType};

#[derive(Debug, PartialEq, Eq)]
pub enum EntryError {
    /// oxc's description of the first syntax error.
    Syntax(String),
    /// What was found instead of one expression (completes "Found ...").
    Shape(String),
}

/// Returns the module source that default-exports the program's expression.
pub fn to_module_source(code: &str) -> Result<String, EntryError> {
    let allocator = Allocator::default();
    let ret = Parser::new(&allocator, code, SourceType::mjs()).parse();
    if let Some(first) = ret.diagnostics.errors().next() {
        return Err(EntryError::Syntax(first.to_string()));
    }
    if ret.panicked {
        return Err(EntryError::Syntax(
            "the parser could not read the code".into(),
        ));
    }
    let mut expression = None;
    let mut others = Vec::new();
    for stmt in ret.program.body.iter() {
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
        let found = if ret.program.directives.is_empty() {
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
    out.push_str("export default (");
    out.push_str(&code[e0..e1]);
    out.push_str("\n);");
    out.push_str(&code[s1..]);
    Ok(out)
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
        let src = to_module_source("async () => 1").unwrap();
        assert_eq!(src, "export default (async () => 1\n);");
    }

    #[test]
    fn keeps_imports_and_line_numbers() {
        let code = "import { a } from './a.js'\n\nasync () => a;\n";
        let src = to_module_source(code).unwrap();
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
            Err(EntryError::Syntax(_))
        ));
    }
}
