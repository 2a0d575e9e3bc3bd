//! The command table and its matcher. Every CLI command is one `Command` declaration — its
//! words, argument grammar, help line and handler — in its area's `COMMANDS` slice; `AREAS`
//! gathers them. Words may be shortened to any unique prefix, as in VPP (`sh int`, `sh run`);
//! help, usage lines and the errors for unknown or ambiguous words all come from the table.

use super::exec::Control;
use serde_json::Value;

/// One CLI command.
pub struct Command {
    /// The keywords, each with its alternatives after `|`; the first one is shown in help.
    pub words: &'static [&'static str],
    /// Whether the command changes anything: only `Effect::Reads` commands are taken on the
    /// read-only socket, and each `Effect::Changes` one run is logged (control::audit).
    pub effect: Effect,
    /// The arguments as help shows them: `<IF> up|down`.
    pub syntax: &'static str,
    pub help: &'static str,
    /// One line that uses the command, as an operator would type it (`docs/cli.md` shows it;
    /// a test checks that it parses to this command).
    pub example: &'static str,
    pub args: &'static [Arg],
    pub run: fn(&mut Control, &Args) -> Result<Output, String>,
}

/// What running a command does to the router. Every declaration says which; a line or
/// request that names no command counts as `Changes` (the read-only socket refuses it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Changes nothing: shows state (`show ...`, `help`).
    Reads,
    /// Changes the router's state, its counters, or a file (`save`), or starts a capture.
    Changes,
}

