//! `--verify-diagnostics`: check produced diagnostics against expectations
//! written in the file, as mlir-opt does.
//!
//! Expectation syntax (anywhere on a line, usually in a `//` comment):
//! `expected-error {{MSG}}` (this line), `expected-error@+N {{MSG}}` (N lines
//! below), `expected-error@-N {{MSG}}` (N lines above), `@above`/`@below`
//! (= `@-1`/`@+1`); also `expected-warning`, `expected-note`,
//! `expected-remark`. An optional count (`expected-error 2 {{MSG}}`) expects
//! that many diagnostics. A produced diagnostic matches an expectation of
//! the same severity at the same line whose MSG is a substring of the
//! message. Notes attached to a diagnostic are checked as diagnostics of
//! their own.
//!
//! Result: mismatches as error `Diag`s worded like mlir-opt:
//! `unexpected error: MSG` at the produced diagnostic's location, and
//! `expected error "MSG" was not produced` at the expectation's location;
//! malformed expectations are errors too. Empty result = success.
//! Complexity: O(lines + produced × expectations on the same line).

use crate::diag::{Diag, Diags, Loc, Severity};
use std::collections::HashMap;
use std::sync::Arc;

/// One `expected-*` annotation.
#[derive(Clone, Debug, PartialEq)]
pub struct Expectation {
    pub severity: Severity,
    /// Absolute line the diagnostic is expected on.
    pub line: u32,
    /// Substring the message must contain.
    pub text: String,
    /// How many diagnostics it expects.
    pub count: u32,
    /// Where the annotation is written.
    pub loc: Loc,
}

const KINDS: [(&str, Severity); 4] = [
    ("error", Severity::Error),
    ("warning", Severity::Warning),
    ("note", Severity::Note),
    ("remark", Severity::Remark),
];

/// Reads the expectations of `text` (a file or a split chunk whose first
/// line is `first_line`). Malformed annotations go to `errors`.
pub fn parse_expectations(text: &str, file: &str, first_line: u32, errors: &mut Diags) -> Vec<Expectation> {
    let file: Arc<str> = Arc::from(file);
    let mut out = Vec::new();
    let mut line_no = first_line.max(1);
    for line in text.lines() {
        let mut search = 0;
        while let Some(rel) = line[search..].find("expected-") {
            let at = search + rel;
            search = at + "expected-".len();
            let col = (line[..at].chars().count() + 1) as u32;
            let loc = Loc::new(file.clone(), line_no, col);
            let rest = &line[search..];
            let Some(&(word, severity)) = KINDS.iter().find(|(w, _)| rest.starts_with(w)) else {
                continue;
            };
            let mut r = &rest[word.len()..];
            if r.starts_with("-re") {
                errors.push(Diag::error(loc, "expected-*-re (regular expressions) is not supported"));
                continue;
            }
            // Only `@`, a space or `{{` may follow the word; otherwise it is prose.
            if !(r.starts_with('@') || r.starts_with(' ') || r.starts_with("{{")) {
                continue;
            }
            let mut target = line_no;
            if let Some(off) = r.strip_prefix('@') {
                let end = off.find(|c: char| c.is_whitespace() || c == '{').unwrap_or(off.len());
                let spec = &off[..end];
                r = &off[end..];
                let delta: Option<i64> = match spec {
                    "above" => Some(-1),
                    "below" => Some(1),
                    _ if spec.starts_with('+') || spec.starts_with('-') => {
                        spec[1..].parse::<u32>().ok().map(|n| if spec.starts_with('-') { -i64::from(n) } else { i64::from(n) })
                    }
                    _ => None,
                };
                let Some(delta) = delta else {
                    errors.push(Diag::error(loc, format!("invalid line offset '@{spec}' (use @+N, @-N, @above or @below)")));
                    continue;
                };
                let t = i64::from(line_no) + delta;
                if t < 1 || t > i64::from(u32::MAX) {
                    errors.push(Diag::error(loc, format!("line offset '@{spec}' points outside the file")));
                    continue;
                }
                target = t as u32;
            }
            let r2 = r.trim_start();
            let digits = r2.bytes().take_while(u8::is_ascii_digit).count();
            let mut count = 1;
            if digits > 0 {
                count = match r2[..digits].parse::<u32>() {
                    Ok(c) if c > 0 => c,
                    _ => {
                        errors.push(Diag::error(loc, "expected-diagnostic count must be a positive integer"));
                        continue;
                    }
                };
            }
            let r3 = r2[digits..].trim_start();
            let (Some(body), Some(close)) = (r3.strip_prefix("{{"), r3.rfind("}}")) else {
                errors.push(Diag::error(loc, format!("expected-{word} needs a message in {{{{...}}}}")));
                continue;
            };
            if close < 2 {
                errors.push(Diag::error(loc, format!("expected-{word} needs a message in {{{{...}}}}")));
                continue;
            }
            let msg = &body[..close - 2];
            out.push(Expectation { severity, line: target, text: msg.to_string(), count, loc });
            // The message runs to the last `}}` of the line: nothing follows.
            break;
        }
        line_no = line_no.saturating_add(1);
    }
    out
}

