//! `memplan{align=64}`: static allocation of every op-defined value into one
//! arena, with liveness-based sharing (the paper's "memory sharing", §3).
//!
//! What: every value defined by an op gets a byte offset `ck.offset` inside
//! one arena of `ck.arena_bytes` (a function attribute). Function arguments
//! are not in the arena (the caller owns them). An in-place result
//! (`ck.inplace = N`) takes the offset of operand N: liveness already merges
//! such chains into one buffer (`analysis::liveness`), so the planner places
//! buffers, not values.
//!
//! How: a buffer is an interval of op indices `[start, end]` (inclusive)
//! and a size rounded up to `align`. Two buffers may share bytes iff their
//! intervals are disjoint. The plan is XLA's `GlobalDecreasingSizeBestFit`
//! heap simulation: buffers sorted by size (largest first, then longest
//! interval, then earliest start), each put into the smallest free gap
//! (lowest offset on ties) left by the already placed buffers whose
//! intervals overlap its own, or on top of them when no gap fits. A simple
//! first-fit in schedule order over the same inputs is computed too and
//! reported as the honesty baseline (`--pass-statistics`, `bench/memplan.sh`).
//!
//! Complexity: the "which placed buffers overlap this interval in time"
//! query would make a naive heap simulator O(n^2) on training graphs (every
//! stored activation overlaps every backward value). Instead two segment
//! trees over op indices hold coalesced unions of the offset ranges of
//! placed buffers: `cover` holds each buffer at the O(log n) nodes that
//! decompose its interval, `starts` holds it at every node above the op it
//! starts at. The buffers overlapping `[s, e]` are those live at `s` (the
//! `cover` sets on the path from leaf `s` to the root: each buffer at most
//! once) and those starting in `(s, e]` (the `starts` sets of that range's
//! O(log n) nodes, again each buffer at most once). A placement costs
//! O(log n + r log r) where r is the number of occupied ranges in those
//! sets (small when the packing is tight, which is the normal case).
//! Overall O(n log n · r); the 1M-op LSTM gradient (619k buffers) places
//! in a few seconds in release builds.
//!
//! Invariants in: the module verifies; every `ck.inplace` mark is legal
//! (`inplace::inplace_is_legal`), else a located error (run
//! `inplace::strip_illegal_inplace` first if a pass may have broken one).
//! Fusion and donation: a value internal to a `ck.fusion` group is never
//! stored and gets no `ck.offset`; a fusion group is one step of the
//! schedule (liveness); a value written in place into a `{ck.donate}`
//! argument lives in the caller's buffer and gets no `ck.offset` either.
//!
//! Invariants out: every stored op result has an aligned `ck.offset`, every
//! function `ck.arena_bytes`, and `memplan_check::check_func` accepts the
//! plan (run after the pass in debug builds and in every test).
//!
//! Errors: a value whose size is unknown (overflows u64) or an offset that
//! does not fit in i64 → error at the op; `align` not a power of two → error
//! when the pipeline is built.

use crate::analysis::liveness::{Liveness, liveness};
use crate::inplace::inplace_is_legal;
use crate::manager::{Pass, PassOptions, Statistics};
use crate::memplan_check;
use ckopt_ir::ops::{ATTR_ARENA_BYTES, ATTR_INPLACE, ATTR_OFFSET};
use ckopt_ir::{Attr, Diag, Diags, Func, Module};
use std::collections::BTreeMap;

/// Default alignment of every value in the arena, in bytes: the `align`
/// default of memplan's record in the registry.
pub fn default_align() -> u64 {
    PassOptions::new("memplan").int("align").expect("the registry's default of memplan's align parses")
}

/// One buffer to place: live on op indices `[start, end]`, `size` bytes
/// (already rounded up to the alignment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    pub start: usize,
    pub end: usize,
    pub size: u64,
}

/// Which placement heuristic to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// XLA's GlobalDecreasingSizeBestFit: largest first, smallest fitting gap.
    BestFitDecreasingSize,
    /// Schedule order (by start), lowest fitting gap: the simple baseline.
    FirstFit,
}

/// Offsets of each block and the arena size (max end over blocks).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub offsets: Vec<u64>,
    pub arena_bytes: u64,
}

/// Where a coalesced set of disjoint, non-touching half-open byte ranges,
/// sorted by start, lives in a [`Pool`]: `data[at..at + len]`, with room
/// for `cap`.
#[derive(Clone, Copy, Debug, Default)]
struct RangeSet {
    at: usize,
    len: u32,
    cap: u32,
}

