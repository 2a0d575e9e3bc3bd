//! `[watchdog]`: how long a worker may go without passing its loop before the watchdog
//! reports it (`src/dataplane/watchdog.rs`), and whether a stall stops the daemon so that a
//! supervisor (systemd, `contrib/systemd/sluice.service`) restarts it.
//!
//! ```toml
//! [watchdog]
//! stall-timeout = 5        # seconds, 0.1 to 3600
//! exit-on-stall = false
//! ```

use crate::config::reference::{Key, SectionDoc};
use crate::config::{Checker, ConfigError};
use crate::dataplane::watchdog::WatchdogConfig;
use serde::Deserialize;
use std::time::Duration;
use toml::Spanned;

/// The shortest and longest stall-timeout, in seconds.
const MIN_TIMEOUT: f64 = 0.1;
const MAX_TIMEOUT: f64 = 3600.0;

/// [watchdog] in the reference (`docs/config.md`).
pub(crate) const SECTION: SectionDoc = SectionDoc {
    name: "watchdog",
    array: false,
    file: "dataplane/config/watchdog.rs",
    doc: "The worker watchdog: every worker bumps a heartbeat each pass of its loop; one that \
          has not passed it for `stall-timeout` is reported (`show threads`, the \
          `sys_worker_stalled` metric, a log line), and systemd's `WATCHDOG=1` is not sent \
          while it lasts. Always on; `exit-on-stall` makes a stall stop the daemon (exit \
          status 1) for a supervisor to restart it (see docs/supervision.md).",
    accepted: crate::config::reference::serde_fields::<WatchdogKeys>,
    aliases: &[],
    keys: &[
        Key {
            name: "stall-timeout",
            ty: "number (seconds)",
            default: "5",
            doc: "how long a worker may go without passing its loop before it counts as \
                  stalled, from 0.1 to 3600; the watchdog looks four times as often",
            example: "5",
        },
        Key {
            name: "exit-on-stall",
            ty: "boolean",
            default: "false",
            doc: "stop the daemon when a worker stalls (interfaces are restored, a worker \
                  that does not stop within 5 s is left behind, exit status 1)",
            example: "false",
        },
    ],
};

/// The [watchdog] section as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct WatchdogKeys {
    stall_timeout: Option<Spanned<f64>>,
    exit_on_stall: Option<bool>,
}

impl WatchdogKeys {
    pub(crate) fn check(self, c: &Checker<'_>) -> Result<WatchdogConfig, ConfigError> {
        let mut out = WatchdogConfig::default();
        let range = MIN_TIMEOUT..=MAX_TIMEOUT;
        if let Some(s) = c.within(&self.stall_timeout, "stall-timeout", range, |s| {
            format!("{s} s: the stall timeout is from {MIN_TIMEOUT} to {MAX_TIMEOUT} s")
        })? {
            out.stall_timeout = Duration::from_secs_f64(s);
        }
        out.exit_on_stall = self.exit_on_stall.unwrap_or(false);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use crate::config::error_tests;
    use crate::config::Config;
    use std::time::Duration;

    #[test]
    fn defaults_and_values() {
        let w = Config::parse("", "t.toml").unwrap().watchdog;
        assert_eq!(w.stall_timeout, Duration::from_secs(5));
        assert!(!w.exit_on_stall);
        let src = "[watchdog]\nstall-timeout = 0.5\nexit-on-stall = true\n";
        let w = Config::parse(src, "t.toml").unwrap().watchdog;
        assert_eq!(w.stall_timeout, Duration::from_millis(500));
        assert!(w.exit_on_stall);
    }

    error_tests! {
        timeout_too_short: "[watchdog]\nstall-timeout = 0.01\n"
            => "t.toml:2: key 'stall-timeout': 0.01 s: the stall timeout is from 0.1 to 3600 s";
        timeout_too_long: "[watchdog]\n\nstall-timeout = 7200\n"
            => "t.toml:3: key 'stall-timeout': 7200 s: the stall timeout is from 0.1 to 3600 s";
    }
}
