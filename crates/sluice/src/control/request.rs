//! Typed requests: a JSON object on the control socket instead of a command line, e.g.
//! `{"version": 1, "command": "set interface state", "interface": "d0", "state": "up"}`.
//!
//! `command` is the command's words as help shows them (first alternatives, full words); the
//! other fields are its arguments by grammar name (`key` turns a grammar name into a field),
//! typed by the grammar: a `Value` or `Optional` is one word (a string, or an integer), a
//! `Flag` a boolean, a `Choice` one of its strings, a `Count` an integer, and `Rest` (the
//! handler's own grammar: routes, rules) is `args`, its words as one string or an array. The
//! `Args` are built here from the JSON, never by pasting text into the line parser, and the
//! command's own handler runs, as for a line. The reply always says `ok` and a `code`
//! (`Code`), and on success carries the handler's text and, where it has one, its JSON.

use super::access::Access;
use super::cli::{self, Arg, Args, Command, Output};
use super::exec::Control;
use serde_json::{json, Map, Value};

/// The request version this daemon speaks; a request must name it.
pub const VERSION: u64 = 1;

/// The field that carries a `Rest` argument's words.
pub const REST_FIELD: &str = "args";

/// Fields of every request, never a grammar name's key.
pub const RESERVED: &[&str] = &["version", "command", REST_FIELD];

/// Why a typed request failed: the stable `code` of the reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// Not a JSON object.
    BadRequest,
    /// `version` missing, not an integer, or not `VERSION`.
    BadVersion,
    /// `command` names no command.
    UnknownCommand,
    /// A required argument is not there.
    MissingField,
    /// A field the command does not take.
    UnknownField,
    /// A field of the wrong type or value.
    BadField,
    /// The handler refused the request (its error is the message).
    Failed,
    /// The command changes state and came on the read-only socket.
    ReadOnly,
}

impl Code {
    pub const ALL: &'static [Code] = &[
        Code::BadRequest,
        Code::BadVersion,
        Code::UnknownCommand,
        Code::MissingField,
        Code::UnknownField,
        Code::BadField,
        Code::Failed,
        Code::ReadOnly,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Code::BadRequest => "bad_request",
            Code::BadVersion => "bad_version",
            Code::UnknownCommand => "unknown_command",
            Code::MissingField => "missing_field",
            Code::UnknownField => "unknown_field",
            Code::BadField => "bad_field",
            Code::Failed => "failed",
            Code::ReadOnly => "read_only",
        }
    }
}

/// A failed request: its code and a one-line message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub code: Code,
    pub message: String,
}

fn err<T>(code: Code, message: String) -> Result<T, Error> {
    Err(Error { code, message })
}

/// The field of a grammar name: the one place names become keys. A few short names are
/// spelled out; the rest are the name in lower case, `-` as `_`.
pub fn key(name: &str) -> String {
    match name {
        "IF" => "interface".into(),
        "BD" => "bridge".into(),
        "N" => "count".into(),
        "ADDR" => "address".into(),
        _ => name.to_ascii_lowercase().replace('-', "_"),
    }
}

/// A command's name in requests: its words' first alternatives.
pub fn name(command: &Command) -> String {
    let words: Vec<&str> = command.words.iter().map(|w| cli::shown(w)).collect();
    words.join(" ")
}

/// The command a request's `command` names (exactly, no abbreviations).
pub fn by_name(wanted: &str) -> Option<&'static Command> {
    cli::commands().find(|c| name(c) == wanted)
}

/// The grammar name of an argument and whether the request must carry it (`None` for `Rest`).
fn named(arg: &Arg) -> Option<(&'static str, bool)> {
    match arg {
        Arg::Value(n) | Arg::Choice(n, _) | Arg::Count(n, _, _) => Some((n, true)),
        Arg::Optional(n) | Arg::Flag(n) => Some((n, false)),
        Arg::Rest => None,
    }
}

/// The flags of `command`, which a line takes anywhere among its words: no value or rest
/// word of a typed request may be one (a line could not say it).
fn flag_names(command: &Command) -> Vec<&'static str> {
    command
        .args
        .iter()
        .filter_map(|a| match a {
            Arg::Flag(f) => Some(*f),
            _ => None,
        })
        .collect()
}

