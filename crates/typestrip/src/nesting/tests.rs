use super::*;

const LIMIT: u32 = 500;

fn depth(code: &str) -> u32 {
    // The count's maximum: the smallest limit the code stays within.
    let (mut lo, mut hi) = (0u32, 1 << 20);
    if check(code, 0).is_ok() {
        return 0;
    }
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if check(code, mid).is_ok() {
            hi = mid
        } else {
            lo = mid
        }
    }
    hi
}

fn refused(code: &str) -> TooDeep {
    match check(code, LIMIT) {
        Err(e) => e,
        Ok(()) => panic!("not refused (counted {}): {:.120}", depth(code), code),
    }
}

/// Asserts `code` counts fewer than `bound` levels.
fn shallow(code: &str, bound: u32) {
    assert!(depth(code) < bound, "{}", depth(code));
}

/// Asserts each of `cases` is refused, past the limit.
fn all_refused(cases: &[String]) {
    for (i, code) in cases.iter().enumerate() {
        let e = refused(code);
        assert!(e.depth > LIMIT, "case {i}");
    }
}

fn r(s: &str, n: usize) -> String {
    s.repeat(n)
}

/// `head`, then `line(i)` for each `i` below `n`, then the closing `}`.
fn statements(head: &str, n: usize, line: impl Fn(usize) -> String) -> String {
    let mut code = String::from(head);
    for i in 0..n {
        code.push_str(&line(i));
    }
    code.push('}');
    code
}

/// A nesting shape at depth `n`: `before`, `open` and `close` each `n * times` times around
/// `middle`, then `after`.
fn nest(
    before: &'static str,
    open: &'static str,
    middle: &'static str,
    close: &'static str,
    after: &'static str,
    times: usize,
) -> Box<dyn Fn(usize) -> String> {
    Box::new(move |n| {
        format!(
            "{before}{}{middle}{}{after}",
            r(open, n * times),
            r(close, n * times)
        )
    })
}

/// Each shape that makes a parser recurse, 20,000 deep: refused, and the same shape 50 deep is
/// fine.
#[test]
fn every_deep_shape_is_refused() {
    let shapes: Vec<Box<dyn Fn(usize) -> String>> = vec![
        nest("async () => ", "(", "1", ")", "", 1),
        nest("async () => ", "[", "", "]", "", 1),
        nest("async () => (", "{a:", "1", "}", ")", 1),
        nest("async () => { ", "{", "", "}", " }", 1),
        nest("async () => ", "a=>", "1", "", "", 1),
        nest("async () => ", "- ", "1", "", "", 1),
        nest("async () => ", "!", "1", "", "", 1),
        nest("async () => ", "~", "1", "", "", 1),
        nest("async () => ", "typeof ", "1", "", "", 1),
        nest("async () => ", "await ", "1", "", "", 1),
        nest("async () => ", "new ", "X", "", "", 1),
        nest("async () => ", "a?b:", "c", "", "", 1),
        nest("async () => ", "a?", "b", ":c", "", 1),
        nest("async () => { ", "a=", "1", "", " }", 1),
        nest("async () => ", "2**", "2", "", "", 1),
        nest("async () => ", "`${", "1", "}`", "", 1),
        nest("async () => f", "()", "", "", "", 8),
        nest("async () => x", "[0]", "", "", "", 8),
        nest("async () => f", "`x`", "", "", "", 8),
        nest("async () => 1", "+1", "", "", "", 8),
        nest("async () => a", "&&a", "", "", "", 8),
        nest("async () => x", ".y", "", "", "", 8),
        nest("async () => { ", "if(a)", ";", "", " }", 1),
        nest("async () => { ", "if(a){}else ", "{}", "", " }", 1),
        nest("async () => { ", "if(a) x; else ", "x;", "", " }", 1),
        nest("async () => { ", "while(a)", ";", "", " }", 1),
        nest("async () => { ", "for(;;)", ";", "", " }", 1),
        nest("async () => { ", "for await (x of y)", ";", "", " }", 1),
        nest("async () => { ", "do ", "x;", "", " }", 1),
        Box::new(|n| {
            let labels: String = (0..n).map(|i| format!("l{i}:")).collect();
            format!("async () => {{ {labels}; }}")
        }),
        nest("async () => function*(){", "yield ", "1", "", "}", 1),
        nest("async () => [", "...[", "x", "]", "]", 1),
        nest("async () => { ", "@d ", "class A{}", "", " }", 1),
        nest("let x: ", "A<", "B", ">", "", 1),
        nest("let x: ", "A<B,", "B", ">", "", 1),
        nest("async () => a", "<a", "", "", "", 1),
        nest("type T = ", "A extends B ? C : ", "D", "", "", 1),
        nest("type T = ", "keyof ", "A", "", "", 1),
        nest("type T = ", "() => ", "A", "", "", 1),
        nest("async () => ", "<T>", "x", "", "", 1),
        nest("async () => x", "!", "", "", "", 8),
        nest("type T = A", "[]", "", "", "", 8),
        nest("type T = A", "|A", "", "", "", 8),
    ];
    for (i, shape) in shapes.iter().enumerate() {
        let deep = shape(20_000);
        let e = refused(&deep);
        assert_eq!(e.limit, LIMIT, "shape {i}");
        assert!(e.depth > LIMIT, "shape {i}");
        let shallow = shape(50);
        assert!(
            check(&shallow, LIMIT).is_ok(),
            "shape {i} at 50 counted {}",
            depth(&shallow)
        );
    }
}

