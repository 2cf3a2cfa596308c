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

fn shape(name: &str, n: usize) -> Option<String> {
    let e = |x: String| Some(format!("async () => {x}"));
    let b = |x: String| Some(format!("async () => {{ {x} }}"));
    match name {
        "paren" => e(format!("{}1{}", rep("(", n), rep(")", n))),
        "array" => e(format!("{}{}", rep("[", n), rep("]", n))),
        "object" => e(format!("({}1{})", rep("{a:", n), rep("}", n))),
        "block" => b(format!("{}{}", rep("{", n), rep("}", n))),
        "arrow" => e(format!("{}1", rep("a=>", n))),
        "minus" => e(format!("{}1", rep("- ", n))),
        "not" => e(format!("{}1", rep("!", n))),
        "typeof" => e(format!("{}1", rep("typeof ", n))),
        "await" => e(format!("{}1", rep("await ", n))),
        "new" => e(format!("{}X", rep("new ", n))),
        "cond" => e(format!("{}c", rep("a?b:", n))),
        "cond_mid" => e(format!("{}b{}", rep("a?", n), rep(":c", n))),
        "assign" => b(format!("{}1", rep("a=", n))),
        "exp" => e(format!("{}2", rep("2**", n))),
        "template" => e(format!("{}1{}", rep("`${", n), rep("}`", n))),
        "member" => e(format!("x{}", rep(".y", n))),
        "call" => e(format!("f{}", rep("()", n))),
        "index" => e(format!("x{}", rep("[0]", n))),
        "optional" => e(format!("x{}", rep("?.y", n))),
        "tagged" => e(format!("f{}", rep("`x`", n))),
        "binary" => e(format!("1{}", rep("+1", n))),
        "logical" => e(format!("a{}", rep("&&a", n))),
        "comma" => e(format!("(1{})", rep(",1", n))),
        "if" => b(format!("{};", rep("if(a)", n))),
        "elseif" => b(format!("{}{{}}", rep("if(a){}else ", n))),
        "while" => b(format!("{};", rep("while(a)", n))),
        "for" => b(format!("{};", rep("for(;;)", n))),
        "label" => b((0..n).map(|i| format!("l{i}:")).collect::<String>() + ";"),
        "yield" => e(format!("function*(){{{}1}}", rep("yield ", n))),
        "decorator" => b(format!("{}class A{{}}", rep("@d ", n))),
        "ts_generic" => b(format!("let x: {}B{}", rep("A<", n), rep(">", n))),
        "ts_generic_comma" => b(format!("let x: {}B{}", rep("A<B,", n), rep(">", n))),
        "ts_cond" => b(format!("type T = {}D", rep("A extends B ? C : ", n))),
        "ts_keyof" => b(format!("type T = {}A", rep("keyof ", n))),
        "ts_array" => b(format!("type T = A{}", rep("[]", n))),
        "ts_union" => b(format!("type T = A{}", rep("|A", n))),
        "ts_fn" => b(format!("type T = {}A", rep("() => ", n))),
        "ts_assert" => e(format!("{}x", rep("<T>", n))),
        "ts_as" => e(format!("x{}", rep(" as T", n))),
        "ts_nonnull" => e(format!("x{}", rep("!", n))),
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