/// The storage of every [`RangeSet`] of the trees, one vector: a set that
/// outgrows its room moves to the end with twice the room (its old room is
/// not reused). Millions of small sets, and no allocation or free of their own.
#[derive(Debug, Default)]
struct Pool {
    data: Vec<(u64, u64)>,
}

impl Pool {
    fn get(&self, set: RangeSet) -> &[(u64, u64)] {
        &self.data[set.at..set.at + set.len as usize]
    }

    /// Adds `[s, e)` to `set`, merging with overlapping or touching ranges.
    fn insert(&mut self, set: &mut RangeSet, mut s: u64, mut e: u64) {
        if s >= e {
            return;
        }
        let v = self.get(*set);
        // The ranges starting at or before s: the last of them merges if it reaches s.
        let mut lo = v.partition_point(|r| r.0 <= s);
        if lo > 0 && v[lo - 1].1 >= s {
            let (ps, pe) = v[lo - 1];
            if pe >= e {
                return;
            }
            s = ps;
            e = e.max(pe);
            lo -= 1;
        }
        // Ranges starting inside [s, e] merge.
        let mut hi = lo;
        while hi < v.len() && v[hi].0 <= e {
            e = e.max(v[hi].1);
            hi += 1;
        }
        let len = set.len as usize;
        if hi > lo {
            // [lo, hi) becomes one range.
            let at = set.at;
            self.data[at + lo] = (s, e);
            self.data.copy_within(at + hi..at + len, at + lo + 1);
            set.len -= (hi - lo - 1) as u32;
            return;
        }
        if set.len == set.cap {
            let cap = set.cap.saturating_mul(2).max(2);
            let at = self.data.len();
            self.data.extend_from_within(set.at..set.at + len);
            self.data.resize(at + cap as usize, (0, 0));
            set.at = at;
            set.cap = cap;
        }
        let at = set.at;
        self.data.copy_within(at + lo..at + len, at + lo + 1);
        self.data[at + lo] = (s, e);
        set.len += 1;
    }
}

/// Two segment trees over op indices (leaves `size..2 * size`, node `k`'s
/// children `2k` and `2k + 1`) holding the occupied offset ranges of placed
/// blocks (see the module doc).
struct TimeTrees {
    size: usize,
    /// Ranges of the blocks whose interval decomposes onto the node.
    cover: Vec<RangeSet>,
    /// Ranges of the blocks that start inside the node's range.
    starts: Vec<RangeSet>,
    pool: Pool,
}

impl TimeTrees {
    fn new(n: usize) -> Self {
        let size = n.max(1).next_power_of_two();
        TimeTrees { size, cover: vec![RangeSet::default(); 2 * size], starts: vec![RangeSet::default(); 2 * size], pool: Pool::default() }
    }

    /// Records `[off, end)` as occupied on op indices `[s, e]` (`s <= e`).
    fn insert(&mut self, s: usize, e: usize, off: u64, end: u64) {
        let (mut l, mut r) = (s + self.size, e + 1 + self.size);
        while l < r {
            if l & 1 == 1 {
                self.pool.insert(&mut self.cover[l], off, end);
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                self.pool.insert(&mut self.cover[r], off, end);
            }
            l /= 2;
            r /= 2;
        }
        let mut x = s + self.size;
        while x >= 1 {
            self.pool.insert(&mut self.starts[x], off, end);
            x /= 2;
        }
    }

    /// Collects into `out` the occupied ranges of every block overlapping
    /// `[s, e]` (`s <= e`), sorted by start (possibly overlapping each
    /// other: the caller merges).
    fn query(&self, s: usize, e: usize, out: &mut Runs) {
        out.clear();
        // Live at s.
        let mut x = s + self.size;
        while x >= 1 {
            out.push(self.pool.get(self.cover[x]));
            x /= 2;
        }
        // Starting in (s, e].
        let (mut l, mut r) = (s + 1 + self.size, e + 1 + self.size);
        while l < r {
            if l & 1 == 1 {
                out.push(self.pool.get(self.starts[l]));
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                out.push(self.pool.get(self.starts[r]));
            }
            l /= 2;
            r /= 2;
        }
        out.sort();
    }
}

