//! How deeply a program nests, counted in one linear pass before any parser reads it.
//!
//! One file for one argument: that no input can lead the count to miss a level. The lexer (what
//! it skips), the rules (what counts and what resets) and the two readings of an ambiguous `/`
//! share the state of a [`Reading`], and each rule is only sound given what the lexer beside it
//! skips; split apart, the argument could not be checked in one reading. The tests are in
//! nesting/tests.rs.
//!
//! oxc's parser and its AST visitor recurse once per level of nesting and check no depth, so
//! `'('.repeat(20000)` overflows the stack of whatever thread parses it, which aborts the process
//! (the host, when the dialect adapter strips types on Node's main thread; a worker otherwise).
//! [`check`] bounds the nesting first, so a parser only ever sees code it survives on a small
//! stack (docs/bounds.md has the measurements the bound rests on).
//!
//! The count is conservative: it may count more levels than a parser recurses, never fewer, so it
//! is an upper bound of the parser's stack, in levels each worth at most ~1.6 KiB of oxc's stack
//! (`examples/nesting_stack.rs` measures them). Per bracket (`(`, `[`, `{`, `${`, a template) a
//! level; and within one bracket, what nests without one:
//! - statement heads (`if`, `else`, `for`, `while`, `do`, `with`, a label): `if (a) if (b) ...`;
//! - prefix operators (`-`, `!`, `typeof`, `await`, `new`, `...`, a TypeScript `<T>` assertion),
//!   `=` and the other assignments, `=>`, `?` and `:`, `**` (these nest to the right);
//! - `<` (a TypeScript type argument list, whose `>` takes it back);
//! - and, eight to a level, binary operators and the links of a call or member chain (the parser
//!   reads `a + b + c` in a loop, but the stripper's visitor recurses down the tree it builds).
//!
//! Within a bracket these go back to zero only where every such nesting has provably ended: at
//! `,` (expression nesting), at `;` and at the start of the next statement (all of it, unless an
//! `else` or a do-while's `while` continues the statement). Strings, comments, template text and
//! regular expression literals are skipped as the lexer skips them. Whether a `/` starts a regular
//! expression depends on the grammar; where the previous token leaves it open (after `}`, after
//! `>`, after a contextual keyword), both readings are followed and the deeper one counts, so no
//! choice of reading can hide a bracket from the count.

/// Code nested more deeply than the bound allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooDeep {
    /// The levels counted where the bound was passed.
    pub depth: u32,
    /// 1-based line of that place.
    pub line: u32,
    /// The bound.
    pub limit: u32,
}

impl TooDeep {
    /// NESTING_TOO_DEEP's text; `what` begins it ("The code", "The module \"./a.ts\"").
    pub fn text(&self, what: &str) -> String {
        codemode_protocol::FailureCode::NestingTooDeep.render(&[
            ("what", what),
            ("depth", &self.depth.to_string()),
            ("line", &self.line.to_string()),
            ("limit", &self.limit.to_string()),
        ])
    }
}

/// Readings of an ambiguous `/` followed at once; past this many the code is refused (no real
/// program comes near: readings rejoin a token or two after the `/`).
const MAX_READINGS: usize = 16;

/// Links of a binary or member chain that count as one level.
const CHAIN_PER_LEVEL: u32 = 8;

