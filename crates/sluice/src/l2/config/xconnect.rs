//! An [[xconnect]]: every frame received on `rx` is sent on `tx`.

use crate::config::reference::{Key, SectionDoc};
use crate::config::{Checker, ConfigError};
use serde::Deserialize;
use toml::Spanned;

/// [[xconnect]] in the reference (`docs/config.md`).
pub(crate) const SECTION: SectionDoc = SectionDoc {
    name: "xconnect",
    array: true,
    file: "l2/config/xconnect.rs",
    doc: "A one-way L2 cross-connect: everything `rx` receives goes out of `tx` unchanged. \
          Two of them, crossed, join two ports both ways.",
    accepted: crate::config::reference::serde_fields::<Xconnect>,
    aliases: &[],
    keys: &[
        Key::required(
            "rx",
            "string",
            "the receiving interface (or sub-interface); cross-connected at most once",
            "\"d0\"",
        ),
        Key::required("tx", "string", "the interface it sends out of", "\"d1\""),
    ],
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Xconnect {
    pub rx: Spanned<String>,
    pub tx: Spanned<String>,
}

/// Every xconnect joins defined interfaces, and no interface is `rx` twice. Returns the
/// interfaces cross-connected (the `rx` ones).
pub(crate) fn check<'a>(
    xconnects: &'a [Xconnect],
    names: &[&str],
    c: &Checker<'_>,
) -> Result<Vec<&'a str>, ConfigError> {
    let mut rxs: Vec<&str> = Vec::new();
    for x in xconnects {
        for (key, v) in [("rx", &x.rx), ("tx", &x.tx)] {
            if !names.contains(&v.get_ref().as_str()) {
                return Err(c.err(
                    v.span(),
                    key,
                    format!(
                        "no interface named '{}' (defined: {})",
                        v.get_ref(),
                        names.join(", ")
                    ),
                ));
            }
        }
        if rxs.contains(&x.rx.get_ref().as_str()) {
            return Err(c.err(
                x.rx.span(),
                "rx",
                format!("interface '{}' is cross-connected twice", x.rx.get_ref()),
            ));
        }
        rxs.push(x.rx.get_ref());
    }
    Ok(rxs)
}

#[cfg(test)]
mod tests {
    use crate::config::error_tests;

    use crate::config::GOOD;

    error_tests! {
        xconnect_from_an_unknown_interface: GOOD.replace("rx = \"p0\"", "rx = \"p9\"")
            => "t.toml:16: key 'rx': no interface named 'p9' (defined: p0, p1)";
        xconnect_to_an_unknown_interface: GOOD.replace("tx = \"p1\"", "tx = \"p9\"")
            => "t.toml:17: key 'tx': no interface named 'p9' (defined: p0, p1)";
        interface_cross_connected_twice: format!("{GOOD}[[xconnect]]\nrx = \"p0\"\ntx = \"p0\"\n")
            => "t.toml:19: key 'rx': interface 'p0' is cross-connected twice";
    }
}
