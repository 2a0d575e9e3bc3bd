//! Memory helpers for the lookup tables: big first-level arrays backed by transparent huge
//! pages where the kernel allows it, and a software prefetch that is safe to call.

/// A first-level table of `N` cells, all `fill`.
///
/// A random lookup into the 64 MiB IPv4 first level misses the TLB almost every time with 4 KiB
/// pages; asking for 2 MiB pages (`MADV_HUGEPAGE`, needed when THP is in `madvise` mode) before
/// the pages are first touched makes that miss cheap. Measured in docs/fib.md.
pub fn table<const N: usize>(fill: u32) -> Box<[u32; N]> {
    let mut v: Vec<u32> = Vec::with_capacity(N);
    advise_huge(v.as_mut_ptr() as usize, N * 4);
    v.resize(N, fill);
    match v.into_boxed_slice().try_into() {
        Ok(b) => b,
        // The vector has exactly N cells, so the conversion cannot fail.
        Err(_) => unreachable!("table has N cells"),
    }
}

/// A copy of a first-level table, with the same page advice as `table`.
pub fn copy<const N: usize>(src: &[u32; N]) -> Box<[u32; N]> {
    let mut v: Vec<u32> = Vec::with_capacity(N);
    advise_huge(v.as_mut_ptr() as usize, N * 4);
    v.extend_from_slice(&src[..]);
    match v.into_boxed_slice().try_into() {
        Ok(b) => b,
        Err(_) => unreachable!("table has N cells"),
    }
}

/// Resizes a node area to `len` cells (new cells `fill`). Growth doubles the capacity into a
/// fresh huge-page-advised allocation: the nodes of a full IPv6 table span hundreds of MiB and
/// are read at random, like the first level.
pub fn resize_nodes(nodes: &mut Vec<u32>, len: usize, fill: u32) {
    if len > nodes.capacity() {
        let mut grown: Vec<u32> = Vec::with_capacity(len.max(nodes.capacity() * 2));
        advise_huge(grown.as_mut_ptr() as usize, grown.capacity() * 4);
        grown.extend_from_slice(nodes);
        *nodes = grown;
    }
    nodes.resize(len, fill);
}

/// `n` values made by `make`, in memory advised for huge pages before first touched (the
/// L2 MAC table: a random probe per packet into megabytes).
pub fn huge_vec<T>(n: usize, make: impl FnMut() -> T) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(n);
    advise_huge(v.as_mut_ptr() as usize, n * std::mem::size_of::<T>());
    v.extend(std::iter::repeat_with(make).take(n));
    v
}

/// A copy of a node area, advised like `resize_nodes`.
pub fn copy_nodes<T: Copy>(src: &[T]) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(src.len());
    advise_huge(v.as_mut_ptr() as usize, std::mem::size_of_val(src));
    v.extend_from_slice(src);
    v
}

#[cfg(target_os = "linux")]
fn advise_huge(start: usize, len: usize) {
    const HUGE: usize = 2 << 20;
    let first = (start + HUGE - 1) & !(HUGE - 1);
    let end = (start + len) & !(HUGE - 1);
    if end > first {
        // SAFETY: [first, end) lies inside the allocation we own and have not yet handed out;
        // MADV_HUGEPAGE only changes how the kernel backs those pages, never their contents,
        // and a failure (THP off, old kernel) leaves ordinary pages.
        unsafe {
            libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge(_start: usize, _len: usize) {}

/// Asks the CPU to start loading the cache line of `r`.
#[inline(always)]
pub fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that never faults and has no visible effect; the pointer
    // comes from a live reference anyway. SSE is part of the x86_64 baseline.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
            r as *const T as *const i8,
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}
