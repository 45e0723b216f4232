//! `--split-input-file`: cut a file into independent chunks at `// -----` lines.
//!
//! Each chunk keeps its first line number so that parsing it with
//! `parser::parse_module_at(chunk, file, first_line)` reports locations of the
//! whole file (and `Diags::render` against the whole text shows the right
//! source line). A marker is a line whose first non-blank characters are
//! `// -----` (anything after it on the line is ignored, as in mlir-opt); the
//! marker lines belong to no chunk. Chunks keep their trailing newline.
//! Linear in the input length.

/// Splits `text` into `(chunk, first_line)` pairs, `first_line` 1-based.
/// A text without markers is one chunk starting at line 1.
pub fn split_input_file(text: &str) -> Vec<(String, u32)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut cur_first = 1u32;
    let mut line_no = 0u32;
    for line in text.split_inclusive('\n') {
        line_no = line_no.saturating_add(1);
        if is_marker(line) {
            out.push((std::mem::take(&mut cur), cur_first));
            cur_first = line_no.saturating_add(1);
        } else {
            cur.push_str(line);
        }
    }
    out.push((cur, cur_first));
    out
}

/// Whether a line is a `// -----` split marker.
pub fn is_marker(line: &str) -> bool {
    line.trim_start().starts_with("// -----")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_marker_is_one_chunk() {
        assert_eq!(split_input_file("a\nb\n"), vec![("a\nb\n".to_string(), 1)]);
        assert_eq!(split_input_file(""), vec![(String::new(), 1)]);
    }

    #[test]
    fn chunks_keep_their_first_line() {
        let t = "a\nb\n// -----\nc\n  // ----- trailing\n\nd\ne";
        let c = split_input_file(t);
        assert_eq!(
            c,
            vec![("a\nb\n".to_string(), 1), ("c\n".to_string(), 4), ("\nd\ne".to_string(), 6)]
        );
        // Line 7 of the file ("d") is line 2 of the last chunk.
        assert_eq!(c[2].0.lines().nth(7 - c[2].1 as usize), Some("d"));
    }

    #[test]
    fn marker_at_end_gives_empty_last_chunk() {
        let c = split_input_file("x\n// -----\n");
        assert_eq!(c, vec![("x\n".to_string(), 1), (String::new(), 3)]);
    }
}
