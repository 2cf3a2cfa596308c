//! TypeScript in, JavaScript out, every position kept: the types are blanked, not compiled away.
//!
//! One file for the blanking visitor: each TypeScript construct sits beside the span it blanks
//! and the repair the blank needs, and all of them share the blanker's state (the spans to blank,
//! the repairs pending), so split by construct a repair would stand apart from the blank it
//! repairs. The tests are in tests.rs.
//!
//! The program is parsed as TypeScript with oxc and every type-only span (annotations, type
//! parameters and arguments, `interface` and `type` declarations, `declare` items, the type half
//! of `as` / `satisfies`, non-null `!`, type-only imports and exports, `implements`, modifiers
//! such as `private`, overload signatures, `this` parameters) is replaced with spaces. Line
//! terminators stay where they were and each character becomes as many spaces as it has UTF-16
//! units, so V8's line and column of anything in the output are the line and column of the same
//! thing in the input (the approach of ts-blank-space and Node's strip-only mode).
//!
//! Blanking can change how the rest parses in a few places; each is repaired in place:
//! - a statement removed whole (`interface`, `type`, a `declare`d item, an overload) becomes `;`
//!   plus spaces, so the previous line cannot run on into the next;
//! - `x as T` ending a statement without its own `;` gets one where `as` was, so a next line
//!   starting with `(` or `[` does not become a call or an index of `x`;
//! - an arrow's return type that spans lines moves the parameters' `)` to the end of the type,
//!   since no line break may stand between `)` and `=>`.
//!
//! What has no JavaScript once its types are gone (enums, namespaces with values, parameter
//! properties, decorators, `import x = require()`, `export =`) is refused by name and line.

pub mod nesting;

pub use nesting::TooDeep;

use oxc_allocator::Allocator;
use oxc_ast::ast::*;
use oxc_ast_visit::{walk, Visit};
use oxc_parser::{ParseOptions, Parser};
use oxc_span::{GetSpan, SourceType, Span};

/// TypeScript that cannot be run by removing its types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// What was found, e.g. "an `enum`".
    pub construct: &'static str,
    /// 1-based line of the construct.
    pub line: u32,
    /// What to write instead.
    pub instead: &'static str,
}

impl Refusal {
    /// TYPESCRIPT_UNSUPPORTED's text; `what` begins it ("The code", "The module \"./a.ts\"").
    pub fn text(&self, what: &str) -> String {
        codemode_protocol::FailureCode::TypeScriptUnsupported.render(&[
            ("what", what),
            ("construct", self.construct),
            ("line", &self.line.to_string()),
            ("instead", self.instead),
        ])
    }
}

/// Why [`strip`] gave no JavaScript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StripError {
    /// The code does not parse as TypeScript either: oxc's text, and where (1-based line,
    /// 1-based UTF-16 column), and the byte offset (to compare with another parser's).
    Syntax {
        message: String,
        line: u32,
        column: u32,
        offset: u32,
    },
    Refused(Refusal),
    /// The code nests more deeply than `limits::NESTING_LEVELS` ([`nesting`]); it was not parsed.
    TooDeep(TooDeep),
}

/// Parses `code` as a TypeScript module and returns it with its types blanked. Code nested past
/// `limits::NESTING_LEVELS` is refused before the parser sees it (the parser and the visitor
/// recurse per level).
pub fn strip(code: &str) -> Result<String, StripError> {
    check_nesting(code).map_err(StripError::TooDeep)?;
    strip_unbounded(code)
}

/// [`strip`] without the nesting bound, for `examples/nesting_stack.rs` to measure what the
/// parser and the visitor survive (feature `measure`; never for code a program wrote).
#[cfg(feature = "measure")]
#[doc(hidden)]
pub fn strip_without_nesting_bound(code: &str) -> Result<String, StripError> {
    strip_unbounded(code)
}

