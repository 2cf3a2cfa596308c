//! Where in the model's code something happened: V8 reports positions in the rewritten program
//! (entry.rs moved it) or in one of the run's modules; a failure names the place as the model
//! wrote it, and never a place in the runtime's own scripts.

use codemode_protocol::SourceLocation;

use crate::engine::modules::{ModuleMap, PROGRAM_NAME};
use crate::run::entry::Shift;

/// The place in the model's code of a position V8 reports in script `name`: the program (its
/// rewrite undone) or one of the run's modules; `None` for the runtime's own scripts.
pub(crate) fn source_location(
    scope: &mut v8::PinScope,
    name: &str,
    line: u32,
    column: u32,
    shift: &Shift,
) -> Option<SourceLocation> {
    if line == 0 {
        return None;
    }
    if name == PROGRAM_NAME {
        let (line, column) = shift.undo(line, column)?;
        return Some(SourceLocation {
            line,
            column,
            module: None,
        });
    }
    let known = scope
        .get_slot::<ModuleMap>()
        .is_some_and(|m| m.has_name(name));
    known.then(|| SourceLocation {
        line,
        column,
        module: Some(name.to_string()),
    })
}

/// Where an Error was created, in the model's code: the innermost frame of its stack that is
/// the program or one of the run's modules (frames of the runtime, a URL parser throwing for
/// the model's call say, are skipped). `None` for a thrown value that is not an Error.
pub(crate) fn locate(
    scope: &mut v8::PinScope,
    exception: v8::Local<v8::Value>,
    shift: &Shift,
) -> Option<SourceLocation> {
    let trace = v8::Exception::get_stack_trace(scope, exception)?;
    for i in 0..trace.get_frame_count() {
        let Some(frame) = trace.get_frame(scope, i) else {
            continue;
        };
        let Some(name) = frame.get_script_name(scope) else {
            continue;
        };
        let name = name.to_rust_string_lossy(scope);
        let (line, column) = (frame.get_line_number() as u32, frame.get_column() as u32);
        if let Some(l) = source_location(scope, &name, line, column, shift) {
            return Some(l);
        }
    }
    None
}
