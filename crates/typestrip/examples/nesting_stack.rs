//! Measures how deep each nesting shape can go before oxc (the JavaScript parse the worker makes,
//! and the TypeScript parse plus blanking of `strip`) overflows a thread's stack. Each trial runs
//! in a child process, since an overflow aborts the process.
//!
//! `cargo run --release -p codemode-typestrip --features measure --example nesting_stack [stack_kib]`
//! prints, per shape, the deepest nesting each stage survives on a `stack_kib` stack, the stack
//! that costs per level, and how many levels `nesting::check` counts for 1,000 levels of it.
//! `... --example nesting_stack corpus < files` prints the count of each file named on stdin.

use std::process::Command;

use oxc_allocator::Allocator;
use oxc_parser::Parser;
use oxc_span::SourceType;

fn rep(s: &str, n: usize) -> String {
    s.repeat(n)
}

/// `before`, `open` `n` times, `middle`, `close` `n` times, `after`.
fn nest(
    before: &str,
    open: &str,
    middle: &str,
    close: &str,
    after: &str,
    n: usize,
) -> Option<String> {
    Some(format!(
        "{before}{}{middle}{}{after}",
        rep(open, n),
        rep(close, n)
    ))
}

fn shape(name: &str, n: usize) -> Option<String> {
    match name {
        "paren" => nest("async () => ", "(", "1", ")", "", n),
        "array" => nest("async () => ", "[", "", "]", "", n),
        "object" => nest("async () => (", "{a:", "1", "}", ")", n),
        "block" => nest("async () => { ", "{", "", "}", " }", n),
        "arrow" => nest("async () => ", "a=>", "1", "", "", n),
        "minus" => nest("async () => ", "- ", "1", "", "", n),
        "not" => nest("async () => ", "!", "1", "", "", n),
        "typeof" => nest("async () => ", "typeof ", "1", "", "", n),
        "await" => nest("async () => ", "await ", "1", "", "", n),
        "new" => nest("async () => ", "new ", "X", "", "", n),
        "cond" => nest("async () => ", "a?b:", "c", "", "", n),
        "cond_mid" => nest("async () => ", "a?", "b", ":c", "", n),
        "assign" => nest("async () => { ", "a=", "1", "", " }", n),
        "exp" => nest("async () => ", "2**", "2", "", "", n),
        "template" => nest("async () => ", "`${", "1", "}`", "", n),
        "member" => nest("async () => x", ".y", "", "", "", n),
        "call" => nest("async () => f", "()", "", "", "", n),
        "index" => nest("async () => x", "[0]", "", "", "", n),
        "optional" => nest("async () => x", "?.y", "", "", "", n),
        "tagged" => nest("async () => f", "`x`", "", "", "", n),
        "binary" => nest("async () => 1", "+1", "", "", "", n),
        "logical" => nest("async () => a", "&&a", "", "", "", n),
        "comma" => nest("async () => (1", ",1", ")", "", "", n),
        "if" => nest("async () => { ", "if(a)", ";", "", " }", n),
        "elseif" => nest("async () => { ", "if(a){}else ", "{}", "", " }", n),
        "while" => nest("async () => { ", "while(a)", ";", "", " }", n),
        "for" => nest("async () => { ", "for(;;)", ";", "", " }", n),
        "label" => Some(format!(
            "async () => {{ {}; }}",
            (0..n).map(|i| format!("l{i}:")).collect::<String>()
        )),
        "yield" => nest("async () => function*(){", "yield ", "1}", "", "", n),
        "decorator" => nest("async () => { ", "@d ", "class A{}", "", " }", n),
        "ts_generic" => nest("async () => { let x: ", "A<", "B", ">", " }", n),
        "ts_generic_comma" => nest("async () => { let x: ", "A<B,", "B", ">", " }", n),
        "ts_cond" => nest(
            "async () => { type T = ",
            "A extends B ? C : ",
            "D",
            "",
            " }",
            n,
        ),
        "ts_keyof" => nest("async () => { type T = ", "keyof ", "A", "", " }", n),
        "ts_array" => nest("async () => { type T = A", "[]", "", "", " }", n),
        "ts_union" => nest("async () => { type T = A", "|A", "", "", " }", n),
        "ts_fn" => nest("async () => { type T = ", "() => ", "A", "", " }", n),
        "ts_assert" => nest("async () => ", "<T>", "x", "", "", n),
        "ts_as" => nest("async () => x", " as T", "", "", "", n),
        "ts_nonnull" => nest("async () => x", "!", "", "", "", n),
        _ => None,
    }
}