/// Ranges gathered from several sets, each sorted by start, and then
/// sorted as a whole by merging those runs pairwise (cheaper than sorting:
/// a query gathers a hundred ranges from a dozen sets on the 1M-op LSTM).
#[derive(Default)]
struct Runs {
    ranges: Vec<(u64, u64)>,
    /// End (in `ranges`) of each run.
    ends: Vec<usize>,
    next_ends: Vec<usize>,
    tmp: Vec<(u64, u64)>,
}

impl Runs {
    fn clear(&mut self) {
        self.ranges.clear();
        self.ends.clear();
    }

    fn push(&mut self, run: &[(u64, u64)]) {
        if !run.is_empty() {
            self.ranges.extend_from_slice(run);
            self.ends.push(self.ranges.len());
        }
    }

    /// Sorts `ranges` by start.
    fn sort(&mut self) {
        if self.ends.len() <= 1 {
            return;
        }
        if self.ranges.len() <= 24 {
            self.ranges.sort_unstable_by_key(|r| r.0);
            return;
        }
        let n = self.ranges.len();
        self.tmp.clear();
        self.tmp.resize(n, (0, 0));
        // Merge neighbouring runs until one is left, from `ranges` into `tmp` and back.
        while self.ends.len() > 1 {
            let (src, dst) = (&self.ranges, &mut self.tmp);
            self.next_ends.clear();
            let mut a = 0;
            let mut k = 0;
            while k < self.ends.len() {
                let m = self.ends[k];
                let Some(&e) = self.ends.get(k + 1) else {
                    dst[a..m].copy_from_slice(&src[a..m]);
                    self.next_ends.push(m);
                    break;
                };
                let (mut i, mut j, mut o) = (a, m, a);
                while i < m && j < e {
                    if src[j].0 < src[i].0 {
                        dst[o] = src[j];
                        j += 1;
                    } else {
                        dst[o] = src[i];
                        i += 1;
                    }
                    o += 1;
                }
                dst[o..o + (m - i)].copy_from_slice(&src[i..m]);
                o += m - i;
                dst[o..e].copy_from_slice(&src[j..e]);
                self.next_ends.push(e);
                a = e;
                k += 2;
            }
            std::mem::swap(&mut self.ranges, &mut self.tmp);
            std::mem::swap(&mut self.ends, &mut self.next_ends);
        }
    }
}

/// Places `blocks` (intervals within `[0, horizon)`) with the given policy.
/// Blocks of size 0 get offset 0 and occupy nothing.
pub fn place(blocks: &[Block], horizon: usize, policy: Policy) -> Placement {
    if policy == Policy::FirstFit {
        return first_fit_online(blocks);
    }
    let horizon = blocks.iter().map(|b| b.end + 1).max().unwrap_or(0).max(horizon);
    let mut order: Vec<usize> = (0..blocks.len()).collect();
    match policy {
        Policy::BestFitDecreasingSize => order.sort_by(|&a, &b| {
            let (x, y) = (&blocks[a], &blocks[b]);
            y.size
                .cmp(&x.size)
                .then((y.end - y.start).cmp(&(x.end - x.start)))
                .then(x.start.cmp(&y.start))
                .then(a.cmp(&b))
        }),
        Policy::FirstFit => order.sort_by_key(|&a| (blocks[a].start, a)),
    }
    let mut tree = TimeTrees::new(horizon);
    let mut offsets = vec![0u64; blocks.len()];
    let mut arena = 0u64;
    let mut runs = Runs::default();
    for &i in &order {
        let b = blocks[i];
        if b.size == 0 {
            continue;
        }
        if b.start > b.end {
            // An empty interval overlaps nothing and occupies nothing.
            arena = arena.max(b.size);
            continue;
        }
        tree.query(b.start, b.end, &mut runs);
        // Walk the gaps between the merged occupied ranges.
        let mut best: Option<(u64, u64)> = None; // (gap length, offset)
        let mut cursor = 0u64;
        for &(s, e) in &runs.ranges {
            if s > cursor {
                let gap = s - cursor;
                if gap >= b.size {
                    match policy {
                        Policy::FirstFit => {
                            best = Some((gap, cursor));
                            break;
                        }
                        Policy::BestFitDecreasingSize => {
                            if best.is_none_or(|(g, _)| gap < g) {
                                best = Some((gap, cursor));
                            }
                        }
                    }
                }
            }
            cursor = cursor.max(e);
        }
        let off = best.map(|(_, o)| o).unwrap_or(cursor);
        let end = off.saturating_add(b.size);
        offsets[i] = off;
        arena = arena.max(end);
        tree.insert(b.start, b.end, off, end);
    }
    Placement { offsets, arena_bytes: arena }
}

