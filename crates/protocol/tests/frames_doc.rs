//! docs/protocol.md's table of worker frames names every variant of `HostMsg` and `WorkerMsg`
//! with exactly its fields: a frame or field added, renamed or removed here fails this test
//! until the table says so too.

mod samples;

const DOC: &str = include_str!("../../../docs/protocol.md");

/// A frame's name and its fields' names, read from its `Debug` form (`Name { a: .., b: .. }`,
/// `Name(Inner { a: .. })` or `Name`): the fields of the first braces, at their own depth.
fn shape(debug: &str) -> (String, Vec<String>) {
    let name: String = debug
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    let mut fields = Vec::new();
    let Some(open) = debug.find('{') else {
        return (name, fields);
    };
    let (mut depth, mut in_str, mut escaped, mut word) = (0usize, false, false, String::new());
    for c in debug[open + 1..].chars() {
        if in_str {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '{' | '(' | '[' => depth += 1,
            '}' | ')' | ']' if depth == 0 => break,
            '}' | ')' | ']' => depth -= 1,
            ':' if depth == 0 && !word.is_empty() => fields.push(std::mem::take(&mut word)),
            c if depth == 0 && (c.is_alphanumeric() || c == '_') => word.push(c),
            _ => word.clear(),
        }
    }
    (name, fields)
}

/// The rows of the worker frames table: (direction, frame, the fields its third cell names).
fn documented() -> Vec<(String, String, Vec<String>)> {
    let start = DOC
        .find("## Inside an executor: the worker frames")
        .expect("docs/protocol.md has the worker frames section");
    DOC[start..]
        .lines()
        .filter(|l| l.starts_with("| host -> worker") || l.starts_with("| worker -> host"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let frame = cells[2].trim_matches('`').to_string();
            // The field names are the code spans outside parentheses.
            let mut outside = String::new();
            let mut depth = 0;
            for c in cells[3].chars() {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    c if depth == 0 => outside.push(c),
                    _ => {}
                }
            }
            let fields = outside
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect();
            (cells[1].to_string(), frame, fields)
        })
        .collect()
}

#[test]
fn every_worker_frame_and_field_is_documented() {
    let host = samples::host_messages();
    let worker = samples::worker_messages();
    let mut defined: Vec<(String, String, Vec<String>)> = Vec::new();
    for m in &host {
        let (name, fields) = shape(&format!("{m:?}"));
        defined.push(("host -> worker".into(), name, fields));
    }
    for m in &worker {
        let (name, fields) = shape(&format!("{m:?}"));
        defined.push(("worker -> host".into(), name, fields));
    }
    let doc = documented();
    for frame in &defined {
        assert!(
            doc.contains(frame),
            "docs/protocol.md does not list {frame:?} (it lists {doc:?})"
        );
    }
    assert_eq!(
        doc.len(),
        defined.len(),
        "docs/protocol.md lists frames that do not exist: {doc:?}"
    );
}

#[test]
fn a_frame_s_fields_are_read_from_its_debug_form() {
    assert_eq!(shape("Ready"), ("Ready".into(), vec![]));
    assert_eq!(
        shape(r#"Log { exec_id: 1, entry: LogEntry { level: Log, message: "a: b" } }"#),
        ("Log".into(), vec!["exec_id".into(), "entry".into()])
    );
    assert_eq!(
        shape(r#"Execute(ExecuteRequest { exec_id: 1, code: "{ x: \"}\" }", modules: [] })"#),
        (
            "Execute".into(),
            vec!["exec_id".into(), "code".into(), "modules".into()]
        )
    );
}