/// One word of a value or of `args`: non-empty, no white space, not a flag's name.
fn word(field: &str, s: &str, flags: &[&str]) -> Result<String, Error> {
    if s.is_empty() || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return err(
            Code::BadField,
            format!("field '{field}' must be one word (no spaces), not {s:?}"),
        );
    }
    if flags.contains(&s) {
        return err(
            Code::BadField,
            format!("field '{field}' may not be '{s}': say \"{}\": true", key(s)),
        );
    }
    Ok(s.to_string())
}

/// A `Value` or `Optional`: a word, or an integer written as one.
fn value(field: &str, v: &Value, flags: &[&str]) -> Result<String, Error> {
    match v {
        Value::String(s) => word(field, s, flags),
        Value::Number(n) if n.is_i64() || n.is_u64() => Ok(n.to_string()),
        _ => err(
            Code::BadField,
            format!("field '{field}' must be a string or an integer, not {v}"),
        ),
    }
}

/// The words of `args`: one string split at white space, or an array of words.
fn rest(v: &Value, flags: &[&str]) -> Result<Vec<String>, Error> {
    match v {
        Value::String(s) => s
            .split_whitespace()
            .map(|w| word(REST_FIELD, w, flags))
            .collect(),
        Value::Array(items) => items
            .iter()
            .map(|i| match i {
                Value::String(s) => word(REST_FIELD, s, flags),
                _ => err(
                    Code::BadField,
                    format!("field '{REST_FIELD}' must hold strings, not {i}"),
                ),
            })
            .collect(),
        _ => err(
            Code::BadField,
            format!("field '{REST_FIELD}' must be a string or an array of strings, not {v}"),
        ),
    }
}

/// One argument's field, checked against its grammar; pushed onto `args` in grammar order,
/// as the line matcher does.
fn argument(
    arg: &Arg,
    field: &str,
    v: &Value,
    flags: &[&str],
    args: &mut Args,
) -> Result<(), Error> {
    match arg {
        Arg::Flag(f) => match v {
            Value::Bool(true) => args.flags.push(f),
            Value::Bool(false) => {}
            _ => {
                return err(
                    Code::BadField,
                    format!("field '{field}' must be a boolean, not {v}"),
                )
            }
        },
        Arg::Value(n) | Arg::Optional(n) => args.values.push((n, value(field, v, flags)?)),
        Arg::Choice(n, choices) => match v.as_str() {
            Some(s) if choices.contains(&s) => args.values.push((n, s.to_string())),
            _ => {
                return err(
                    Code::BadField,
                    format!(
                        "field '{field}' must be one of {}, not {v}",
                        quoted(choices)
                    ),
                )
            }
        },
        Arg::Count(n, what, max) => match v.as_u64() {
            Some(c) if c >= 1 && c <= u64::from(*max) => args.values.push((n, c.to_string())),
            _ => {
                return err(
                    Code::BadField,
                    format!("field '{field}' ({what}) must be an integer 1..{max}, not {v}"),
                )
            }
        },
        Arg::Rest => args.rest = rest(v, flags)?,
    }
    Ok(())
}

fn quoted(choices: &[&str]) -> String {
    let q: Vec<String> = choices.iter().map(|c| format!("\"{c}\"")).collect();
    q.join(", ")
}

/// Check `version` and find the command.
fn header(request: &Map<String, Value>) -> Result<&'static Command, Error> {
    match request.get("version") {
        None => {
            return err(
                Code::BadVersion,
                format!("no 'version' (this daemon speaks {VERSION})"),
            )
        }
        Some(v) if v.as_u64() == Some(VERSION) => {}
        Some(v) => {
            return err(
                Code::BadVersion,
                format!("version {v} is not spoken here (this daemon speaks {VERSION})"),
            )
        }
    }
    let wanted = match request.get("command") {
        None => return err(Code::MissingField, "no 'command' (try: \"help\")".into()),
        Some(Value::String(s)) => s,
        Some(v) => {
            return err(
                Code::BadField,
                format!("field 'command' must be a string, not {v}"),
            )
        }
    };
    by_name(wanted).ok_or_else(|| {
        // What a line of these words would name, as a hint: a request takes the full words.
        let words: Vec<&str> = wanted.split_whitespace().collect();
        let hint = match cli::find(&words) {
            Ok((c, n)) if n == words.len() => format!("did you mean '{}'?", name(c)),
            _ => "a command's full words, as `sluice ctl help` shows them".into(),
        };
        Error {
            code: Code::UnknownCommand,
            message: format!("unknown command '{}' ({hint})", wanted.escape_debug()),
        }
    })
}

