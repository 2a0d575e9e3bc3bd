//! Writing a config file (`sluice ctl save`): TOML text with every section in the order of
//! `section::SECTIONS` (the order of `docs/config.md`) and each section's keys in the
//! order its reference lists them, so that a saved file reads like a written one.
//!
//! Only what a config file holds is written: strings, integers, floats, booleans, arrays and
//! inline tables. Strings are basic strings with every character TOML does not allow raw
//! escaped, and keys are bare when TOML allows it, so any name round-trips.

use super::reference::SectionDoc;
use super::section::{Section, SECTIONS};
use std::fmt::Write as _;
use toml::Value;

/// One table of the file: `[name]` or one `[[name]]` entry, its keys in any order (they are
/// written in the reference's order, unknown ones after in the order given).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Entry {
    pub keys: Vec<(String, Value)>,
}

impl Entry {
    /// Set `key` (replacing an earlier value).
    pub fn set(&mut self, key: &str, value: impl Into<Value>) -> &mut Entry {
        let value = value.into();
        match self.keys.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value,
            None => self.keys.push((key.to_string(), value)),
        }
        self
    }

    /// Every key of a table as read from a file, aliases written as their key.
    pub fn from_table(section: &SectionDoc, table: &toml::Table) -> Entry {
        let mut e = Entry::default();
        for (k, v) in table {
            let key = section
                .aliases
                .iter()
                .find(|(alias, _)| alias == k)
                .map_or(k.as_str(), |(_, key)| key);
            e.set(key, v.clone());
        }
        e
    }

    /// An entry from TOML text, for tests: `Entry::parse("id = 10\nlearn = true")`.
    #[cfg(test)]
    pub fn parse(src: &str) -> Entry {
        let t: toml::Table = src.parse().unwrap();
        let mut e = Entry::default();
        for (k, v) in t {
            e.set(&k, v);
        }
        e
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.keys.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn remove(&mut self, key: &str) {
        self.keys.retain(|(k, _)| k != key);
    }
}

/// The file: `comments` (each line written as a `# ` comment) first, then every section
/// `entries` gives (none: the section is left out), then `notes` as comments at the end.
pub fn document(
    comments: &[String],
    mut entries: impl FnMut(&dyn Section) -> Result<Vec<Entry>, String>,
    notes: &[String],
) -> Result<String, String> {
    let mut s = String::new();
    for c in comments {
        let _ = writeln!(s, "{}", comment(c));
    }
    for &sec in SECTIONS {
        let doc = sec.doc();
        for e in entries(sec)? {
            s.push('\n');
            let _ = writeln!(s, "{}", doc.header());
            for (k, v) in ordered(doc, &e) {
                let _ = writeln!(s, "{} = {}", key(k), value(v));
            }
        }
    }
    if !notes.is_empty() {
        s.push('\n');
        for n in notes {
            let _ = writeln!(s, "{}", comment(n));
        }
    }
    Ok(s)
}