/// First-fit in schedule order. Placing blocks by start time, the placed
/// blocks that overlap the new one in time are exactly those still live at
/// its start, so this is an online allocator: a coalesced free list of holes
/// below the frontier, the lowest hole that fits (else the frontier), and
/// frees at each block's end. O(n log n + n · holes).
fn first_fit_online(blocks: &[Block]) -> Placement {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut order: Vec<usize> = (0..blocks.len()).collect();
    order.sort_by_key(|&a| (blocks[a].start, a));
    let mut offsets = vec![0u64; blocks.len()];
    let mut holes: BTreeMap<u64, u64> = BTreeMap::new(); // offset -> end, never touching `top`
    let mut top = 0u64;
    let mut arena = 0u64;
    let mut live: BinaryHeap<Reverse<(usize, usize)>> = BinaryHeap::new(); // (end, block)
    for &i in &order {
        let b = blocks[i];
        while let Some(&Reverse((end, j))) = live.peek() {
            if end >= b.start {
                break;
            }
            live.pop();
            let (mut s, mut e) = (offsets[j], offsets[j] + blocks[j].size);
            if let Some((&ps, &pe)) = holes.range(..s).next_back()
                && pe == s
            {
                holes.remove(&ps);
                s = ps;
            }
            if let Some(&ne) = holes.get(&e) {
                holes.remove(&e);
                e = ne;
            }
            if e == top {
                top = s;
            } else {
                holes.insert(s, e);
            }
        }
        if b.size == 0 {
            continue;
        }
        let fit = holes.iter().find(|&(&s, &e)| e - s >= b.size).map(|(&s, &e)| (s, e));
        let off = match fit {
            Some((s, e)) => {
                holes.remove(&s);
                if e - s > b.size {
                    holes.insert(s + b.size, e);
                }
                s
            }
            None => {
                let o = top;
                top = top.saturating_add(b.size);
                o
            }
        };
        offsets[i] = off;
        arena = arena.max(off.saturating_add(b.size));
        live.push(Reverse((b.end, i)));
    }
    Placement { offsets, arena_bytes: arena }
}

/// Rounds `x` up to a multiple of `align` (a power of two); `None` on overflow.
pub fn round_up(x: u64, align: u64) -> Option<u64> {
    Some(x.checked_add(align - 1)? & !(align - 1))
}

/// The buffers of a function as blocks (one per liveness interval), with
/// located errors for unknown sizes and illegal in-place marks.
pub fn blocks_of(f: &Func, live: &Liveness, align: u64) -> Result<Vec<Block>, Diags> {
    let mut diags = Diags::new();
    for (i, op) in f.body.iter().enumerate() {
        let Some(r) = op.result else { continue };
        if f.ty(r).byte_size().is_none() {
            diags.push(Diag::error(
                op.loc.clone(),
                format!("memplan: value %{} of type {} has an unknown size (it overflows u64)", f.name_of(r), f.ty(r)),
            ));
        }
        if op.has_attr(ATTR_INPLACE) && !inplace_is_legal(f, i, live) {
            diags.push(Diag::error(
                op.loc.clone(),
                format!(
                    "memplan: 'ck.inplace' on 'ck.{}' is not legal here (the operand must be op-defined, of the same size, not returned, and read by nothing after this op); run inplace::strip_illegal_inplace first",
                    op.kind.name()
                ),
            ));
        }
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    let mut blocks = Vec::with_capacity(live.intervals.len());
    for iv in &live.intervals {
        let size = round_up(iv.bytes, align).ok_or_else(|| {
            let loc = live.def[iv.root.index()].map(|d| f.body[d].loc.clone()).unwrap_or_else(|| f.loc.clone());
            Diags::from(Diag::error(loc, format!("memplan: value %{} is too large to align", f.name_of(iv.root))))
        })?;
        blocks.push(Block { start: iv.start, end: iv.end, size });
    }
    Ok(blocks)
}

/// What planning one function produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuncPlan {
    pub arena_bytes: u64,
    /// Live peak of the function's buffers (peak_bytes, docs/memory.md): a lower bound for any plan.
    pub peak_bytes: u64,
    /// Arena of the first-fit baseline on the same blocks.
    pub first_fit_bytes: u64,
    pub buffers: usize,
    pub values: usize,
}