fn strip_unbounded(code: &str) -> Result<String, StripError> {
    let allocator = Allocator::default();
    let ret = Parser::new(&allocator, code, SourceType::ts())
        .with_options(ParseOptions {
            // A body written without its function is the entry shape's problem, reported by
            // the JavaScript parse of the output; it still has types to remove.
            allow_return_outside_function: true,
            ..ParseOptions::default()
        })
        .parse();
    if let Some(first) = ret.diagnostics.errors().next() {
        let offset = first.labels.first().map(|l| l.offset()).unwrap_or_default();
        let (line, column) = line_column(code, offset as usize);
        return Err(StripError::Syntax {
            message: first.message.to_string(),
            line,
            column,
            offset,
        });
    }
    if ret.panicked {
        return Err(StripError::Syntax {
            message: "the parser could not read the code".into(),
            line: 1,
            column: 1,
            offset: 0,
        });
    }
    let mut blanker = Blanker {
        src: code,
        blank: Vec::new(),
        put: Vec::new(),
        refusal: None,
    };
    blanker.visit_program(&ret.program);
    if let Some((construct, offset, instead)) = blanker.refusal {
        let (line, _) = line_column(code, offset as usize);
        return Err(StripError::Refused(Refusal {
            construct,
            line,
            instead,
        }));
    }
    Ok(blanker.render())
}

/// [`nesting::check`] against the bound every parse of a program or module is held to.
pub fn check_nesting(code: &str) -> Result<(), TooDeep> {
    nesting::check(code, codemode_protocol::limits::NESTING_LEVELS)
}

/// 1-based line and 1-based UTF-16 column of byte `offset` in `code`.
pub fn line_column(code: &str, offset: usize) -> (u32, u32) {
    let offset = offset.min(code.len());
    let mut line = 1u32;
    let mut column = 1u32;
    let mut chars = code.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if i >= offset {
            break;
        }
        match c {
            '\r' => {
                if !matches!(chars.peek(), Some((_, '\n'))) {
                    line += 1;
                    column = 1;
                } else {
                    column += 1;
                }
            }
            '\n' | '\u{2028}' | '\u{2029}' => {
                line += 1;
                column = 1;
            }
            c => column += c.len_utf16() as u32,
        }
    }
    (line, column)
}

fn is_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

const MODIFIERS: &[&str] = &[
    "public",
    "private",
    "protected",
    "readonly",
    "override",
    "declare",
    "abstract",
];

struct Blanker<'s> {
    src: &'s str,
    /// Byte ranges to blank.
    blank: Vec<(u32, u32)>,
    /// A character written instead of the blank at a byte offset (inside a blanked range).
    put: Vec<(u32, char)>,
    /// The first construct that cannot be stripped: (what, byte offset, what instead).
    refusal: Option<(&'static str, u32, &'static str)>,
}

impl<'s> Blanker<'s> {
    fn render(mut self) -> String {
        if self.blank.is_empty() {
            return self.src.to_string();
        }
        self.blank.sort_unstable();
        self.put.sort_unstable();
        let mut out = String::with_capacity(self.src.len());
        let (mut r, mut p) = (0usize, 0usize);
        for (i, c) in self.src.char_indices() {
            let i = i as u32;
            while r < self.blank.len() && self.blank[r].1 <= i {
                r += 1;
            }
            let blanked = r < self.blank.len() && self.blank[r].0 <= i;
            while p < self.put.len() && self.put[p].0 < i {
                p += 1;
            }
            if !blanked || is_line_terminator(c) {
                out.push(c);
                continue;
            }
            let mut width = c.len_utf16();
            if p < self.put.len() && self.put[p].0 == i {
                out.push(self.put[p].1);
                width -= 1;
            }
            for _ in 0..width {
                out.push(' ');
            }
        }
        out
    }

    fn blank(&mut self, start: u32, end: u32) {
        if start < end {
            self.blank.push((start, end));
        }
    }

    fn blank_span(&mut self, span: Span) {
        self.blank(span.start, span.end);
    }

    /// A whole statement or class member: blanked, with a `;` where it began.
    fn blank_statement(&mut self, span: Span) {
        self.blank_span(span);
        self.put.push((span.start, ';'));
    }

    fn refuse(&mut self, construct: &'static str, offset: u32, instead: &'static str) {
        if self.refusal.is_none() {
            self.refusal = Some((construct, offset, instead));
        }
    }

    /// The offset of the first non-whitespace character at or after `from`.
    fn skip_space(&self, from: u32) -> u32 {
        let rest = &self.src[from as usize..];
        let skipped = rest.len() - rest.trim_start().len();
        from + skipped as u32
    }