/// The command a typed request names and its arguments, as the line matcher would make
/// them from the same command typed as a line.
pub fn parse(request: &Value) -> Result<(&'static Command, Args), Error> {
    let Value::Object(request) = request else {
        return err(
            Code::BadRequest,
            format!("a request is a JSON object, not {request}"),
        );
    };
    let command = header(request)?;
    let flags = flag_names(command);
    let fields: Vec<(Option<String>, &Arg)> = command
        .args
        .iter()
        .map(|a| (named(a).map(|(n, _)| key(n)), a))
        .collect();
    if let Some(unknown) = request.keys().find(|k| {
        !matches!(k.as_str(), "version" | "command")
            && !fields
                .iter()
                .any(|(f, _)| f.as_deref().unwrap_or(REST_FIELD) == k.as_str())
    }) {
        let mut known: Vec<&str> = fields
            .iter()
            .map(|(f, _)| f.as_deref().unwrap_or(REST_FIELD))
            .collect();
        known.sort();
        let known = if known.is_empty() {
            "none".into()
        } else {
            known.join(", ")
        };
        return err(
            Code::UnknownField,
            format!(
                "'{}' takes no field '{}' (its fields: {known})",
                name(command),
                unknown.escape_debug()
            ),
        );
    }
    let mut args = Args::default();
    for (field, arg) in &fields {
        let field = field.as_deref().unwrap_or(REST_FIELD);
        match request.get(field) {
            Some(v) => argument(arg, field, v, &flags, &mut args)?,
            None if named(arg).is_some_and(|(_, required)| required) => {
                return err(
                    Code::MissingField,
                    format!("'{}' needs field '{field}'", name(command)),
                )
            }
            None => {}
        }
    }
    // The same final check a line gets (the fields' own checks make it pass).
    cli::check(command, &args).map_err(|message| Error {
        code: Code::BadField,
        message,
    })?;
    Ok((command, args))
}

/// The fields of a request that says what `args` say to `command` (the inverse of `parse`;
/// the schema's examples are made with it).
pub fn fields(command: &Command, args: &Args) -> Value {
    let mut m = Map::new();
    m.insert("version".into(), json!(VERSION));
    m.insert("command".into(), json!(name(command)));
    for arg in command.args {
        match arg {
            Arg::Flag(f) if args.flag(f) => {
                m.insert(key(f), json!(true));
            }
            Arg::Flag(_) => {}
            Arg::Count(n, _, _) => {
                m.insert(key(n), json!(args.count(n)));
            }
            Arg::Value(n) | Arg::Optional(n) | Arg::Choice(n, _) => {
                if let Some(v) = args.get(n) {
                    m.insert(key(n), json!(v));
                }
            }
            Arg::Rest if !args.rest.is_empty() => {
                m.insert(REST_FIELD.into(), json!(args.rest().join(" ")));
            }
            Arg::Rest => {}
        }
    }
    Value::Object(m)
}

/// The reply to a failed request.
pub fn error_reply(e: &Error) -> Value {
    json!({"ok": false, "code": e.code.as_str(), "error": e.message})
}

/// Carry out one typed request line from a socket of `access` and make its reply; also the
/// command it named, if any (for the change log). On the read-only socket a request that
/// names no command, or one that changes state, is refused (`read_only`) before its fields
/// are looked at.
pub fn answer(
    control: &mut Control,
    line: &str,
    access: Access,
) -> (Value, Option<&'static Command>) {
    let request: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => {
            let e = Error {
                code: Code::BadRequest,
                message: format!("not a JSON request: {e}"),
            };
            return (error_reply(&e), None);
        }
    };
    let named = request
        .get("command")
        .and_then(Value::as_str)
        .and_then(by_name);
    if let Err(message) = super::access::permits(access, named) {
        let e = Error {
            code: Code::ReadOnly,
            message,
        };
        return (error_reply(&e), named);
    }
    let (command, args) = match parse(&request) {
        Ok(p) => p,
        Err(e) => return (error_reply(&e), named),
    };
    let out = (command.run)(control, &args);
    super::exec::after_command(command);
    let reply = match out {
        Ok(Output::Shown(text, v)) => json!({"ok": true, "code": "ok", "text": text, "json": v}),
        Ok(Output::Text(text)) => json!({"ok": true, "code": "ok", "text": text}),
        Err(message) => error_reply(&Error {
            code: Code::Failed,
            message,
        }),
    };
    (reply, Some(command))
}

