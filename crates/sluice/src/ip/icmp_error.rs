//! icmp4-error / icmp6-error: send the ICMP error another node asked for (in
//! `BufferMeta::aux`) about a packet it could not deliver, then drop that packet. The error
//! is a new packet, routed back through the family's lookup like any other. Each family says
//! when an error is forbidden, which address it comes from and how it is built
//! (`ErrorBuilder`, in `ip4/icmp_error.rs` and `ip6/icmp_error.rs`); what is the same — the
//! per-worker token bucket that keeps a flood of bad packets from becoming a flood of
//! errors, the scratch space, the new buffer, the counters and the trace — is here.

use super::Family;
use crate::buffer::WorkerBuffers;
use crate::graph::names::next_nodes;
use crate::graph::names::Counters;
use crate::graph::{Node, NodeCx, NodeDecl};
use crate::nodes::error_drop;
use crate::nodes::rate_limit::TokenBucket;
use crate::nodes::IcmpErrorRequest;
use crate::router::adjacency::{L3View, SharedL3View};
use crate::wire::ethernet::HEADER_LEN as ETH_HEADER_LEN;

/// Errors a worker sends per second, and how many it may send at once after a quiet time.
pub const RATE_PER_SEC: u64 = 1000;
pub const BURST: u64 = 100;

next_nodes! {
    pub enum Next<F: ErrorBuilder> {
        Lookup = F::LOOKUP_NODE,
        Drop = error_drop::NAME,
    }
}

/// A family's ICMP error counters, `Error`: "sent time exceeded", the family's other sent
/// errors, "rate limited", the family's reasons for not sending one, then "not sent: buffer
/// allocation failed". The counters every family has are declared here once and counted by
/// the node through `SharedCounters`; `impl From` clauses after the lists go to
/// `error_counters!`.
macro_rules! icmp_error_counters {
    (
        sent { $( $sent:ident = $sent_reason:expr ),+ $(,)? }
        not_sent { $( $not:ident = $not_reason:expr ),+ $(,)? }
        $($from:tt)*
    ) => {
        $crate::graph::names::error_counters! {
            pub enum Error {
                SentTimeExceeded = "sent time exceeded",
                $( $sent = $sent_reason, )+
                RateLimited = "rate limited",
                $( $not = $not_reason, )+
                NoBuffer = "not sent: buffer allocation failed",
            }
            $($from)*
        }
        impl $crate::ip::icmp_error::SharedCounters for Error {
            const RATE_LIMITED: Error = Error::RateLimited;
            const NO_BUFFER: Error = Error::NoBuffer;
        }
    };
}
pub(crate) use icmp_error_counters;

/// The counters of the reasons every family's ICMP errors share (`icmp_error_counters!`).
pub trait SharedCounters: Sized {
    const RATE_LIMITED: Self;
    const NO_BUFFER: Self;
}

/// What a family's ICMP errors need of it.
pub trait ErrorBuilder: Family {
    /// The family's counters (sent, by type; not sent, by reason).
    type Counter: Counters + SharedCounters;
    type Addr: Copy;
    /// The counter of an original that is not of the family.
    const NOT_OF_FAMILY: Self::Counter;
    /// The longest error the family sends (IP header on).
    const MAX_LEN: usize;
    /// Whether an error may be sent about `orig`, and the address it comes from; `Err` is
    /// the reason it may not.
    fn source(view: &L3View, orig: &Original) -> Result<Self::Addr, Self::Counter>;
    /// Write the error (IP header on) into `out`; its length, `None` if `orig` is unusable.
    fn build(out: &mut [u8], orig: &Original, from: Self::Addr) -> Option<usize>;
    /// The counter of a sent error.
    fn sent(req: IcmpErrorRequest) -> Self::Counter;
}

/// The packet an error is about, as the families' rules read it.
pub struct Original<'a> {
    /// The packet from its L3 header on.
    pub ip: &'a [u8],
    /// The interface it came in by.
    pub rx_if: u32,
    /// It came to a link-layer broadcast or multicast address.
    pub link_group: bool,
    /// The error asked for.
    pub req: IcmpErrorRequest,
}

/// The ICMP error node of family `F`.
pub struct IcmpError<F: ErrorBuilder> {
    view: SharedL3View,
    bucket: TokenBucket,
    /// Where the error is built before it is copied into its buffer.
    scratch: Box<[u8]>,
    _family: std::marker::PhantomData<F>,
}

impl<F: ErrorBuilder> IcmpError<F> {
    pub fn decl(view: SharedL3View) -> NodeDecl
    where
        Self: Node,
    {
        Self::decl_with_limit(view, RATE_PER_SEC, BURST)
    }

    /// With its own rate limit: `rate` errors a second, `burst` at once.
    pub fn decl_with_limit(view: SharedL3View, rate: u64, burst: u64) -> NodeDecl
    where
        Self: Node,
    {
        NodeDecl::internal(
            F::ICMP_ERROR_NODE,
            &Next::names::<F>(),
            F::Counter::ALL,
            Self::new(view, rate, burst),
        )
    }