    /// Blanks `span` and the `,` that follows it (a list item removed from its list).
    /// An export list: the whole statement when it is `export type`, else its type-only
    /// specifiers.
    fn blank_type_exports(
        &mut self,
        kind: ImportOrExportKind,
        span: Span,
        specifiers: &[ExportSpecifier],
    ) {
        if kind.is_type() {
            self.blank_statement(span);
            return;
        }
        for s in specifiers {
            if s.export_kind.is_type() {
                self.blank_item(s.span);
            }
        }
    }

    fn blank_item(&mut self, span: Span) {
        self.blank_span(span);
        let next = self.skip_space(span.end);
        if self.src[next as usize..].starts_with(',') {
            self.blank(next, next + 1);
        }
    }

    /// Blanks a `?` or `!` written after position `from` (skipping a computed key's `]`).
    fn blank_mark_after(&mut self, from: u32, computed: bool, mark: char) {
        let mut at = self.skip_space(from);
        if computed && self.src[at as usize..].starts_with(']') {
            at = self.skip_space(at + 1);
        }
        if self.src[at as usize..].starts_with(mark) {
            self.blank(at, at + 1);
        }
    }

    /// Blanks the TypeScript-only modifier words between `start` and `end` (a class member's
    /// start and its key), leaving `static`, `async`, `get`, `set`, `accessor` and `*`.
    fn blank_modifiers(&mut self, start: u32, end: u32) {
        let region = &self.src[start as usize..end as usize];
        let bytes = region.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i].is_ascii_alphabetic() {
                let j = i + bytes[i..]
                    .iter()
                    .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_' || **b == b'$')
                    .count();
                if MODIFIERS.contains(&&region[i..j]) {
                    self.blank(start + i as u32, start + j as u32);
                }
                i = j;
            } else {
                i += 1;
            }
        }
    }

    fn namespace_has_values(body: &TSNamespaceDeclarationBody) -> bool {
        match body {
            TSNamespaceDeclarationBody::TSNamespaceDeclaration(inner) => {
                Self::namespace_has_values(&inner.body)
            }
            TSNamespaceDeclarationBody::TSModuleBlock(block) => {
                block.body.iter().any(|s| match s {
                    Statement::TSInterfaceDeclaration(_) | Statement::TSTypeAliasDeclaration(_) => {
                        false
                    }
                    Statement::TSNamespaceDeclaration(n) => {
                        !n.declare && Self::namespace_has_values(&n.body)
                    }
                    Statement::ExportDeclaration(e) => match &e.declaration {
                        Declaration::TSInterfaceDeclaration(_)
                        | Declaration::TSTypeAliasDeclaration(_) => false,
                        Declaration::TSNamespaceDeclaration(n) => {
                            !n.declare && Self::namespace_has_values(&n.body)
                        }
                        _ => true,
                    },
                    _ => true,
                })
            }
        }
    }

    /// Whether a declaration exists only for the type checker (removed whole); refuses the
    /// ones with a runtime meaning stripping cannot give.
    fn type_only_declaration(&mut self, decl: &Declaration) -> bool {
        match decl {
            Declaration::TSTypeAliasDeclaration(_) | Declaration::TSInterfaceDeclaration(_) => true,
            Declaration::VariableDeclaration(v) => v.declare,
            Declaration::FunctionDeclaration(f) => f.declare || f.body.is_none(),
            Declaration::ClassDeclaration(c) => c.declare,
            Declaration::TSEnumDeclaration(e) => {
                if !e.declare {
                    self.refuse(
                        "an `enum`",
                        e.span.start,
                        "a plain object instead (`const Color = { Red: 'red', Blue: 'blue' } as const`), or a union of string literals for the type",
                    );
                }
                e.declare
            }
            Declaration::TSExternalModuleDeclaration(_) | Declaration::TSGlobalDeclaration(_) => {
                true
            }
            Declaration::TSNamespaceDeclaration(n) => {
                if n.declare || !Self::namespace_has_values(&n.body) {
                    return true;
                }
                self.refuse(
                    "a `namespace` that holds values",
                    n.span.start,
                    "plain objects or functions instead (`const Geometry = { area(r) { ... } }`)",
                );
                true
            }
            Declaration::TSImportEqualsDeclaration(i) => {
                if i.import_kind.is_type() {
                    return true;
                }
                self.refuse(
                    "`import ... = require(...)`",
                    i.span.start,
                    "an `import` declaration instead (`import x from 'x'`), naming a module of the run's module map",
                );
                true
            }
        }
    }

    fn class_implements(&mut self, class: &Class) {
        let (Some(first), Some(last)) = (class.implements.first(), class.implements.last()) else {
            return;
        };
        let head = &self.src[class.span.start as usize..first.span.start as usize];
        if let Some(at) = head.rfind("implements") {
            self.blank(class.span.start + at as u32, last.span.end);
        }
    }
}