/// Checks `produced` against the expectations written in `text` (file or
/// chunk starting at `first_line`). Returns the mismatches (empty = ok).
pub fn check_diagnostics(text: &str, file: &str, first_line: u32, produced: &[Diag]) -> Diags {
    let mut errors = Diags::new();
    let exps = parse_expectations(text, file, first_line, &mut errors);
    let mut remaining: Vec<u32> = exps.iter().map(|e| e.count).collect();
    let mut by_line: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, e) in exps.iter().enumerate() {
        by_line.entry(e.line).or_default().push(i);
    }
    let mut flat: Vec<&Diag> = Vec::new();
    fn walk<'d>(d: &'d Diag, out: &mut Vec<&'d Diag>) {
        out.push(d);
        for n in &d.notes {
            walk(n, out);
        }
    }
    for d in produced {
        walk(d, &mut flat);
    }
    for d in flat {
        let hit = by_line.get(&d.loc.line).and_then(|idx| {
            idx.iter()
                .copied()
                .find(|&i| remaining[i] > 0 && exps[i].severity == d.severity && d.message.contains(&exps[i].text))
        });
        match hit {
            Some(i) => remaining[i] -= 1,
            None => errors.push(Diag::error(
                d.loc.clone(),
                format!("unexpected {}: {}", d.severity.name(), d.message),
            )),
        }
    }
    for (i, e) in exps.iter().enumerate() {
        if remaining[i] > 0 {
            errors.push(Diag::error(
                e.loc.clone(),
                format!("expected {} \"{}\" was not produced", e.severity.name(), e.text),
            ));
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(line: u32, msg: &str) -> Diag {
        Diag::error(Loc::new(Arc::from("f.ck"), line, 3), msg)
    }

    #[test]
    fn offsets_and_same_line() {
        let t = "// expected-error@+1 {{bad thing}}\nX\nY // expected-error {{other}}\n// expected-error@-3 {{first}}\n";
        let mut e = Diags::new();
        let x = parse_expectations(t, "f.ck", 1, &mut e);
        assert!(e.is_empty());
        assert_eq!(x.iter().map(|x| x.line).collect::<Vec<_>>(), vec![2, 3, 1]);
        assert_eq!(x[0].text, "bad thing");
        let ok = check_diagnostics(t, "f.ck", 1, &[at(2, "a bad thing here"), at(3, "the other one"), at(1, "first!")]);
        assert!(ok.is_empty(), "{ok}");
    }

    #[test]
    fn missing_and_unexpected_are_reported() {
        let t = "// expected-error@+1 {{wanted}}\nX\n";
        let r = check_diagnostics(t, "f.ck", 10, &[at(12, "something else"), at(11, "not it")]);
        let msgs: Vec<String> = r.0.iter().map(|d| d.to_string()).collect();
        assert_eq!(
            msgs,
            vec![
                "f.ck:12:3: error: unexpected error: something else".to_string(),
                "f.ck:11:3: error: unexpected error: not it".to_string(),
                "f.ck:10:4: error: expected error \"wanted\" was not produced".to_string()
            ]
        );
    }

    #[test]
    fn severity_must_match_and_notes_count() {
        let t = "X // expected-warning {{w}}\n// expected-note@-1 {{n}}\n";
        let d = at(1, "w").with_note(Diag::note(Loc::new(Arc::from("f.ck"), 1, 1), "n here"));
        let r = check_diagnostics(t, "f.ck", 1, &[d]);
        // The error "w" is not a warning; the note matches.
        assert_eq!(r.0.len(), 2, "{r}");
        assert!(r.0[0].message.starts_with("unexpected error: w"));
        assert!(r.0[1].message.starts_with("expected warning \"w\""));
    }

    #[test]
    fn counts_above_below_and_malformed() {
        let t = "X\n// expected-error@above 2 {{dup}}\n// expected-error@+x {{no}}\n// expected-error@below\nY\n";
        let r = check_diagnostics(t, "f.ck", 1, &[at(1, "dup"), at(1, "dup")]);
        let msgs: Vec<String> = r.0.iter().map(|d| d.message.clone()).collect();
        assert_eq!(msgs.len(), 2, "{msgs:?}");
        assert!(msgs[0].contains("invalid line offset '@+x'"));
        assert!(msgs[1].contains("needs a message"));
        let prose = "this mentions expected-errors and expected-error-ish words\n";
        assert!(check_diagnostics(prose, "f", 1, &[]).is_empty());
    }

    #[test]
    fn two_expectations_on_one_line() {
        let t = "X // expected-error {{a}} expected-error {{b}}\n";
        let mut e = Diags::new();
        let x = parse_expectations(t, "f", 1, &mut e);
        // The message runs to the last `}}` of the line, as in mlir-opt.
        assert_eq!(x.len(), 1);
        assert_eq!(x[0].text, "a}} expected-error {{b");
    }
}