#[test]
fn brackets_in_strings_comments_templates_and_regexes_do_not_count() {
    let code = format!(
        "async () => {{\n  const a = '{p}', b = \"{p}\", c = `{p}`\n  // {p}\n  /* {p} */\n  const d = /{e}/\n  const f = /[{p}]/\n  return [a, b, c, d, f]\n}}",
        p = r("(", 5000),
        e = r("\\(", 5000)
    );
    shallow(&code, 10);
}

#[test]
fn real_programs_count_low() {
    let program = r#"
import { chunk } from 'lodash-es'

async () => {
  const rows = await db.query({ sql: "select * from t where a = ?", args: [1] })
  let total = 0
  for (const row of rows) {
    if (row.kind === 'a') total += row.n
    else if (row.kind === 'b') total -= row.n
    else if (row.kind === 'c') total *= 2
    else total = total / 2
  }
  const groups = chunk(rows.map((r) => ({ id: r.id, tags: r.tags.filter((t) => t.length > 0) })), 10)
  const re = /^(?:[a-z]+)\/(\d+)$/i
  return { total, groups: groups.length, ok: re.test(`a/${total}`) && total > 0 ? 'yes' : 'no' }
}"#;
    shallow(program, 20);
    // A long program in the style that leaves semicolons out: each statement starts afresh.
    let long = statements("async () => {\n", 5000, |i| {
        format!("  let v{i} = a{i} = -b{i} ? c{i} : d{i}.e(f{i})\n  if (v{i}) x = y\n  g{i}()\n")
    });
    shallow(&long, 20);
    // Statements that begin with a contextual word (`await`, `async`, `let`), no semicolons.
    let awaits = statements("async () => {\n  if (a) { b() }\n", 3000, |i| {
        format!("  await t.call({i})\n  async function f{i}() {{}}\n  static{i}\n")
    });
    shallow(&awaits, 20);
    // Long data: 20,000 elements, a string concatenated from 300 pieces.
    let data = format!(
        "async () => ({{ xs: [{}], s: {} }})",
        (0..20_000)
            .map(|i| format!("{{ id: -{i}, on: !{i} }}"))
            .collect::<Vec<_>>()
            .join(", "),
        (0..300)
            .map(|i| format!("'{i}'"))
            .collect::<Vec<_>>()
            .join(" + ")
    );
    shallow(&data, 60);
    let ts = "async (a: Array<Map<string, Set<number>>>): Promise<Record<string, number>> => {\n  const x = a as unknown as Foo<Bar<Baz>>\n  return x!.y!\n}";
    shallow(ts, 20);
}

/// Ways to hide brackets from a scanner that guesses what `/` is: each must still be counted.
#[test]
fn hidden_nesting_is_counted() {
    let bomb = format!("{}1{}", r("(", 20_000), r(")", 20_000));
    let cases = [
        // `}` of an object literal, then a division: read as a regular expression, the bomb
        // would be skipped up to the next `/`.
        format!("async () => {{}} / {bomb} / 1"),
        format!("async () => x = function () {{}} / {bomb} / 1"),
        // `}` of a block, then a regular expression holding a quote: read as a division, the
        // quote would open a string that swallows the bomb.
        format!("async () => {{ {{}}\n/'/; {bomb}; '' }}"),
        format!("async () => {{ if (a) {{}}\n/\"/.test(s); {bomb} }}"),
        // A regular expression whose class holds `/*`: read as code, a comment would start.
        format!("async () => {{ const r = /[/*]/; {bomb}; /*/ }}"),
        // After `)` of a statement head a `/` starts a regular expression.
        format!("async () => {{ if (x) /'/.test(s); {bomb}; '' }}"),
        // After `)` of a call it divides.
        format!("async () => f(x) / {bomb} / 2"),
        // `>` closes type arguments or compares.
        format!("async () => a < b > / {bomb} / 1"),
        format!("async () => f<T> / {bomb} / 1"),
        // Contextual keywords are names or operators.
        format!("async () => {{ let of = 1; for (const x of /'/) ; of / {bomb} / 1 }}"),
        format!("async () => {{ await / {bomb} / 1 }}"),
        format!("async () => yield / {bomb} / 1"),
        // Escaped keywords.
        format!("async () => {{ i\\u0066 (x) / {bomb} / 1 }}"),
        format!("async () => {{ i\\u0066 (x) /'/; {bomb}; '' }}"),
        // A template's `${` inside a string inside a substitution.
        format!("async () => `${{ '}}`' + {bomb} }}`"),
        // A non-null assertion (TypeScript) before a division.
        format!("async () => x! / {bomb} / 1"),
        format!("async () => x++ / {bomb} / 1"),
        // Line continuation in a string.
        format!("async () => '\\\n' + {bomb}"),
    ];
    all_refused(&cases);
}

