use super::*;

fn ok(code: &str) -> String {
    match strip(code) {
        Ok(js) => {
            let allocator = Allocator::default();
            let ret = Parser::new(&allocator, &js, SourceType::mjs()).parse();
            assert!(
                ret.diagnostics.errors().next().is_none(),
                "not JavaScript:\n{js}"
            );
            js
        }
        Err(e) => panic!("{code:?} did not strip: {e:?}"),
    }
}

/// `code` stripped: JavaScript, each output line the same UTF-16 length as its input line.
fn stripped(code: &str) -> String {
    let js = ok(code);
    let a: Vec<usize> = code.split('\n').map(|l| l.encode_utf16().count()).collect();
    let b: Vec<usize> = js.split('\n').map(|l| l.encode_utf16().count()).collect();
    assert_eq!(a, b, "layout changed:\n{code}\n---\n{js}");
    js
}

#[test]
fn plain_javascript_is_unchanged() {
    let code = "async () => { const a = [1, 2]; return a.map((x) => x * 2) }";
    assert_eq!(ok(code), code);
}

#[test]
fn blanks_annotations_generics_and_assertions() {
    let js = stripped("async (n: number): Promise<number> => {\n  const xs: Array<number> = [n]\n  const m = new Map<string, number>()\n  const y = (xs[0] as number) satisfies number\n  return first<number>(xs)! + m.size\n}");
    assert!(!js.contains("number"), "{js}");
    assert!(!js.contains("satisfies"), "{js}");
    assert!(js.contains("(xs[0]          )"), "{js}");
    assert!(js.contains("first        (xs)  +"), "{js}");
}

#[test]
fn removes_type_declarations_with_a_semicolon() {
    let js = stripped("interface A { x: number }\ntype B = A | null\nasync () => 1");
    assert!(js.starts_with(";  "), "{js}");
    assert!(js.contains("\n;"), "{js}");
    assert!(js.ends_with("async () => 1"), "{js}");
}

#[test]
fn type_only_imports_and_specifiers() {
    let js = stripped(
        "import type { T } from './t.js'\nimport { type U, v } from './u.js'\nasync () => v",
    );
    assert!(!js.contains("T }"), "{js}");
    assert!(js.contains("import {         v } from './u.js'"), "{js}");
}

#[test]
fn as_before_a_line_starting_with_a_parenthesis() {
    let js = stripped("async () => {\n  let x = 1\n  x as number\n  (globalThis as any).y = 2\n}");
    assert!(js.contains("  x ;        \n  (globalThis"), "{js}");
}

#[test]
fn multiline_arrow_return_type_moves_the_parenthesis() {
    let js = stripped("async () => {\n  const f = (a):\n    number => a\n  return f(1)\n}");
    assert!(js.contains("(a  \n         ) => a"), "{js}");
}

#[test]
fn class_modifiers_and_marks() {
    let js = stripped("async () => {\n  abstract class A implements B, C {\n    private readonly x: number = 1\n    y?: string\n    z!: number\n    declare w: number\n    abstract m(): void\n    static s(this: A, a?: number): number { return 1 }\n    constructor() {}\n  }\n  return 1\n}");
    for gone in [
        "private",
        "readonly",
        "implements",
        "abstract",
        "declare",
        "?",
        "!",
        "this",
    ] {
        assert!(!js.contains(gone), "{gone} left in {js}");
    }
    assert!(js.contains("static s("), "{js}");
}

#[test]
fn overloads_and_declare_are_removed() {
    let js = stripped("async () => {\n  function f(a: string): string\n  function f(a: any) { return a }\n  declare const g: number\n  return f('x')\n}");
    assert_eq!(js.matches("function").count(), 1, "{js}");
}

#[test]
fn refuses_what_cannot_be_stripped() {
    let cases = [
        ("async () => {\n  enum Color { Red }\n}", "an `enum`", 2),
        (
            "async () => {\n\n  namespace N { export const a = 1 }\n}",
            "a `namespace` that holds values",
            3,
        ),
        (
            "async () => {\n  class A { constructor(private x: number) {} }\n}",
            "a parameter property",
            2,
        ),
        ("async () => {\n  @dec class A {}\n}", "a decorator", 2),
        (
            "import fs = require('fs')\nasync () => 1",
            "`import ... = require(...)`",
            1,
        ),
    ];
    for (code, what, line) in cases {
        match strip(code) {
            Err(StripError::Refused(r)) => {
                assert!(r.construct.starts_with(what), "{code}: {r:?}");
                assert_eq!(r.line, line, "{code}");
            }
            other => panic!("{code}: {other:?}"),
        }
    }
    // Type-only namespaces and declared enums have nothing to run: removed.
    ok("namespace N { export type A = number }\nasync () => 1");
    ok("declare enum E { A }\nasync () => 1");
}

#[test]
fn astral_characters_keep_their_utf16_width() {
    stripped("async () => { const s: '😀' = '😀'; return s }");
}

#[test]
fn syntax_errors_say_where() {
    match strip("async () => {\n  const x: = 1\n}") {
        Err(StripError::Syntax { line, .. }) => assert_eq!(line, 2),
        other => panic!("{other:?}"),
    }
}

#[test]
fn line_column_counts_utf16() {
    assert_eq!(line_column("ab\ncd", 4), (2, 2));
    assert_eq!(line_column("😀x", 4), (1, 3));
    assert_eq!(line_column("a\r\nb", 3), (2, 1));
}