/// A comment line: `# ` and the text, each line break of it starting a new comment line
/// (a comment cannot hold one), control characters left out.
pub fn comment(text: &str) -> String {
    text.split('\n')
        .map(|line| {
            let clean: String = line
                .chars()
                .filter(|&c| c == '\t' || !c.is_control())
                .collect();
            format!("# {clean}").trim_end().to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The keys of `e` in the order `sec` documents them, then any others.
fn ordered<'a>(sec: &SectionDoc, e: &'a Entry) -> Vec<(&'a str, &'a Value)> {
    let rank = |k: &str| {
        sec.keys
            .iter()
            .position(|d| d.name == k)
            .unwrap_or(sec.keys.len())
    };
    let mut keys: Vec<(usize, &str, &Value)> = e
        .keys
        .iter()
        .map(|(k, v)| (rank(k), k.as_str(), v))
        .collect();
    // A stable sort: unknown keys keep their order.
    keys.sort_by_key(|(r, _, _)| *r);
    keys.into_iter().map(|(_, k, v)| (k, v)).collect()
}

/// A key: bare when it is letters, digits, `-` and `_` only, else quoted.
pub fn key(k: &str) -> String {
    let bare = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if bare {
        k.to_string()
    } else {
        string(k)
    }
}

/// A basic string: `"` and `\` escaped, and every control character (which TOML does not
/// allow raw in a basic string) as its short escape or `\uXXXX`.
pub fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A value as TOML writes it inline.
pub fn value(v: &Value) -> String {
    match v {
        Value::String(s) => string(s),
        Value::Integer(i) => i.to_string(),
        Value::Float(f) => float(*f),
        Value::Boolean(b) => b.to_string(),
        Value::Datetime(d) => d.to_string(),
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(value).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Table(t) if t.is_empty() => "{}".to_string(),
        Value::Table(t) => {
            let items: Vec<String> = t
                .iter()
                .map(|(k, v)| format!("{} = {}", key(k), value(v)))
                .collect();
            format!("{{ {} }}", items.join(", "))
        }
    }
}

/// A float that reads back as a float: `1.0`, not `1`; `nan`, `inf`, `-inf`.
fn float(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    let s = format!("{f:?}");
    if s.contains(['.', 'e', 'E']) {
        s
    } else {
        s + ".0"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `k = v` read back by the toml crate.
    fn read_back(k: &str, v: &Value) -> toml::Table {
        let text = format!("{} = {}\n", key(k), value(v));
        text.parse::<toml::Table>()
            .unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn odd_strings_round_trip() {
        for s in [
            "",
            "d0",
            "a\"b",
            "back\\slash",
            "line\nbreak\r\n",
            "tab\there",
            "\u{0}nul\u{1f}\u{7f}",
            "\u{8}\u{c}",
            "'single'",
            "\"\"\"",
            "ünïcödé ☃ 𝄞",
            "trailing\\",
            "# not a comment",
            "= [ ] { } ,",
        ] {
            let v = Value::String(s.to_string());
            let t = read_back("k", &v);
            assert_eq!(t["k"], v, "{s:?} as {}", string(s));
            // And as a key.
            let t = read_back(s, &Value::Integer(1));
            assert_eq!(
                t.get(s),
                Some(&Value::Integer(1)),
                "key {s:?} as {}",
                key(s)
            );
        }
    }

    #[test]
    fn escapes() {
        assert_eq!(string("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(string("x\ny\u{0}"), r#""x\ny\u0000""#);
        assert_eq!(key("rx-file"), "rx-file");
        assert_eq!(key("a.b"), "\"a.b\"");
        assert_eq!(key(""), "\"\"");
        assert_eq!(key("ä"), "\"ä\"");
    }

    #[test]
    fn values_round_trip() {
        let src = r#"
            a = [1, -2, 3]
            b = { interface = "d0", shg = 1 }
            c = [{ ip = "192.0.2.9", mac = "02:00:00:00:00:09" }, "x"]
            d = 1.0
            e = -0.5
            f = 1e300
            g = true
            h = []
            i = {}
            j = 1979-05-27T07:32:00Z
        "#;
        let t: toml::Table = src.parse().unwrap();
        for (k, v) in &t {
            assert_eq!(&read_back(k, v)[k.as_str()], v, "{k}");
        }
        assert_eq!(float(1.0), "1.0");
        assert_eq!(float(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn comments_stay_comments() {
        assert_eq!(comment("a\nb\u{0}c"), "# a\n# bc");
        let text = comment("x\n[dataplane]\nworkers = 2") + "\n";
        assert!(text.parse::<toml::Table>().unwrap().is_empty(), "{text}");
    }

    #[test]
    fn document_orders_sections_and_keys_as_the_reference() {
        let text = document(
            &["top".into()],
            |sec| {
                let mut e = Entry::default();
                match sec.doc().name {
                    "route" => {
                        e.set("via", vec!["192.0.2.2"]).set("prefix", "10.0.0.0/8");
                        Ok(vec![e.clone(), e])
                    }
                    "dataplane" => {
                        e.set("odd key", 1).set("workers", 2);
                        Ok(vec![e])
                    }
                    _ => Ok(vec![]),
                }
            },
            &["end".into()],
        )
        .unwrap();
        assert_eq!(
            text,
            "# top\n\n[dataplane]\nworkers = 2\n\"odd key\" = 1\n\n[[route]]\n\
             prefix = \"10.0.0.0/8\"\nvia = [\"192.0.2.2\"]\n\n[[route]]\n\
             prefix = \"10.0.0.0/8\"\nvia = [\"192.0.2.2\"]\n\n# end\n"
        );
    }
}