/// Plans one function: writes `ck.offset` on each op result and
/// `ck.arena_bytes` on the function. `align` must be a power of two.
pub fn memplan_func(f: &mut Func, align: u64) -> Result<FuncPlan, Diags> {
    if !align.is_power_of_two() {
        return Err(Diags::from(Diag::error(
            f.loc.clone(),
            format!("memplan: align must be a power of two, got {align}"),
        )));
    }
    let live = liveness(f);
    let blocks = blocks_of(f, &live, align)?;
    let best = place(&blocks, f.body.len(), Policy::BestFitDecreasingSize);
    let first = place(&blocks, f.body.len(), Policy::FirstFit);
    let too_big = |v: u64| i64::try_from(v).is_err();
    if too_big(best.arena_bytes) {
        return Err(Diags::from(Diag::error(
            f.loc.clone(),
            format!("memplan: the arena of @{} ({} bytes) does not fit in i64", f.name, best.arena_bytes),
        )));
    }
    // Offset of each buffer root, then of each value through its buffer.
    let mut root_off: Vec<Option<u64>> = vec![None; f.values.len()];
    for (iv, &off) in live.intervals.iter().zip(&best.offsets) {
        root_off[iv.root.index()] = Some(off);
    }
    // Values internal to a fusion group and values living in a donated
    // argument's buffer get no offset (their buffers have no interval).
    let fusion = ckopt_ir::fusion::analyze(f);
    let mut values = 0;
    for op in &mut f.body {
        op.attrs.remove(ATTR_OFFSET);
        let Some(r) = op.result else { continue };
        if !fusion.materialized(r) {
            continue;
        }
        let Some(off) = root_off[live.buffer[r.index()].index()] else { continue };
        op.attrs.insert(ATTR_OFFSET.into(), Attr::Int(off as i64));
        values += 1;
    }
    f.attrs.insert(ATTR_ARENA_BYTES.into(), Attr::Int(best.arena_bytes as i64));
    let peak_bytes = crate::analysis::peak(f, &live, true);
    Ok(FuncPlan { arena_bytes: best.arena_bytes, peak_bytes, first_fit_bytes: first.arena_bytes, buffers: blocks.len(), values })
}

/// Plans every function of the module and, with `check` (the default) or
/// in debug builds, proves each plan with the independent checker.
pub fn memplan_module(m: &mut Module, align: u64, check: bool, stats: &mut Statistics) -> Result<(), Diags> {
    for f in &mut m.funcs {
        let p = memplan_func(f, align)?;
        if check || cfg!(debug_assertions) {
            memplan_check::check_func(f, align)?;
        }
        stats.add_func(&f.name, "arena-bytes", p.arena_bytes);
        stats.add_func(&f.name, "first-fit-arena-bytes", p.first_fit_bytes);
        stats.add_func(&f.name, "live-peak-bytes", p.peak_bytes);
        stats.add_func(&f.name, "buffers-placed", p.buffers);
        stats.add_func(&f.name, "values-placed", p.values);
    }
    Ok(())
}

struct MemplanPass {
    align: u64,
    check: bool,
}

impl Pass for MemplanPass {
    fn run(&self, module: &mut Module, stats: &mut Statistics) -> Result<(), Diags> {
        memplan_module(module, self.align, self.check, stats)
    }
}