impl<'a> Visit<'a> for Blanker<'_> {
    fn visit_statement(&mut self, it: &Statement<'a>) {
        match it {
            Statement::TSTypeAliasDeclaration(_)
            | Statement::TSInterfaceDeclaration(_)
            | Statement::TSEnumDeclaration(_)
            | Statement::TSExternalModuleDeclaration(_)
            | Statement::TSNamespaceDeclaration(_)
            | Statement::TSGlobalDeclaration(_)
            | Statement::TSImportEqualsDeclaration(_)
            | Statement::VariableDeclaration(_)
            | Statement::FunctionDeclaration(_)
            | Statement::ClassDeclaration(_) => {
                let decl = it.as_declaration().map(|d| self.type_only_declaration(d));
                if decl == Some(true) {
                    self.blank_statement(it.span());
                    return;
                }
            }
            Statement::ImportDeclaration(i) => {
                if i.import_kind.is_type() {
                    self.blank_statement(i.span);
                    return;
                }
                for s in i.specifiers.iter().flatten() {
                    if let ImportDeclarationSpecifier::ImportSpecifier(s) = s {
                        if s.import_kind.is_type() {
                            self.blank_item(s.span);
                        }
                    }
                }
                return;
            }
            Statement::ExportDeclaration(e) if self.type_only_declaration(&e.declaration) => {
                self.blank_statement(e.span);
                return;
            }
            Statement::ExportNamedDeclaration(e) => {
                self.blank_type_exports(e.export_kind, e.span, &e.specifiers);
                return;
            }
            Statement::ExportFromDeclaration(e) => {
                self.blank_type_exports(e.export_kind, e.span, &e.specifiers);
                return;
            }
            Statement::ExportAllDeclaration(e) => {
                if e.export_kind.is_type() {
                    self.blank_statement(e.span);
                }
                return;
            }
            Statement::ExportDefaultDeclaration(e)
                if matches!(
                    e.declaration,
                    ExportDefaultDeclarationKind::TSInterfaceDeclaration(_)
                ) =>
            {
                self.blank_statement(e.span);
                return;
            }
            Statement::TSExportAssignment(e) => {
                self.refuse(
                    "`export =`",
                    e.span.start,
                    "an ES export instead (`export default ...`)",
                );
                return;
            }
            Statement::TSNamespaceExportDeclaration(e) => {
                self.blank_statement(e.span);
                return;
            }
            Statement::ExpressionStatement(s) => {
                // `x as T` ending the statement without a `;`: keep the next line from
                // continuing the expression once `as T` is gone.
                let tail = match &s.expression {
                    Expression::TSAsExpression(a) => Some(a.expression.span().end),
                    Expression::TSSatisfiesExpression(a) => Some(a.expression.span().end),
                    _ => None,
                };
                if let Some(tail) = tail {
                    if s.span.end == s.expression.span().end {
                        let at = self.skip_space(tail);
                        self.put.push((at, ';'));
                    }
                }
            }
            _ => {}
        }
        walk::walk_statement(self, it);
    }

    fn visit_ts_type_annotation(&mut self, it: &TSTypeAnnotation<'a>) {
        self.blank_span(it.span);
    }

    fn visit_ts_type_parameter_declaration(&mut self, it: &TSTypeParameterDeclaration<'a>) {
        self.blank_span(it.span);
    }

    fn visit_ts_type_parameter_instantiation(&mut self, it: &TSTypeParameterInstantiation<'a>) {
        self.blank_span(it.span);
    }

    fn visit_ts_this_parameter(&mut self, it: &TSThisParameter<'a>) {
        self.blank_item(it.span);
    }

    fn visit_ts_as_expression(&mut self, it: &TSAsExpression<'a>) {
        self.blank(it.expression.span().end, it.span.end);
        self.visit_expression(&it.expression);
    }

    fn visit_ts_satisfies_expression(&mut self, it: &TSSatisfiesExpression<'a>) {
        self.blank(it.expression.span().end, it.span.end);
        self.visit_expression(&it.expression);
    }

    fn visit_ts_non_null_expression(&mut self, it: &TSNonNullExpression<'a>) {
        self.blank(it.span.end.saturating_sub(1), it.span.end);
        self.visit_expression(&it.expression);
    }

    fn visit_ts_type_assertion(&mut self, it: &TSTypeAssertion<'a>) {
        self.blank(it.span.start, it.expression.span().start);
        self.visit_expression(&it.expression);
    }

    fn visit_ts_instantiation_expression(&mut self, it: &TSInstantiationExpression<'a>) {
        self.blank_span(it.type_arguments.span);
        self.visit_expression(&it.expression);
    }

    fn visit_decorator(&mut self, it: &Decorator<'a>) {
        self.refuse(
            "a decorator (`@...`)",
            it.span.start,
            "a plain call instead: pass the class or function to the decorator function yourself",
        );
    }

    fn visit_formal_parameter(&mut self, it: &FormalParameter<'a>) {
        if it.accessibility.is_some() || it.readonly || it.r#override {
            self.refuse(
                "a parameter property (`constructor(private x)`)",
                it.span.start,
                "the field in the class body and an assignment in the constructor instead (`x; constructor(x) { this.x = x }`)",
            );
        }
        if it.optional {
            self.blank_mark_after(it.pattern.span().end, false, '?');
        }
        walk::walk_formal_parameter(self, it);
    }

    fn visit_variable_declarator(&mut self, it: &VariableDeclarator<'a>) {
        if it.definite {
            self.blank_mark_after(it.id.span().end, false, '!');
        }
        walk::walk_variable_declarator(self, it);
    }

    fn visit_arrow_function_expression(&mut self, it: &ArrowFunctionExpression<'a>) {
        if let Some(ret) = &it.return_type {
            let text = &self.src[ret.span.start as usize..ret.span.end as usize];
            let close = it.params.span.end.saturating_sub(1);
            if text.contains(is_line_terminator) && self.src.as_bytes()[close as usize] == b')' {
                // `(a): \n T => a`: the `)` moves to where the type ends.
                self.blank(close, close + 1);
                let last = text
                    .char_indices()
                    .rev()
                    .find(|(_, c)| !c.is_whitespace())
                    .map(|(i, _)| ret.span.start + i as u32);
                if let Some(last) = last {
                    self.put.push((last, ')'));
                }
            }
        }
        walk::walk_arrow_function_expression(self, it);
    }

    fn visit_class(&mut self, it: &Class<'a>) {
        if it.r#abstract {
            let head = &self.src[it.span.start as usize..it.body.span.start as usize];
            if let Some(at) = head.find("abstract") {
                let at = it.span.start + at as u32;
                self.blank(at, at + "abstract".len() as u32);
            }
        }
        self.class_implements(it);
        walk::walk_class(self, it);
    }

    fn visit_class_element(&mut self, it: &ClassElement<'a>) {
        match it {
            ClassElement::TSIndexSignature(s) => {
                self.blank_statement(s.span);
                return;
            }
            ClassElement::MethodDefinition(m) => {
                if m.r#type == MethodDefinitionType::TSAbstractMethodDefinition
                    || m.value.body.is_none()
                {
                    self.blank_statement(m.span);
                    return;
                }
                self.blank_modifiers(m.span.start, m.key.span().start);
                if m.optional {
                    self.blank_mark_after(m.key.span().end, m.computed, '?');
                }
            }
            ClassElement::PropertyDefinition(p) => {
                if p.declare || p.r#type == PropertyDefinitionType::TSAbstractPropertyDefinition {
                    self.blank_statement(p.span);
                    return;
                }
                self.blank_modifiers(p.span.start, p.key.span().start);
                if p.optional {
                    self.blank_mark_after(p.key.span().end, p.computed, '?');
                }
                if p.definite {
                    self.blank_mark_after(p.key.span().end, p.computed, '!');
                }
            }
            ClassElement::AccessorProperty(p) => {
                if p.r#type == AccessorPropertyType::TSAbstractAccessorProperty {
                    self.blank_statement(p.span);
                    return;
                }
                self.blank_modifiers(p.span.start, p.key.span().start);
                if p.definite {
                    self.blank_mark_after(p.key.span().end, p.computed, '!');
                }
            }
            ClassElement::StaticBlock(_) => {}
        }
        walk::walk_class_element(self, it);
    }
}

#[cfg(test)]
mod tests;
