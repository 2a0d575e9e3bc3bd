//! A node's next nodes and error counters, each bound to its name in one declaration (VPP's
//! `[NEXT] = "name"` and its `foreach_` error lists). The macros make the enums the node's
//! loop uses (`#[repr(usize)]`, so a variant is its slot or counter index at no cost) and the
//! name list `NodeDecl` takes, in the same order by construction:
//!
//! ```ignore
//! next_nodes! {
//!     enum Next {
//!         InterfaceOutput = crate::nodes::interface_output::NAME,
//!         Drop = crate::nodes::error_drop::NAME,
//!     }
//! }
//! error_counters! {
//!     enum Error {
//!         NotConnected = "interface no longer cross-connected",
//!         Truncated = "packet truncated",
//!         BadHeader = "header invalid",
//!     }
//!     // `Error::from(e)` for a parser's `ParseError`: each of its variants to the counter of
//!     // the same name, or to the one named after `=>`.
//!     impl From<ParseError> {
//!         Truncated,
//!         Version | Checksum => BadHeader,
//!     }
//! }
//! // NodeDecl::internal(NAME, &Next::NAMES, &Error::REASONS, node)
//! ```
//!
//! A generic node whose next nodes depend on a type parameter declares them with it
//! (`enum Next<F: Family> { Rewrite = F::REWRITE_NODE, .. }`): the enum stays plain and
//! `Next::names::<F>()` gives the list.