/// One element of a command's argument grammar.
pub enum Arg {
    /// A required value.
    Value(&'static str),
    /// A value that may be left out (only last).
    Optional(&'static str),
    /// A word that may appear anywhere among the arguments: `del`.
    Flag(&'static str),
    /// A required word out of a few: (name, choices).
    Choice(&'static str, &'static [&'static str]),
    /// A required count in `1..=max`: (name, what it counts for the error, max).
    Count(&'static str, &'static str, u32),
    /// Everything left, for the handler's own grammar (routes, neighbours).
    Rest,
}

/// What a handler produced: text for people (also under `--json`: set and clear commands
/// answer with empty text), or text and its JSON form.
pub enum Output {
    Text(String),
    Shown(String, Value),
}

impl Output {
    /// A change that answers with nothing.
    pub fn done() -> Result<Output, String> {
        Ok(Output::Text(String::new()))
    }
}

/// A command's arguments, checked against its grammar.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Args {
    // Filled in grammar order by the line matcher here and by typed requests (request.rs).
    pub(super) values: Vec<(&'static str, String)>,
    pub(super) flags: Vec<&'static str>,
    pub(super) rest: Vec<String>,
}

impl Args {
    /// A value by its grammar name; `None` when an optional one was left out.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// A required value (the grammar made sure it is there).
    pub fn value(&self, name: &str) -> &str {
        self.get(name).unwrap_or("")
    }

    /// A `Count` argument (checked while matching).
    pub fn count(&self, name: &str) -> u32 {
        self.value(name).parse().unwrap_or(0)
    }

    pub fn flag(&self, name: &str) -> bool {
        self.flags.contains(&name)
    }

    pub fn rest(&self) -> Vec<&str> {
        self.rest.iter().map(String::as_str).collect()
    }
}

/// A matched command line: the command, its arguments, and whether JSON is wanted.
pub struct Request {
    pub command: &'static Command,
    pub args: Args,
    pub json: bool,
}

/// `help` and `show version`: the commands of no particular area.
const BASIC: &[Command] = &[
    Command {
        words: &["help|?"],
        effect: Effect::Reads,
        syntax: "",
        help:
            "list commands (`sluice ctl help --markdown` prints this reference, no daemon needed)",
        example: "help",
        args: &[Arg::Rest],
        run: |_, _| Ok(Output::Text(help())),
    },
    Command {
        words: &["show", "version"],
        effect: Effect::Reads,
        syntax: "",
        help: "sluice version",
        example: "show version",
        args: &[],
        run: |_, _| {
            let v = env!("CARGO_PKG_VERSION");
            Ok(Output::Shown(
                format!("sluice {v}\n"),
                serde_json::json!({ "version": v }),
            ))
        },
    },
];

/// Every area's commands with the area's title (`docs/cli.md` has a section per area), in
/// help order.
pub const AREAS: &[(&str, &[Command])] = &[
    ("General", BASIC),
    ("Interfaces", crate::interface::commands::COMMANDS),
    ("Queues and workers", super::queues::COMMANDS),
    ("Switching (L2)", crate::l2::commands::COMMANDS),
    ("Runtime, errors, buffers", super::runtime::COMMANDS),
    ("The graph", crate::graph::commands::COMMANDS),
    ("Debugging (tests only)", super::health::COMMANDS),
    ("Packet trace", super::trace::COMMANDS),
    ("Routing", crate::router::commands::COMMANDS),
    ("ACLs and sessions", crate::acl::commands::COMMANDS),
    ("NAT44", crate::nat44::commands::COMMANDS),
    ("Linux control plane (lcp)", crate::lcp::commands::COMMANDS),
    ("Saving the configuration", super::save::COMMANDS),
    ("Applying a configuration", super::apply::COMMANDS),
    (
        "XDP fast path",
        crate::drivers::af_xdp::fastpath::commands::COMMANDS,
    ),
];

pub(super) fn commands() -> impl Iterator<Item = &'static Command> {
    AREAS.iter().flat_map(|(_, area)| area.iter())
}

impl Command {
    /// The words and arguments as help shows them.
    pub fn usage(&self) -> String {
        let mut s: Vec<&str> = self.words.iter().map(|w| shown(w)).collect();
        if !self.syntax.is_empty() {
            s.push(self.syntax);
        }
        s.join(" ")
    }
}

/// The shown form of a keyword: its first alternative.
pub(super) fn shown(keyword: &'static str) -> &'static str {
    keyword.split('|').next().unwrap_or(keyword)
}

/// The help text.
pub fn help() -> String {
    let mut s =
        String::from("commands (words may be shortened: 'sh int'; show commands take --json):\n");
    for c in commands() {
        s.push_str(&format!("  {:<40} {}\n", c.usage(), c.help));
    }
    s
}

/// The command reference, `docs/cli.md`: every command of the table by area, with its
/// grammar, its help and its example. `sluice ctl help --markdown` prints it without a
/// daemon, and `tests/docs_reference.rs` checks that the file in the tree is this text.
pub fn markdown() -> String {
    let mut s = String::from(
        "# sluice ctl: the command reference\n\n\
         <!-- Generated by `sluice ctl help --markdown > docs/cli.md` from the command table in\n\
         crates/sluice/src/control/ (one declaration per command). Do not edit: tests/docs_reference.rs fails\n\
         when this file differs from what the binary prints. -->\n\n\
         `sluice ctl WORDS...` sends one command line to the daemon's control socket (`-s PATH`, \
         else `$SLUICE_SOCKET`, else `/run/sluice/cli.sock`); `sluice ctl --batch < FILE` sends \
         one per line over one connection. Words may be shortened to any unique prefix \
         (`sh int` is `show interface`); where a word has alternatives they are written \
         `a|b`. Every `show` command takes `--json`. In the grammar, `<X>` is a value, `[...]` \
         may be left out and `a|b` is one of them.\n",
    );
    for (title, area) in AREAS {
        s.push_str(&format!("\n## {title}\n"));
        for c in area.iter() {
            let words: Vec<&str> = c.words.to_vec();
            s.push_str(&format!("\n### `{}`\n\n", c.usage()));
            if words.iter().any(|w| w.contains('|')) {
                s.push_str(&format!("Words: `{}`\n\n", words.join(" ")));
            }
            s.push_str(&format!("{}.\n\n", upper_first(c.help)));
            s.push_str(&format!("    sluice ctl {}\n", c.example));
        }
    }
    s
}

/// `text` with its first letter in upper case.
fn upper_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The alternative of `keyword` that `word` names: an exact one first, else the first it
/// is a prefix of. Returns (alternative, exact).
fn named_by(word: &str, keyword: &'static str) -> Option<(&'static str, bool)> {
    let mut alternatives = keyword.split('|');
    if let Some(exact) = alternatives.clone().find(|a| *a == word) {
        return Some((exact, true));
    }
    alternatives
        .find(|a| !word.is_empty() && a.starts_with(word))
        .map(|a| (a, false))
}

/// Parse a command line. Errors are one line with a hint.
pub fn parse(line: &str) -> Result<Request, String> {
    let mut words: Vec<&str> = line.split_whitespace().collect();
    let json = words.contains(&"--json");
    words.retain(|w| *w != "--json");
    if let Some(bad) = words.iter().find(|w| w.starts_with("--")) {
        return Err(format!(
            "unknown option '{bad}' (only --json is known; try: help)"
        ));
    }
    let (command, n) = find(&words)?;
    let args = arguments(command, &words[..n], &words[n..])?;
    Ok(Request {
        command,
        args,
        json,
    })
}

/// The command the leading words name, and how many words that took: the longest command
/// whose every keyword the typed words match.
pub(super) fn find(words: &[&str]) -> Result<(&'static Command, usize), String> {
    if words.is_empty() {
        return Err("empty command (try: help)".into());
    }
    let unknown = || format!("unknown command '{}' (try: help)", words.join(" "));
    let mut alive: Vec<&'static Command> = commands().collect();
    // The keywords the typed words named, for "show what?".
    let mut said: Vec<&str> = Vec::new();
    for (i, word) in words.iter().enumerate() {
        let complete = alive.iter().find(|c| c.words.len() == i).copied();
        let mut next: Vec<(&'static Command, &'static str, bool)> = alive
            .iter()
            .filter_map(|c| {
                c.words
                    .get(i)
                    .and_then(|k| named_by(word, k))
                    .map(|(a, e)| (*c, a, e))
            })
            .collect();
        if next.iter().any(|(_, _, exact)| *exact) {
            next.retain(|(_, _, exact)| *exact);
        }
        if next.is_empty() {
            return complete.map(|c| (c, i)).ok_or_else(unknown);
        }
        let mut named: Vec<&str> = next.iter().map(|(_, a, _)| *a).collect();
        named.sort();
        named.dedup();
        if named.len() > 1 {
            return Err(format!(
                "ambiguous command '{}': '{word}' may be {} (try: help)",
                words[..=i].join(" "),
                named.join(", ")
            ));
        }
        said.push(named[0]);
        alive = next.into_iter().map(|(c, _, _)| c).collect();
    }
    if let Some(c) = alive.iter().find(|c| c.words.len() == words.len()) {
        return Ok((c, words.len()));
    }
    let mut more: Vec<&str> = Vec::new();
    for k in alive.iter().filter_map(|c| c.words.get(words.len())) {
        if !more.contains(&shown(k)) {
            more.push(shown(k));
        }
    }
    Err(format!("{} what? ({})", said.join(" "), more.join(", ")))
}

/// Check `rest` against the grammar of `command`, typed as `typed`.
fn arguments(command: &Command, typed: &[&str], rest: &[&str]) -> Result<Args, String> {
    let usage = || format!("usage: {}", command.usage());
    let mut args = Args::default();
    let mut words: Vec<&str> = rest.to_vec();
    for arg in command.args {
        if let Arg::Flag(f) = arg {
            if words.contains(f) {
                args.flags.push(*f);
                words.retain(|w| w != f);
            }
        }
    }
    let mut given = words.iter();
    for arg in command.args {
        match arg {
            Arg::Flag(_) => {}
            Arg::Rest => args.rest = given.by_ref().map(|w| w.to_string()).collect(),
            Arg::Optional(name) => {
                if let Some(w) = given.next() {
                    args.values.push((*name, w.to_string()));
                }
            }
            Arg::Value(name) | Arg::Choice(name, _) | Arg::Count(name, _, _) => {
                let w = *given.next().ok_or_else(usage)?;
                args.values.push((*name, w.to_string()));
            }
        }
    }
    if let Some(extra) = given.next() {
        let required = command
            .args
            .iter()
            .any(|a| !matches!(a, Arg::Optional(_) | Arg::Flag(_)));
        if required {
            return Err(usage());
        }
        let before = words.len() - given.len() - 1;
        let line: Vec<&str> = typed.iter().chain(&words[..before]).copied().collect();
        return Err(format!(
            "unexpected '{extra}' after '{}' (try: help)",
            line.join(" ")
        ));
    }
    check(command, &args)?;
    Ok(args)
}

/// Check the values of `Choice` and `Count` arguments (for lines and typed requests alike).
pub(super) fn check(command: &Command, args: &Args) -> Result<(), String> {
    for arg in command.args {
        match arg {
            Arg::Choice(name, choices) => {
                let v = args.value(name);
                if !choices.contains(&v) {
                    return Err(format!(
                        "{name} must be {}, not '{v}'",
                        choices.join(" or ")
                    ));
                }
            }
            Arg::Count(name, what, max) => {
                let v = args.value(name);
                if !v.parse().is_ok_and(|n: u32| n > 0 && n <= *max) {
                    return Err(format!("{what} must be 1..{max}, not '{v}'"));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command a line names (shown words) and its arguments.
    fn cmd(s: &str) -> (String, Args) {
        let r = parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        let words: Vec<&str> = r.command.words.iter().map(|w| shown(w)).collect();
        (words.join(" "), r.args)
    }

    fn named(s: &str) -> String {
        cmd(s).0
    }

    #[test]
    fn full_and_short_words() {
        assert_eq!(named("show interface"), "show interface");
        let (c, a) = cmd("sh int d0");
        assert_eq!((c.as_str(), a.get("IF")), ("show interface", Some("d0")));
        assert_eq!(named("sh run"), "show runtime");
        let (c, a) = cmd("sh hard d1");
        assert_eq!((c.as_str(), a.get("IF")), ("show hardware", Some("d1")));
        assert_eq!(named("show hardware-interfaces"), "show hardware");
        assert_eq!(named("show err"), "show errors");
        assert_eq!(named("clear run"), "clear runtime");
        assert_eq!(named("?"), "help");
        let (c, a) = cmd("set int l2 xconnect d0 d1");
        assert_eq!(c, "set interface l2 xconnect");
        assert_eq!((a.value("RX"), a.value("TX")), ("d0", "d1"));
        let (c, a) = cmd("set interface state d0 down");
        assert_eq!(c, "set interface state");
        assert_eq!((a.value("IF"), a.value("state")), ("d0", "down"));
        assert_eq!(named("show h"), "show hardware");
        assert_eq!(named("clear t"), "clear trace");
        let (c, a) = cmd("trace add af-packet-input 10");
        assert_eq!(c, "trace add");
        assert_eq!((a.value("NODE"), a.count("N")), ("af-packet-input", 10));
    }

    #[test]
    fn routing_commands() {
        let (c, a) = cmd("sh ip fib 10.0.0.1");
        assert_eq!((c.as_str(), a.rest()), ("show ip fib", vec!["10.0.0.1"]));
        let (c, a) = cmd("sh ip fib table 3 summary");
        assert_eq!(
            (c.as_str(), a.rest()),
            ("show ip fib", vec!["table", "3", "summary"])
        );
        let (c, a) = cmd("show ip6 fib");
        assert_eq!((c.as_str(), a.rest().len()), ("show ip6 fib", 0));
        assert_eq!(named("sh ip table"), "show ip table");
        assert_eq!(named("ip6 table add 5"), "ip table add");
        assert_eq!(named("ip table del 5"), "ip table del");
        let (c, a) = cmd("set int ip table d0 7");
        assert_eq!(c, "set interface ip table");
        assert_eq!((a.value("IF"), a.value("ID")), ("d0", "7"));
        assert_eq!(named("set int ip6 table d0 7"), "set interface ip6 table");
        assert_eq!(named("sh ip neigh"), "show ip neighbors");
        assert_eq!(named("show ip6 arp"), "show ip neighbors");
        let (c, a) = cmd("set int ip addr del d0 192.0.2.1/24");
        assert_eq!(c, "set interface ip address");
        assert!(a.flag("del"));
        assert_eq!((a.value("IF"), a.value("ADDR")), ("d0", "192.0.2.1/24"));
        let (c, a) = cmd("ip6 route add 10.0.0.0/8 via 192.0.2.2 d0");
        assert_eq!(c, "ip route add");
        assert_eq!(a.rest(), ["10.0.0.0/8", "via", "192.0.2.2", "d0"]);
        assert_eq!(named("ip route delete 10.0.0.0/8"), "ip route del");
        assert_eq!(
            named("set ip neighbor d0 192.0.2.2 02:00:00:00:00:01"),
            "set ip neighbor"
        );
        for bad in ["set int ip addr d0", "show ip table a", "ip route frob"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn json_flag() {
        let r = parse("show buffers --json").unwrap();
        assert!(r.json);
        assert_eq!(r.command.words, ["show", "buffers"]);
    }

    #[test]
    fn bad_lines_are_one_line_errors() {
        for bad in [
            "",
            "shw int",
            "show",
            "show frobs",
            "show runtime extra",
            "set interface state d0 sideways",
            "set interface state d0",
            "set interface l2 xconnect d0",
            "trace add x zero",
            "trace add x 0",
            "clear",
            "show int --verbose",
            "show t",
        ] {
            let e = parse(bad)
                .err()
                .unwrap_or_else(|| panic!("{bad} was accepted"));
            assert!(!e.contains('\n'), "{bad}: {e}");
            assert!(!e.is_empty());
        }
        assert!(parse("shw int")
            .err()
            .unwrap_or_default()
            .contains("try: help"));
    }

    #[test]
    fn errors_come_from_the_table() {
        let e = |s: &str| parse(s).err().unwrap_or_default();
        assert_eq!(e("show frobs"), "unknown command 'show frobs' (try: help)");
        assert_eq!(
            e("show runtime extra"),
            "unexpected 'extra' after 'show runtime' (try: help)"
        );
        assert_eq!(
            e("sh ip table a"),
            "unexpected 'a' after 'sh ip table' (try: help)"
        );
        assert_eq!(
            e("set interface state d0 sideways"),
            "state must be up or down, not 'sideways'"
        );
        assert_eq!(
            e("set int state d0"),
            "usage: set interface state <IF> up|down"
        );
        assert_eq!(e("trace add x 0"), "trace count must be 1..100000, not '0'");
        assert_eq!(
            e("clear"),
            "clear what? (interfaces, l2fib, runtime, errors, trace)"
        );
        assert_eq!(e("sh ip"), "show ip what? (fib, table, neighbors)");
        assert_eq!(e("ip r"), "ip route what? (add, del)");
        assert_eq!(
            e("s"),
            "ambiguous command 's': 's' may be save, set, show (try: help)"
        );
        assert_eq!(
            e("show t"),
            "ambiguous command 'show t': 't' may be threads, trace (try: help)"
        );
        assert_eq!(
            e("sh i"),
            "ambiguous command 'sh i': 'i' may be interface, ip, ip6 (try: help)"
        );
    }

    #[test]
    fn every_example_is_its_own_command() {
        for c in commands() {
            let r = parse(c.example).unwrap_or_else(|e| panic!("example '{}': {e}", c.example));
            assert!(
                std::ptr::eq(r.command, c),
                "example '{}' names '{}', not '{}'",
                c.example,
                r.command.usage(),
                c.usage()
            );
            assert!(!r.json, "{}", c.example);
        }
    }

    #[test]
    fn markdown_has_every_command_with_its_example() {
        let m = markdown();
        for c in commands() {
            assert_eq!(
                m.matches(&format!("\n### `{}`\n", c.usage())).count(),
                1,
                "{}",
                c.usage()
            );
            assert!(
                m.contains(&format!("\n    sluice ctl {}\n", c.example)),
                "{}",
                c.example
            );
        }
        assert_eq!(m.matches("\n## ").count(), AREAS.len());
        assert!(
            m.contains(
                "\n### `set interface state <IF> up|down`\n\nAdmin state.\n\n    \
                 sluice ctl set interface state d0 up\n"
            ),
            "{m}"
        );
        assert!(
            m.contains("Words: `show ip|ip6 neighbors|neighbours|arp`"),
            "{m}"
        );
    }

    #[test]
    fn help_lists_every_command_once() {
        let h = help();
        assert_eq!(h.lines().count(), 1 + commands().count());
        for line in [
            "  show interface [<IF>]                    interface state and counters",
            "  set ip neighbor [del] <IF> <ADDR> [<MAC>] static ARP/ND entry (never replaced by learning)",
            "  help                                     list commands",
        ] {
            assert!(h.contains(line), "{line}\n{h}");
        }
    }
}
