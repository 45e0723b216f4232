//! docs/passes.md is checked against the pass registry
//! (`passes/src/registry.rs`, the source of truth), so documented options,
//! defaults and statistics cannot drift from what the passes do: every
//! registered pass has a `## \`NAME\`` section; each section's option table
//! (the rows after a `| option | default | values | ...` header) lists
//! exactly the pass's options in registry order with the registry's default
//! (`—` for an unset one) and kind (as `--list-passes` shows it); a pass
//! without options says "No options."; each section's statistics table (the
//! rows after a `| statistic | meaning |` header) lists exactly the pass's
//! declared statistics with their help text; and no section documents a pass
//! the registry lacks.

use ckopt_passes::registry::registry;
use std::path::PathBuf;

fn passes_md() -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/passes.md");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

fn cells(line: &str) -> Vec<String> {
    let t = line.trim();
    let inner = t.strip_prefix('|').and_then(|s| s.strip_suffix('|')).unwrap_or("");
    inner.split('|').map(|c| c.trim().to_string()).collect()
}

/// (pass name, section text) for every `## \`NAME\`` heading.
fn sections(doc: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in doc.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            let name = h.trim().strip_prefix('`').and_then(|s| s.strip_suffix('`'));
            out.push((name.unwrap_or("").to_string(), String::new()));
        } else if let Some((_, body)) = out.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    out.into_iter().filter(|(n, _)| !n.is_empty()).collect()
}

/// Rows (first `n` cells, backticks trimmed from the first) of the tables
/// whose header starts with `head`.
fn table_rows(section: &str, head: &[&str], n: usize) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in section.lines() {
        let c = cells(line);
        if c.len() >= head.len() && c.iter().zip(head).all(|(a, b)| a == b) {
            in_table = true;
            continue;
        }
        if !line.trim_start().starts_with('|') {
            in_table = false;
            continue;
        }
        if in_table && !c[0].starts_with("---") {
            let mut r: Vec<String> = c.into_iter().take(n).collect();
            r[0] = r[0].trim_matches('`').to_string();
            rows.push(r);
        }
    }
    rows
}

#[test]
fn every_pass_option_and_statistic_is_documented_as_registered() {
    let doc = passes_md();
    let secs = sections(&doc);
    let mut problems = Vec::new();
    for p in registry() {
        let Some((_, body)) = secs.iter().find(|(n, _)| n == p.name) else {
            problems.push(format!("pass '{}': no '## `{}`' section", p.name, p.name));
            continue;
        };
        let got = table_rows(body, &["option", "default", "values"], 3);
        let want: Vec<Vec<String>> = p
            .options
            .iter()
            .map(|o| {
                let default = if o.default.is_empty() { "—".to_string() } else { format!("`{}`", o.default) };
                vec![o.name.to_string(), default, format!("`{}`", o.kind)]
            })
            .collect();
        if got != want {
            problems.push(format!("pass '{}': documented options {got:?}, the registry has {want:?}", p.name));
        }
        let got = table_rows(body, &["statistic", "meaning"], 2);
        let want: Vec<Vec<String>> = p.statistics.iter().map(|s| vec![s.name.to_string(), s.help.to_string()]).collect();
        if got != want {
            problems.push(format!("pass '{}': documented statistics {got:?}, the registry has {want:?}", p.name));
        }
        if p.options.is_empty() && !body.contains("No options.") {
            problems.push(format!("pass '{}' takes no options; its section should say \"No options.\"", p.name));
        }
    }
    for (n, _) in &secs {
        if !registry().iter().any(|p| p.name == n) {
            problems.push(format!("section '## `{n}`' documents a pass the registry does not have"));
        }
    }
    assert!(problems.is_empty(), "docs/passes.md is out of date:\n{}", problems.join("\n"));
}