/// Nesting without brackets that the resets must not forget.
#[test]
fn resets_do_not_forget_nesting_that_goes_on() {
    let cases = [
        // A TypeScript type between two words does not end a statement.
        format!("async () => {}x", r("- - <unique symbol> ", 5000)),
        format!("async () => {}x", r("- <unique\nsymbol> ", 5000)),
        // An `else` after a do-while keeps the if-chain going.
        format!(
            "async () => {{ {}; }}",
            r("if (a) do x\nwhile (y) else ", 5000)
        ),
        format!(
            "async () => {{ {}; }}",
            r("if (a) do x; while (y); else ", 5000)
        ),
        // Labels, then a comma expression.
        format!(
            "async () => {{ {} x, {}1 }}",
            (0..400).map(|i| format!("l{i}:")).collect::<String>(),
            r("- ", 400)
        ),
        // A function body after `async` (which might be a name).
        format!(
            "async () => {}{}",
            r("- - - async function () { return ", 2000),
            r("}", 2000)
        ),
        format!("async () => {}x", r("x = class extends A { } + - - ", 3000)),
        // A class's heritage goes on across lines.
        format!(
            "async () => {}{}",
            r("- - - class extends B\n implements C { m() { return ", 2000),
            r("} }", 2000)
        ),
        format!("async () => {}x", r("- - - x\n as T - - - ", 3000)),
    ];
    all_refused(&cases);
}

#[test]
fn names_the_line() {
    let code = format!(
        "async () => {{\n  const a = 1\n  return {}1{}\n}}",
        r("(", 600),
        r(")", 600)
    );
    let e = refused(&code);
    assert_eq!(e.line, 3);
    assert_eq!(e.limit, LIMIT);
}

#[test]
fn many_ambiguous_slashes_stay_linear() {
    // Each `}` followed by `/` is read both ways; the readings rejoin after the literal.
    let code = statements("async () => {\n", 2000, |_| {
        "  if (a) { b() }\n  /x/.test(s) && c(1 / 2)\n".into()
    });
    let t = std::time::Instant::now();
    shallow(&code, 20);
    assert!(t.elapsed().as_secs() < 10);
}

#[test]
fn unterminated_literals_end_the_count_where_the_parser_stops() {
    assert!(check("async () => '(((", LIMIT).is_ok());
    assert!(check("async () => /(((", LIMIT).is_ok());
    assert!(check("async () => `${(((", LIMIT).is_ok());
    assert!(check("async () => /* (((", LIMIT).is_ok());
    assert!(check("async () => ())))))", LIMIT).is_ok());
    // What comes before the stop still counts.
    let e = refused(&format!("{}'", r("(", 20_000)));
    assert!(e.depth > LIMIT);
}

#[test]
fn readings_that_never_rejoin_are_capped() {
    // Each line forks at `} /` into readings whose brackets differ from then on.
    let mut code = String::new();
    for _ in 0..64 {
        code.push_str("x = {} / ( / 1\n");
    }
    let t = std::time::Instant::now();
    let _ = check(&code, LIMIT);
    assert!(t.elapsed().as_secs() < 5);
}

/// Token soup, including every ambiguous spot: the count never panics and stays linear.
#[test]
fn token_soup_never_panics() {
    const TOKENS: &[&str] = &[
        "(", ")", "[", "]", "{", "}", "`", "${", "'", "\"", "/", "/*", "*/", "//", "\n", "\\", "x",
        "if", "else", "while", "do", "for", "of", "await", "yield", "<", ">", ">>", "!", "++", ";",
        ",", ":", "?", "=>", "=", "-", " ", "\u{2028}", "é", "#", "i\\u0066", "1e-5", ".",
    ];
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let t = std::time::Instant::now();
    for _ in 0..3000 {
        let mut code = String::new();
        for _ in 0..200 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            code.push_str(TOKENS[(seed % TOKENS.len() as u64) as usize]);
        }
        let _ = check(&code, 20);
        let _ = check(&code, LIMIT);
    }
    assert!(t.elapsed().as_secs() < 20);
}