/// Whether a line on the socket is a typed request rather than a command line.
pub fn is_typed(line: &str) -> bool {
    line.trim_start().starts_with('{')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(v: Value) -> Code {
        match parse(&v) {
            Ok((c, _)) => panic!("{v} was taken as '{}'", name(c)),
            Err(e) => {
                assert!(!e.message.is_empty() && !e.message.contains('\n'), "{e:?}");
                e.code
            }
        }
    }

    /// The command and arguments of a line, for comparing with a typed request's.
    fn line(s: &str) -> (&'static Command, Args) {
        let r = cli::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        (r.command, r.args)
    }

    fn same(typed: Value, as_line: &str) {
        let (c, a) = parse(&typed).unwrap_or_else(|e| panic!("{typed}: {e:?}"));
        let (lc, la) = line(as_line);
        assert!(std::ptr::eq(c, lc), "{typed} is '{}'", name(c));
        assert_eq!(a, la, "{typed} vs {as_line}");
    }

    /// Every command of the table is reachable as a typed request: its example line, turned
    /// into fields and sent as JSON text, names the same command with the same `Args`.
    #[test]
    fn every_command_is_reachable_from_its_example() {
        let mut n = 0;
        for c in cli::commands() {
            let (lc, la) = line(c.example);
            let text = fields(lc, &la).to_string();
            let typed: Value = serde_json::from_str(&text).unwrap();
            let (tc, ta) = parse(&typed).unwrap_or_else(|e| panic!("{text}: {e:?}"));
            assert!(
                std::ptr::eq(tc, c),
                "{text} is '{}', not '{}'",
                name(tc),
                name(c)
            );
            assert_eq!(ta, la, "{text} vs '{}'", c.example);
            // `args` as an array of words is the same request.
            if !la.rest.is_empty() {
                let mut typed = typed.clone();
                typed[REST_FIELD] = json!(la.rest);
                assert_eq!(parse(&typed).unwrap().1, la, "{typed}");
            }
            n += 1;
        }
        assert!(n > 60, "only {n} commands");
    }

    #[test]
    fn names_and_fields_are_unique() {
        let mut names: Vec<String> = cli::commands().map(name).collect();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n, "two commands with one name");
        for c in cli::commands() {
            let mut keys: Vec<String> = c
                .args
                .iter()
                .filter_map(named)
                .map(|(g, _)| key(g))
                .collect();
            for k in &keys {
                assert!(!RESERVED.contains(&k.as_str()), "{}: {k}", name(c));
            }
            let k = keys.len();
            keys.sort();
            keys.dedup();
            assert_eq!(keys.len(), k, "{}", name(c));
        }
    }

    #[test]
    fn fields_are_typed() {
        same(
            json!({"version": 1, "command": "set interface state", "interface": "d0", "state": "up"}),
            "set interface state d0 up",
        );
        // An integer is a word; a flag is a boolean, false as if left out.
        same(
            json!({"version": 1, "command": "set interface l2 bridge", "interface": "d2", "bridge": 10}),
            "set interface l2 bridge d2 10",
        );
        same(
            json!({"version": 1, "command": "set interface ip address", "interface": "d0",
                   "address": "192.0.2.1/24", "del": true}),
            "set int ip addr del d0 192.0.2.1/24",
        );
        same(
            json!({"version": 1, "command": "l2fib add", "mac": "02:00:00:00:00:10",
                   "bridge": "10", "interface": "d2", "static": false}),
            "l2fib add 02:00:00:00:00:10 10 d2",
        );
        same(
            json!({"version": 1, "command": "trace add", "node": "ip4-lookup", "count": 5}),
            "trace add ip4-lookup 5",
        );
        same(
            json!({"version": 1, "command": "ip route add",
                   "args": ["10.0.0.0/8", "via", "192.0.2.2", "d0"]}),
            "ip route add 10.0.0.0/8 via 192.0.2.2 d0",
        );
        same(
            json!({"version": 1, "command": "show interface"}),
            "show interface",
        );
        same(
            json!({"version": 1, "command": "ip route add", "args": ""}),
            "ip route add",
        );
    }

    #[test]
    fn every_error_has_its_code() {
        let v = |extra: Value| {
            let mut r = json!({"version": 1, "command": "set interface state"});
            for (k, x) in extra.as_object().unwrap() {
                r[k] = x.clone();
            }
            r
        };
        let ok = json!({"interface": "d0", "state": "up"});
        assert!(parse(&v(ok.clone())).is_ok());
        assert_eq!(code(json!(["show version"])), Code::BadRequest);
        assert_eq!(code(json!({"command": "show version"})), Code::BadVersion);
        assert_eq!(
            code(json!({"version": 2, "command": "show version"})),
            Code::BadVersion
        );
        assert_eq!(
            code(json!({"version": "1", "command": "show version"})),
            Code::BadVersion
        );
        assert_eq!(code(json!({"version": 1})), Code::MissingField);
        assert_eq!(code(json!({"version": 1, "command": 7})), Code::BadField);
        for unknown in [
            "show frobs",
            "sh int",
            "show ip6 neighbors",
            "show version --json",
            "monitor",
            "",
        ] {
            assert_eq!(
                code(json!({"version": 1, "command": unknown})),
                Code::UnknownCommand,
                "{unknown}"
            );
        }
        assert_eq!(code(v(json!({"interface": "d0"}))), Code::MissingField);
        assert_eq!(code(v(json!({"state": "up"}))), Code::MissingField);
        assert_eq!(
            code(v(json!({"interface": "d0", "state": "up", "json": true}))),
            Code::UnknownField
        );
        assert_eq!(
            code(v(json!({"interface": "d0", "state": "up", "args": "x"}))),
            Code::UnknownField
        );
        assert_eq!(
            code(v(json!({"IF": "d0", "state": "up"}))),
            Code::UnknownField
        );
        for bad in [
            json!({"interface": "d0", "state": "sideways"}),
            json!({"interface": "d0", "state": true}),
            json!({"interface": "d0 d1", "state": "up"}),
            json!({"interface": "", "state": "up"}),
            json!({"interface": null, "state": "up"}),
            json!({"interface": 1.5, "state": "up"}),
            json!({"interface": ["d0"], "state": "up"}),
        ] {
            assert_eq!(code(v(bad.clone())), Code::BadField, "{bad}");
        }
        let trace =
            |n: Value| json!({"version": 1, "command": "trace add", "node": "x", "count": n});
        for bad in [json!(0), json!(100_001), json!("10"), json!(-1), json!(2.5)] {
            assert_eq!(code(trace(bad.clone())), Code::BadField, "{bad}");
        }
        let addr = |x: Value| {
            let mut r = json!({"version": 1, "command": "set interface ip address",
                               "interface": "d0", "address": "192.0.2.1/24"});
            r["del"] = x;
            r
        };
        assert_eq!(code(addr(json!("yes"))), Code::BadField);
        // A flag's word is said as the flag, not as a value or among `args`.
        let acl = |rest: Value| {
            json!({"version": 1, "command": "set acl-plugin interface",
                                       "interface": "d0", "direction": "input", "args": rest})
        };
        assert!(parse(&acl(json!("acl edge"))).is_ok());
        assert_eq!(code(acl(json!("acl edge del"))), Code::BadField);
        assert_eq!(code(acl(json!(["acl", "edge x"]))), Code::BadField);
        assert_eq!(code(acl(json!([1]))), Code::BadField);
        assert_eq!(code(acl(json!({"acl": "edge"}))), Code::BadField);
    }

    #[test]
    fn an_abbreviation_gets_the_full_name_as_a_hint() {
        let message = |c: &str| {
            parse(&json!({"version": 1, "command": c}))
                .err()
                .unwrap()
                .message
        };
        assert_eq!(
            message("sh int"),
            "unknown command 'sh int' (did you mean 'show interface'?)"
        );
        assert_eq!(
            message("show ip6 arp"),
            "unknown command 'show ip6 arp' (did you mean 'show ip neighbors'?)"
        );
        // Words that name no command, or more than one, get no guess.
        // Messages stay one line whatever the request holds.
        assert_eq!(
            message("show\nversion"),
            "unknown command 'show\\nversion' (did you mean 'show version'?)"
        );
        let e = parse(&json!({"version": 1, "command": "show version", "a\nb": 1}))
            .err()
            .unwrap();
        assert!(!e.message.contains('\n'), "{}", e.message);
        for c in ["show frobs", "s", "show interface d0"] {
            assert!(
                message(c).ends_with("as `sluice ctl help` shows them)"),
                "{c}"
            );
        }
    }

    #[test]
    fn codes_are_stable() {
        let all: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            all,
            [
                "bad_request",
                "bad_version",
                "unknown_command",
                "missing_field",
                "unknown_field",
                "bad_field",
                "failed",
                "read_only"
            ]
        );
        assert!(is_typed("  {\"version\": 1}"));
        assert!(!is_typed("show version"));
    }
}