const SHAPES: &[&str] = &[
    "paren",
    "array",
    "object",
    "block",
    "arrow",
    "minus",
    "not",
    "typeof",
    "await",
    "new",
    "cond",
    "cond_mid",
    "assign",
    "exp",
    "template",
    "member",
    "call",
    "index",
    "optional",
    "tagged",
    "binary",
    "logical",
    "comma",
    "if",
    "elseif",
    "while",
    "for",
    "label",
    "yield",
    "decorator",
    "ts_generic",
    "ts_generic_comma",
    "ts_cond",
    "ts_keyof",
    "ts_array",
    "ts_union",
    "ts_fn",
    "ts_assert",
    "ts_as",
    "ts_nonnull",
];

fn trial(stage: &str, code: &str) {
    match stage {
        "js" => {
            let allocator = Allocator::default();
            let ret = Parser::new(&allocator, code, SourceType::mjs()).parse();
            std::hint::black_box(ret.program.body.len());
        }
        _ => {
            let r = codemode_typestrip::strip_without_nesting_bound(code);
            std::hint::black_box(r.is_ok());
        }
    }
}

fn survives(exe: &str, shape: &str, n: usize, kib: usize, stage: &str) -> bool {
    Command::new(exe)
        .args(["one", shape, &n.to_string(), &kib.to_string(), stage])
        .stderr(std::process::Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Where a predicate monotone on `lo..=hi` turns: `holds(lo)` is taken as true and `holds(hi)`
/// as false; returns the last value where it holds and the first where it does not.
fn bisect(mut lo: usize, mut hi: usize, holds: impl Fn(usize) -> bool) -> (usize, usize) {
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if holds(mid) {
            lo = mid
        } else {
            hi = mid
        }
    }
    (lo, hi)
}

/// The levels the nesting count gives `code`: the smallest limit it passes.
fn levels(code: &str) -> usize {
    let passes = |limit: usize| codemode_typestrip::nesting::check(code, limit as u32).is_ok();
    if passes(0) {
        return 0;
    }
    bisect(0, 1 << 24, |limit| !passes(limit)).1
}

/// The levels the nesting count gives a shape at depth `n`.
fn counted(shape_name: &str, n: usize) -> usize {
    levels(&shape(shape_name, n).unwrap_or_default())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("corpus") {
        // Every file named on stdin: its count, to see what real code reaches.
        let mut all = Vec::new();
        for line in std::io::stdin().lines().map_while(Result::ok) {
            let Ok(code) = std::fs::read_to_string(&line) else {
                continue;
            };
            all.push((levels(&code), code.len(), line));
        }
        all.sort();
        for (d, len, f) in all.iter().rev().take(25) {
            println!("{d:>6} {len:>9} {f}");
        }
        let n = all.len();
        if n > 0 {
            println!(
                "files {n}; median {}; p99 {}; max {}",
                all[n / 2].0,
                all[n * 99 / 100].0,
                all[n - 1].0
            );
        }
        return;
    }
    if args.get(1).map(String::as_str) == Some("one") {
        let (name, n, kib, stage) = (
            &args[2],
            args[3].parse().unwrap(),
            args[4].parse::<usize>().unwrap(),
            args[5].clone(),
        );
        let code = shape(name, n).unwrap();
        let h = std::thread::Builder::new()
            .stack_size(kib * 1024)
            .spawn(move || trial(&stage, &code))
            .unwrap();
        h.join().unwrap();
        return;
    }
    let kib: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1024);
    let exe = &args[0];
    let cap = 1 << 17;
    println!("stack {kib} KiB; deepest surviving n (cap {cap}), and stack bytes per level");
    for s in SHAPES {
        let mut line = format!("{s:18}");
        for stage in ["js", "ts"] {
            if survives(exe, s, cap, kib, stage) {
                line.push_str(&format!("  {stage}: >= {cap:>7}        "));
                continue;
            }
            let (lo, _) = bisect(0, cap, |n| survives(exe, s, n, kib, stage));
            line.push_str(&format!(
                "  {stage}: {lo:>7} ({:>5} B)",
                kib * 1024 / lo.max(1)
            ));
        }
        let c = counted(s, 1000);
        line.push_str(&format!("  counted at 1000: {c}"));
        println!("{line}");
    }
}