/// Registry constructor (`align` is a power of two by its kind).
pub fn build(opts: &PassOptions) -> Result<Box<dyn Pass>, crate::manager::OptionError> {
    Ok(Box::new(MemplanPass { align: opts.int("align")?, check: opts.flag("check")? }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(start: usize, end: usize, size: u64) -> Block {
        Block { start, end, size }
    }

    /// No two time-overlapping blocks share bytes, for both policies.
    fn assert_disjoint(blocks: &[Block], p: &Placement) {
        for i in 0..blocks.len() {
            for j in i + 1..blocks.len() {
                let (x, y) = (blocks[i], blocks[j]);
                if x.size == 0 || y.size == 0 || x.end < y.start || y.end < x.start {
                    continue;
                }
                let (a, c) = (p.offsets[i], p.offsets[j]);
                assert!(a + x.size <= c || c + y.size <= a, "blocks {i} and {j} overlap: {p:?}");
            }
            assert!(p.offsets[i] + blocks[i].size <= p.arena_bytes);
        }
    }

    /// Range sets in one pool against byte maps: after every insert each
    /// set is sorted, disjoint, never touching, and covers exactly the bytes
    /// inserted into it (sets interleave and move as they grow).
    #[test]
    fn range_set_is_the_coalesced_union() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        for _ in 0..200 {
            let mut pool = Pool::default();
            let mut sets = [RangeSet::default(); 3];
            let mut bytes = [[false; 96]; 3];
            for _ in 0..36 {
                let k = next(3) as usize;
                let s = next(90);
                let e = s + next(8);
                pool.insert(&mut sets[k], s, e);
                for x in s..e {
                    bytes[k][x as usize] = true;
                }
                for k in 0..3 {
                    let r = pool.get(sets[k]);
                    assert!(r.windows(2).all(|w| w[0].1 < w[1].0), "{r:?}");
                    assert!(r.iter().all(|&(a, b)| a < b), "{r:?}");
                    let mut got = [false; 96];
                    for &(a, b) in r {
                        for x in a..b {
                            got[x as usize] = true;
                        }
                    }
                    assert_eq!(got, bytes[k], "{r:?}");
                }
            }
        }
    }

    #[test]
    fn disjoint_lifetimes_share_offset_zero() {
        let blocks = [b(0, 1, 64), b(2, 3, 64), b(4, 5, 64)];
        for pol in [Policy::BestFitDecreasingSize, Policy::FirstFit] {
            let p = place(&blocks, 6, pol);
            assert_eq!(p.offsets, vec![0, 0, 0]);
            assert_eq!(p.arena_bytes, 64);
        }
    }

    #[test]
    fn best_fit_picks_the_smallest_gap() {
        // Long-lived 128 at [0,128) ... build a hole of 64 and a hole of 192.
        let blocks = [
            b(0, 10, 64),   // A
            b(0, 10, 64),   // B
            b(0, 3, 192),   // C, ends early, leaves a 192 hole
            b(0, 10, 128),  // D
            b(5, 6, 64),    // E: best fit goes into C's hole? only hole at time 5
        ];
        let p = place(&blocks, 11, Policy::BestFitDecreasingSize);
        assert_disjoint(&blocks, &p);
        assert_eq!(p.arena_bytes, 448);
        // E only overlaps A, B, D in time: C's 192-byte hole at 0 is the only gap.
        assert_eq!(p.offsets[4], 0);
    }

    #[test]
    fn random_blocks_never_overlap_and_best_fit_is_not_worse_on_a_chain() {
        // A deterministic pseudo-random mix of intervals and sizes.
        let mut s: u64 = 0x9E3779B97F4A7C15;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for _ in 0..50 {
            let n = (next() % 60 + 1) as usize;
            let blocks: Vec<Block> = (0..n)
                .map(|_| {
                    let a = (next() % 40) as usize;
                    let l = (next() % 15) as usize;
                    b(a, a + l, 64 * (next() % 8))
                })
                .collect();
            for pol in [Policy::BestFitDecreasingSize, Policy::FirstFit] {
                let p = place(&blocks, 0, pol);
                assert_disjoint(&blocks, &p);
            }
        }
    }

    /// Merging sorted runs sorts the whole by start, for any number and
    /// lengths of runs (empty ones skipped).
    #[test]
    fn runs_merge_into_sorted_order() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        let mut runs = Runs::default();
        for _ in 0..300 {
            runs.clear();
            let mut all = Vec::new();
            for _ in 0..next(20) {
                let mut run: Vec<(u64, u64)> = (0..next(12)).map(|_| {
                    let s = next(1000);
                    (s, s + 1 + next(50))
                }).collect();
                run.sort_unstable();
                all.extend_from_slice(&run);
                runs.push(&run);
            }
            runs.sort();
            let mut want = all.clone();
            want.sort_unstable();
            assert!(runs.ranges.windows(2).all(|w| w[0].0 <= w[1].0), "{:?}", runs.ranges);
            let mut got = runs.ranges.clone();
            got.sort_unstable();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn range_set_coalesces() {
        let mut pool = Pool::default();
        let mut r = RangeSet::default();
        pool.insert(&mut r, 10, 20);
        pool.insert(&mut r, 30, 40);
        pool.insert(&mut r, 20, 30);
        assert_eq!(pool.get(r).len(), 1);
        assert_eq!(pool.get(r), [(10, 40)]);
        pool.insert(&mut r, 0, 5);
        pool.insert(&mut r, 3, 12);
        assert_eq!(pool.get(r), [(0, 40)]);
    }
}
