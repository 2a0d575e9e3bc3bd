//! Routing tables (VRFs): each table is a FIB of both families with its own routes, and every
//! interface routes each family in one table (table 0 unless bound elsewhere). The same
//! prefix may live in several tables with different next hops; an interface's addresses,
//! connected networks and learnt hosts go into its table only.
//!
//! The workers see the tables through a `TableSet`, published whole when a table is made or
//! removed or an interface changes tables: the FIB reader of each table, and the table each
//! interface looks its packets up in. The lookup nodes load it once per frame, then the FIBs
//! the frame needs, then the adjacency view — the order the router publishes them in reverse,
//! so every adjacency a FIB names is in the view the frame reads.

use super::{RouteSource, Router};
use crate::fib::{FibReader, FibWriter, Prefix4, Prefix6};
use arc_swap::ArcSwap;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// The table every interface starts in; it cannot be removed.
pub const DEFAULT_TABLE: u32 = 0;
/// Tables at most (an empty table costs about 12 KiB: 4 096 of them about 50 MiB).
pub const MAX_TABLES: usize = 4096;

/// One routing table of the control plane.
pub(super) struct Table {
    /// The number users name it by (`ip table add 7`).
    pub id: u32,
    pub fib: FibWriter,
    /// Routes the router made itself, with their source; a static route lives only in the
    /// FIB writer's route table.
    pub special4: HashMap<Prefix4, RouteSource>,
    pub special6: HashMap<Prefix6, RouteSource>,
    /// How many routes of each family came from the kernel (they are known by their
    /// adjacency; the counts save a walk of a full table for `show ip fib summary`).
    pub kernel4: usize,
    pub kernel6: usize,
    /// The static routes of the config and the CLI (`add_route`), which `sluice ctl save`
    /// writes; a route file's routes are not among them (the file is saved by name).
    pub configured4: HashSet<Prefix4>,
    pub configured6: HashSet<Prefix6>,
}

impl Table {
    pub fn new(id: u32) -> Table {
        Table {
            id,
            fib: FibWriter::new(),
            special4: HashMap::new(),
            special6: HashMap::new(),
            kernel4: 0,
            kernel6: 0,
            configured4: HashSet::new(),
            configured6: HashSet::new(),
        }
    }

    /// Keep the kernel route counts as the route for `p` goes from a kernel route or not
    /// (`was`) to one or not (`is`).
    pub fn count_kernel(&mut self, p: crate::fib::parse::IpPrefix, was: bool, is: bool) {
        let n = match p {
            crate::fib::parse::IpPrefix::V4(_) => &mut self.kernel4,
            crate::fib::parse::IpPrefix::V6(_) => &mut self.kernel6,
        };
        *n = (*n + is as usize).saturating_sub(was as usize);
    }
}

/// What the workers look up in: the FIB of each table by index, and each interface's table
/// index per family (an interface past the end routes in table index 0).
#[derive(Clone, Default)]
pub struct TableSet {
    pub fibs: Vec<Option<FibReader>>,
    pub by_interface4: Vec<u16>,
    pub by_interface6: Vec<u16>,
}

impl TableSet {
    /// One table (table 0) for every interface: for node tests and benchmarks without a
    /// router.
    pub fn only(fib: FibReader) -> SharedTables {
        Arc::new(ArcSwap::from_pointee(TableSet {
            fibs: vec![Some(fib)],
            ..TableSet::default()
        }))
    }

    /// The table index interface `rx_if` looks its IPv4 (`v6` false) or IPv6 packets up in.
    #[inline(always)]
    pub fn table_of(&self, rx_if: u32, v6: bool) -> u16 {
        let by = if v6 {
            &self.by_interface6
        } else {
            &self.by_interface4
        };
        by.get(rx_if as usize).copied().unwrap_or(0)
    }

    /// The FIB of table index `t` (table 0's when `t` names no table).
    #[inline(always)]
    pub fn fib(&self, t: u16) -> Option<&FibReader> {
        match self.fibs.get(t as usize) {
            Some(Some(f)) => Some(f),
            _ => self.fibs.first().and_then(Option::as_ref),
        }
    }
}

/// The published table set: workers `load()` it once per frame.
pub type SharedTables = Arc<ArcSwap<TableSet>>;

/// `show ip table`: one table.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TableView {
    pub id: u32,
    pub v4_routes: usize,
    pub v6_routes: usize,
    /// Interfaces routing IPv4 / IPv6 in this table.
    pub ip4_interfaces: Vec<String>,
    pub ip6_interfaces: Vec<String>,
    /// Lookup structures and route tables of this table.
    pub memory_bytes: usize,
}

impl Router {
    /// The index of table `id`.
    pub(super) fn table_index(&self, id: u32) -> Result<usize, String> {
        self.tables
            .iter()
            .position(|t| t.as_ref().is_some_and(|t| t.id == id))
            .ok_or_else(|| format!("no table {id} (make it with 'ip table add {id}')"))
    }

