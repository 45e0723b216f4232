//! The rule table of docs/autodiff.md, generated from the family files' `RULES`.
//!
//! The table sits between [`RULES_BEGIN`] and [`RULES_END`] in docs/autodiff.md.
//! The test `autodiff_doc_table_is_current` regenerates it and fails with a
//! diff when the file differs; `CKOPT_BLESS=1 cargo test -p ckopt-passes autodiff_doc`
//! rewrites the file instead.

use super::rules;
use ckopt_ir::OpKind;

/// The line before the generated table in docs/autodiff.md.
pub const RULES_BEGIN: &str = "<!-- BEGIN rule table: generated from passes/src/autodiff/*.rs `RULES`; regenerate with `CKOPT_BLESS=1 cargo test -p ckopt-passes autodiff_doc` -->";
/// The line after it.
pub const RULES_END: &str = "<!-- END rule table -->";

/// The Markdown rule table, one row per op in op-table order (`OpKind::ALL`):
/// op, adjoint(s), what the backward reads, and the file holding the rule.
/// An op without a `RULES` entry gets a row saying so (the tests fail on it).
pub fn rule_table_markdown() -> String {
    let mut s = String::from(
        "| op | adjoint(s) (`dy` = adjoint of the result `y`) | forward values the backward reads | rule in |\n|---|---|---|---|\n",
    );
    for &k in OpKind::ALL {
        match rules().find(|(_, r)| r.kind == k) {
            Some((file, r)) => {
                s.push_str(&format!("| `ck.{}` | {} | {} | `autodiff/{file}` |\n", k.name(), r.adjoint, r.keeps));
            }
            None => s.push_str(&format!("| `ck.{}` | MISSING: no entry in any `RULES` | — | — |\n", k.name())),
        }
    }
    s
}

/// `doc` with the text between the markers replaced by `table`; `None` without both markers.
#[cfg(test)]
fn with_table(doc: &str, table: &str) -> Option<String> {
    with_block(doc, RULES_BEGIN, RULES_END, table)
}

/// `doc` with the text between the lines `begin` and `end` replaced by
/// `block`; `None` without both markers. (Also used for docs/passes.md's
/// identity table, `crate::identities`.)
#[cfg(test)]
pub(crate) fn with_block(doc: &str, begin: &str, end: &str, block: &str) -> Option<String> {
    let b = doc.find(begin)? + begin.len();
    let e = b + doc[b..].find(end)?;
    Some(format!("{}\n{}{}", &doc[..b], block, &doc[e..]))
}

/// A line diff (`-` only in `old`, `+` only in `new`), by longest common subsequence.
#[cfg(test)]
pub(crate) fn line_diff(old: &str, new: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push_str(&format!("- {}\n", a[i]));
            i += 1;
        } else {
            out.push_str(&format!("+ {}\n", b[j]));
            j += 1;
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn autodiff_doc_every_op_has_exactly_one_rule() {
        let mut problems = Vec::new();
        for &k in OpKind::ALL {
            let files: Vec<&str> = rules().filter(|(_, r)| r.kind == k).map(|(f, _)| f).collect();
            if files.len() != 1 {
                problems.push(format!("ck.{}: {} RULES entries ({files:?}); want exactly one", k.name(), files.len()));
            }
        }
        for (file, r) in rules() {
            for text in [r.adjoint, r.keeps] {
                if text.is_empty() || text.contains('|') || text.contains('\n') {
                    problems.push(format!("ck.{} in {file}: '{text}' must be non-empty, one line, without '|'", r.kind.name()));
                }
            }
        }
        assert!(problems.is_empty(), "the autodiff rule docs (RULES in passes/src/autodiff/*.rs):\n{}", problems.join("\n"));
    }

    #[test]
    fn autodiff_doc_table_is_current() {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/autodiff.md");
        let doc = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let want = with_table(&doc, &rule_table_markdown())
            .unwrap_or_else(|| panic!("{} lacks the markers\n{RULES_BEGIN}\n{RULES_END}", path.display()));
        if want == doc {
            return;
        }
        if std::env::var_os("CKOPT_BLESS").is_some() {
            std::fs::write(&path, &want).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
            eprintln!("rewrote the rule table of {}", path.display());
            return;
        }
        panic!(
            "docs/autodiff.md's rule table differs from the RULES in passes/src/autodiff/*.rs \
             (- in the file, + generated):\n{}\nRegenerate it with: CKOPT_BLESS=1 cargo test -p ckopt-passes autodiff_doc",
            line_diff(&doc, &want)
        );
    }

    #[test]
    fn autodiff_doc_line_diff_marks_changes() {
        assert_eq!(line_diff("a\nb\nc\n", "a\nx\nc\n"), "- b\n+ x\n");
        assert_eq!(line_diff("a\n", "a\n"), "");
        assert_eq!(with_table(&format!("x\n{RULES_BEGIN}\nold\n{RULES_END}\ny"), "new\n").unwrap(), format!("x\n{RULES_BEGIN}\nnew\n{RULES_END}\ny"));
    }
}
