//! `watch`: a request that turns its connection into a stream of events (crate::events).
//! As a line, `watch [KIND ...]`; typed, `{"version": 1, "command": "watch", "kinds":
//! [...]}`. It is not in the command table — it answers once and then streams, which no
//! handler can — so the control socket takes it before the table (server.rs), and this
//! file gives its reference text and schema entry beside the table's.

use super::request::{self, Code, Error, VERSION};
use crate::events::{self, Kind};
use serde_json::{json, Value};

/// The command's one word (not abbreviated).
pub const WORD: &str = "watch";

/// What a line or typed request asking to watch says.
pub struct Watch {
    pub kinds: Vec<Kind>,
    /// The first reply, before the events.
    pub reply: Value,
}

/// Whether `line` asks to watch: `None` when it is another command; otherwise the kinds
/// and the first reply, or the reply that refuses it.
pub fn parse(line: &str) -> Option<Result<Watch, Value>> {
    let line = line.trim();
    if request::is_typed(line) {
        let v: Value = serde_json::from_str(line).ok()?;
        if v.get("command").and_then(Value::as_str) != Some(WORD) {
            return None;
        }
        return Some(typed(&v).map_err(|e| request::error_reply(&e)));
    }
    let mut words = line.split_whitespace();
    if words.next() != Some(WORD) {
        return None;
    }
    let kinds: Result<Vec<Kind>, String> = words.map(Kind::parse).collect();
    Some(match kinds {
        Ok(kinds) => Ok(Watch {
            reply: json!({"ok": true, "text": format!("watching {}\n", shown(&kinds))}),
            kinds,
        }),
        Err(e) => Err(json!({"ok": false, "error": e})),
    })
}

fn shown(kinds: &[Kind]) -> String {
    if kinds.is_empty() {
        return events::names();
    }
    let n: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
    n.join(", ")
}

fn bad(code: Code, message: String) -> Error {
    Error { code, message }
}

fn typed(v: &Value) -> Result<Watch, Error> {
    let m = v.as_object().ok_or_else(|| {
        bad(
            Code::BadRequest,
            format!("a request is a JSON object, not {v}"),
        )
    })?;
    if m.get("version").and_then(Value::as_u64) != Some(VERSION) {
        return Err(bad(
            Code::BadVersion,
            format!("'version' must be {VERSION} (this daemon speaks {VERSION})"),
        ));
    }
    if let Some(k) = m
        .keys()
        .find(|k| !matches!(k.as_str(), "version" | "command" | "kinds"))
    {
        return Err(bad(
            Code::UnknownField,
            format!(
                "'watch' takes no field '{}' (its fields: kinds)",
                k.escape_debug()
            ),
        ));
    }
    let kinds = match m.get("kinds") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| match i.as_str() {
                Some(s) => Kind::parse(s).map_err(|e| bad(Code::BadField, e)),
                None => Err(bad(
                    Code::BadField,
                    format!("field 'kinds' must hold strings, not {i}"),
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(bad(
                Code::BadField,
                format!("field 'kinds' must be an array of strings, not {other}"),
            ))
        }
    };
    let names: Vec<&str> = kinds.iter().map(|k: &Kind| k.as_str()).collect();
    Ok(Watch {
        reply: json!({"ok": true, "code": "ok", "text": format!("watching {}\n", shown(&kinds)),
                      "json": {"kinds": names}}),
        kinds,
    })
}

/// The reference section of `docs/cli.md`.
pub fn markdown() -> String {
    format!(
        "\n## Events\n\n### `watch [KIND ...]`\n\n\
         Stream events: after its first reply the connection carries one JSON event per line \
         until the client closes it or the daemon stops (`sluice ctl watch` prints them). The \
         kinds are {}; none named means all. Not abbreviated. See docs/api.md.\n\n    \
         sluice ctl watch link route\n",
        events::names()
    )
}

/// The schema entry of the typed request.
pub fn schema_entry() -> Value {
    let kinds: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
    json!({
        "title": WORD,
        "description": "stream events after the reply, one per line (as a line: watch [KIND ...])",
        "type": "object",
        "properties": {
            "version": {"const": VERSION},
            "command": {"const": WORD},
            "kinds": {"type": "array", "items": {"enum": kinds}}
        },
        "required": ["version", "command"],
        "additionalProperties": false,
        "examples": [{"version": VERSION, "command": WORD, "kinds": ["link", "route"]}],
    })
}

/// The schema of one streamed event.
pub fn schema_event() -> Value {
    let mut kinds: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
    kinds.push("overflow");
    json!({
        "description": "one event line after a watch request's reply: its kind's fields beside these (docs/api.md lists them); an overflow event says how many events were dropped from the subscriber's queue",
        "type": "object",
        "properties": {
            "seq": {"type": "integer", "minimum": 1, "description": "the event's number since the daemon started (not on overflow)"},
            "time": {"type": "number", "description": "Unix time in seconds"},
            "kind": {"enum": kinds},
            "lost": {"type": "integer", "minimum": 1, "description": "on overflow: the events dropped"}
        },
        "required": ["time", "kind"]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(line: &str) -> Value {
        match parse(line) {
            Some(Err(v)) => v,
            _ => panic!("{line} was not refused"),
        }
    }

    #[test]
    fn lines_and_typed_requests_name_kinds() {
        assert!(parse("show version").is_none());
        assert!(parse("{\"version\": 1, \"command\": \"show version\"}").is_none());
        assert!(parse("watchdog").is_none());
        let w = parse("watch link route").unwrap().ok().unwrap();
        assert_eq!(w.kinds, [Kind::Link, Kind::Route]);
        assert_eq!(w.reply["text"], json!("watching link, route\n"));
        let w = parse("watch").unwrap().ok().unwrap();
        assert!(w.kinds.is_empty());
        let w = parse(r#"{"version": 1, "command": "watch", "kinds": ["worker"]}"#)
            .unwrap()
            .ok()
            .unwrap();
        assert_eq!(w.kinds, [Kind::Worker]);
        assert_eq!(w.reply["code"], json!("ok"));
        assert_eq!(w.reply["json"]["kinds"], json!(["worker"]));
    }

    #[test]
    fn bad_watches_are_refused_with_their_code() {
        assert!(refused("watch links")["error"]
            .as_str()
            .unwrap()
            .contains("no event kind 'links'"));
        let code = |s: &str| refused(s)["code"].clone();
        assert_eq!(code(r#"{"command": "watch"}"#), json!("bad_version"));
        assert_eq!(
            code(r#"{"version": 1, "command": "watch", "kind": []}"#),
            json!("unknown_field")
        );
        assert_eq!(
            code(r#"{"version": 1, "command": "watch", "kinds": "link"}"#),
            json!("bad_field")
        );
        assert_eq!(
            code(r#"{"version": 1, "command": "watch", "kinds": ["x"]}"#),
            json!("bad_field")
        );
        assert_eq!(
            code(r#"{"version": 1, "command": "watch", "kinds": [1]}"#),
            json!("bad_field")
        );
    }
}
