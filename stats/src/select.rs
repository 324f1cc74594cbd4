//! Order statistics without sorting: most-significant-digit radix selection.
//!
//! Summaries of 10 M samples must stay well under 400 ms in the browser, and a
//! comparison sort (or repeated `select_nth_unstable`) of 10 M doubles costs
//! hundreds of milliseconds. Instead each double is mapped to a u64 key with
//! the same total order. Given the key range, a 16-bit digit window is placed
//! just below the highest bit in which the smallest and largest keys differ;
//! one counting pass finds the digit bucket holding each wanted rank, one more
//! pass copies just those buckets, and each (much smaller) bucket is resolved
//! the same way or, once short, by sorting. Memory is proportional to the
//! wanted buckets; equal values and large common offsets (1e12 + small) cost
//! nothing extra.

/// Long passes run as calls of this many elements to a non-inlined kernel:
/// browsers start wasm in a baseline tier and switch to optimized code only on
/// the next call of a function, so one 10 M element loop would run unoptimized
/// (about 2.5x slower in V8) from start to end.
pub(crate) const CHUNK: usize = 1 << 16;

/// Buckets at or below this length are finished with a sort.
const SMALL: usize = 4096;
const DIGITS: usize = 1 << 16;

/// u64 key with the same order as `f64::total_cmp`.
#[inline]
fn key(x: f64) -> u64 {
    let b = x.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | (1 << 63)
    }
}

