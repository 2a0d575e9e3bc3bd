//! The bridges' unit tests.

use super::*;

fn mac(n: u8) -> MacAddress {
    MacAddress([2, 0, 0, 0, 0, n])
}

fn bridges() -> Bridges {
    let mut b = Bridges::default();
    b.create(10, DomainSettings::default()).unwrap();
    b.set_member(0, Some((10, 0))).unwrap();
    b.set_member(1, Some((10, 0))).unwrap();
    b
}

fn lookup(b: &Bridges, n: u8) -> Option<u32> {
    b.reader()
        .load()
        .lookup(key(0, &mac(n).0))
        .map(|h| h.interface)
}

#[test]
fn learns_reach_the_published_table_and_leaving_forgets_them() {
    let mut b = bridges();
    b.learn(&[
        MacLearn {
            bd: 0,
            mac: mac(1),
            interface: 0,
        },
        MacLearn {
            bd: 0,
            mac: mac(2),
            interface: 1,
        },
        // Interface 5 is in no domain: ignored.
        MacLearn {
            bd: 0,
            mac: mac(3),
            interface: 5,
        },
    ]);
    assert_eq!(
        (lookup(&b, 1), lookup(&b, 2), lookup(&b, 3)),
        (Some(0), Some(1), None)
    );
    b.learn(&[MacLearn {
        bd: 0,
        mac: mac(1),
        interface: 1,
    }]);
    assert_eq!(lookup(&b, 1), Some(1));
    assert_eq!(b.report(Some(10)).unwrap()[0].moves, 1);
    b.set_member(1, None).unwrap();
    assert_eq!((lookup(&b, 1), lookup(&b, 2)), (None, None));
    assert!(b.delete(10).is_err(), "interface 0 is still a member");
    b.set_member(0, None).unwrap();
    b.delete(10).unwrap();
    assert!(b.report(None).unwrap().is_empty());
}

#[test]
fn static_entries_survive_flush_and_limit_counts_the_excess() {
    let mut b = bridges();
    b.create(
        10,
        DomainSettings {
            mac_limit: 2,
            ..Default::default()
        },
    )
    .unwrap();
    b.add_mac(10, mac(9), 1, true).unwrap();
    assert!(b.add_mac(10, mac(8), 7, true).is_err(), "7 is not a member");
    assert!(b.add_mac(10, MacAddress::BROADCAST, 0, true).is_err());
    let flood: Vec<MacLearn> = (1..=50)
        .map(|n| MacLearn {
            bd: 0,
            mac: mac(n),
            interface: 0,
        })
        .collect();
    b.learn(&flood);
    let r = &b.report(Some(10)).unwrap()[0];
    assert_eq!((r.entries, r.learnt_entries, r.over_limit), (3, 2, 47));
    assert_eq!(b.totals().0, 3);
    assert_eq!(b.flush(Some(10)).unwrap(), 2);
    assert_eq!(b.totals().0, 1);
    assert_eq!(lookup(&b, 9), Some(1));
}

#[test]
fn a_bvi_is_a_port_with_a_static_entry_that_leaves_with_it() {
    let mut b = bridges();
    let mac = MacAddress([2, 0xfe, 0, 0, 0, 9]);
    b.set_bvi(9, 10, mac).unwrap();
    assert!(b.set_bvi(8, 10, mac).is_err(), "one BVI per domain");
    assert_eq!(b.bvi_of(10), Some(9));
    assert!(b.view(10).0[9].unwrap().bvi);
    let k = key(0, &mac.0);
    assert_eq!(b.reader().load().lookup(k).map(|h| h.interface), Some(9));
    b.set_member(9, None).unwrap();
    assert_eq!(b.bvi_of(10), None);
    assert!(b.reader().load().lookup(k).is_none());
}

#[test]
fn view_lists_ports_and_members() {
    let mut b = bridges();
    b.create(20, DomainSettings::default()).unwrap();
    b.set_member(3, Some((20, 2))).unwrap();
    let (ports, views) = b.view(4);
    assert_eq!(
        ports[3],
        Some(BridgePort {
            bd: 1,
            shg: 2,
            bvi: false
        })
    );
    assert_eq!(ports[2], None);
    assert_eq!(views[0].as_ref().unwrap().members, vec![(0, 0), (1, 0)]);
    assert_eq!(views[1].as_ref().unwrap().id, 20);
}
