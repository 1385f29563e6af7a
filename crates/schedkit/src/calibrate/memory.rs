//! Memory for the cache and bandwidth timings: anonymous mappings (in 2 MB pages where the
//! kernel grants them), a pointer chase no prefetcher can guess, and streaming reads.

use std::hint::black_box;
use std::io;

/// The last OS error, said with what failed.
pub(super) fn os_err<T>(what: &str) -> io::Result<T> {
    let e = io::Error::last_os_error();
    Err(io::Error::new(e.kind(), format!("{what}: {e}")))
}

/// Anonymous memory, unmapped on drop.
pub struct Map {
    pub(super) ptr: *mut u8,
    len: usize,
}

impl Map {
    /// `len` bytes, in 2 MB pages where the kernel grants them (`huge`) or in 4 KB ones.
    pub fn new(len: usize, huge: bool) -> io::Result<Map> {
        // SAFETY: a fresh private anonymous mapping.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return os_err(&format!("mmap of {} MB", len >> 20));
        }
        let advice = if huge {
            libc::MADV_HUGEPAGE
        } else {
            libc::MADV_NOHUGEPAGE
        };
        // SAFETY: advice on our own mapping (ignored where unsupported).
        unsafe { libc::madvise(ptr, len, advice) };
        Ok(Map {
            ptr: ptr.cast(),
            len,
        })
    }

    pub fn addr(&self) -> usize {
        self.ptr as usize
    }

    pub fn words(&self) -> &[usize] {
        // SAFETY: the mapping is ours, zero-filled, page-aligned and len bytes long.
        unsafe {
            std::slice::from_raw_parts(self.ptr.cast(), self.len / std::mem::size_of::<usize>())
        }
    }

    pub fn words_mut(&mut self) -> &mut [usize] {
        // SAFETY: as `words`, borrowed mutably once.
        unsafe {
            std::slice::from_raw_parts_mut(self.ptr.cast(), self.len / std::mem::size_of::<usize>())
        }
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: our own mapping, unmapped once.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

// SAFETY: a Map is owned memory like a Box<[u8]>.
unsafe impl Send for Map {}
// SAFETY: shared access only reads (`words`).
unsafe impl Sync for Map {}

/// xorshift64*.
pub struct Rng(u64);
impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// Words in a 64-byte line.
pub const LINE_WORDS: usize = 64 / std::mem::size_of::<usize>();

/// Links one word per 64-byte line of `buf` into one random cycle (Sattolo's
/// algorithm): following `i = buf[i]` from 0 visits every line once, in an order no
/// prefetcher can guess.
pub fn link_chase(buf: &mut [usize], rng: &mut Rng) {
    let lines = buf.len() / LINE_WORDS;
    let mut perm: Vec<u32> = (0..lines as u32).collect();
    for i in (1..lines).rev() {
        let j = (rng.next_u64() % i as u64) as usize;
        perm.swap(i, j);
    }
    for (i, &next) in perm.iter().enumerate() {
        buf[i * LINE_WORDS] = next as usize * LINE_WORDS;
    }
}

/// `n` dependent loads around the cycle `link_chase` made, from word `p`; returns where
/// it stopped.
pub fn chase(buf: &[usize], mut p: usize, n: u64) -> usize {
    for _ in 0..n {
        p = buf[p];
    }
    black_box(p)
}

/// Words in a streamed chunk (1 MB).
pub const CHUNK_WORDS: usize = (1 << 20) / std::mem::size_of::<usize>();

/// Reads the `n` 1 MB chunks of `buf` that follow chunk `at`, round the buffer; returns
/// the chunk after the last read.
pub fn stream(buf: &[usize], mut at: usize, n: u64) -> usize {
    let chunks = (buf.len() / CHUNK_WORDS).max(1);
    let mut x = 0usize;
    for _ in 0..n {
        at %= chunks;
        let end = ((at + 1) * CHUNK_WORDS).min(buf.len());
        x ^= sum(&buf[at * CHUNK_WORDS..end]);
        at += 1;
    }
    black_box(x);
    at
}

fn sum(buf: &[usize]) -> usize {
    let mut acc = [0usize; 4];
    for c in buf.chunks_exact(4) {
        acc[0] = acc[0].wrapping_add(c[0]);
        acc[1] = acc[1].wrapping_add(c[1]);
        acc[2] = acc[2].wrapping_add(c[2]);
        acc[3] = acc[3].wrapping_add(c[3]);
    }
    black_box(acc[0] ^ acc[1] ^ acc[2] ^ acc[3])
}