/// Inverse of [`key`].
#[inline]
fn unkey(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// The 16-bit digit window for keys in `lo..=hi` (lo < hi): digit(k) =
/// (k >> shift) - base, always < 65536.
#[derive(Clone, Copy)]
struct Window {
    shift: u32,
    base: u64,
}

impl Window {
    fn new(lo: u64, hi: u64) -> Window {
        let top = 64 - (lo ^ hi).leading_zeros(); // bits below the common prefix
        let shift = top.saturating_sub(16);
        Window {
            shift,
            base: lo >> shift,
        }
    }

    #[inline]
    fn digit(self, k: u64) -> usize {
        ((k >> self.shift) - self.base) as usize
    }
}

/// For each rank, (digit bucket, rank inside the bucket), from digit counts.
fn locate(count: &[u32], ranks: &[usize]) -> Vec<(usize, usize)> {
    let mut starts = Vec::with_capacity(DIGITS);
    let mut acc = 0usize;
    for &c in count {
        starts.push(acc);
        acc += c as usize;
    }
    ranks
        .iter()
        .map(|&r| {
            // last bucket whose start <= r and that is non-empty
            let mut b = starts.partition_point(|&s| s <= r) - 1;
            while count[b] == 0 {
                b -= 1;
            }
            (b, r - starts[b])
        })
        .collect()
}

/// Count top digits of one chunk and track the smallest and largest key.
#[inline(never)]
fn count_values<F: Fn(f64) -> f64>(values: &[f64], map: &F, w: Window, count: &mut [u32]) {
    for &v in values {
        count[w.digit(key(map(v)))] += 1;
    }
}

#[inline(never)]
fn gather_values<F: Fn(f64) -> f64>(
    values: &[f64],
    map: &F,
    w: Window,
    slot_of: &[u16],
    buckets: &mut [Vec<u64>],
) {
    for &v in values {
        let k = key(map(v));
        let s = slot_of[w.digit(k)];
        if s != u16::MAX {
            buckets[s as usize].push(k);
        }
    }
}

#[inline(never)]
fn key_range(keys: &[u64], range: &mut (u64, u64)) {
    for &k in keys {
        range.0 = range.0.min(k);
        range.1 = range.1.max(k);
    }
}

#[inline(never)]
fn count_keys(keys: &[u64], w: Window, count: &mut [u32]) {
    for &k in keys {
        count[w.digit(k)] += 1;
    }
}

#[inline(never)]
fn gather_keys(keys: &[u64], w: Window, slot_of: &[u16], buckets: &mut [Vec<u64>]) {
    for &k in keys {
        let s = slot_of[w.digit(k)];
        if s != u16::MAX {
            buckets[s as usize].push(k);
        }
    }
}

/// Keys at `ranks` (0-based, within `keys`).
fn select_keys(keys: &mut [u64], ranks: &[usize]) -> Vec<u64> {
    if keys.len() <= SMALL {
        keys.sort_unstable();
        return ranks.iter().map(|&r| keys[r]).collect();
    }
    let mut range = (u64::MAX, 0);
    for c in keys.chunks(CHUNK) {
        key_range(c, &mut range);
    }
    let (lo, hi) = range;
    if lo == hi {
        return vec![lo; ranks.len()];
    }
    let w = Window::new(lo, hi);
    let mut count = vec![0u32; DIGITS];
    for c in keys.chunks(CHUNK) {
        count_keys(c, w, &mut count);
    }
    let located = locate(&count, ranks);
    if w.shift == 0 {
        // The window holds every differing bit: the digit is the key.
        return located.into_iter().map(|(b, _)| lo + b as u64).collect();
    }
    resolve(&count, &located, |slot_of, buckets| {
        for c in keys.chunks(CHUNK) {
            gather_keys(c, w, slot_of, buckets);
        }
    })
}

/// Gather the wanted digit buckets with `fill` and resolve each rank inside
/// its bucket.
fn resolve(
    count: &[u32],
    located: &[(usize, usize)],
    fill: impl FnOnce(&[u16], &mut [Vec<u64>]),
) -> Vec<u64> {
    let mut wanted: Vec<usize> = located.iter().map(|&(b, _)| b).collect();
    wanted.sort_unstable();
    wanted.dedup();
    assert!(wanted.len() < u16::MAX as usize, "too many ranks");
    let mut slot_of = vec![u16::MAX; DIGITS];
    let mut buckets: Vec<Vec<u64>> = Vec::with_capacity(wanted.len());
    for (i, &b) in wanted.iter().enumerate() {
        slot_of[b] = i as u16;
        buckets.push(Vec::with_capacity(count[b] as usize));
    }
    fill(&slot_of, &mut buckets);
    let mut by_slot: Vec<Vec<usize>> = vec![Vec::new(); wanted.len()];
    for (j, &(b, _)) in located.iter().enumerate() {
        by_slot[slot_of[b] as usize].push(j);
    }
    let mut out = vec![0u64; located.len()];
    for (i, idx) in by_slot.iter().enumerate() {
        let local: Vec<usize> = idx.iter().map(|&j| located[j].1).collect();
        let got = select_keys(&mut buckets[i], &local);
        for (&j, k) in idx.iter().zip(got) {
            out[j] = k;
        }
    }
    out
}

/// The order statistics at `ranks` (0-based; each < `values.len()`; fewer
/// than 65535 of them) of `map(v)` for every `v` in `values`, in the order of
/// `ranks`. Every `map(v)` must lie within `range` (inclusive bounds; the
/// tighter the better, and the caller usually knows them already); `map`
/// must not produce NaN.
pub(crate) fn select<F: Fn(f64) -> f64>(
    values: &[f64],
    map: F,
    range: (f64, f64),
    ranks: &[usize],
) -> Vec<f64> {
    if ranks.is_empty() {
        return Vec::new();
    }
    let (lo, hi) = (key(range.0), key(range.1));
    if lo == hi {
        return vec![range.0; ranks.len()];
    }
    if values.len() <= SMALL {
        let mut keys: Vec<u64> = values.iter().map(|&v| key(map(v))).collect();
        keys.sort_unstable();
        return ranks.iter().map(|&r| unkey(keys[r])).collect();
    }
    let w = Window::new(lo, hi);
    let mut count = vec![0u32; DIGITS];
    for c in values.chunks(CHUNK) {
        count_values(c, &map, w, &mut count);
    }
    let located = locate(&count, ranks);
    let keys = resolve(&count, &located, |slot_of, buckets| {
        for c in values.chunks(CHUNK) {
            gather_values(c, &map, w, slot_of, buckets);
        }
    });
    keys.into_iter().map(unkey).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(values: &[f64]) {
        let mut sorted = values.to_vec();
        sorted.sort_unstable_by(f64::total_cmp);
        let n = values.len();
        let ranks = [0, n / 4, n / 2, n / 2 + 1, n - 2, n - 1, 1, n / 2];
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let got = select(values, |x| x, (lo, hi), &ranks);
        for (r, g) in ranks.iter().zip(got) {
            assert_eq!(g.to_bits(), sorted[*r].to_bits(), "rank {r}");
        }
    }

    #[test]
    fn keys_keep_total_order() {
        let v = [-1e300, -2.5, -0.0, 0.0, 1e-310, 3.0, f64::MAX];
        for w in v.windows(2) {
            assert!(key(w[0]) < key(w[1]), "{w:?}");
            assert_eq!(unkey(key(w[0])).to_bits(), w[0].to_bits());
        }
    }

    #[test]
    fn matches_sort_on_spread_clustered_equal_and_signed_data() {
        let mut s = 1u64;
        let mut u = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        check(&(0..100_000).map(|_| u() * u() * 1e6).collect::<Vec<_>>());
        // all in one top-16-bit bucket: exercises the deeper digits
        check(&(0..50_000).map(|_| 1e12 + u()).collect::<Vec<_>>());
        check(
            &(0..50_000)
                .map(|_| 1e12 + (u() * 3.0).floor())
                .collect::<Vec<_>>(),
        );
        check(&[7.0; 20_000]);
        // many equal keys plus a few neighbours: resolved on the lowest digit
        let mut near = vec![1e12; 20_000];
        near[5] = f64::from_bits(1e12f64.to_bits() + 3);
        near[7] = f64::from_bits(1e12f64.to_bits() - 1);
        check(&near);
        check(&(0..30_000).map(|_| u() - 0.5).collect::<Vec<_>>());
        check(&[3.0, 1.0, 2.0, 5.0, 4.0]);
    }

    #[test]
    fn map_is_applied() {
        let v: Vec<f64> = (0..10_000).map(|i| i as f64).collect();
        assert_eq!(
            select(&v, |x| (x - 5000.0).abs(), (0.0, 5000.0), &[0, 1, 2, 9999]),
            vec![0.0, 1.0, 1.0, 5000.0]
        );
    }
}