/// The `Next` enum of a node and its next nodes' names, `Next::NAMES` (or `Next::names::<F>()`
/// when the names depend on a type parameter), in the enum's order.
macro_rules! next_nodes {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident <$p:ident : $bound:path> {
            $( $(#[$vmeta:meta])* $variant:ident = $target:expr ),+ $(,)?
        }
    ) => {
        $crate::graph::names::__named_enum!($(#[$meta])* $vis $name { $( $(#[$vmeta])* $variant ),+ });
        impl $name {
            /// The next nodes' names, in the order of the variants.
            $vis fn names<$p: $bound>() -> [&'static str; $crate::graph::names::__count!($($variant)+)] {
                [$($target),+]
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $target:expr ),+ $(,)?
        }
    ) => {
        $crate::graph::names::__named_enum!($(#[$meta])* $vis $name { $( $(#[$vmeta])* $variant ),+ });
        impl $name {
            /// The next nodes' names, in the order of the variants.
            #[allow(dead_code)]
            $vis const NAMES: [&'static str; $crate::graph::names::__count!($($variant)+)] =
                [$($target),+];
        }
    };
}

/// The error counter enum of a node and its reasons (what `show errors` prints),
/// `Error::REASONS`, in the enum's order; `e.reason()` is one of them and `usize::from(e)`
/// the index `NodeCx::count_error` takes. Variants may start at a given index
/// (`First = OTHER.len()`) when the node's counters continue another list; `REASONS` is then
/// this enum's part only. `impl From<T> { A, B | C => D }` after the enum makes
/// `Error::from(t)`: each variant of `T` counted by the counter of its name or the one after `=>`.
macro_rules! error_counters {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident after $base:path {
            $(#[$fmeta:meta])* $first:ident = $freason:expr
            $(, $(#[$vmeta:meta])* $variant:ident = $reason:expr )* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[repr(usize)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        $vis enum $name {
            $(#[$fmeta])* $first = $base.len(),
            $( $(#[$vmeta])* $variant ),*
        }
        $crate::graph::names::__index!($name);
        $crate::graph::names::__reasons!($vis $name $base.len(); $freason $(, $reason)*);
        impl $name {
            /// All the node's counters: those of the list it continues, then its own.
            $vis const ALL: [&'static str;
                $base.len() + $crate::graph::names::__count!($first $($variant)*)] =
                $crate::graph::names::concat($base, Self::REASONS);
        }
        impl $crate::graph::names::Counters for $name {
            const ALL: &'static [&'static str] = &$name::ALL;
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $reason:expr ),+ $(,)?
        }
        $(
            impl From<$from:ident> {
                $( $($src:ident)|+ $(=> $dst:ident)? ),+ $(,)?
            }
        )*
    ) => {
        $crate::graph::names::__named_enum!($(#[$meta])* $vis $name { $( $(#[$vmeta])* $variant ),+ });
        $crate::graph::names::__reasons!($vis $name 0usize; $($reason),+);
        impl $crate::graph::names::Counters for $name {
            const ALL: &'static [&'static str] = &$name::REASONS;
        }
        $(
            impl From<$from> for $name {
                /// The counter of a reason found elsewhere (a parser's error, a table's
                /// refusal), by the mapping the node declares with its counters.
                fn from(e: $from) -> $name {
                    match e {
                        $( $($from::$src)|+ => $crate::graph::names::__counter!($name $($dst)? ; $($src)+) ),+
                    }
                }
            }
        )*
    };
}

/// The counter an `impl From` arm of `error_counters!` maps to: the one named after `=>`, else
/// the variant of the same name.
macro_rules! __counter {
    ($name:ident $dst:ident ; $($src:ident)+) => {
        $name::$dst
    };
    ($name:ident ; $src:ident) => {
        $name::$src
    };
}

/// The enum both macros make.
macro_rules! __named_enum {
    ($(#[$meta:meta])* $vis:vis $name:ident { $( $(#[$vmeta:meta])* $variant:ident ),+ }) => {
        $(#[$meta])*
        #[repr(usize)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant ),+
        }
        $crate::graph::names::__index!($name);
    };
}

/// A variant as the index it stands for.
macro_rules! __index {
    ($name:ident) => {
        impl From<$name> for usize {
            #[inline(always)]
            fn from(v: $name) -> usize {
                v as usize
            }
        }
    };
}

/// `REASONS` and `reason()` of an error enum whose first variant is `$base`.
macro_rules! __reasons {
    ($vis:vis $name:ident $base:expr; $($reason:expr),+) => {
        impl $name {
            /// The counters' reasons, in the order of the variants.
            #[allow(dead_code)]
            $vis const REASONS: [&'static str; $crate::graph::names::__count!($($reason)+)] =
                [$($reason),+];
            /// This counter's reason.
            #[allow(dead_code)]
            $vis const fn reason(self) -> &'static str {
                Self::REASONS[self as usize - $base]
            }
        }
    };
}

/// How many token trees are given (an array length).
macro_rules! __count {
    () => { 0usize };
    ($head:tt $($tail:tt)*) => { 1usize + $crate::graph::names::__count!($($tail)*) };
}

/// A node's error counters as a type: a generic node whose counters are a type parameter's
/// (each family's `Counter`) declares itself with `ALL` and counts `usize::from(e)`.
/// `error_counters!` implements it.
pub trait Counters: Copy + Into<usize> {
    /// Every counter of the node, in index order: `REASONS`, or the continued list's `ALL`.
    const ALL: &'static [&'static str];
}

/// `a` then `b`: a node's counters that continue another list (a const fn, so that the
/// whole list stays a constant).
pub const fn concat<const A: usize, const B: usize, const N: usize>(
    a: [&'static str; A],
    b: [&'static str; B],
) -> [&'static str; N] {
    assert!(A + B == N);
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = if i < A { a[i] } else { b[i - A] };
        i += 1;
    }
    out
}

pub(crate) use {__count, __counter, __index, __named_enum, __reasons, error_counters, next_nodes};

#[cfg(test)]
#[allow(dead_code)] // Variants only named, never sent anywhere.
mod tests {
    next_nodes! {
        enum Next {
            Out = "interface-output",
            /// A doc comment on a variant is kept.
            Drop = "error-drop",
        }
    }
    error_counters! {
        enum Error {
            Short = "too short",
            Long = "too long",
        }
    }
    enum Parsed {
        Short,
        Long,
        Huge,
    }
    error_counters! {
        enum Mapped {
            Short = "too short",
            TooLong = "too long",
        }
        impl From<Parsed> {
            Short,
            Long | Huge => TooLong,
        }
    }
    error_counters! {
        enum More after Error::REASONS {
            Third = "third",
            Fourth = "fourth",
        }
    }
    trait Fam {
        const N: &'static str;
    }
    struct A;
    impl Fam for A {
        const N: &'static str = "a-node";
    }
    next_nodes! {
        enum Generic<F: Fam> {
            Own = F::N,
            Drop = "error-drop",
        }
    }

    #[test]
    fn each_variant_is_the_index_of_its_name() {
        assert_eq!(Next::NAMES, ["interface-output", "error-drop"]);
        assert_eq!((Next::Out as usize, usize::from(Next::Drop)), (0, 1));
        assert_eq!(Error::REASONS, ["too short", "too long"]);
        assert_eq!(Error::Long.reason(), "too long");
        assert_eq!(Generic::names::<A>(), ["a-node", "error-drop"]);
        assert_eq!(Generic::Drop as usize, 1);
    }

    #[test]
    fn a_declared_mapping_gives_each_reason_its_counter() {
        assert_eq!(Mapped::from(Parsed::Short), Mapped::Short);
        assert_eq!(Mapped::from(Parsed::Long), Mapped::TooLong);
        assert_eq!(Mapped::from(Parsed::Huge), Mapped::TooLong);
    }

    #[test]
    fn a_continued_list_counts_after_the_first() {
        assert_eq!(More::Third as usize, 2);
        assert_eq!(More::Fourth.reason(), "fourth");
        assert_eq!(More::REASONS, ["third", "fourth"]);
        assert_eq!(More::ALL, ["too short", "too long", "third", "fourth"]);
    }
}
