//! The same "random" bytes in every run of a fuzz target, so that a run is
//! the same from one process to the next (`scripts/fuzz.sh check`).
//!
//! std seeds each `HashMap`'s hash keys from the kernel (`getrandom(2)`),
//! and the code under test hashes: with new keys each process, the same
//! input takes different probe sequences, libFuzzer sees different coverage
//! and two runs with one `-seed` keep different inputs. Defining the C
//! library's `getrandom` here, in the target's own object, puts this one
//! first at link time for std and every crate that asks through libc. No
//! secret is made in a fuzz target; the agent itself never links this.

use std::sync::atomic::{AtomicU64, Ordering};

static STATE: AtomicU64 = AtomicU64::new(0x9e37_79b9_7f4a_7c15);

/// `getrandom(2)`'s C signature: fills `buf` with `len` bytes from a fixed
/// sequence (splitmix64), never blocks, never fails.
///
/// # Safety
/// `buf` must be valid for `len` bytes of writes, as for the C function.
#[no_mangle]
pub unsafe extern "C" fn getrandom(buf: *mut u8, len: usize, _flags: u32) -> isize {
    let mut i = 0;
    while i < len {
        let mut z = STATE.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        for b in z.to_le_bytes() {
            if i == len {
                break;
            }
            // SAFETY: i < len, and the caller gave len writable bytes.
            unsafe { *buf.add(i) = b };
            i += 1;
        }
    }
    len as isize
}