    pub(super) fn table(&self, t: usize) -> &Table {
        // Every index the router holds names a live table: tables are removed only when no
        // interface is bound to them, and callers resolve ids first.
        self.tables[t].as_ref().expect("a live table")
    }

    pub(super) fn table_mut(&mut self, t: usize) -> &mut Table {
        self.tables[t].as_mut().expect("a live table")
    }

    /// The table interface `itf` routes the family of `v6` in.
    pub(super) fn table_of(&self, itf: u32, v6: bool) -> usize {
        self.view.interfaces.get(itf as usize).map_or(0, |i| {
            if v6 {
                i.table6 as usize
            } else {
                i.table4 as usize
            }
        })
    }

    /// `ip table add ID`: a new, empty table (both families). Adding one that exists is not
    /// an error, as in VPP.
    pub fn add_table(&mut self, id: u32) -> Result<(), String> {
        if self.table_index(id).is_ok() {
            return Ok(());
        }
        let slot = match self.tables.iter().position(Option::is_none) {
            Some(s) => s,
            None if self.tables.len() < MAX_TABLES => {
                self.tables.push(None);
                self.tables.len() - 1
            }
            None => return Err(format!("{MAX_TABLES} tables exist already")),
        };
        self.tables[slot] = Some(Table::new(id));
        self.tables_dirty = true;
        Ok(())
    }

    /// `ip table del ID`: removes a table and its routes. Refused for table 0 and while an
    /// interface routes in it.
    pub fn del_table(&mut self, id: u32) -> Result<(), String> {
        if id == DEFAULT_TABLE {
            return Err("table 0 is the default table; it cannot be removed".into());
        }
        let t = self.table_index(id)?;
        let bound: Vec<&str> = (0..self.view.interfaces.len() as u32)
            .filter(|&i| self.table_of(i, false) == t || self.table_of(i, true) == t)
            .map(|i| self.name(i))
            .collect();
        if !bound.is_empty() {
            return Err(format!(
                "table {id} is in use by {}: move them to another table first",
                bound.join(", ")
            ));
        }
        let Some(table) = self.tables[t].take() else {
            return Ok(());
        };
        let held: Vec<u32> = table
            .fib
            .routes4()
            .iter()
            .map(|r| r.1)
            .chain(table.fib.routes6().iter().map(|r| r.1))
            .collect();
        for adj in held {
            self.release(adj);
        }
        self.tables_dirty = true;
        Ok(())
    }

    /// `set interface ip table IF ID` (`v6`: `ip6 table`): the table an interface routes one
    /// family in. Refused while the interface has addresses of that family (their routes
    /// live in the old table): delete them first, as VPP asks.
    pub fn set_interface_table(&mut self, itf: u32, v6: bool, id: u32) -> Result<(), String> {
        let t = self.table_index(id)?;
        let Some(i) = self.view.interfaces.get(itf as usize) else {
            return Err(format!("no interface {itf}"));
        };
        let current = if v6 { i.table6 } else { i.table4 } as usize;
        if current == t {
            return Ok(());
        }
        let (has, family) = if v6 {
            (!i.v6.is_empty(), "IPv6")
        } else {
            (!i.v4.is_empty(), "IPv4")
        };
        if has {
            return Err(format!(
                "{} has {family} addresses: delete them before moving it to table {id}",
                self.name(itf)
            ));
        }
        let i = &mut self.view.interfaces[itf as usize];
        if v6 {
            i.table6 = t as u16;
        } else {
            i.table4 = t as u16;
        }
        self.view_dirty = true;
        self.tables_dirty = true;
        Ok(())
    }

    /// The table set as the workers will see it.
    pub(super) fn table_set(&self) -> TableSet {
        TableSet {
            fibs: self
                .tables
                .iter()
                .map(|t| t.as_ref().map(|t| t.fib.reader()))
                .collect(),
            by_interface4: self.view.interfaces.iter().map(|i| i.table4).collect(),
            by_interface6: self.view.interfaces.iter().map(|i| i.table6).collect(),
        }
    }

    /// What the lookup nodes read: the tables and the interfaces' bindings.
    pub fn tables(&self) -> SharedTables {
        self.shared_tables.clone()
    }

    /// `show ip table`: every table by id.
    pub fn table_views(&self) -> Vec<TableView> {
        let mut v: Vec<TableView> = self
            .tables
            .iter()
            .enumerate()
            .filter_map(|(t, table)| {
                let table = table.as_ref()?;
                let bound = |v6: bool| {
                    (0..self.view.interfaces.len() as u32)
                        .filter(|&i| self.table_of(i, v6) == t)
                        .map(|i| self.name(i).to_string())
                        .collect()
                };
                Some(TableView {
                    id: table.id,
                    v4_routes: table.fib.routes4().len(),
                    v6_routes: table.fib.routes6().len(),
                    ip4_interfaces: bound(false),
                    ip6_interfaces: bound(true),
                    memory_bytes: table.fib.memory().total(),
                })
            })
            .collect();
        v.sort_by_key(|t| t.id);
        v
    }
}
