//! Keeps the source tree readable (issue 34, "keep it so"): no file under `src/` or a crate's
//! `src/`, `benches/` or `examples/` holds more than 600 lines of code outside its `#[cfg(test)]` items, and no function (free,
//! in an impl or in a trait) is longer than 150 lines. Files of tests only (`tests.rs`,
//! `*_tests.rs`) are exempt from the file limit but not from the function limit.
//!
//! The scanner is a small lexer, not a parser: it blanks comments (doc tests included),
//! string and char literals, then finds each `fn NAME` and its body by matching brackets.
//! When this test fails, its message lists every offender with its count: split those.

use std::fs;
use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 600;
const MAX_FN_LINES: usize = 150;
/// The folders scanned in each package: the command's `src/` at the top, and these in every
/// crate under `crates/`.
const CRATE_ROOTS: &[&str] = &["src", "benches", "examples"];

#[test]
fn files_and_functions_stay_short() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    collect_rs(&root.join("src"), &mut files);
    let crates = fs::read_dir(root.join("crates")).expect("crates/");
    for krate in crates.flatten() {
        for dir in CRATE_ROOTS {
            collect_rs(&krate.path().join(dir), &mut files);
        }
    }
    files.sort();
    assert!(
        files.len() > 100,
        "found only {} .rs files under src/ and crates/*/{CRATE_ROOTS:?}",
        files.len()
    );

    let mut offenders = Vec::new();
    for path in &files {
        let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let rel = path
            .strip_prefix(root)
            .unwrap_or(path)
            .display()
            .to_string();
        let code = code_lines(&text);
        if !is_test_file(path) {
            let lines = lines_outside_tests(&code);
            if lines > MAX_FILE_LINES {
                offenders.push(format!(
                    "{rel}: {lines} lines outside #[cfg(test)] (limit {MAX_FILE_LINES})"
                ));
            }
        }
        for f in functions(&code) {
            if f.lines > MAX_FN_LINES {
                offenders.push(format!(
                    "{rel}:{}: fn {} is {} lines (limit {MAX_FN_LINES})",
                    f.line + 1,
                    f.name,
                    f.lines
                ));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "{} place(s) past the structure limits; split them by concept:\n  {}",
        offenders.len(),
        offenders.join("\n  ")
    );
}

fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("read_dir entry").path();
        if path.is_dir() {
            collect_rs(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn is_test_file(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name == "tests.rs" || name.ends_with("_tests.rs")
}

/// The file's lines with comments removed and the contents of string and char literals
/// blanked, so that braces and `fn` are only ever seen in code. Line count is preserved.
fn code_lines(text: &str) -> Vec<String> {
    enum State {
        Code,
        Block(u32),
        Str,
        RawStr(usize),
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut state = State::Code;
    let mut i = 0;
    // A newline is always kept so line numbers stay true; everything else not code is a space.
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match state {
            State::Code => {
                if c == '/' && next == Some('/') {
                    while i < chars.len() && chars[i] != '\n' {
                        i += 1;
                    }
                    continue;
                } else if c == '/' && next == Some('*') {
                    state = State::Block(1);
                    out.push_str("  ");
                    i += 2;
                    continue;
                } else if c == '"' {
                    state = State::Str;
                    out.push('"');
                } else if c == 'r'
                    && matches!(next, Some('"') | Some('#'))
                    && !prev_is_ident(&chars, i)
                    && raw_string_hashes(&chars, i + 1).is_some()
                {
                    let hashes = raw_string_hashes(&chars, i + 1).unwrap();
                    state = State::RawStr(hashes);
                    out.push('"');
                    for _ in 0..hashes + 1 {
                        out.push(' ');
                    }
                    i += hashes + 2;
                    continue;
                } else if c == '\'' {
                    // A char literal ('x', '\n', '\u{7f}') or a lifetime ('a).
                    if next == Some('\\') {
                        let mut j = i + 3;
                        while j < chars.len() && chars[j] != '\'' {
                            j += 1;
                        }
                        out.push_str(&" ".repeat(j + 1 - i));
                        i = j + 1;
                        continue;
                    } else if chars.get(i + 2) == Some(&'\'') {
                        out.push_str("   ");
                        i += 3;
                        continue;
                    }
                    out.push(c);
                } else {
                    out.push(c);
                }
            }
            State::Block(depth) => {
                if c == '*' && next == Some('/') {
                    state = if depth == 1 {
                        State::Code
                    } else {
                        State::Block(depth - 1)
                    };
                    out.push_str("  ");
                    i += 2;
                    continue;
                } else if c == '/' && next == Some('*') {
                    state = State::Block(depth + 1);
                    out.push_str("  ");
                    i += 2;
                    continue;
                }
                out.push(blank(c));
            }
            State::Str => {
                if c == '\\' {
                    out.push(' ');
                    if let Some(n) = next {
                        out.push(blank(n));
                    }
                    i += 2;
                    continue;
                } else if c == '"' {
                    state = State::Code;
                    out.push('"');
                } else {
                    out.push(blank(c));
                }
            }
            State::RawStr(hashes) => {
                if c == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) {
                    state = State::Code;
                    out.push('"');
                    out.push_str(&" ".repeat(hashes));
                    i += hashes + 1;
                    continue;
                }
                out.push(blank(c));
            }
        }
        i += 1;
    }
    out.split('\n').map(str::to_owned).collect()
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn prev_is_ident(chars: &[char], i: usize) -> bool {
    // `br"..."` is a raw byte string: its `b` does not make the `r` part of an identifier.
    i > 0 && is_ident(chars[i - 1]) && !(chars[i - 1] == 'b' && (i < 2 || !is_ident(chars[i - 2])))
}

/// At `chars[at..]` = `#*"`, the number of `#`s of a raw string's opening.
fn raw_string_hashes(chars: &[char], at: usize) -> Option<usize> {
    let hashes = chars[at..].iter().take_while(|&&c| c == '#').count();
    (chars.get(at + hashes) == Some(&'"')).then_some(hashes)
}

/// Where the item starting at (`line`, `col`) ends: the line of the `;` that ends it at
/// bracket depth 0, or of the `}` that closes its first top-level `{`. The bool says the item
/// has a body (a braced block).
fn item_end(code: &[String], line: usize, col: usize) -> Option<(usize, bool)> {
    let mut depth = 0i32;
    let mut body = false;
    for (l, text) in code.iter().enumerate().skip(line) {
        let start = if l == line { col } else { 0 };
        for c in text.chars().skip(start) {
            match c {
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                '{' => {
                    if depth == 0 {
                        body = true;
                    }
                    depth += 1;
                }
                '}' => {
                    depth -= 1;
                    if body && depth == 0 {
                        return Some((l, true));
                    }
                }
                ';' if depth == 0 && !body => return Some((l, false)),
                _ => {}
            }
        }
    }
    None
}

/// Lines of code not inside an item marked `#[cfg(test)]` (a tests module, a test helper).
fn lines_outside_tests(code: &[String]) -> usize {
    let mut count = 0usize;
    let mut l = 0;
    while l < code.len() {
        if code[l].trim() == "#[cfg(test)]" {
            if let Some((end, _)) = item_end(code, l, 0) {
                l = end + 1;
                continue;
            }
        }
        count += 1;
        l += 1;
    }
    // A file's last newline leaves an empty last element; it is not a line.
    if code.last().is_some_and(|s| s.is_empty()) {
        count = count.saturating_sub(1);
    }
    count
}

struct Function {
    name: String,
    /// 0-based line of the `fn` keyword.
    line: usize,
    /// From the `fn` line to the closing brace's, both included.
    lines: usize,
}

/// Every fn with a body: free, in an impl or trait, nested, or written by a macro's template.
fn functions(code: &[String]) -> Vec<Function> {
    let mut found = Vec::new();
    for (l, text) in code.iter().enumerate() {
        let chars: Vec<char> = text.chars().collect();
        let mut i = 0;
        while i + 2 < chars.len() {
            let is_fn = chars[i] == 'f'
                && chars[i + 1] == 'n'
                && chars[i + 2].is_whitespace()
                && (i == 0 || !is_ident(chars[i - 1]));
            if !is_fn {
                i += 1;
                continue;
            }
            let rest: String = chars[i + 2..].iter().collect();
            let name: String = rest
                .trim_start()
                .chars()
                .take_while(|&c| is_ident(c) || c == '$')
                .collect();
            if !name.is_empty() {
                if let Some((end, true)) = item_end(code, l, i) {
                    found.push(Function {
                        name,
                        line: l,
                        lines: end - l + 1,
                    });
                }
            }
            i += 2;
        }
    }
    found
}

#[test]
fn scanner_ignores_comments_strings_and_declarations() {
    let src = r####"
/// ```
/// fn in_doc() {
/// }
/// ```
// fn in_line_comment() {
/* fn in_block() { /* nested */ } */
trait T {
    fn declared(&self) -> [u8; 4];
    fn provided(&self) -> char {
        let _ = "fn in_string() {";
        let _ = r#"}"#;
        let _ = '}';
        let _ = '\'';
        let _ = br"{";
        '{'
    }
}
pub(crate) fn free<'a>(x: &'a str) -> &'a str
where
    'a: 'a,
{
    x
}
#[cfg(test)]
mod tests {
    fn t() {}
}
"####;
    let code = code_lines(src);
    let fns: Vec<(String, usize)> = functions(&code)
        .into_iter()
        .map(|f| (f.name, f.lines))
        .collect();
    assert_eq!(
        fns,
        vec![
            ("provided".to_owned(), 8),
            ("free".to_owned(), 6),
            ("t".to_owned(), 1)
        ]
    );
    assert_eq!(code.len(), src.split('\n').count());
    // 30 lines in all (the first is empty), the last 4 are the tests module.
    assert_eq!(lines_outside_tests(&code), src.lines().count() - 4);
}