/// Counts `code`'s nesting; `Err` names the first place where it passes `limit` levels.
pub fn check(code: &str, limit: u32) -> Result<(), TooDeep> {
    let src = code.as_bytes();
    let mut readings = vec![Reading::new()];
    let mut deepest = 0u32;
    let mut too_deep_at: Option<(u32, usize)> = None;
    while !readings.is_empty() {
        // Advance the reading furthest behind, so readings that rejoin meet at the same place.
        let i = (0..readings.len())
            .min_by_key(|&i| readings[i].pos)
            .unwrap_or(0);
        let fork = readings[i].step(src);
        let r = &readings[i];
        deepest = deepest.max(r.max);
        if r.max > limit && too_deep_at.is_none() {
            too_deep_at = Some((r.max, r.max_at));
        }
        if too_deep_at.is_some() {
            break;
        }
        if let Some(other) = fork {
            readings.push(other);
        }
        if readings[i].done {
            readings.swap_remove(i);
            continue;
        }
        // Two readings in the same state from here on are one (the deeper counts kept).
        let mut i = i;
        let mut j = 0;
        while j < readings.len() {
            if j != i && readings[j].same_state(&readings[i]) {
                let other = readings.remove(j);
                if j < i {
                    i -= 1;
                }
                readings[i].absorb(&other);
            } else {
                j += 1;
            }
        }
        if readings.len() > MAX_READINGS {
            let r = readings.iter().max_by_key(|r| r.max).cloned();
            let at = r.map(|r| r.pos).unwrap_or(0);
            too_deep_at = Some((limit.saturating_add(1), at));
            break;
        }
    }
    match too_deep_at {
        Some((depth, at)) => Err(TooDeep {
            depth,
            line: crate::line_column(code, at).0,
            limit,
        }),
        None => {
            debug_assert!(deepest <= limit);
            Ok(())
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FrameKind {
    Paren,
    Bracket,
    Brace,
    /// `${` inside a template.
    Subst,
    /// A template's text.
    Template,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Frame {
    kind: FrameKind,
    /// The parentheses of an `if`, `for`, `while` or `with`: a statement follows them.
    head: bool,
    /// Parentheses after a name written with escapes (which may be a keyword to the parser).
    maybe_head: bool,
    /// Levels counted outside this frame, plus its own.
    base: u32,
    stmt: u32,
    expr: u32,
    angle: u32,
    chain: u32,
}

impl Frame {
    fn new(kind: FrameKind, base: u32) -> Self {
        Frame {
            kind,
            head: false,
            maybe_head: false,
            base,
            stmt: 0,
            expr: 0,
            angle: 0,
            chain: 0,
        }
    }

    fn depth(&self) -> u32 {
        self.base
            .saturating_add(self.stmt)
            .saturating_add(self.expr)
            .saturating_add(self.angle)
            .saturating_add(self.chain / CHAIN_PER_LEVEL)
    }

    fn reset(&mut self) {
        self.stmt = 0;
        self.expr = 0;
        self.angle = 0;
        self.chain = 0;
    }
}

/// What the previous token leaves the grammar expecting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prev {
    /// An operand ended (a name, a literal, `)`, `]`): a `/` divides.
    Operand,
    /// An operand is expected (an operator, `(`, `,`, a keyword such as `return`): a `/` starts a
    /// regular expression.
    Operator,
    /// Either (`}`, `>`, a contextual keyword): both readings are followed.
    Unknown,
}

/// Special tokens the rules look back at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Last {
    Start,
    Other,
    /// A plain name (no keyword, not contextual).
    Name,
    /// A name after which `(` may open a statement head (`if`, `for`, `while`, `with`).
    HeadKeyword,
    /// A name written with escapes.
    Escaped,
    Dot,
    Semi,
    /// `{` or `}` (a frame opened or closed).
    Brace,
    /// `)` of a statement head, `else`, `do`, a label's `:`.
    StmtHead,
    For,
}

/// What happened just before the current token, applied once it is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    None,
    /// A `;`: the statement ended; the nesting of statement heads ends too unless `else` or
    /// `while` follows.
    Semi,
    /// A `}` closed a frame: a statement may have ended.
    BraceEnd,
}

#[derive(Debug, Clone)]
struct Reading {
    pos: usize,
    frames: Vec<Frame>,
    prev: Prev,
    last: Last,
    /// Whether the token before `last` left a statement's start (for labels).
    last_at_stmt_start: bool,
    /// A line terminator since the previous token.
    newline: bool,
    pending: Pending,
    max: u32,
    max_at: usize,
    done: bool,
}

enum Tok<'a> {
    Name {
        text: &'a [u8],
        escaped: bool,
    },
    /// A number, string or private name.
    Literal,
    Punct(&'a [u8]),
    Slash,
    Eof,
}

const PUNCTS: &[&[u8]] = &[
    b">>>=", b"...", b"===", b"!==", b"**=", b"<<=", b">>=", b">>>", b"&&=", b"||=", b"??=", b"=>",
    b"==", b"!=", b"<=", b">=", b"&&", b"||", b"??", b"?.", b"++", b"--", b"+=", b"-=", b"*=",
    b"%=", b"&=", b"|=", b"^=", b"<<", b">>", b"**",
];

/// Keywords after which a `/` starts a regular expression.
const OPERATOR_KEYWORDS: &[&[u8]] = &[
    b"break",
    b"case",
    b"catch",
    b"class",
    b"const",
    b"continue",
    b"debugger",
    b"default",
    b"delete",
    b"do",
    b"else",
    b"export",
    b"extends",
    b"finally",
    b"for",
    b"function",
    b"if",
    b"import",
    b"in",
    b"instanceof",
    b"new",
    b"return",
    b"switch",
    b"throw",
    b"try",
    b"typeof",
    b"var",
    b"void",
    b"while",
    b"with",
];

/// Keywords that are values.
const VALUE_KEYWORDS: &[&[u8]] = &[b"this", b"super", b"null", b"true", b"false"];

/// Names that are keywords only in some places (or only to TypeScript): what follows them is
/// not known from the token alone.
const CONTEXTUAL: &[&[u8]] = &[
    b"of",
    b"yield",
    b"await",
    b"let",
    b"async",
    b"static",
    b"get",
    b"set",
    b"as",
    b"satisfies",
    b"type",
    b"declare",
    b"abstract",
    b"readonly",
    b"keyof",
    b"infer",
    b"is",
    b"asserts",
    b"unique",
    b"namespace",
    b"module",
    b"global",
    b"accessor",
    b"override",
    b"public",
    b"private",
    b"protected",
    b"implements",
    b"interface",
    b"package",
    b"enum",
    b"from",
    b"out",
    b"using",
];

/// Keywords that can only begin a statement (so the previous statement has ended).
const STATEMENT_KEYWORDS: &[&[u8]] = &[
    b"if",
    b"for",
    b"do",
    b"with",
    b"const",
    b"var",
    b"let",
    b"return",
    b"throw",
    b"break",
    b"continue",
    b"try",
    b"switch",
    b"debugger",
    b"import",
    b"export",
    b"function",
    b"class",
];

/// Prefix operators written as words (TypeScript's type operators included).
const PREFIX_WORDS: &[&[u8]] = &[
    b"typeof",
    b"void",
    b"delete",
    b"await",
    b"new",
    b"yield",
    b"keyof",
    b"infer",
    b"readonly",
    b"unique",
    b"asserts",
];

const OPERATOR: u8 = 1;
const VALUE: u8 = 2;
const CONTEXT: u8 = 4;
const STATEMENT: u8 = 8;
const PREFIX: u8 = 16;

/// Which of the lists above `text` is in (one lookup per name instead of a search per list).
fn word_class(text: &[u8]) -> u8 {
    static WORDS: std::sync::OnceLock<Vec<(&'static [u8], u8)>> = std::sync::OnceLock::new();
    // Every listed word is 2 to 10 lowercase letters.
    if !(2..=10).contains(&text.len()) || !text[0].is_ascii_lowercase() {
        return 0;
    }
    let words = WORDS.get_or_init(|| {
        let mut m: Vec<(&'static [u8], u8)> = Vec::new();
        for (list, bit) in [
            (OPERATOR_KEYWORDS, OPERATOR),
            (VALUE_KEYWORDS, VALUE),
            (CONTEXTUAL, CONTEXT),
            (STATEMENT_KEYWORDS, STATEMENT),
            (PREFIX_WORDS, PREFIX),
        ] {
            for w in list {
                match m.iter_mut().find(|(k, _)| k == w) {
                    Some((_, bits)) => *bits |= bit,
                    None => m.push((w, bit)),
                }
            }
        }
        m.sort_unstable();
        m
    });
    words
        .binary_search_by(|(w, _)| (*w).cmp(text))
        .map(|i| words[i].1)
        .unwrap_or(0)
}

fn is_line_terminator_at(src: &[u8], i: usize) -> Option<usize> {
    match src.get(i) {
        Some(b'\n') | Some(b'\r') => Some(1),
        // U+2028 and U+2029.
        Some(0xE2)
            if src.get(i + 1) == Some(&0x80) && matches!(src.get(i + 2), Some(0xA8 | 0xA9)) =>
        {
            Some(3)
        }
        _ => None,
    }
}

/// The char at `i` (lossy for a broken sequence) and its length in bytes.
fn char_at(src: &[u8], i: usize) -> (char, usize) {
    let b = src[i];
    let len = match b {
        0x00..=0x7F => return (b as char, 1),
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    };
    let end = (i + len).min(src.len());
    match std::str::from_utf8(&src[i..end]) {
        Ok(s) => (s.chars().next().unwrap_or('\u{FFFD}'), end - i),
        Err(_) => ('\u{FFFD}', 1),
    }
}

fn is_js_space(c: char) -> bool {
    c == '\u{FEFF}' || (c.is_whitespace() && !matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}'))
}

fn is_name_char(c: char) -> bool {
    c == '$'
        || c == '_'
        || c.is_alphanumeric()
        || c == '\u{200C}'
        || c == '\u{200D}'
        || (!c.is_ascii() && !is_js_space(c) && !matches!(c, '\u{2028}' | '\u{2029}'))
}

impl Reading {
    fn new() -> Self {
        Reading {
            pos: 0,
            frames: vec![Frame::new(FrameKind::Brace, 0)],
            prev: Prev::Operator,
            last: Last::Start,
            last_at_stmt_start: true,
            newline: true,
            pending: Pending::None,
            max: 0,
            max_at: 0,
            done: false,
        }
    }

    fn same_state(&self, other: &Reading) -> bool {
        self.pos == other.pos
            && !self.done
            && !other.done
            && self.prev == other.prev
            && self.last == other.last
            && self.last_at_stmt_start == other.last_at_stmt_start
            && self.newline == other.newline
            && self.pending == other.pending
            && self.frames.len() == other.frames.len()
            && self
                .frames
                .iter()
                .zip(&other.frames)
                .all(|(a, b)| a.kind == b.kind && a.head == b.head && a.maybe_head == b.maybe_head)
    }

    /// Keeps the larger of each count.
    fn absorb(&mut self, other: &Reading) {
        for (a, b) in self.frames.iter_mut().zip(&other.frames) {
            a.base = a.base.max(b.base);
            a.stmt = a.stmt.max(b.stmt);
            a.expr = a.expr.max(b.expr);
            a.angle = a.angle.max(b.angle);
            a.chain = a.chain.max(b.chain);
        }
        if other.max > self.max {
            self.max = other.max;
            self.max_at = other.max_at;
        }
    }

    fn top(&mut self) -> &mut Frame {
        let n = self.frames.len();
        &mut self.frames[n - 1]
    }

    fn note(&mut self, at: usize) {
        let d = self.frames.last().map(Frame::depth).unwrap_or(0);
        if d > self.max {
            self.max = d;
            self.max_at = at;
        }
    }

    fn push(&mut self, kind: FrameKind, at: usize) -> &mut Frame {
        let base = self
            .frames
            .last()
            .map(Frame::depth)
            .unwrap_or(0)
            .saturating_add(1);
        self.frames.push(Frame::new(kind, base));
        self.note(at);
        self.top()
    }

    fn die(&mut self) {
        self.done = true;
    }

    /// Reads one token (or a stretch of template text); returns the other reading of an
    /// ambiguous `/`.
    fn step(&mut self, src: &[u8]) -> Option<Reading> {
        if self.frames.last().map(|f| f.kind) == Some(FrameKind::Template) {
            self.template_text(src);
            return None;
        }
        self.skip_trivia(src);
        if self.done {
            return None;
        }
        let start = self.pos;
        let tok = self.lex(src);
        match tok {
            Tok::Eof => {
                self.done = true;
                None
            }
            Tok::Slash => {
                match self.prev {
                    Prev::Operand => self.division(start),
                    Prev::Operator => self.regex(src),
                    Prev::Unknown => {
                        let mut other = self.clone();
                        other.regex(src);
                        self.division(start);
                        return Some(other);
                    }
                }
                None
            }
            Tok::Name { text, escaped } => {
                self.name(text, escaped, start);
                None
            }
            Tok::Literal => {
                self.operand_start();
                self.set_prev(Prev::Operand, Last::Other);
                None
            }
            Tok::Punct(p) => {
                self.punct(p, start);
                None
            }
        }
    }

    fn set_prev(&mut self, prev: Prev, last: Last) {
        self.last_at_stmt_start = matches!(
            self.last,
            Last::Start | Last::Semi | Last::Brace | Last::StmtHead
        );
        self.prev = prev;
        self.last = last;
        self.newline = false;
    }

    /// Applies what the previous `;` or `}` left pending, now that the next token is known.
    fn settle(&mut self, next_continues_statement: bool, next_starts_statement: bool) {
        match self.pending {
            Pending::Semi if !next_continues_statement => self.top().reset(),
            Pending::BraceEnd if next_starts_statement && !next_continues_statement => {
                self.top().reset()
            }
            _ => {}
        }
        self.pending = Pending::None;
    }

    /// An operand begins here: after an operand on an earlier line, that is a new statement
    /// (automatic semicolon insertion), which ends every nesting of the one before.
    fn operand_start(&mut self) {
        let asi = self.prev == Prev::Operand && self.newline;
        let brace = self.pending == Pending::BraceEnd && self.newline;
        self.settle(false, brace);
        if asi {
            self.top().reset();
        }
    }

    fn name(&mut self, text: &[u8], escaped: bool, at: usize) {
        let after_dot = self.last == Last::Dot;
        if after_dot {
            // A property name, whatever it spells.
            self.settle(false, false);
            self.top().chain += 1;
            self.note(at);
            self.set_prev(Prev::Operand, Last::Other);
            return;
        }
        if escaped {
            // May be a keyword to one parser and a name to another: count it as both.
            self.settle(false, false);
            self.top().expr += 1;
            self.note(at);
            self.set_prev(Prev::Unknown, Last::Escaped);
            return;
        }
        let class = word_class(text);
        let is = |bit: u8| class & bit != 0;
        let continues = text == b"else" || text == b"while";
        let statement = is(STATEMENT);
        let plain = !is(OPERATOR) && !is(VALUE) && !is(CONTEXT) && !continues;
        // A contextual word on a new line begins a statement (or a class member) too, unless it
        // can go on with what came before: `implements`, `from`, `of`, `as`, `satisfies`, `is`.
        let word = is(CONTEXT)
            && !matches!(
                text,
                b"implements" | b"from" | b"of" | b"as" | b"satisfies" | b"is"
            );
        // A keyword that only begins statements, or a name on a new line: after an operand or a
        // `}`, the statement before has ended (automatic semicolon insertion, or a syntax error
        // that stops the parser here).
        let starts = statement || ((plain || word) && self.newline);
        let asi = self.prev == Prev::Operand && starts && !continues;
        self.settle(continues, starts);
        if asi {
            self.top().reset();
        }
        match text {
            b"if" | b"for" | b"while" | b"with" | b"else" | b"do" => {
                self.top().stmt += 1;
                self.note(at);
                let last = match text {
                    b"else" | b"do" => Last::StmtHead,
                    b"for" => Last::For,
                    _ => Last::HeadKeyword,
                };
                self.set_prev(Prev::Operator, last);
                return;
            }
            _ => {}
        }
        if is(PREFIX) && self.prev != Prev::Operand {
            self.top().expr += 1;
            self.note(at);
        }
        if text == b"as" || text == b"satisfies" || text == b"in" || text == b"instanceof" {
            self.top().chain += 1;
            self.note(at);
        }
        if text == b"await" && self.last == Last::For {
            self.set_prev(Prev::Unknown, Last::For);
            return;
        }
        if is(VALUE) {
            self.set_prev(Prev::Operand, Last::Other);
        } else if is(OPERATOR) {
            self.set_prev(Prev::Operator, Last::Other);
        } else if is(CONTEXT) {
            self.set_prev(Prev::Unknown, Last::Other);
        } else {
            self.set_prev(Prev::Operand, Last::Name);
        }
    }

    fn division(&mut self, at: usize) {
        self.settle(false, false);
        self.top().chain += 1;
        self.note(at);
        self.set_prev(Prev::Operator, Last::Other);
    }

    /// A regular expression literal from the `/` just read: skipped, its end found as the lexer
    /// finds it (escapes, classes; it cannot span lines).
    fn regex(&mut self, src: &[u8]) {
        self.operand_start();
        let mut class = false;
        loop {
            if is_line_terminator_at(src, self.pos).is_some() || self.pos >= src.len() {
                // Unterminated: the parser stops here.
                self.die();
                return;
            }
            match src[self.pos] {
                b'\\' => {
                    self.pos += 1;
                    if self.pos >= src.len() || is_line_terminator_at(src, self.pos).is_some() {
                        self.die();
                        return;
                    }
                    self.pos += char_at(src, self.pos).1;
                    continue;
                }
                b'[' => class = true,
                b']' => class = false,
                b'/' if !class => {
                    self.pos += 1;
                    break;
                }
                _ => {}
            }
            self.pos += char_at(src, self.pos).1;
        }
        while self.pos < src.len() {
            let (c, n) = char_at(src, self.pos);
            if !is_name_char(c) {
                break;
            }
            self.pos += n;
        }
        self.set_prev(Prev::Operand, Last::Other);
    }

    fn template_text(&mut self, src: &[u8]) {
        loop {
            if self.pos >= src.len() {
                self.die();
                return;
            }
            match src[self.pos] {
                b'\\' => self.pos = (self.pos + 2).min(src.len()),
                b'`' => {
                    self.pos += 1;
                    self.frames.pop();
                    self.newline = false;
                    self.prev = Prev::Operand;
                    self.last = Last::Other;
                    return;
                }
                b'$' if src.get(self.pos + 1) == Some(&b'{') => {
                    self.pos += 2;
                    self.push(FrameKind::Subst, self.pos - 2);
                    self.prev = Prev::Operator;
                    self.last = Last::Other;
                    self.newline = false;
                    return;
                }
                _ => self.pos += 1,
            }
        }
    }

    fn skip_trivia(&mut self, src: &[u8]) {
        if self.pos == 0 && src.starts_with(b"#!") {
            while self.pos < src.len() && is_line_terminator_at(src, self.pos).is_none() {
                self.pos += 1;
            }
        }
        while self.pos < src.len() {
            if let Some(n) = is_line_terminator_at(src, self.pos) {
                self.newline = true;
                self.pos += n;
                continue;
            }
            let b = src[self.pos];
            if b == b'/' && src.get(self.pos + 1) == Some(&b'/') {
                while self.pos < src.len() && is_line_terminator_at(src, self.pos).is_none() {
                    self.pos += 1;
                }
                continue;
            }
            if b == b'/' && src.get(self.pos + 1) == Some(&b'*') {
                let rest = &src[self.pos + 2..];
                match rest.windows(2).position(|w| w == b"*/") {
                    Some(end) => {
                        let body = &rest[..end];
                        if body.iter().any(|&c| c == b'\n' || c == b'\r')
                            || body
                                .windows(3)
                                .any(|w| w == [0xE2, 0x80, 0xA8] || w == [0xE2, 0x80, 0xA9])
                        {
                            self.newline = true;
                        }
                        self.pos += 2 + end + 2;
                    }
                    None => {
                        self.die();
                        return;
                    }
                }
                continue;
            }
            let (c, n) = char_at(src, self.pos);
            if is_js_space(c) {
                self.pos += n;
                continue;
            }
            break;
        }
    }

    fn lex<'a>(&mut self, src: &'a [u8]) -> Tok<'a> {
        if self.pos >= src.len() {
            return Tok::Eof;
        }
        let start = self.pos;
        let b = src[start];
        match b {
            b'\'' | b'"' => {
                self.pos += 1;
                loop {
                    if self.pos >= src.len() {
                        self.die();
                        return Tok::Eof;
                    }
                    let c = src[self.pos];
                    if c == b'\\' {
                        self.pos += 1;
                        // An escaped line terminator continues the string (CRLF as one).
                        if src.get(self.pos) == Some(&b'\r')
                            && src.get(self.pos + 1) == Some(&b'\n')
                        {
                            self.pos += 2;
                        } else if self.pos < src.len() {
                            self.pos += char_at(src, self.pos).1;
                        }
                        continue;
                    }
                    if c == b'\n' || c == b'\r' {
                        self.die();
                        return Tok::Eof;
                    }
                    self.pos += 1;
                    if c == b {
                        return Tok::Literal;
                    }
                }
            }
            b'0'..=b'9' => {
                self.number(src);
                Tok::Literal
            }
            b'.' if matches!(src.get(start + 1), Some(b'0'..=b'9')) => {
                self.number(src);
                Tok::Literal
            }
            b'#' => {
                self.pos += 1;
                self.name_chars(src);
                Tok::Literal
            }
            b'/' => {
                self.pos += 1;
                Tok::Slash
            }
            _ => {
                let (c, n) = char_at(src, start);
                if c == '\\' || is_name_char(c) {
                    let escaped = self.name_chars(src);
                    return Tok::Name {
                        text: &src[start..self.pos],
                        escaped,
                    };
                }
                let rest = &src[start..];
                for p in PUNCTS.iter().filter(|p| p[0] == b) {
                    if rest.starts_with(p) {
                        // `?.5` is `?` then `.5`.
                        if *p == b"?." && matches!(rest.get(2), Some(b'0'..=b'9')) {
                            break;
                        }
                        self.pos += p.len();
                        return Tok::Punct(&src[start..self.pos]);
                    }
                }
                self.pos += n;
                Tok::Punct(&src[start..self.pos])
            }
        }
    }

    /// Reads name characters (and `\u` escapes); whether any escape was written.
    fn name_chars(&mut self, src: &[u8]) -> bool {
        let mut escaped = false;
        while self.pos < src.len() {
            if src[self.pos] == b'\\' {
                escaped = true;
                self.pos += 1;
                if src.get(self.pos) == Some(&b'u') {
                    self.pos += 1;
                    if src.get(self.pos) == Some(&b'{') {
                        while self.pos < src.len() && src[self.pos] != b'}' {
                            if !src[self.pos].is_ascii_hexdigit() && src[self.pos] != b'{' {
                                break;
                            }
                            self.pos += 1;
                        }
                        if src.get(self.pos) == Some(&b'}') {
                            self.pos += 1;
                        }
                    } else {
                        let mut k = 0;
                        while k < 4 && self.pos < src.len() && src[self.pos].is_ascii_hexdigit() {
                            self.pos += 1;
                            k += 1;
                        }
                    }
                }
                continue;
            }
            let (c, n) = char_at(src, self.pos);
            if !is_name_char(c) {
                break;
            }
            self.pos += n;
        }
        escaped
    }

    fn number(&mut self, src: &[u8]) {
        let hex = matches!(src.get(self.pos..self.pos + 2), Some(b"0x" | b"0X"));
        let mut prev = 0u8;
        while self.pos < src.len() {
            let c = src[self.pos];
            let exponent_sign = (c == b'+' || c == b'-') && (prev == b'e' || prev == b'E') && !hex;
            if c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || exponent_sign {
                prev = c;
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    fn punct(&mut self, p: &[u8], at: usize) {
        let operand_before = self.prev == Prev::Operand;
        match p {
            b"(" | b"[" | b"{" => {
                self.settle(false, false);
                if p != b"{" && (operand_before || self.prev == Prev::Unknown) {
                    // A call, an index (or, unknown, perhaps one).
                    self.top().chain += 1;
                }
                let head = p == b"(" && matches!(self.last, Last::HeadKeyword | Last::For);
                let maybe_head = p == b"(" && self.last == Last::Escaped;
                let kind = match p {
                    b"(" => FrameKind::Paren,
                    b"[" => FrameKind::Bracket,
                    _ => FrameKind::Brace,
                };
                let f = self.push(kind, at);
                f.head = head;
                f.maybe_head = maybe_head;
                self.set_prev(Prev::Operator, Last::Brace);
                if p != b"{" {
                    self.last = Last::Other;
                }
            }
            b")" | b"]" | b"}" => {
                let want = match p {
                    b")" => FrameKind::Paren,
                    b"]" => FrameKind::Bracket,
                    _ => FrameKind::Brace,
                };
                self.settle(false, false);
                let top = self.frames.last().map(|f| f.kind);
                if self.frames.len() == 1
                    || (top != Some(want) && !(p == b"}" && top == Some(FrameKind::Subst)))
                {
                    // Unbalanced: the parser stops here.
                    self.die();
                    return;
                }
                let Some(f) = self.frames.pop() else {
                    self.die();
                    return;
                };
                if f.kind == FrameKind::Subst {
                    // Back in the template's text.
                    return;
                }
                match p {
                    b")" if f.head => self.set_prev(Prev::Operator, Last::StmtHead),
                    b")" if f.maybe_head => self.set_prev(Prev::Unknown, Last::Other),
                    b")" | b"]" => self.set_prev(Prev::Operand, Last::Other),
                    _ => {
                        self.set_prev(Prev::Unknown, Last::Brace);
                        self.pending = Pending::BraceEnd;
                    }
                }
            }
            b"`" => {
                self.settle(false, false);
                if operand_before || self.prev == Prev::Unknown {
                    self.top().chain += 1;
                } else {
                    self.operand_start();
                }
                self.push(FrameKind::Template, at);
            }
            b";" => {
                self.settle(false, false);
                let f = self.top();
                f.expr = 0;
                f.angle = 0;
                f.chain = 0;
                self.set_prev(Prev::Operator, Last::Semi);
                self.pending = Pending::Semi;
            }
            b"," => {
                self.settle(false, false);
                let f = self.top();
                f.expr = 0;
                f.chain = 0;
                self.set_prev(Prev::Operator, Last::Other);
            }
            b":" => {
                self.settle(false, false);
                let label = self.last == Last::Name && self.last_at_stmt_start;
                if label {
                    self.top().stmt += 1;
                    self.note(at);
                    self.set_prev(Prev::Operator, Last::StmtHead);
                } else {
                    self.top().expr += 1;
                    self.note(at);
                    self.set_prev(Prev::Operator, Last::Other);
                }
            }
            b"." | b"?." => {
                self.settle(false, false);
                self.top().chain += 1;
                self.note(at);
                self.set_prev(Prev::Operator, Last::Dot);
            }
            b"++" | b"--" => {
                self.settle(false, false);
                if operand_before && !self.newline {
                    // Postfix.
                    self.set_prev(Prev::Operand, Last::Other);
                } else {
                    if operand_before {
                        self.top().reset();
                    }
                    self.top().expr += 1;
                    self.note(at);
                    let prev = if self.prev == Prev::Operator {
                        Prev::Operator
                    } else {
                        Prev::Unknown
                    };
                    self.set_prev(prev, Last::Other);
                }
            }
            b"!" => {
                self.settle(false, false);
                if operand_before && !self.newline {
                    // TypeScript's non-null assertion.
                    self.top().chain += 1;
                    self.note(at);
                    self.set_prev(Prev::Operand, Last::Other);
                } else {
                    let prev = if self.prev == Prev::Operator {
                        Prev::Operator
                    } else {
                        Prev::Unknown
                    };
                    self.top().expr += 1;
                    self.note(at);
                    self.set_prev(prev, Last::Other);
                }
            }
            b"<" => {
                self.settle(false, false);
                let f = self.top();
                f.angle += 1;
                if !operand_before {
                    // A TypeScript type assertion `<T>x` (or a generic arrow's parameters).
                    f.expr += 1;
                }
                self.note(at);
                self.set_prev(Prev::Operator, Last::Other);
            }
            b">" | b">>" | b">>>" => {
                self.settle(false, false);
                let f = self.top();
                f.angle = f.angle.saturating_sub(p.len() as u32);
                f.chain += 1;
                self.note(at);
                // Closing type arguments (an operand ends) or comparing (one is expected).
                self.set_prev(Prev::Unknown, Last::Other);
            }
            b"?" | b"=>" | b"**" | b"=" | b"+=" | b"-=" | b"*=" | b"%=" | b"&=" | b"|=" | b"^="
            | b"**=" | b"<<=" | b">>=" | b">>>=" | b"&&=" | b"||=" | b"??=" | b"..." | b"~"
            | b"@" => {
                self.settle(false, false);
                self.top().expr += 1;
                self.note(at);
                self.set_prev(Prev::Operator, Last::Other);
            }
            b"+" | b"-" => {
                self.settle(false, false);
                if operand_before {
                    self.top().chain += 1;
                } else {
                    // Unary (or, after an unknown token, perhaps).
                    self.top().expr += 1;
                }
                self.note(at);
                self.set_prev(Prev::Operator, Last::Other);
            }
            _ => {
                // Binary operators (`*`, `%`, `&&`, `==`, `<<`, ...) and anything else.
                self.settle(false, false);
                self.top().chain += 1;
                self.note(at);
                self.set_prev(Prev::Operator, Last::Other);
            }
        }
    }
}

#[cfg(test)]
mod tests;