    pub fn new(view: SharedL3View, rate: u64, burst: u64) -> Self {
        IcmpError {
            view,
            bucket: TokenBucket::on_tsc(rate, burst),
            scratch: vec![0; ETH_HEADER_LEN + F::MAX_LEN].into_boxed_slice(),
            _family: std::marker::PhantomData,
        }
    }

    /// Build the error `bi` asks for into a new buffer and return it with the counter of
    /// what was sent; `bi` itself is not changed. `Err` is the reason nothing was sent.
    pub fn make_error(
        &mut self,
        view: &L3View,
        bufs: &mut WorkerBuffers,
        bi: u32,
    ) -> Result<(u32, F::Counter), F::Counter> {
        let meta = *bufs.meta(bi);
        let req = IcmpErrorRequest::from_aux(meta.aux);
        let orig = Original {
            ip: crate::nodes::l3_header(bufs, bi, F::ETHERTYPE).ok_or(F::NOT_OF_FAMILY)?,
            rx_if: meta.rx_if,
            link_group: crate::nodes::link_group(bufs, bi),
            req,
        };
        let from = F::source(view, &orig)?;
        if !self.bucket.allow() {
            return Err(F::Counter::RATE_LIMITED);
        }
        let ip_out = &mut self.scratch[ETH_HEADER_LEN..];
        let n = F::build(ip_out, &orig, from).ok_or(F::NOT_OF_FAMILY)?;
        let len = ETH_HEADER_LEN + n;
        let nb =
            crate::nodes::icmp_error_buffer(bufs, &mut self.scratch[..len], F::ETHERTYPE, &meta)
                .ok_or(F::Counter::NO_BUFFER)?;
        Ok((nb, F::sent(req)))
    }
}

super::per_family_nodes!(IcmpError);

impl<F: ErrorBuilder> IcmpError<F> {
    /// The node's loop, `Node::process` of each family's instance.
    #[inline(always)]
    fn process_frame(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) -> usize {
        let view = self.view.load();
        let tracing = cx.tracing();
        for &bi in frame {
            let verdict = self.make_error(&view, cx.bufs, bi);
            let counter: usize = match verdict {
                Ok((_, c)) | Err(c) => c.into(),
            };
            cx.count_error(counter, 1);
            if tracing {
                let req = IcmpErrorRequest::from_aux(cx.bufs.meta(bi).aux);
                cx.trace(
                    bi,
                    format_args!(
                        "{}: type {} code {} arg {}",
                        F::Counter::ALL.get(counter).unwrap_or(&"?"),
                        req.kind,
                        req.code,
                        req.arg
                    ),
                );
            }
            if let Ok((nb, _)) = verdict {
                cx.enqueue(Next::Lookup as usize, nb);
            }
            cx.enqueue(Next::Drop as usize, bi);
        }
        frame.len()
    }
}

/// What the families' tests share: the node run over frames, and one error built.
#[cfg(test)]
pub(crate) mod testing {
    use super::{ErrorBuilder, IcmpError};
    use crate::buffer::{BufferPool, HugePages, FLAG_LOCAL_ORIGIN};
    use crate::graph::Node;
    use crate::nodes::testing::{received, Harness, Outcome};
    use crate::nodes::IcmpErrorRequest;
    use crate::router::adjacency::SharedL3View;

    /// Family `F`'s node, with a bucket of `burst` that never refills, over `frames` from
    /// `rx_if`, each asking for `req`.
    pub fn run<F: ErrorBuilder>(
        view: SharedL3View,
        frames: &[Vec<u8>],
        req: IcmpErrorRequest,
        rx_if: u32,
        burst: u64,
    ) -> Outcome
    where
        IcmpError<F>: Node,
    {
        let decl = IcmpError::<F>::decl_with_limit(view, 0, burst);
        Harness::new(3).run_node_with(decl, frames, rx_if, |m, _| m.aux = req.to_aux())
    }

    /// The error family `F` builds about `frame` from `rx_if`, as bytes, with the counter
    /// of what was sent, or why none was. The original is left as it was; the error comes
    /// in by `rx_if` and is the router's own.
    pub fn build<F: ErrorBuilder>(
        view: SharedL3View,
        frame: &[u8],
        req: IcmpErrorRequest,
        rx_if: u32,
    ) -> Result<(Vec<u8>, F::Counter), F::Counter> {
        let pool = BufferPool::new(16, HugePages::Never).unwrap();
        let mut bufs = pool.worker_handle();
        let bi = received(&mut bufs, frame);
        bufs.meta_mut(bi).rx_if = rx_if;
        bufs.meta_mut(bi).aux = req.to_aux();
        let mut node = IcmpError::<F>::new(view.clone(), 0, 10);
        let r = node.make_error(&view.load(), &mut bufs, bi);
        let mut before = Vec::new();
        bufs.copy_packet(bi, &mut before);
        assert_eq!(before, frame, "the original is not changed");
        bufs.free(bi);
        let (nb, counter) = r?;
        let m = *bufs.meta(nb);
        assert_eq!(m.rx_if, rx_if);
        assert_ne!(m.flags & FLAG_LOCAL_ORIGIN, 0);
        let mut out = Vec::new();
        bufs.copy_packet(nb, &mut out);
        bufs.free(nb);
        Ok((out, counter))
    }
}
