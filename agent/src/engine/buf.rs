//! Page-aligned I/O buffers.
//!
//! The kernel copies socket data to and from user memory with `rep movsb`,
//! which on some CPUs (AMD EPYC among them) is several times slower when the
//! user buffer is not page aligned: a `Vec` of 128 KiB comes from `mmap`
//! through malloc and starts 16 bytes into its page (the cost measured in
//! docs/performance.md, "Figures behind choices in the code"). Bulk
//! transfers use these buffers.
//!
//! On Unix each buffer is a mapping of its own (anonymous `mmap`), given
//! back to the kernel with `munmap`, never to the process's allocator: a
//! zero-copy send ([`super::zerocopy`]) may still hold the buffer's pages
//! when a test ends (cancelled, failed), and the pages it holds stay the
//! kernel's until it has done with them, whereas memory handed back to
//! the allocator would be the next allocation's (a token, a session key)
//! and could go out on the wire in the payload's place. So a buffer is
//! always freed: nothing is kept back (a cancelled 64 MiB zero-copy test
//! kept its payload for good before, issue 40). Elsewhere (Windows: no
//! zero-copy) the allocator's page-aligned memory.

use std::ops::{Deref, DerefMut};

#[cfg(not(unix))]
const ALIGN: usize = 4096;

/// A zero-filled buffer whose first byte starts a page.
pub struct PageBuf {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

// SAFETY: PageBuf owns its allocation exclusively, like Vec<u8>.
unsafe impl Send for PageBuf {}
// SAFETY: as Vec<u8>: a shared PageBuf only gives out `&[u8]` (no interior
// mutability), so worker threads may read one payload file at once.
unsafe impl Sync for PageBuf {}

impl PageBuf {
    /// `len` bytes (at least one), all `fill`.
    pub fn new(len: usize, fill: u8) -> PageBuf {
        let ptr = Self::alloc(len);
        let mut b = PageBuf { ptr, len };
        if fill != 0 {
            b.fill(fill);
        }
        b
    }

    /// `len` bytes from the OS random source: a payload no link can
    /// compress (iperf3 fills its buffer the same way, once per test).
    pub fn random(len: usize) -> PageBuf {
        let mut b = PageBuf::new(len, 0);
        getrandom::fill(&mut b).expect("the OS random source works");
        b
    }

    /// `len` zero bytes (at least one) of a mapping of their own.
    #[cfg(unix)]
    fn alloc(len: usize) -> std::ptr::NonNull<u8> {
        // SAFETY: a fresh private anonymous mapping (zero-filled pages),
        // no address asked, no file.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len.max(1),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            let layout = std::alloc::Layout::from_size_align(len.max(1), 4096)
                .expect("buffer size fits a Layout");
            std::alloc::handle_alloc_error(layout);
        }
        std::ptr::NonNull::new(raw.cast()).expect("mmap does not map page 0")
    }

    #[cfg(not(unix))]
    fn alloc(len: usize) -> std::ptr::NonNull<u8> {
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        std::ptr::NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout))
    }

    #[cfg(not(unix))]
    fn layout(len: usize) -> std::alloc::Layout {
        std::alloc::Layout::from_size_align(len.max(1), ALIGN).expect("buffer size fits a Layout")
    }
}

impl Deref for PageBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr is valid for len initialised bytes while self lives.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for PageBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in deref, and &mut self makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for PageBuf {
    #[cfg(unix)]
    fn drop(&mut self) {
        // SAFETY: mapped in `alloc` with this length; nothing refers to it
        // after this (the kernel's own references to its pages are its).
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len.max(1)) };
    }

    #[cfg(not(unix))]
    fn drop(&mut self) {
        // SAFETY: allocated in `alloc` with this same layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), Self::layout(self.len)) }
    }
}

#[cfg(test)]
mod tests {
    use super::PageBuf;

    #[test]
    fn aligned_filled_and_writable() {
        for len in [1, 100, 4096, 131072, 1 << 20] {
            let mut b = PageBuf::new(len, 0x5a);
            assert_eq!(b.as_ptr() as usize % 4096, 0);
            assert_eq!(b.len(), len);
            assert!(b.iter().all(|&x| x == 0x5a));
            b[len - 1] = 1;
            assert_eq!(b[len - 1], 1);
        }
        assert!(PageBuf::new(10, 0).iter().all(|&x| x == 0));
    }

    #[test]
    fn random_does_not_compress() {
        use std::io::Write;
        let b = PageBuf::random(1 << 20);
        assert_eq!(b.as_ptr() as usize % 4096, 0);
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(&b).unwrap();
        let packed = z.finish().unwrap().len();
        assert!(packed > b.len(), "1 MiB of random bytes gzips to {packed}");
    }
}
